#!/usr/bin/env node
// Regenerates the option lists of docs/commands.md from the CLI itself: every block between
// `<!-- help: <command> -->` and `<!-- /help -->` becomes the output of `node bin/dsh.js <command> --help`
// (80 columns, no colour). Run after `npm run build` whenever a command's options change:
//   node scripts/commands-doc.mjs          rewrite docs/commands.md
//   node scripts/commands-doc.mjs --check  exit 1 when docs/commands.md is not what it would write
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const doc = path.join(root, 'docs', 'commands.md');
const bin = path.join(root, 'bin', 'dsh.js');

const before = readFileSync(doc, 'utf8');
const after = before.replace(/(<!-- help: ([a-z-]+) -->\n)[\s\S]*?(<!-- \/help -->)/g, (_all, open, command, close) => {
  const help = execFileSync(process.execPath, [bin, command, '--help'], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1', COLUMNS: '80' },
    encoding: 'utf8',
  });
  return `${open}\`\`\`text\n$ dsh ${command} --help\n${help.trimEnd()}\n\`\`\`\n${close}`;
});
if (process.argv.includes('--check')) {
  if (after !== before) {
    console.error('docs/commands.md is stale: run node scripts/commands-doc.mjs');
    process.exit(1);
  }
} else if (after !== before) {
  writeFileSync(doc, after);
  console.log('docs/commands.md: option lists regenerated');
} else console.log('docs/commands.md: up to date');

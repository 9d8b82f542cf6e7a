import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync, statSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { COMMANDS } from '../src/cli/commands/index.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

function fingerprint(file: string): string {
  const st = statSync(file);
  return `${createHash('sha256').update(readFileSync(file)).digest('hex')}:${st.mtimeMs}:${st.size}`;
}

function dirListing(dir: string): string {
  return readdirSync(dir).sort().join('|');
}

/** Every read-only command that takes a single session target (placed second unless `{target}` says where). */
const COMMAND_LINES: string[][] = [
  ['inspect', '--json'],
  ['inspect'],
  ['inspect', '--view', 'artifact', '--json'],
  ['events', '--json'],
  ['frames', '--decode', '--json'],
  ['surface', '--json'],
  ['trace', '0', '--json'],
  ['transcript', '--format', 'json'],
  ['request', '--list', '--json'],
  ['lineage', '--json'],
  ['check', '--json'],
  ['replay', '--json'],
  ['stats', '--json'],
  ['history', '--json'],
  ['compactions', '--json'],
  ['context', '--json'],
  ['secrets', '--json'],
  ['fork', '--dry-run', '--json'],
  ['search', 'e', '{target}', '--json'],
  ['diff', '{target}', '{target}', '--json'],
  ['diff', '{target}', '{target}', '--stat'],
];

describe.skipIf(!HAVE_CORPUS)('read-only guarantee', () => {
  it('no command changes any corpus artifact (sha256, mtime, size) or leaves anything beside it', async () => {
    // Every command that reads a log is in the list above (the writing ones are tested for outputs elsewhere).
    // `cache` reads no log (it lists and clears the index directory; tested in index-cache.test.ts).
    // `dataset` writes only its -o DIR and `sql` only a dataset in the cache directory (their outputs and the
    // refusal of an -o inside an input are tested in dataset-incremental.test.ts).
    const writers = new Set(['export', 'report', 'salvage', 'redact', 'ls', 'cache', 'dataset', 'sql']);
    const listed = new Set(COMMAND_LINES.map((l) => l[0]));
    expect(COMMANDS.map((c) => c.name).filter((n) => !writers.has(n) && !listed.has(n))).toEqual([]);
    const changed: string[] = [];
    for (const c of corpusCases()) {
      const before = fingerprint(c.artifact);
      const listing = dirListing(path.dirname(c.artifact));
      for (const args of COMMAND_LINES) {
        const line = args.includes('{target}') ? args.map((a) => (a === '{target}' ? c.artifact : a)) : [args[0]!, c.artifact, ...args.slice(1)];
        const r = await runInProcess(line);
        expect([0, 1], `${args.join(' ')} ${c.name}: ${r.stderr}`).toContain(r.code);
        expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
      }
      if (fingerprint(c.artifact) !== before) changed.push(c.name);
      if (dirListing(path.dirname(c.artifact)) !== listing) changed.push(`${c.name} (directory)`);
    }
    expect(changed).toEqual([]);
  });
});

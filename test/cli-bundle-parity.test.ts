/**
 * The CLI bundle (scripts/bundle-cli.mjs) prints exactly what the built modules print: every read
 * command on every corpus artifact and on hostile mutations, without and with the session index
 * (written, then read warm), has the same exit code, stdout bytes and stderr in both. A long campaign
 * (some 14,000 runs a side): `npm run test:full`. test/cli-bundle.test.ts checks which copy runs.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { batchCli } from './helpers/cli.js';
import { quickMutations } from './helpers/hostile-gen.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const BUNDLE = path.join(PROJECT_ROOT, 'dist', 'cli', 'bundle', 'main.js');
const BUILT = path.join(PROJECT_ROOT, 'dist', 'cli', 'main.js');
const HAVE_BUNDLE = existsSync(BUILT) && existsSync(BUNDLE);
if (!HAVE_BUNDLE) console.warn('dist/cli/bundle is not built (npm run build): the CLI bundle parity test is skipped');

/** Read commands with no argument but the target (`trace`/`request` at seq 1: an answer or a refusal, both compared). */
const COMMANDS = [
  ['inspect'],
  ['inspect', '--json'],
  ['check', '--json'],
  ['events'],
  ['events', '--json'],
  ['frames', '--json'],
  ['surface', '--json'],
  ['transcript'],
  ['history', '--json'],
  ['replay', '--json'],
  ['compactions', '--json'],
  ['context', '--json'],
  ['stats', '--json'],
  ['lineage', '--json'],
  ['secrets', '--json'],
  ['trace', '@', '1', '--json'],
  ['request', '@', '1'],
];

/** `command` on `target`: the target goes where `@` is, else second. */
function argv(command: readonly string[], target: string): string[] {
  const [cmd, ...rest] = command;
  return rest.includes('@') ? [cmd!, ...rest.map((a) => (a === '@' ? target : a))] : [cmd!, target, ...rest];
}

describe.skipIf(!HAVE_CORPUS || !HAVE_BUNDLE)('the CLI bundle prints what the built modules print', () => {
  it('every read command on every corpus artifact and hostile mutations, without the index and with it (written, then warm)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-bundle-parity-'));
    try {
      const corpus = corpusCases().map((c) => c.artifact);
      const targets = [...corpus, ...quickMutations(path.join(dir, 'mutants'), 40)];
      const cold = targets.flatMap((t) => COMMANDS.map((c) => [...argv(c, t), '--no-cache']));
      // Indexed: each side its own empty cache, every command twice (the first writes the index).
      const indexed = corpus.flatMap((t) => COMMANDS.flatMap((c) => [argv(c, t), argv(c, t)]));
      const runs = [...cold, ...indexed];
      const [built, bundle] = await Promise.all([
        batchCli(runs, { DSH_CACHE_DIR: path.join(dir, 'cache-built') }, false),
        batchCli(runs, { DSH_CACHE_DIR: path.join(dir, 'cache-bundle') }, true),
      ]);
      const differ: string[] = [];
      runs.forEach((r, i) => {
        const a = built[i]!;
        const b = bundle[i]!;
        if (a.code !== b.code || a.stdout !== b.stdout || a.stderr !== b.stderr) differ.push(`${r.join(' ')}: exit ${a.code}/${b.code} ${a.stderr.slice(0, 200)} | ${b.stderr.slice(0, 200)}`);
        if (![0, 1, 2].includes(b.code)) differ.push(`${r.join(' ')}: exit ${b.code} ${b.stderr.slice(0, 200)}`);
      });
      const answered = bundle.filter((r) => r.code === 0).length;
      console.log(`CLI bundle: ${runs.length} runs (${targets.length} targets x ${COMMANDS.length} commands, then ${corpus.length} indexed twice), ${answered} exit 0`);
      expect(differ).toEqual([]);
      // Not a comparison of refusals only: most runs answer, and both caches were written.
      expect(answered).toBeGreaterThan(runs.length / 2);
      expect(existsSync(path.join(dir, 'cache-bundle'))).toBe(true);
      expect(existsSync(path.join(dir, 'cache-built'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});

/**
 * Issue #16: the parallel reader (worker threads decode and split, the main
 * thread parses and folds) must print exactly what the one-thread path
 * prints. inspect --json, check --json and events --json run at -j 1 and
 * -j 4 over every corpus artifact and a quick set of hostile mutations, and
 * their exit codes, stdout bytes and stderr must be the same. The compiled
 * CLI runs (worker threads need the .js build) with the size threshold off
 * and one frame per decode group, so small logs really go through several
 * workers; the reads that started workers are counted, so the comparison
 * cannot pass without them.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { batchCli as batch, runCli } from './helpers/cli.js';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { quickMutations } from './helpers/hostile-gen.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const BUILT = existsSync(path.join(PROJECT_ROOT, 'dist', 'cli', 'main.js'));
/** The CLI's hidden test hooks: workers on logs of any size, every frame its own decode group. */
const TUNING = ['--parallel-min-bytes', '0', '--group-bytes', '1'];

const COMMANDS = [
  // Text inspect: its summary takes pruned events, so the workers also parse and check the lines (facts.ts).
  ['inspect'],
  ['inspect', '--json'],
  ['check', '--json'],
  ['events', '--json'],
];

describe.skipIf(!HAVE_CORPUS || !BUILT)('parallel reader: -j 1 and -j 4 print the same bytes', () => {
  if (!BUILT) console.warn('dist/ is not built (npx tsc -p tsconfig.json): the parallel reader tests need the compiled CLI');

  it('inspect/check/events --json on every corpus artifact and on hostile mutations, with workers proven to run', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-parallel-'));
    try {
      const targets = [...corpusCases().map((c) => c.artifact), ...quickMutations(dir, 60)];
      const runs = (jobs: string) => targets.flatMap((t) => COMMANDS.map(([cmd, ...rest]) => [cmd!, t, ...rest, '--no-cache', '-j', jobs, ...TUNING]));
      const [one, four] = await Promise.all([batch(runs('1')), batch(runs('4'))]);
      const differ: string[] = [];
      let zstdTargets = 0;
      let zstdWithWorkers = 0;
      let groups = 0;
      let factTargets = 0;
      targets.forEach((t, i) => {
        let workers = 0;
        COMMANDS.forEach((c, k) => {
          const a = one[i * COMMANDS.length + k]!;
          const b = four[i * COMMANDS.length + k]!;
          if (a.code !== b.code || a.stdout !== b.stdout || a.stderr !== b.stderr) differ.push(`${c[0]} ${t}: exit ${a.code}/${b.code} ${a.stderr.slice(0, 200)} | ${b.stderr.slice(0, 200)}`);
          if (![0, 1, 2].includes(b.code)) differ.push(`${c[0]} ${t}: exit ${b.code}`);
          expect(a.parallel.reads).toBe(0);
          workers += b.parallel.reads;
          groups += b.parallel.groups;
          // Only text inspect hands the workers the parse; the others keep it on this thread.
          if (c.length > 1) expect(b.parallel.factGroups).toBe(0);
          else if (b.parallel.factGroups > 0) factTargets++;
        });
        if (t.endsWith('.zstd')) {
          zstdTargets++;
          if (workers > 0) zstdWithWorkers++;
        }
      });
      console.log(`parallel reader: ${targets.length} targets x ${COMMANDS.length} commands at -j 1 and -j 4; ${zstdWithWorkers}/${zstdTargets} zstd targets read on workers, ${groups} groups decoded on workers, ${factTargets} inspect reads parsed on workers`);
      expect(differ).toEqual([]);
      // Every zstd target went through the workers (raw logs are split on the main thread).
      expect(zstdWithWorkers).toBe(zstdTargets);
      expect(groups).toBeGreaterThan(zstdTargets);
      // Text inspect of every zstd target whose header parsed had its lines parsed on workers.
      expect(factTargets).toBeGreaterThan(zstdTargets / 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it('multi-MB generated logs (many text pieces per group, a torn tail, a corrupted frame mid-log) at -j 1 and -j 3', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-parallel-gen-'));
    try {
      const files: string[] = [];
      for (const [seed, crash] of [[7, false], [8, true]] as const) {
        const file = path.join(dir, `--home-dev-p--`, `gen-${seed}`, 'session.jsonl.zstd');
        await writeGeneratedArtifact(file, { seed, id: `gen-${seed}`, cwd: '/home/dev/p', targetBytes: 6_000_000, encoding: 'zstd', ...(crash ? { crash: 'mid-stream' as const, tornTail: true } : {}) });
        files.push(file);
      }
      // A byte flipped in the middle of the first log: some group fails on its worker and is re-decoded frame by frame.
      const bytes = readFileSync(files[0]!);
      bytes[bytes.length >> 1] ^= 0x5a;
      const bad = path.join(dir, '--home-dev-p--', 'gen-7-bad', 'session.jsonl.zstd');
      mkdirSync(path.dirname(bad), { recursive: true });
      writeFileSync(bad, bytes);
      files.push(bad);
      const runs = (jobs: string) => files.flatMap((t) => [...COMMANDS, ['inspect']].map(([cmd, ...rest]) => [cmd!, t, ...rest, '--no-cache', '-j', jobs, '--parallel-min-bytes', '0']));
      const [one, three] = await Promise.all([batch(runs('1')), batch(runs('3'))]);
      expect(three.map((r) => [r.code, r.stdout, r.stderr])).toEqual(one.map((r) => [r.code, r.stdout, r.stderr]));
      expect(three.every((r) => r.parallel.reads >= 1)).toBe(true);
      expect(three.reduce((n, r) => n + r.parallel.groups, 0)).toBeGreaterThan(files.length * 4);
      // The corrupted log failed, the others did not.
      expect(one.map((r) => r.code)).toContain(1);
      expect(one[0]!.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('bin/dsh.js as a process: -j 4 uses worker threads (--debug-parallel) and prints what -j 1 prints; -j/DSH_JOBS are validated', async () => {
    const file = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
    const DEBUG = '--debug-parallel';
    for (const args of [['inspect', file, ...TUNING], ['inspect', file, '--json', ...TUNING], ['events', file, '--json', ...TUNING], ['check', file, '--format', 'json', ...TUNING]]) {
      const one = await runCli([...args, '-j', '1', DEBUG]);
      const four = await runCli([...args, DEBUG], { env: { DSH_JOBS: '4' } });
      expect(four.stdout).toBe(one.stdout);
      expect(four.code).toBe(one.code);
      expect(one.stderr).toMatch(/parallel reads 0, worker threads 0/);
      expect(four.stderr).toMatch(/parallel reads [1-9]\d*, worker threads 3, groups decoded on workers [1-9]/);
    }
    // Below the size threshold no worker starts.
    const small = await runCli(['inspect', file, '-j', '4', DEBUG]);
    expect(small.stderr).toMatch(/parallel reads 0, worker threads 0/);
    const bad = await runCli(['inspect', file, '-j', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--jobs must be/);
    const badEnv = await runCli(['inspect', file], { env: { DSH_JOBS: 'lots' } });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toMatch(/DSH_JOBS must be/);
  });
});

/**
 * Issue #23's hostile suite: generated mutations of corpus sessions (header
 * field types, renamed encodings, missing nested fields, block-header flips,
 * deep nesting) through every read command, in text and --json mode. The
 * quick subset runs in `npm run test:full`; DSH_SLOW_TESTS=1 runs >= 20,000 mutations.
 * Every run must exit 0, 1 or 2 without an internal error or stack trace, in
 * bounded memory, and leave the input's bytes and mtime as they were.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { BIN, runInProcess } from './helpers/cli.js';
import { spawn } from 'node:child_process';
import { hostileBases, hostileMutation } from './helpers/hostile-gen.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const SLOW = process.env['DSH_SLOW_TESTS'] === '1';

/** Every read command, with the arguments after the target (`@` is the target, `%` an output path). */
export const READ_COMMANDS: readonly string[][] = [
  ['inspect', '@'],
  ['inspect', '@', '--view', 'stored'],
  ['events', '@'],
  ['events', '@', '--no-labels'],
  ['frames', '@', '--decode'],
  ['request', '@', '--list'],
  ['request', '@', '3'],
  ['request', '@', '--diff', '5'],
  ['surface', '@'],
  ['trace', '@', '2', '--all'],
  ['transcript', '@'],
  ['replay', '@'],
  ['history', '@'],
  ['stats', '@'],
  ['search', 'e', '@'],
  ['compactions', '@'],
  ['check', '@'],
  ['lineage', '@'],
  ['ls', '^'],
  ['fork', '@'],
  ['report', '@', '-o', '%.html'],
  ['salvage', '@', '-o', '%-salvage'],
  ['export', '@', '-o', '%.zip'],
  ['redact', '@', '-o', '%-redacted'],
  ['secrets', '@'],
  ['diff', '@', '@'],
  ['diff', '@', '3', '5'],
  ['export', '@', '--format', 'otlp', '-o', '%.otlp.json'],
  ['dataset', '^', '-o', '%-dataset'],
  ['sql', 'select count(*) as n from events', '^', '--dataset', '%-sql'],
];

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe.skipIf(!HAVE_CORPUS)('hostile suite: generated mutations through every read command', () => {
  it(`${SLOW ? '20,000' : 'a quick subset of'} mutations x read commands x {text, --json}: exit 0-2, no internal error, bounded memory, input unchanged`, async () => {
    const all = await hostileBases();
    const N = Number(process.env['DSH_HOSTILE_N'] ?? (SLOW ? 20_000 : 500));
    const perMutation = SLOW ? 1 : 2;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-hostile-suite-'));
    const failures: string[] = [];
    let runs = 0;
    let peak = 0;
    const rss0 = process.memoryUsage().rss;
    try {
      for (let seed = 1; seed <= N; seed++) {
        const base = all[seed % all.length]!;
        const m = hostileMutation(base, seed);
        const root = path.join(dir, `r${seed % 8}`);
        rmSync(root, { recursive: true, force: true });
        const sessionDir = path.join(root, '--home-dsh-synthetic-project--', 'mutant');
        mkdirSync(sessionDir, { recursive: true });
        const file = path.join(sessionDir, m.encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
        writeFileSync(file, m.bytes);
        const before = { sha: sha(m.bytes), mtime: statSync(file).mtimeMs };
        const out = path.join(dir, `out-${seed}`);
        for (let k = 0; k < perMutation; k++) {
          const cmd = READ_COMMANDS[(seed * perMutation + k) % READ_COMMANDS.length]!;
          for (const json of [false, true]) {
            const args = cmd.map((a) => (a === '@' ? file : a === '^' ? root : a.replace('%', `${out}-${json ? 'j' : 't'}`)));
            if (json) args.push('--json');
            const r = await runInProcess(args);
            runs++;
            if (![0, 1, 2].includes(r.code) || /internal error|\n\s+at /.test(r.stderr)) {
              failures.push(`seed ${seed} ${base.name} [${m.name}] dsh ${cmd.join(' ')}${json ? ' --json' : ''}: exit ${r.code}: ${r.stderr.slice(0, 400)}`);
            }
          }
        }
        const after = readFileSync(file);
        if (sha(after) !== before.sha || statSync(file).mtimeMs !== before.mtime) failures.push(`seed ${seed} [${m.name}]: input changed`);
        peak = Math.max(peak, process.memoryUsage().rss - rss0);
        if (failures.length > 400) break;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    console.log(`hostile suite: ${N} mutations, ${runs} command runs, ${failures.length} failures, peak RSS growth ${Math.round(peak / 1048576)} MiB`);
    expect(failures).toEqual([]);
    expect(runs).toBe(N * perMutation * 2);
    expect(peak).toBeLessThan(1024 * 1024 * 1024);
  }, SLOW ? 7_200_000 : 300_000);

  it(`${SLOW ? '200' : '6'} mutations followed live (events --follow, inspect --watch; stopped with SIGINT): exit 0-2, no internal error, no hang, input unchanged`, async () => {
    const all = await hostileBases();
    const N = SLOW ? 200 : 6;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-hostile-follow-'));
    const failures: string[] = [];
    try {
      for (let seed = 1; seed <= N; seed++) {
        const base = all[(seed * 7) % all.length]!;
        const m = hostileMutation(base, seed * 13);
        const file = path.join(dir, `${seed}`, m.encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, m.bytes);
        const before = { sha: sha(m.bytes), mtime: statSync(file).mtimeMs };
        const args = [seed % 2 ? ['events', file, '--follow'] : ['inspect', file, '--watch'], seed % 4 < 2 ? ['--json'] : []].flat();
        const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        let spoke: () => void = () => {};
        const started = new Promise<void>((r) => (spoke = r));
        child.stdout!.on('data', () => spoke());
        child.stderr!.on('data', (d: Buffer) => ((stderr += d.toString('utf8')), spoke()));
        const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
        // Interrupt once it has answered something (its SIGINT handler is in place), or after 3 s.
        await Promise.race([started, exit, new Promise((r) => setTimeout(r, 3000))]);
        await new Promise((r) => setTimeout(r, 200));
        child.kill('SIGINT');
        const code = await Promise.race([exit, new Promise<'hang'>((r) => setTimeout(() => r('hang'), 10_000))]);
        if (code === 'hang') {
          child.kill('SIGKILL');
          failures.push(`seed ${seed} [${m.name}] dsh ${args.slice(0, 1).join(' ')}: no exit 10 s after SIGINT`);
        } else if (code === null || ![0, 1, 2].includes(code) || /internal error|\n\s+at /.test(stderr)) {
          failures.push(`seed ${seed} [${m.name}] dsh ${args.join(' ')}: exit ${code}: ${stderr.slice(0, 400)}`);
        }
        if (sha(readFileSync(file)) !== before.sha || statSync(file).mtimeMs !== before.mtime) failures.push(`seed ${seed} [${m.name}]: input changed`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(failures).toEqual([]);
  }, SLOW ? 1_200_000 : 120_000);
});

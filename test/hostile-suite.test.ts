/**
 * Issue #23's hostile suite: generated mutations of corpus sessions (header
 * field types, renamed encodings, missing nested fields, block-header flips,
 * deep nesting) through every command the CLI registers (a test reads them
 * from `dsh help`), in text and --json mode; and deeply nested values through
 * every command. The quick subset runs in `npm run test:full`; DSH_SLOW_TESTS=1 runs
 * >= 20,000 mutations and 200,000-level nesting. Every run must exit 0, 1 or 2
 * without an internal error or stack trace and without a raw control
 * character in its output, in bounded memory, leave the input's bytes and
 * mtime as they were, and write nothing beside it.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { BIN, runInProcess } from './helpers/cli.js';
import { spawn } from 'node:child_process';
import { DEEP_PLACES, deepNestingAt, hostileBases, hostileMutation } from './helpers/hostile-gen.js';

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
  ['context', '@'],
  ['context', '@', '--breaks'],
  ['context', '^'],
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
  ['export', '@', '--redact', '-o', '%-redacted.zip'],
  ['dataset', '^', '-o', '%-dataset'],
  ['dataset', '^', '--content', '--redact', '-o', '%-dataset-redacted'],
  ['sql', 'select count(*) as n from events', '^', '--dataset', '%-sql'],
  ['fork', '@', '--out', '%-fork'],
  ['cache', 'list'],
];

/** Every command the CLI registers, read from its own help (commander's `help` aside). */
export async function registeredCommands(): Promise<string[]> {
  const r = await runInProcess(['help']);
  const lines = r.stdout.split('\n');
  const names: string[] = [];
  for (const line of lines.slice(lines.indexOf('Commands:') + 1)) {
    const m = /^ {2}(\S+)/.exec(line);
    if (!m) break;
    if (m[1] !== 'help') names.push(m[1] as string);
  }
  return names;
}

// Raw C0 controls (tab and LF aside) and DEL, anywhere; C1 controls too in text (JSON may carry them as they are).
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex
const RAW_CONTROL_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** What is wrong with one run: exit code outside 0-2, an internal error or stack trace, raw control characters. */
export function runProblems(r: { code: number; stdout: string; stderr: string }, json: boolean): string[] {
  const out: string[] = [];
  if (![0, 1, 2].includes(r.code)) out.push(`exit ${r.code}`);
  if (/internal error|\n\s+at /.test(r.stderr)) out.push('internal error');
  const control = json ? RAW_CONTROL : RAW_CONTROL_TEXT;
  if (control.test(r.stdout)) out.push('raw control character on stdout');
  if (RAW_CONTROL_TEXT.test(r.stderr)) out.push('raw control character on stderr');
  return out.length > 0 ? [`${out.join(', ')}: ${r.stderr.slice(0, 400)}`] : [];
}

/** Every file under `dir` with its size and mtime: what a run may not add to, remove from or touch. */
export function treeState(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => {
      const p = path.join(e.parentPath, e.name);
      const st = statSync(p);
      return `${path.relative(dir, p)} ${e.isDirectory() ? 'dir' : `${st.size} ${st.mtimeMs}`}`;
    })
    .sort()
    .join('\n');
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('hostile suite: its command list', () => {
  it('names every command the CLI registers (read from the CLI itself)', async () => {
    const registered = await registeredCommands();
    expect(registered.length).toBeGreaterThan(20);
    const listed = new Set(READ_COMMANDS.map((c) => c[0]));
    expect(registered.filter((name) => !listed.has(name))).toEqual([]);
    expect([...listed].filter((name) => !registered.includes(name as string))).toEqual([]);
  });
});

describe.skipIf(!HAVE_CORPUS)('hostile suite: generated mutations through every read command', () => {
  it(`${SLOW ? '20,000' : 'a quick subset of'} mutations x read commands x {text, --json}: exit 0-2, no internal error, no raw control character, bounded memory, input unchanged, nothing written beside it`, async () => {
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
        const before = { sha: sha(m.bytes), mtime: statSync(file).mtimeMs, tree: treeState(root) };
        const out = path.join(dir, `out-${seed}`);
        for (let k = 0; k < perMutation; k++) {
          // The generators take turns by seed (seed % 6); the commands by the generator's turn, so every
          // generator's mutations (deep nesting included) meet every command.
          const cmd = READ_COMMANDS[(Math.floor(seed / 6) * perMutation + k) % READ_COMMANDS.length]!;
          for (const json of [false, true]) {
            const args = cmd.map((a) => (a === '@' ? file : a === '^' ? root : a.replace('%', `${out}-${json ? 'j' : 't'}`)));
            if (json) args.push('--json');
            const r = await runInProcess(args);
            runs++;
            for (const p of runProblems(r, json)) failures.push(`seed ${seed} ${base.name} [${m.name}] dsh ${cmd.join(' ')}${json ? ' --json' : ''}: ${p}`);
          }
        }
        const after = readFileSync(file);
        if (sha(after) !== before.sha || statSync(file).mtimeMs !== before.mtime) failures.push(`seed ${seed} [${m.name}]: input changed`);
        if (treeState(root) !== before.tree) failures.push(`seed ${seed} [${m.name}]: something was written beside the input`);
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

  it(`deeply nested values (5,000 levels${SLOW ? ' and 200,000' : ''}; objects and arrays in a tool schema, request/context data, an ignorable event) through every command x {text, --json}: exit 0-2, no internal error, no raw control character, nothing written beside the input, bounded memory`, async () => {
    const base = (await hostileBases()).find((b) => b.name.includes('root-raw') && b.name.includes('syn.llm-retry'))!;
    const inputs = (SLOW ? [5000, 200_000] : [5000]).flatMap((depth) =>
      DEEP_PLACES.flatMap((place, i) => (SLOW ? (['object', 'array'] as const) : [i % 2 === 0 ? ('object' as const) : ('array' as const)]).map((kind) => deepNestingAt(base.text, depth, kind, place))),
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-hostile-deep-'));
    const failures: string[] = [];
    let runs = 0;
    let peak = 0;
    const rss0 = process.memoryUsage().rss;
    try {
      for (const [n, m] of inputs.entries()) {
        const root = path.join(dir, `r${n}`);
        const file = path.join(root, '--home-dsh-synthetic-project--', 'syn.llm-retry', 'session.jsonl');
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, m.bytes);
        const before = { sha: sha(m.bytes), mtime: statSync(file).mtimeMs, tree: treeState(root) };
        // DSH accepts these logs: so does inspect.
        const inspected = await runInProcess(['inspect', file, '--json']);
        if (inspected.code !== 0) failures.push(`[${m.name}] inspect: exit ${inspected.code} (DSH accepts this log)`);
        for (const cmd of READ_COMMANDS) {
          for (const json of [false, true]) {
            const args = cmd.map((a) => (a === '@' ? file : a === '^' ? root : a.replace('%', path.join(dir, `out-${n}-${json ? 'j' : 't'}`))));
            if (json) args.push('--json');
            const r = await runInProcess(args);
            runs++;
            for (const p of runProblems(r, json)) failures.push(`[${m.name}] dsh ${cmd.join(' ')}${json ? ' --json' : ''}: ${p}`);
          }
        }
        if (sha(readFileSync(file)) !== before.sha || statSync(file).mtimeMs !== before.mtime) failures.push(`[${m.name}]: input changed`);
        if (treeState(root) !== before.tree) failures.push(`[${m.name}]: something was written beside the input`);
        peak = Math.max(peak, process.memoryUsage().rss - rss0);
        rmSync(root, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    console.log(`hostile suite, deep nesting: ${inputs.length} inputs, ${runs} command runs, ${failures.length} failures, peak RSS growth ${Math.round(peak / 1048576)} MiB`);
    expect(failures).toEqual([]);
    expect(runs).toBe(inputs.length * READ_COMMANDS.length * 2);
    expect(peak).toBeLessThan(1024 * 1024 * 1024);
  }, SLOW ? 7_200_000 : 600_000);

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

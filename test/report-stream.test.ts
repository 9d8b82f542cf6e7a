/**
 * `dsh report` of an accepted log is written as the log is re-read (src/report/stream.ts), from the
 * validating pass (cold) or the saved session index (warm). It must be byte-identical to the held
 * report (`buildReport` + `reportParts`, src/report/build.ts) on every corpus artifact and on the
 * hostile log, cold, warm and with --no-cache.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HAVE_CORPUS, SKIP_REASON, corpusCases } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { hostileLog, logText, type Ev } from './helpers/logtext.js';
import { resolveTarget } from '../src/log/target.js';
import { buildReport } from '../src/report/build.js';
import { renderReportHtml } from '../src/report/html.js';
import { VERSION } from '../src/core/version.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-report-stream-'));
const logs = mkdtempSync(path.join(os.tmpdir(), 'dsh-report-stream-logs-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(logs, { recursive: true, force: true });
});

/** The held report of `file`, as the CLI wrote it before it streamed. */
async function heldHtml(file: string): Promise<string> {
  const built = await buildReport(resolveTarget(file), { version: VERSION });
  return renderReportHtml(built.data, built.events, built.facts);
}

let n = 0;
/** cold (a fresh cache), warm (the same cache again) and --no-cache: each must equal the held report. */
async function expectStreamedEqualsHeld(file: string, name: string): Promise<void> {
  const want = await heldHtml(file);
  const cache = path.join(dir, `cache-${n}`);
  for (const [how, extra, env] of [
    ['cold', [], { DSH_CACHE_DIR: cache }],
    ['warm', [], { DSH_CACHE_DIR: cache }],
    ['--no-cache', ['--no-cache'], {}],
  ] as const) {
    const out = path.join(dir, `${n++}.html`);
    const r = await runInProcess(['report', file, '-o', out, ...extra], env);
    expect(r.code, `${name} ${how}: ${r.stderr}`).toBeLessThanOrEqual(1);
    const got = readFileSync(out, 'utf8');
    if (got !== want) {
      let at = 0;
      while (at < got.length && got[at] === want[at]) at++;
      expect(`${how} …${got.slice(Math.max(0, at - 120), at + 120)}`, `${name}: the streamed report differs at char ${at}`).toBe(`${how} …${want.slice(Math.max(0, at - 120), at + 120)}`);
    }
  }
}

describe('report: streamed = held', () => {
  it('the hostile log (every section: dispatches, diffs, compactions, closers, findings)', async () => {
    const d = path.join(logs, '--w--', 'hostile-1');
    mkdirSync(d, { recursive: true });
    const file = path.join(d, 'session.jsonl');
    writeFileSync(file, hostileLog());
    await expectStreamedEqualsHeld(file, 'hostile');
  });

  it('a log whose events cite earlier ones in every way (runs, gaps, descending, overlapping, a crash tail)', async () => {
    // The page's citers come from the session index's citations (a sweep over their runs) when it has
    // them; the held report counts them per seq. Cited seqs here are shared by overlapping runs of
    // several citers, cited out of order and cited apart from their neighbours.
    let x = 7;
    const rand = (k: number) => ((x = (x * 1103515245 + 12345) % 2147483648), x % k);
    const events: Ev[] = [];
    for (let i = 0; i < 400; i++) {
      const sources: number[] = [];
      if (i > 3) {
        const kind = rand(5);
        const a = rand(i);
        const len = 1 + rand(Math.min(40, i - a));
        for (let s = a; s < a + len && s < i; s++) sources.push(s);
        if (kind === 1) sources.push(rand(i));
        if (kind === 2) sources.reverse();
        if (kind === 3) sources.push(rand(i), rand(i));
        if (kind === 4) sources.splice(0, sources.length, ...sources.filter((_, k) => k % 3 !== 1));
      }
      // DSH refuses a list with duplicates.
      const unique = [...new Set(sources)];
      events.push({ type: 'user/message', data: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: `m${i}` }], source: { kind: 'user' } }, surfaceOp: 'append', ...(i > 3 ? { sourceEventSeqs: unique } : {}) });
    }
    events.push({ type: 'turn/start', data: { turn: 1 } });
    const d = path.join(logs, '--w--', 'cites-1');
    mkdirSync(d, { recursive: true });
    const file = path.join(d, 'session.jsonl');
    writeFileSync(file, logText(events, { id: 'cites-1', cwd: '/w' }));
    const inspected = await runInProcess(['inspect', file, '--json', '--no-cache']);
    expect(inspected.code, inspected.stdout.slice(0, 600)).toBe(0);
    expect(JSON.parse(inspected.stdout).closers.length).toBeGreaterThan(0);
    await expectStreamedEqualsHeld(file, 'citations');
  });

  it.skipIf(!HAVE_CORPUS)('every corpus artifact', async () => {
    let count = 0;
    for (const c of corpusCases()) {
      await expectStreamedEqualsHeld(c.artifact, c.name);
      count++;
    }
    console.info(`report-stream.test: ${count} corpus artifacts, cold, warm and --no-cache`);
  }, 900_000);
});

describe('report: bounded memory', () => {
  it('a 24 MB generated log under a 96 MiB heap: the held report, byte for byte (the holding writer refuses it: past a fifth of the heap)', async () => {
    const file = path.join(logs, '--home-dev-p--', 'mid', 'session.jsonl');
    const info = await writeGeneratedArtifact(file, { seed: 5, id: 'mid', cwd: '/home/dev/p', targetBytes: 24_000_000, encoding: 'none' });
    expect(info.logicalBytes).toBeGreaterThan(22_000_000);
    const out = path.join(dir, 'mid.html');
    const got = await runCli(['report', file, '-o', out], { env: { NODE_OPTIONS: '--max-old-space-size=96', DSH_NO_CACHE: '1' } });
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const want = await heldHtml(file);
    // The page embeds every event: bigger than the log.
    expect(want.length).toBeGreaterThan(24_000_000);
    expect(readFileSync(out, 'utf8') === want).toBe(true);
  }, 300_000);

  it('a 68 MB generated log with ~15k tool results of ~4 KB under a 112 MiB heap, no re-exec: what each pass holds follows the surface and the index, not the log (the same bytes as without the limit)', async () => {
    // Each distinct preview is cut from its event's text; held as a slice it kept that text alive
    // (~4 KB a tool result here), so the facts of the events blob outgrew the heap in the third pass.
    const file = path.join(logs, '--home-dev-p--', 'tools', 'session.jsonl');
    const info = await writeGeneratedArtifact(file, { seed: 9, id: 'tools', cwd: '/home/dev/p', targetBytes: 64_000_000, encoding: 'none', toolOutputBytes: [4000, 4100] });
    expect(info.logicalBytes).toBeGreaterThan(60_000_000);
    const out = path.join(dir, 'tools.html');
    // The build before this change needed more than 112 MiB here (it died in the third pass); this one fits in 96 MiB.
    const got = await runCli(['report', file, '-o', out], { env: { NODE_OPTIONS: '--max-old-space-size=112', DSH_NO_REEXEC: '1', DSH_NO_CACHE: '1' } });
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const free = path.join(dir, 'tools-free.html');
    const want = await runInProcess(['report', file, '-o', free], { DSH_NO_CACHE: '1' });
    expect(want.code, want.stderr.slice(0, 2000)).toBe(0);
    const a = readFileSync(out);
    expect(a.length).toBeGreaterThan(60_000_000);
    expect(a.equals(readFileSync(free))).toBe(true);
  }, 900_000);
});

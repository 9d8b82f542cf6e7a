/**
 * Issue #15: the index folds a view does not read may be built on a worker thread beside the
 * validating pass (`src/log/index/remote-folds.ts`). What crosses to it is each event's fold
 * projection (`fold-wire.ts`), so the claim to prove is that folds fed the wire save exactly the
 * bytes folds fed the events save, closers included, or fail with the same message:
 * - in-process, over every corpus artifact, the rule mutations and moved rows (lean and whole
 *   reads), and over those logs' events bent into every shape the wire treats apart (odd turns and
 *   steps, absent or odd `data`, messages and content, non-numeric sources, odd surface ops, times and
 *   seqs), in batches cut at every size so row runs cross them;
 * - on the real worker (the compiled build), over every corpus artifact, and a fold the worker
 *   cannot load saves nothing rather than something else;
 * - through the CLI: with `DSH_FOLD_THREAD=on` a cold command writes the index this way, and the
 *   warm commands that read those folds print what `--no-cache` prints.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { foldInputs } from './helpers/fold-inputs.js';
import { runCli } from './helpers/cli.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { SESSION_FOLDS } from '../src/views/index-folds.js';
import { FoldWireWriter, readWire } from '../src/log/index/fold-wire.js';
import { RowChunk } from '../src/log/pruned-event.js';
import type { PersistentFold } from '../src/log/index/session-index.js';
import type { SessionEvent } from '../src/log/types.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);
const BUILT = existsSync(path.join(PROJECT_ROOT, 'dist', 'log', 'index', 'fold-thread.js'));
if (!BUILT) console.warn('dist/ is not built (npx tsc -p tsconfig.json): the fold thread tests that run the worker are skipped');

const OFF_THREAD = SESSION_FOLDS.filter((f) => f.offThread !== undefined);

interface Pass {
  events: SessionEvent[];
  closers: SessionEvent[];
  count: number;
}

/** A log's logical stored events and closers, as the index pass hands them to its folds (lean or whole rows); undefined when DSH refuses it. */
async function passOf(file: string, lean: boolean): Promise<Pass | undefined> {
  const events: SessionEvent[] = [];
  const r = await inspectTarget(resolveTarget(file), { collect: false, skipArtifact: true, ...(lean ? { leanRows: () => true } : {}), onLogical: (e) => void events.push(e) });
  if (r.error) return undefined;
  return { events, closers: r.closers, count: r.storedEventCount };
}

/** Each fold's saved bytes (base64, or `unsaved`), or the message it failed with. */
function folded(folds: readonly PersistentFold[], feed: (observe: (e: SessionEvent) => void) => void, closers: readonly SessionEvent[], count: number): string {
  const builders = folds.map((f) => f.create());
  try {
    feed((e) => {
      for (const b of builders) b.observe(e);
    });
    for (const b of builders) b.end?.(closers, count);
    return builders.map((b) => b.encode()?.toString('base64') ?? 'unsaved').join(' ');
  } catch (error) {
    return `failed: ${(error as Error).message}`;
  }
}

/** The folds fed the events themselves. */
function direct(p: Pass): string {
  return folded(OFF_THREAD, (observe) => p.events.forEach(observe), p.closers, p.count);
}

/** The folds fed what crosses the wire, in batches of `every` events (the closers in one batch of their own). */
function wired(p: Pass, every: number, cursor: boolean): string {
  const closers: SessionEvent[] = [];
  const w = new FoldWireWriter();
  for (const c of p.closers) w.write(c);
  const cb = w.flush();
  if (cb) readWire(cb, (e) => void closers.push(e));
  return folded(
    OFF_THREAD,
    (observe) => {
      const writer = new FoldWireWriter();
      p.events.forEach((e, i) => {
        writer.write(e);
        if ((i + 1) % every === 0 || writer.full) {
          const b = writer.flush();
          if (b) readWire(b, observe, cursor);
        }
      });
      const b = writer.flush();
      if (b) readWire(b, observe, cursor);
    },
    closers,
    p.count,
  );
}

/** Values of every kind the wire treats apart. */
const ODD: unknown[] = [undefined, null, 0, -0, 1.5, -3, '1', '', 'finish', true, [], [1], {}, { length: 0 }, { type: 'tool-call', id: 'x' }];

/** `e` bent at one fold-visible place by `k` (a copy; rows' members become odd members of their own). */
function bend(e: SessionEvent, k: number): SessionEvent {
  const odd = ODD[k % ODD.length];
  if (e instanceof RowChunk) {
    const data = k % 2 === 0 ? { turn: odd, step: e.data.step } : { turn: e.data.turn, step: odd };
    return new RowChunk(e.type, k % 5 === 0 ? (odd as number) : e.seq, k % 7 === 0 ? (odd as number) : e.time, data);
  }
  const c = JSON.parse(JSON.stringify(e)) as SessionEvent & Record<string, unknown>;
  const set = (o: Record<string, unknown>, key: string) => {
    if (odd === undefined) delete o[key];
    else o[key] = odd;
  };
  const data = c.data !== null && typeof c.data === 'object' && !Array.isArray(c.data) ? (c.data as Record<string, unknown>) : undefined;
  const message = data && data['message'] !== null && typeof data['message'] === 'object' ? (data['message'] as Record<string, unknown>) : undefined;
  switch (Math.floor(k / ODD.length) % 12) {
    case 0:
      if (data) set(data, 'turn');
      break;
    case 1:
      if (data) set(data, 'step');
      break;
    case 2:
      set(c, 'data');
      break;
    case 3:
      if (data) set(data, 'message');
      break;
    case 4:
      if (message) set(message, 'content');
      break;
    case 5:
      if (message) message['content'] = [odd, { type: 'tool-call', id: `bent-${k}` }, { type: 'tool-call', id: k }, { type: 'text' }, odd];
      break;
    case 6:
      c['sourceEventSeqs'] = k % 3 === 0 ? odd : [odd, e.seq - 1, -0, 1.5];
      break;
    case 7:
      // A key whose value is undefined is there as a parsed event's is not: the fold counts it (S4).
      c['surfaceOp'] = k % 4 === 0 ? odd : k % 4 === 1 ? { op: 'replace', start: 1, end: 2, extra: odd } : k % 4 === 2 ? { op: 'replace', start: odd, end: 2 } : { end: 1, op: 'replace', start: 0 };
      break;
    case 8:
      set(c, 'time');
      break;
    case 9:
      set(c, 'seq');
      break;
    case 10:
      if (data) data['chunk'] = k % 3 === 0 ? odd : { type: odd };
      break;
    case 11:
      if (data) set(data, 'callId');
      break;
  }
  return c;
}

describe.skipIf(!HAVE_CORPUS)('the fold wire: what the folds read crosses exactly', () => {
  it('folds fed the wire save what folds fed the events: corpus, rule mutations, moved rows, lean and whole', async () => {
    expect(OFF_THREAD.map((f) => f.tag).sort()).toEqual([102, 105]);
    const { targets } = await foldInputs('dsh-fold-wire-');
    const differ: string[] = [];
    let compared = 0;
    let saved = 0;
    for (const [name, file] of targets) {
      for (const lean of [true, false]) {
        const p = await passOf(file, lean);
        if (!p) continue;
        const want = direct(p);
        compared++;
        if (!want.startsWith('failed')) saved++;
        for (const [every, cursor] of [[1 << 30, true], [1, true], [7, false], [3, true]] as const) {
          const got = wired(p, every, cursor);
          if (got !== want) differ.push(`${name} (lean ${lean}, batches of ${every}, cursor ${cursor}):\n  events ${want.slice(0, 300)}\n  wire   ${got.slice(0, 300)}`);
        }
      }
    }
    console.log(`fold wire: ${compared} passes of ${targets.length} logs compared (${saved} saved)`);
    expect(differ).toEqual([]);
    expect(saved).toBeGreaterThan(300);
  }, 600_000);

  it('and on events bent into every shape the wire treats apart', async () => {
    // The logs with the most kinds of event; each kind (a packed row's member being one), bent at
    // each place in each way, its first three events at a time.
    const kinds = (p: Pass) => new Set(p.events.map((e) => (e instanceof RowChunk ? 'row' : e.type)));
    const passes: [string, Pass][] = [];
    for (const c of corpusCases().filter((c) => c.artifact.endsWith('session.jsonl'))) {
      const p = await passOf(c.artifact, true);
      if (p && p.events.length > 0) passes.push([c.name, p]);
    }
    passes.sort((a, b) => kinds(b[1]).size - kinds(a[1]).size);
    const differ: string[] = [];
    let variants = 0;
    const outcomes = new Set<string>();
    const covered = new Set<string>();
    // The kinds the wire writes apart, and one kind it projects as any other.
    const apart = ['row', 'assistant/chunk', 'assistant/message', 'tool/result', 'tool/call', 'user/message', 'step/start', 'step/end', 'turn/end', 'request/header'];
    for (const [name, whole] of passes.slice(0, 3)) {
      // The first 250 events are enough for every kind (the folds do not validate; the closers stay the log's).
      const p = { ...whole, events: whole.events.slice(0, 250) };
      const other = [...kinds(p)].find((k) => !apart.includes(k));
      for (const kind of [...kinds(p)].filter((k) => apart.includes(k) || k === other)) {
        const at = p.events.flatMap((e, i) => ((e instanceof RowChunk ? 'row' : e.type) === kind ? [i] : [])).slice(0, 3);
        for (let k = 0; k < ODD.length * 12; k++) {
          const events = p.events.slice();
          for (const i of at) events[i] = bend(events[i] as SessionEvent, k);
          const closers = p.closers.map((e, i) => (i === 0 && k % 5 === 0 ? bend(e, k) : e));
          const bent = { events, closers, count: p.count };
          const want = direct(bent);
          outcomes.add(want.startsWith('failed') ? 'failed' : 'saved');
          covered.add(kind);
          variants++;
          const got = wired(bent, k % 2 === 0 ? 1 << 30 : 2, k % 3 !== 0);
          if (got !== want) differ.push(`${name}: ${kind} bent by ${k}:\n  events ${want.slice(0, 300)}\n  wire   ${got.slice(0, 300)}`);
        }
      }
    }
    console.log(`fold wire: ${variants} bent logs compared, kinds ${[...covered].sort().join(', ')}`);
    expect(differ.slice(0, 5)).toEqual([]);
    // Both kinds of outcome were compared (bytes, and failures with their messages), on every kind that crosses apart.
    expect([...outcomes].sort()).toEqual(['failed', 'saved']);
    for (const kind of ['row', 'assistant/chunk', 'assistant/message', 'tool/result', 'tool/call', 'user/message', 'step/start']) expect(covered).toContain(kind);
  }, 600_000);
});

describe.skipIf(!HAVE_CORPUS || !BUILT)('the fold thread: the worker saves what the pass would', () => {
  const dist = (p: string) => path.join(PROJECT_ROOT, 'dist', p);

  it('on every corpus artifact; a fold the worker cannot load saves nothing', async () => {
    const { FoldThread } = await import(dist('log/index/remote-folds.js'));
    const { resolveTarget: resolveBuilt, inspectTarget: inspectBuilt } = await import(dist('api/log.js'));
    const { SESSION_FOLDS: builtFolds } = await import(dist('api/views.js'));
    const off = (builtFolds as PersistentFold[]).filter((f) => f.offThread);
    const differ: string[] = [];
    let compared = 0;
    for (const c of corpusCases()) {
      const thread = FoldThread.start(off);
      const local = off.map((f) => f.create());
      const r = await inspectBuilt(resolveBuilt(c.artifact), {
        collect: false,
        skipArtifact: true,
        leanRows: () => true,
        onLogical: (e: SessionEvent) => {
          thread.observe(e);
          for (const b of local) b.observe(e);
        },
      });
      if (r.error) {
        thread.cancel();
        continue;
      }
      for (const b of local) b.end?.(r.closers, r.storedEventCount);
      const want = local.map((b) => b.encode()?.toString('base64') ?? 'unsaved').join(' ');
      const bytes: Map<number, Buffer | undefined> = await thread.finish(r.closers, r.storedEventCount);
      const got = off.map((f) => bytes.get(f.tag)?.toString('base64') ?? 'unsaved').join(' ');
      compared++;
      if (got !== want) differ.push(`${c.name}:\n  pass   ${want.slice(0, 200)}\n  thread ${got.slice(0, 200)}`);
    }
    expect(differ).toEqual([]);
    expect(compared).toBeGreaterThan(150);

    // A fold whose module the worker cannot load: nothing is saved for it (the index is then not written).
    const missing = { ...off[0], tag: 999, offThread: { module: 'file:///nonexistent/dsh-fold.js', name: 'NONE' } };
    const broken = FoldThread.start([missing]);
    broken.observe({ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } });
    const none: Map<number, Buffer | undefined> = await broken.finish([], 1);
    expect([...none]).toEqual([[999, undefined]]);
  }, 600_000);

  it('through the CLI: the index it writes answers warm as --no-cache does', async () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'dsh-fold-thread-cache-'));
    try {
      const logs = corpusCases()
        .filter((c) => /synthetic\/(root-zstd|root-raw)/.test(c.name))
        .slice(0, 12)
        .map((c) => c.artifact);
      logs.push(path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd'));
      let indexed = 0;
      for (const log of logs) {
        const env = { DSH_CACHE_DIR: cache, DSH_FOLD_THREAD: 'on' };
        // Cold: `surface` reads neither the dispatch index nor the replay plan, so both are built on the worker.
        const cold = await runCli(['surface', log, '--json'], { env });
        const entries = JSON.parse((await runCli(['cache', '--json'], { env })).stdout).entries as { path: string }[];
        // An accepted log's index was written, the worker's folds in it (a fold it could not save writes none).
        if (cold.code !== 0) continue;
        expect(entries.some((e) => e.path === log)).toBe(true);
        indexed++;
        for (const argv of [['request', log, '--list', '--json'], ['replay', log, '--json'], ['request', log, '--step', '1/1', '--json']]) {
          const want = await runCli([...argv, '--no-cache'], { env });
          const got = await runCli(argv, { env });
          expect({ argv, code: got.code, stdout: got.stdout, stderr: got.stderr }).toEqual({ argv, code: want.code, stdout: want.stdout, stderr: want.stderr });
        }
      }
      expect(indexed).toBeGreaterThan(5);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 600_000);
});

/**
 * The persistent session index (src/log/index): every indexed command gives,
 * cold, on the run that builds the index, warm, and after the log changed,
 * exactly the stdout, stderr and exit code of a run without the cache. The corpus-wide campaigns are in
 * test/index-cache-corpus.test.ts (npm run test:full).
 */
/**
 * The persistent session index (src/log/index): every indexed command gives,
 * cold, on the run that builds the index, warm, and after the log changed,
 * exactly the stdout, stderr and exit code of a run without the cache.
 */
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { dispatchFacts } from './helpers/index-facts.js';
const CORPUS_ROOT_ZSTD = path.join(CORPUS, 'synthetic', 'root-zstd');
import { runCli, runInProcess, type RunResult } from './helpers/cli.js';
import { collectSession, writeGeneratedArtifact } from '../tools/generate.js';
import { ArtifactEncoder } from '../src/log/writer.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTargetIndexed } from '../src/log/session.js';
import { cacheConfig, clearEntries, listEntryFiles } from '../src/log/index/cache.js';
import { CITATIONS, SESSION_FOLDS, foldOf } from '../src/views/index-folds.js';
import { DISPATCHES } from '../src/views/dispatch-fold.js';
import { REPLAY_PLAN } from '../src/views/replay.js';
import { baseEvents, logText, toolResultData, toolTurn } from './helpers/logtext.js';
import type { PersistentFold } from '../src/log/index/session-index.js';
import { IndexFileReader } from '../src/log/index/codec.js';
import { MemorySource } from '../src/physical/source.js';
import { toJson } from '../src/core/json.js';
import { commandLines, expectSameEveryWay, run, type DispatchMark, scratchDir } from './helpers/index-cache-run.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const { dir: TMP, freshCache } = scratchDir();

/** Every file under `dir` with its size and content hash (a snapshot of the file system). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        out[p + '/'] = 'dir';
        walk(p);
      } else out[p] = fs.readFileSync(p).toString('base64');
    }
  };
  walk(dir);
  return out;
}

/** A generated session written with the project's own writer: the header and the first `upTo` batches. */
async function writtenLog(seed: number, encoding: 'zstd' | 'none') {
  const s = collectSession({ seed, id: `grow-${seed}`, targetBytes: 200_000, crash: 'mid-tool', maxBatchEvents: 40 });
  const enc = new ArtifactEncoder({ header: s.header, encoding });
  const parts: Buffer[] = [await enc.header()];
  for (const b of s.batches) parts.push(await enc.batch(b));
  const total = s.events.length;
  return { parts, total, batches: s.batches };
}

async function lines(file: string, total: number): Promise<string[][]> {
  const listed = await runInProcess(['request', file, '--list', '--json', '--no-cache'], { DSH_CACHE_DIR: path.join(TMP, 'unused') });
  const dispatches: DispatchMark[] = listed.code === 0 ? JSON.parse(listed.stdout).requests : [];
  return commandLines(file, total, dispatches);
}

async function sameAsCold(file: string, total: number, cacheDir: string): Promise<void> {
  for (const args of await lines(file, total)) {
    const cold = await run([...args, '--no-cache'], cacheDir);
    const cached = await run(args, cacheDir);
    expect({ args, ...cached }).toEqual({ args, ...cold });
  }
}

describe('a log that changes after it was indexed', () => {
  for (const encoding of ['zstd', 'none'] as const) {
    it(`${encoding}: grown, torn then completed, truncated and re-appended, replaced — always the cold answer`, async () => {
      const cacheDir = freshCache();
      const dir = fs.mkdtempSync(path.join(TMP, 'grow-'));
      const file = path.join(dir, encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
      const { parts, total } = await writtenLog(encoding === 'zstd' ? 3 : 4, encoding);
      expect(parts.length).toBeGreaterThan(8);
      const half = Math.floor(parts.length / 2);
      const prefix = Buffer.concat(parts.slice(0, half));
      fs.writeFileSync(file, prefix);
      await expectSameEveryWay(await lines(file, total), cacheDir);
      // Through the API: was the index extended (only the new bytes validated) or rebuilt?
      const use = { cache: cacheConfig({ DSH_CACHE_DIR: cacheDir }), folds: SESSION_FOLDS, needs: [CITATIONS] };
      const extendedNow = async () => {
        const r = await inspectTargetIndexed(resolveTarget(file), {}, use);
        r.close();
        return r.extended === true;
      };
      // Grown by appends (old bytes unchanged).
      for (let k = half; k < parts.length - 1; k += 3) {
        fs.writeFileSync(file, Buffer.concat(parts.slice(0, k + 1)));
        expect(await extendedNow()).toBe(true);
        await sameAsCold(file, total, cacheDir);
      }
      // A torn write, then the same write completed.
      const next = parts[parts.length - 1] as Buffer;
      const before = Buffer.concat(parts.slice(0, parts.length - 1));
      fs.writeFileSync(file, Buffer.concat([before, next.subarray(0, Math.floor(next.length / 2))]));
      expect(await extendedNow()).toBe(true);
      await sameAsCold(file, total, cacheDir);
      fs.writeFileSync(file, Buffer.concat([before, next]));
      // The saved point lies before the torn line/frame (a zstd torn frame that yielded events keeps none: rebuilt).
      const tornYielded = (await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: { ...use.cache, enabled: false } })).inspection;
      expect(tornYielded.error).toBeUndefined();
      if (encoding === 'none') expect(await extendedNow()).toBe(true);
      else await extendedNow();
      await sameAsCold(file, total, cacheDir);
      // DSH's load(): truncate the torn tail, then append something else.
      // (A torn tail that happens to be a prefix of what is re-appended is a genuine prefix, and extends.)
      const tornTail = next.subarray(0, 40);
      expect(tornTail.equals((parts[1] as Buffer).subarray(0, 40))).toBe(false);
      fs.writeFileSync(file, Buffer.concat([before, tornTail]));
      await sameAsCold(file, total, cacheDir);
      fs.truncateSync(file, before.length);
      fs.appendFileSync(file, parts[1] as Buffer);
      expect(await extendedNow()).toBe(false);
      await sameAsCold(file, total, cacheDir);
      // Replaced by another log of the same size class.
      const other = await writtenLog(encoding === 'zstd' ? 5 : 6, encoding);
      fs.writeFileSync(file, Buffer.concat(other.parts));
      expect(await extendedNow()).toBe(false);
      await sameAsCold(file, other.total, cacheDir);
      // Grown, with one old byte changed where the extension never reads (inside an early frame's
      // compressed data, or an early line): the extension runs while the log is hashed, and the hash
      // must stop it answering. Every cached command gives the cold answer.
      const otherHalf = Math.floor(other.parts.length / 2);
      fs.writeFileSync(file, Buffer.concat(other.parts.slice(0, otherHalf)));
      await extendedNow();
      const grownFlipped = Buffer.concat(other.parts);
      const early = (other.parts[0] as Buffer).length + Math.floor((other.parts[1] as Buffer).length / 2);
      grownFlipped[early] = (grownFlipped[early] as number) ^ 0x20;
      fs.writeFileSync(file, grownFlipped);
      expect(await extendedNow()).toBe(false);
      fs.writeFileSync(file, Buffer.concat(other.parts.slice(0, otherHalf)));
      await extendedNow();
      fs.writeFileSync(file, grownFlipped);
      await sameAsCold(file, other.total, cacheDir);
    }, 300_000);
  }

  it('single-byte flips of an indexed log give the cold answer every time', async () => {
    const cacheDir = freshCache();
    for (const encoding of ['zstd', 'none'] as const) {
      const dir = fs.mkdtempSync(path.join(TMP, 'flip-'));
      const file = path.join(dir, encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
      const { parts, total } = await writtenLog(8, encoding);
      const original = Buffer.concat(parts.slice(0, 12));
      fs.writeFileSync(file, original);
      const probe: string[][] = [
        ['trace', file, '5', '--json'],
        ['request', file, '--list', '--json'],
        ['history', file, '--max-messages', '2'],
      ];
      const step = Math.max(1, Math.floor(original.length / 40));
      for (let at = 0; at < original.length; at += step) {
        fs.writeFileSync(file, original);
        // The original's entry the only one of its size (a speculating read bets on it below).
        clearEntries(cacheConfig({ DSH_CACHE_DIR: cacheDir }));
        for (const args of probe) await run(args, cacheDir); // index the original bytes
        const flipped = Buffer.from(original);
        flipped[at] = (flipped[at] as number) ^ (1 << (at % 8));
        fs.writeFileSync(file, flipped);
        for (const args of probe) {
          const cold = await run([...args, '--no-cache'], cacheDir);
          // First while the one entry of this size is the original's: a speculating read bets on it and loses.
          const peeked = await run([...args, '--peek-min-bytes', '0'], cacheDir);
          expect({ at, args, ...peeked }).toEqual({ at, args, ...cold });
          const cached = await run(args, cacheDir);
          expect({ at, args, ...cached }).toEqual({ at, args, ...cold });
        }
      }
      expect(total).toBeGreaterThan(10);
    }
  }, 300_000);
});

describe('a grown log DSH refuses', () => {
  it('is extended once (beside the hash), then read cold: the answer is the cold one', async () => {
    const file = path.join(fs.mkdtempSync(path.join(TMP, 'refused-growth-')), 'session.jsonl');
    const text = logText(baseEvents());
    fs.writeFileSync(file, text);
    let resumed = 0;
    const counted = SESSION_FOLDS.map((f): PersistentFold => (f.resume ? { ...f, resume: (bytes, prefix) => (resumed++, f.resume!(bytes, prefix)) } : f));
    const use = { cache: cacheConfig({ DSH_CACHE_DIR: freshCache() }), folds: counted, needs: [CITATIONS] };
    (await inspectTargetIndexed(resolveTarget(file), {}, use)).close();
    // Grown by a turn/end whose seq skips ahead: a seq gap in the committed region, which DSH refuses.
    const lines = text.trimEnd().split('\n');
    const count = lines.length - 1;
    fs.appendFileSync(file, JSON.stringify({ type: 'turn/end', seq: count + 3, time: 5000, data: { turn: 3, reason: { kind: 'completed' } } }) + '\n');
    const cold = await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: cacheConfig({ DSH_NO_CACHE: '1' }) });
    cold.close();
    expect(cold.inspection.error?.message).toMatch(/seq gap/);
    const grown = await inspectTargetIndexed(resolveTarget(file), {}, use);
    grown.close();
    expect(grown.extended).not.toBe(true);
    expect(toJson(grown.inspection.error)).toBe(toJson(cold.inspection.error));
    // Each resumable fold went on from its saved bytes once: the extension was not run a second time.
    expect(resumed).toBe(SESSION_FOLDS.filter((f) => f.resume).length);
  });
});

describe('a grown log that rewrites a tool result of the indexed prefix', () => {
  // The prefix's tool/result (seq 36, on the surface) is rewritten by the appended events: the
  // extension goes on without its payload and checks the rewrite (DSH's S12) once it is read back.
  const rewrite = (count: number, data: unknown) =>
    JSON.stringify({ type: 'tool/result', seq: count, time: 9000, data, surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] }) + '\n';
  const grownRun = async (appended: (count: number) => string) => {
    const file = path.join(fs.mkdtempSync(path.join(TMP, 'rewrite-growth-')), 'session.jsonl');
    const text = logText([...baseEvents(), ...toolTurn()]);
    fs.writeFileSync(file, text);
    let resumed = 0;
    const counted = SESSION_FOLDS.map((f): PersistentFold => (f.resume ? { ...f, resume: (bytes, prefix) => (resumed++, f.resume!(bytes, prefix)) } : f));
    const use = { cache: cacheConfig({ DSH_CACHE_DIR: freshCache() }), folds: counted, needs: [DISPATCHES] };
    (await inspectTargetIndexed(resolveTarget(file), {}, use)).close();
    fs.appendFileSync(file, appended(text.trimEnd().split('\n').length - 1));
    const read = async (r: Awaited<ReturnType<typeof inspectTargetIndexed>>) => {
      try {
        return {
          extended: r.extended === true,
          error: r.inspection.error?.message ?? null,
          answer: { error: toJson(r.inspection.error ?? null), surface: toJson(r.inspection.surface ?? null), dispatches: r.inspection.error ? null : await dispatchFacts(r) },
        };
      } finally {
        r.close();
      }
    };
    const cold = await read(await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: cacheConfig({ DSH_NO_CACHE: '1' }) }));
    const grown = await read(await inspectTargetIndexed(resolveTarget(file), {}, use));
    return { cold, grown, resumed };
  };
  it('one that changes only the content is extended, and answers as the cold read', async () => {
    const { cold, grown, resumed } = await grownRun((count) => rewrite(count, toolResultData(3, 1, 'c9', 't9', '[pruned]')));
    expect(cold.error).toBeNull();
    expect(cold.answer.surface).toContain('"start":36,"end":36,"shadowedSeqs":[36]');
    expect(resumed).toBeGreaterThan(0);
    expect(grown.extended).toBe(true);
    expect(grown.answer).toEqual(cold.answer);
  });
  it('one that changes more than the content is refused with DSH\'s words at that event, as the cold read refuses it', async () => {
    const changed = toolResultData(3, 1, 'c9', 't9', '[pruned]');
    (changed.message.content[0] as { isError: boolean }).isError = true;
    // Events after the rewrite, accepted on their own: the refusal is the rewrite's.
    const { cold, grown } = await grownRun((count) => rewrite(count, changed) + JSON.stringify({ type: 'todo/write', seq: count + 1, time: 9001, data: { todos: [] } }) + '\n');
    expect(cold.error).toMatch(/may change only content/);
    expect(grown.extended).toBe(false);
    expect(grown.answer).toEqual(cold.answer);
  });
});

describe('a grown log whose tool calls name steps of the indexed prefix', () => {
  it('finds the saved steps\' dispatches by scanning, then by listing them all, as the cold read does (numbers and strings alike)', async () => {
    const file = path.join(fs.mkdtempSync(path.join(TMP, 'step-lookups-')), 'session.jsonl');
    const text = logText([...baseEvents(), ...toolTurn()]);
    fs.writeFileSync(file, text);
    const use = { cache: cacheConfig({ DSH_CACHE_DIR: freshCache() }), folds: SESSION_FOLDS, needs: [DISPATCHES] };
    (await inspectTargetIndexed(resolveTarget(file), {}, use)).close();
    // Calls no dispatch requested (unknown ids): each is owned by the last dispatch of the step it
    // names, looked up among the saved ones. More than the lookups answered by a scan, then more
    // after; a turn or step given as a string spells the same step key as the number.
    const named: [unknown, unknown][] = [[1, 1], [3, 1], [1, 2], [2, 1], [2, 9], ['3', 1], [1, '1'], [7, 1]];
    const calls = Array.from({ length: 40 }, (_, i) => named[i % named.length]!);
    const count = text.trimEnd().split('\n').length - 1;
    const grownEvents = [
      { type: 'turn/start', data: { turn: 4 } },
      ...calls.map(([turn, step], i) => ({ type: 'tool/call', data: { turn, step, callId: `lost-${i}`, name: 'read', arguments: '{}' } })),
      { type: 'turn/end', data: { turn: 4, reason: { kind: 'completed' } } },
    ].map((e, i) => JSON.stringify({ seq: count + i, time: 5000 + i, ...e }));
    fs.appendFileSync(file, grownEvents.join('\n') + '\n');
    const read = async (r: Awaited<ReturnType<typeof inspectTargetIndexed>>) => {
      try {
        return { extended: r.extended === true, error: r.inspection.error?.message ?? null, dispatches: await dispatchFacts(r) };
      } finally {
        r.close();
      }
    };
    const cold = await read(await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: cacheConfig({ DSH_NO_CACHE: '1' }) }));
    const grown = await read(await inspectTargetIndexed(resolveTarget(file), {}, use));
    expect(cold.error).toBeNull();
    // The appended calls that name a step with dispatches are owned (the test means something).
    const ownedCalls = cold.dispatches.owners.filter(([seq]) => seq > count && seq < count + 1 + calls.length);
    expect(ownedCalls.length).toBe(calls.filter(([turn, step]) => !(turn === 2 && step === 9) && turn !== 7).length);
    expect(grown.extended).toBe(true);
    expect(grown.dispatches).toEqual(cold.dispatches);
  });
});

describe('a grown log whose new dispatch the index cannot keep', () => {
  it('gives up the extension when the resumed dispatch index cannot be saved: the cold answer, and nothing extended', async () => {
    const file = path.join(fs.mkdtempSync(path.join(TMP, 'unkept-growth-')), 'session.jsonl');
    const text = logText(baseEvents());
    fs.writeFileSync(file, text);
    const use = { cache: cacheConfig({ DSH_CACHE_DIR: freshCache() }), folds: SESSION_FOLDS, needs: [DISPATCHES] };
    (await inspectTargetIndexed(resolveTarget(file), {}, use)).close();
    // A turn whose dispatch starts at a chunk time that is not an integer: DSH accepts the log, the index cannot hold the time.
    const count = text.trimEnd().split('\n').length - 1;
    const grownEvents = [
      { type: 'turn/start', data: { turn: 3 } },
      { type: 'step/start', data: { turn: 3, step: 1 } },
      { type: 'assistant/chunk', data: { turn: 3, step: 1.5, chunk: { type: 'finish', reason: { kind: 'stop' } } } },
      { type: 'step/end', data: { turn: 3, step: 1 } },
      { type: 'turn/end', data: { turn: 3, reason: { kind: 'completed' } } },
    ].map((e, i) => JSON.stringify({ type: e.type, seq: count + i, time: 1000 + count + i, ...e }));
    fs.appendFileSync(file, grownEvents.join('\n') + '\n');
    const cold = await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: cacheConfig({ DSH_NO_CACHE: '1' }) });
    cold.close();
    expect(cold.inspection.error).toBeUndefined();
    expect(foldOf(cold.folds, DISPATCHES).index.requests.at(-1)?.step).toBe(1.5);
    const grown = await inspectTargetIndexed(resolveTarget(file), {}, use);
    grown.close();
    expect(grown.extended).not.toBe(true);
    expect(toJson(foldOf(grown.folds, DISPATCHES).index)).toBe(toJson(foldOf(cold.folds, DISPATCHES).index));
  });
});

describe('the folds a validating pass builds', () => {
  it('with no cache, only the folds the view reads; writing the index, every fold, but the view is handed only those it reads', async () => {
    const file = path.join(fs.mkdtempSync(path.join(TMP, 'folds-')), 'session.jsonl');
    fs.writeFileSync(file, logText(baseEvents()));
    let created: number[] = [];
    const counted = SESSION_FOLDS.map((f): PersistentFold => ({ ...f, create: () => (created.push(f.tag), f.create()) }));
    const needs = counted.filter((f) => f.tag === REPLAY_PLAN.tag);
    const off = await inspectTargetIndexed(resolveTarget(file), {}, { cache: cacheConfig({ DSH_NO_CACHE: '1' }), folds: counted, needs });
    off.close();
    expect(off.inspection.error).toBeUndefined();
    expect(created).toEqual([REPLAY_PLAN.tag]);
    expect([...off.folds.keys()]).toEqual([REPLAY_PLAN.tag]);
    created = [];
    const cache = cacheConfig({ DSH_CACHE_DIR: freshCache() });
    const on = await inspectTargetIndexed(resolveTarget(file), {}, { cache, folds: counted, needs });
    on.close();
    expect(created.sort()).toEqual(SESSION_FOLDS.map((f) => f.tag).sort());
    expect([...on.folds.keys()]).toEqual([REPLAY_PLAN.tag]);
    expect(toJson(on.folds.get(REPLAY_PLAN.tag))).toBe(toJson(off.folds.get(REPLAY_PLAN.tag)));
    // The entry it wrote holds every fold: a view reading another one is answered warm.
    const warm = await inspectTargetIndexed(resolveTarget(file), {}, { cache, folds: SESSION_FOLDS, needs: [DISPATCHES] });
    warm.close();
    expect(warm.warm).toBe(true);
    expect(foldOf(warm.folds, DISPATCHES).index.requests.length).toBeGreaterThan(0);
  });
});

describe('the cache directory', () => {
  async function indexedLog(): Promise<{ file: string; total: number }> {
    const dir = fs.mkdtempSync(path.join(TMP, 'log-'));
    const file = path.join(dir, 'session.jsonl.zstd');
    const { parts, total } = await writtenLog(11, 'zstd');
    fs.writeFileSync(file, Buffer.concat(parts));
    return { file, total };
  }

  it('a corrupt, truncated or foreign-version index file is rebuilt with a note, never trusted', async () => {
    const { file, total } = await indexedLog();
    const cacheDir = freshCache();
    const args = ['trace', file, String(Math.floor(total / 2)), '--all'];
    const cold = await run([...args, '--no-cache'], cacheDir);
    expect(cold.code).toBe(0);
    expect(await run(args, cacheDir)).toEqual(cold);
    const [entry] = listEntryFiles(cacheConfig({ DSH_CACHE_DIR: cacheDir }));
    expect(entry).toBeDefined();
    const good = fs.readFileSync(entry!.file);
    const damage: [string, Buffer][] = [
      ['flipped byte in the table', flipped(good, 'table')],
      ['flipped byte in a section trace reads', flipped(good, CITATIONS.tag)],
      ['flipped byte in the summary', flipped(good, 3)],
      ['truncated', good.subarray(0, good.length - 9)],
      ['empty', Buffer.alloc(0)],
      ['foreign version', foreignVersion(good)],
      ['garbage', Buffer.from('not an index at all\n')],
    ];
    for (const [what, bytes] of damage) {
      fs.writeFileSync(entry!.file, bytes);
      const r = await run(args, cacheDir);
      expect({ what, stdout: r.stdout, code: r.code }).toEqual({ what, stdout: cold.stdout, code: cold.code });
      if (bytes.length > 0) expect(r.stderr).toMatch(/note: the cached session index .* is unusable \(.+\); rebuilding it/);
      // Rebuilt: the next run is warm and quiet.
      expect(fs.readFileSync(entry!.file).equals(good) || fs.readFileSync(entry!.file).length > 0).toBe(true);
      expect(await run(args, cacheDir)).toEqual(cold);
    }
    // A damaged section trace does not read is not read by it: trace answers from the verified
    // sections, quietly; request, which reads it, notes the damage and rebuilds the entry.
    fs.writeFileSync(entry!.file, flipped(good, DISPATCHES.tag));
    expect(await run(args, cacheDir)).toEqual(cold);
    const requestArgs = ['request', file, '--list', '--json'];
    const requestCold = await run([...requestArgs, '--no-cache'], cacheDir);
    const requested = await run(requestArgs, cacheDir);
    expect({ stdout: requested.stdout, code: requested.code }).toEqual({ stdout: requestCold.stdout, code: requestCold.code });
    expect(requested.stderr).toMatch(/note: the cached session index .* is unusable \(its section 102 does not match its checksum \(damaged or tampered\)\); rebuilding it/);
    expect(await run(requestArgs, cacheDir)).toEqual(requestCold);
    expect(await run(args, cacheDir)).toEqual(cold);
  }, 120_000);

  it('two processes building the same index at once leave one valid index', async () => {
    const { file, total } = await indexedLog();
    const cacheDir = freshCache();
    const args = ['history', file, '--max-messages', '3'];
    const cold = await run([...args, '--no-cache'], cacheDir);
    const both = await Promise.all([0, 1, 2].map(() => runCli(args, { env: { DSH_CACHE_DIR: cacheDir } })));
    for (const r of both) expect(r).toEqual(cold);
    const files = fs.readdirSync(path.join(cacheDir, 'index-v1'));
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.idx'))).toHaveLength(1);
    const warm = await run(args, cacheDir);
    expect(warm).toEqual(cold);
    expect(total).toBeGreaterThan(0);
  }, 120_000);

  it('evicts the least recently used entries past DSH_CACHE_MAX_BYTES', async () => {
    const cacheDir = freshCache();
    const files: string[] = [];
    for (let i = 0; i < 4; i++) {
      const dir = fs.mkdtempSync(path.join(TMP, 'evict-'));
      const file = path.join(dir, 'session.jsonl');
      fs.writeFileSync(file, Buffer.concat((await writtenLog(20 + i, 'none')).parts));
      files.push(file);
    }
    await run(['trace', files[0]!, '1'], cacheDir);
    const one = listEntryFiles(cacheConfig({ DSH_CACHE_DIR: cacheDir }))[0]!.bytes;
    const budget = String(Math.floor(one * 2.5));
    for (const f of files.slice(1)) {
      await new Promise((r) => setTimeout(r, 20));
      await run(['trace', f, '1'], cacheDir, { DSH_CACHE_MAX_BYTES: budget });
    }
    const left = listEntryFiles(cacheConfig({ DSH_CACHE_DIR: cacheDir }));
    expect(left.length).toBe(2);
    expect(left.reduce((a, e) => a + e.bytes, 0)).toBeLessThanOrEqual(Number(budget));
  }, 120_000);

  it('--no-cache and DSH_NO_CACHE=1 write nothing anywhere; an unwritable cache is a warning', async () => {
    const home = fs.mkdtempSync(path.join(TMP, 'home-'));
    const { file, total } = await indexedLog();
    const logDir = path.dirname(file);
    const env = { HOME: home, XDG_CACHE_HOME: '', DSH_CACHE_DIR: '', TMPDIR: path.join(home, 'tmp') };
    fs.mkdirSync(env.TMPDIR);
    const before = { home: snapshot(home), log: snapshot(logDir) };
    const a = await runCli(['trace', file, '3', '--no-cache'], { env });
    const b = await runCli(['history', file], { env: { ...env, DSH_NO_CACHE: '1' } });
    expect(a.code).toBe(0);
    expect(b.code).toBe(0);
    expect({ home: snapshot(home), log: snapshot(logDir) }).toEqual(before);
    // Without the flag the index goes to ~/.cache/dsh, and nowhere beside the log.
    const c = await runCli(['trace', file, '3'], { env });
    expect(c).toEqual(a);
    expect(snapshot(logDir)).toEqual(before.log);
    expect(Object.keys(snapshot(home)).some((p) => p.startsWith(path.join(home, '.cache', 'dsh', 'index-v1')) && p.endsWith('.idx'))).toBe(true);
    // A cache directory that cannot be created: same answer, one warning.
    const blocker = path.join(home, 'a-file');
    fs.writeFileSync(blocker, 'x');
    const d = await runCli(['trace', file, '3'], { env: { ...env, DSH_CACHE_DIR: path.join(blocker, 'cache') } });
    expect({ code: d.code, stdout: d.stdout }).toEqual({ code: a.code, stdout: a.stdout });
    expect(d.stderr).toMatch(/^dsh: warning: could not write the session index to .*; answers are unaffected/m);
    expect(total).toBeGreaterThan(3);
  }, 120_000);
});

/** A well-formed index file (valid checksum) of another format version. */
/** Where an index file's sections lie (its table read as dsh reads it). */
function sectionsOf(file: Buffer) {
  return new IndexFileReader(new MemorySource('index', file)).sections;
}

/** The index file with another format version, its table's checksum made right again (a file of another dsh). */
function foreignVersion(good: Buffer): Buffer {
  const { createHash } = require('node:crypto') as typeof import('node:crypto');
  const tableEnd = sectionsOf(good)[0]!.offset - 32;
  const out = Buffer.from(good);
  out[8] = 99; // the version varint follows the 8-byte magic
  createHash('sha256').update(out.subarray(0, tableEnd)).digest().copy(out, tableEnd);
  return out;
}

/** The index file with one byte flipped in the middle of section `tag` (or of its table: `table`). */
function flipped(good: Buffer, tag: number | 'table'): Buffer {
  const places = sectionsOf(good);
  const at = tag === 'table' ? 12 : (() => {
    const p = places.find((x) => x.tag === tag)!;
    return p.offset + Math.floor(p.length / 2);
  })();
  const out = Buffer.from(good);
  out[at] = (out[at] as number) ^ 0x10;
  return out;
}

describe('dsh cache', () => {
  it('lists entries (session, log, sizes, last use) and clears them', async () => {
    const cacheDir = freshCache();
    const dir = fs.mkdtempSync(path.join(TMP, 'list-'));
    const file = path.join(dir, 'session.jsonl.zstd');
    const log = await writtenLog(31, 'zstd');
    fs.writeFileSync(file, Buffer.concat(log.parts));
    const empty = await runCli(['cache', '--json'], { env: { DSH_CACHE_DIR: cacheDir } });
    expect(empty.code).toBe(0);
    expect(JSON.parse(empty.stdout)).toMatchObject({ dir: cacheDir, enabled: true, maxBytes: 2 * 1024 ** 3, totalBytes: 0, entries: [] });
    expect((await run(['trace', file, '2'], cacheDir)).code).toBe(0);
    const listed = JSON.parse((await run(['cache', '--json'], cacheDir)).stdout);
    expect(listed.entries).toHaveLength(1);
    expect(listed.entries[0]).toMatchObject({ sessionId: 'grow-31', path: file, logBytes: fs.statSync(file).size });
    expect(listed.entries[0].indexBytes).toBeGreaterThan(0);
    const text = await run(['cache'], cacheDir);
    expect(text.stdout).toContain(`cache    ${cacheDir}`);
    expect(text.stdout).toContain('grow-31');
    // Listing reads an entry's table and listing only, verified: it neither marks the entry used
    // nor fails on a damaged one (that entry is listed without its session).
    const entryFile = path.join(cacheDir, 'index-v1', `${listed.entries[0].entry}.idx`);
    const used = fs.statSync(entryFile).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    await run(['cache', '--json'], cacheDir);
    expect(fs.statSync(entryFile).mtimeMs).toBe(used);
    const bytes = fs.readFileSync(entryFile);
    fs.writeFileSync(entryFile, bytes.subarray(0, bytes.length - 1));
    const damaged = await run(['cache', '--json'], cacheDir);
    expect(damaged.code).toBe(0);
    expect(JSON.parse(damaged.stdout).entries[0]).toMatchObject({ entry: listed.entries[0].entry, sessionId: null, path: null, logBytes: null });
    fs.writeFileSync(entryFile, bytes);
    expect(JSON.parse((await run(['cache', '--json'], cacheDir)).stdout).entries[0]).toMatchObject({ sessionId: 'grow-31', path: file });
    const cleared = await run(['cache', 'clear'], cacheDir);
    expect(cleared).toMatchObject({ code: 0, stdout: `removed 1 session index(es) from ${cacheDir}\n` });
    expect(JSON.parse((await run(['cache', '--json'], cacheDir)).stdout).entries).toEqual([]);
    expect((await run(['cache', 'nonsense'], cacheDir)).code).toBe(2);
    // Listing writes nothing: no directory is created for it.
    const none = freshCache();
    await run(['cache'], none);
    expect(fs.existsSync(none)).toBe(false);
  }, 60_000);
});

describe.skipIf(!HAVE_CORPUS)('index cache and a session opened by id', () => {
  it('an index built from a by-path read never answers a by-id read DSH refuses (the identity check runs warm too)', async () => {
    const project = '--home-dsh-synthetic-project--';
    const sourceDir = path.join(CORPUS_ROOT_ZSTD, project);
    const id = fs.readdirSync(sourceDir).sort()[0]!;
    const root = fs.mkdtempSync(path.join(TMP, 'by-id-'));
    const dir = path.join(root, project, 'renamed');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'session.jsonl.zstd');
    fs.copyFileSync(path.join(sourceDir, id, 'session.jsonl.zstd'), file);
    const cacheDir = freshCache();
    for (const cmd of [['trace', '0'], ['surface'], ['history'], ['request', '--list'], ['events', '--from', '0', '--to', '2']]) {
      const [name, ...rest] = cmd as [string, ...string[]];
      // By path: dsh's forensic answer (the layout finding is a warning); this builds the index.
      expect((await run([name, file, ...rest], cacheDir)).code).toBe(0);
      const args = [name, 'renamed', ...rest, '--root', root];
      const cold = await run([...args, '--no-cache'], cacheDir);
      expect(cold.code).toBe(1);
      expect({ args, ...(await run(args, cacheDir)) }).toEqual({ args, ...cold });
    }
  }, 60_000);
});

describe('a warm read that reads its entry while the log is hashed (--peek-min-bytes 0)', () => {
  const PEEK = ['--peek-min-bytes', '0'];
  /** The cache of `dir` as a read given `--peek-min-bytes 0` has it. */
  const peekCache = (dir: string) => ({ ...cacheConfig({ DSH_CACHE_DIR: dir }), peekMinBytes: 0 });
  it('answers warm as the cold read does; an entry of another log of the same size is neither used, noted nor dropped', async () => {
    const cacheDir = freshCache();
    const dir = fs.mkdtempSync(path.join(TMP, 'peek-'));
    const file = path.join(dir, 'session.jsonl');
    const { parts, total } = await writtenLog(41, 'none');
    const a = Buffer.concat(parts);
    fs.writeFileSync(file, a);
    const cfg = peekCache(cacheDir);
    expect(cfg.peekMinBytes).toBe(0);
    const use = { cache: cfg, folds: SESSION_FOLDS };
    const viaApi = async () => {
      const r = await inspectTargetIndexed(resolveTarget(file), {}, use);
      r.close();
      return r.warm;
    };
    const args = ['trace', file, String(Math.floor(total / 2)), '--all', '--json'];
    const coldA = await run([...args, '--no-cache', ...PEEK], cacheDir);
    expect(coldA.code).toBe(0);
    expect(await run([...args, ...PEEK], cacheDir)).toEqual(coldA);
    expect(await viaApi()).toBe(true);
    expect(await run([...args, ...PEEK], cacheDir)).toEqual(coldA);
    for (const line of commandLines(file, total, [])) {
      const cold = await run([...line, '--no-cache', ...PEEK], cacheDir);
      await run([...line, ...PEEK], cacheDir);
      expect({ line, ...(await run([...line, ...PEEK], cacheDir)) }).toEqual({ line, ...cold });
    }
    const [entryA] = listEntryFiles(cfg);
    const goodA = fs.readFileSync(entryA!.file);
    // Another log of the very same size: one letter of an event's text changed.
    const b = Buffer.from(a);
    const at = b.indexOf('"text":"', parts[0]!.length) + 8;
    expect(at).toBeGreaterThan(8);
    b[at] = b[at] === 0x61 ? 0x62 : 0x61;
    fs.writeFileSync(file, b);
    const coldB = await run([...args, '--no-cache', ...PEEK], cacheDir);
    expect(coldB.code).toBe(0);
    // The one entry of this size is A's: read while B is hashed, then not B's.
    expect(await run([...args, ...PEEK], cacheDir)).toEqual(coldB);
    expect(await viaApi()).toBe(true);
    // A's entry was peeked at, not dropped; now B has one of its own too.
    expect(fs.readFileSync(entryA!.file).equals(goodA)).toBe(true);
    expect(listEntryFiles(cfg)).toHaveLength(2);
    // Damage A's entry, drop B's: B (the one entry of its size is A's, damaged) reads cold, quietly.
    for (const e of listEntryFiles(cfg)) if (e.file !== entryA!.file) fs.rmSync(e.file);
    // (A section trace reads: a section it does not read is not verified by it.)
    const damaged = flipped(goodA, CITATIONS.tag);
    fs.writeFileSync(entryA!.file, damaged);
    const again = await run([...args, ...PEEK], cacheDir);
    expect(again).toEqual(coldB);
    expect(again.stderr).not.toMatch(/unusable/);
    expect(fs.readFileSync(entryA!.file).equals(damaged)).toBe(true);
    // A again: its own entry is damaged, so it is noted, dropped and rebuilt.
    fs.rmSync(listEntryFiles(cfg).find((e) => e.file !== entryA!.file)!.file);
    fs.writeFileSync(file, a);
    const rebuilt = await run([...args, ...PEEK], cacheDir);
    expect({ stdout: rebuilt.stdout, code: rebuilt.code }).toEqual({ stdout: coldA.stdout, code: coldA.code });
    expect(rebuilt.stderr).toMatch(/note: the cached session index .* is unusable \(.+\); rebuilding it/);
    expect(await run([...args, ...PEEK], cacheDir)).toEqual(coldA);
  }, 120_000);

  const SPEC = [...PEEK, '--debug-speculation'];
  /**
   * Another log of the very same size whose header and last frames (what a warm read reads before it
   * answers) are A's: the first batch frame's checksum broken (zstd: DSH refuses it), or one letter of
   * its text changed (plain JSONL: another valid log).
   */
  function sameSizeOther(a: Buffer, parts: readonly Buffer[], encoding: 'zstd' | 'none'): Buffer {
    const b = Buffer.from(a);
    const at = encoding === 'zstd' ? parts[0]!.length + parts[1]!.length - 1 : b.indexOf('"text":"', parts[0]!.length) + 8;
    expect(at).toBeGreaterThan(8);
    expect(at).toBeLessThan(a.length / 2);
    b[at] = b[at] === 0x61 ? 0x62 : 0x61;
    return b;
  }
  const WON = /dsh: speculation won \(\d bets?\)\n$/;
  const LOST = /dsh: speculation lost \(\d bets?\)\n$/;
  /** The run without its --debug-speculation line, and how its speculation ended. */
  function debugged(r: RunResult): { r: RunResult; ended: 'won' | 'lost' | 'none' } {
    const ended = WON.test(r.stderr) ? 'won' : LOST.test(r.stderr) ? 'lost' : 'none';
    return { r: { ...r, stderr: r.stderr.replace(/dsh: speculation (won|lost) \(\d bets?\)\n$/, '') }, ended };
  }

  for (const encoding of ['zstd', 'none'] as const) {
    it(`${encoding}: a command answers from the entry before the hash names it, and prints only once it does; else asks again (every hold size)`, async () => {
      const cacheDir = freshCache();
      const cfg = peekCache(cacheDir);
      const dir = fs.mkdtempSync(path.join(TMP, 'speculate-'));
      const file = path.join(dir, encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
      const { parts, total } = await writtenLog(43, encoding);
      const a = Buffer.concat(parts);
      fs.writeFileSync(file, a);
      const commands = [...(await lines(file, total)), ['compactions', file, '--json'], ['transcript', file], ['diff', file, file]];
      const b = sameSizeOther(a, parts, encoding);
      expect(b.length).toBe(a.length);
      await run(commands[0]!, cacheDir);
      const [entryA] = listEntryFiles(cfg);
      const entryBytes = fs.readFileSync(entryA!.file);
      /** The cache holding A's entry only. */
      const onlyA = () => {
        for (const e of listEntryFiles(cfg)) if (e.file !== entryA!.file) fs.rmSync(e.file);
        fs.writeFileSync(entryA!.file, entryBytes);
      };
      const ended = { won: 0, lost: 0, none: 0 };
      for (const hold of ['0', '100', undefined]) {
        const hooks = [...SPEC, ...(hold !== undefined ? ['--speculation-hold-bytes', hold] : [])];
        for (const args of commands) {
          // A (the entry's own log: won), then B (lost).
          for (const bytes of [a, b]) {
            fs.writeFileSync(file, bytes);
            onlyA();
            const cold = await run([...args, '--no-cache'], cacheDir);
            const speculated = debugged(await run([...args, ...hooks], cacheDir));
            expect({ args, hold, ...speculated.r }).toEqual({ args, hold, ...cold });
            ended[speculated.ended]++;
            expect({ args, hold, ended: speculated.ended }).toEqual({ args, hold, ended: bytes === a ? 'won' : 'lost' });
            // A refused log has no entry of its own; an accepted one now has.
            if (bytes === b && cold.code === 0) expect(listEntryFiles(cfg).length).toBe(2);
          }
        }
      }
      // Every command speculated (diff twice: both its sides bet), won on A and lost on B.
      const n = commands.length * 3;
      expect(ended).toEqual({ won: n, lost: n, none: 0 });
      // --no-speculation: no speculation.
      fs.writeFileSync(file, a);
      onlyA();
      expect(debugged(await run([...commands[0]!, ...SPEC, '--no-speculation'], cacheDir)).ended).toBe('none');
    }, 300_000);
  }

  it('as a process: the held answer reaches the real stdout once won, and a lost one is asked again', async () => {
    const cacheDir = freshCache();
    const cfg = peekCache(cacheDir);
    const file = path.join(fs.mkdtempSync(path.join(TMP, 'speculate-process-')), 'session.jsonl.zstd');
    // Seed 43: its open turn starts after the first batch frame (sameSizeOther).
    const { parts } = await writtenLog(43, 'zstd');
    const a = Buffer.concat(parts);
    fs.writeFileSync(file, a);
    const env = { DSH_CACHE_DIR: cacheDir };
    // Answered from the index alone: a held answer from the wrong entry would differ from the cold one.
    const args = ['surface', file, '--json', ...SPEC];
    const held = [...args, '--speculation-hold-bytes', '1000'];
    const cold = await runCli([...args, '--no-cache'], { env });
    expect(cold.code).toBe(0);
    await runCli(args, { env });
    const won = debugged(await runCli(held, { env }));
    expect(won).toEqual({ r: cold, ended: 'won' });
    const [entryA] = listEntryFiles(cfg);
    const b = sameSizeOther(a, parts, 'zstd');
    fs.writeFileSync(file, b);
    const coldB = await runCli([...args, '--no-cache'], { env });
    const lost = debugged(await runCli(held, { env }));
    expect(lost).toEqual({ r: coldB, ended: 'lost' });
    expect(listEntryFiles(cfg).some((e) => e.file === entryA!.file)).toBe(true);
    // A log big enough to be hashed on the worker thread, through the descriptor the answer closes
    // first: the source stays open until the hash is done, and the bet is won.
    // Given by id, its size is unknown before the CLI loads: the hash worker is started first (bin/dsh.js)
    // and hashes it when the index is built and when it is read; by path, a worker started then does.
    const root = fs.mkdtempSync(path.join(TMP, 'speculate-worker-'));
    const big = path.join(root, '--home-dev-project--', 'spec-big', 'session.jsonl.zstd');
    fs.mkdirSync(path.dirname(big), { recursive: true });
    const info = await writeGeneratedArtifact(big, { seed: 5, id: 'spec-big', encoding: 'zstd', targetBytes: 24 << 20 });
    expect(fs.statSync(big).size).toBeGreaterThan(4 << 20);
    const seq = String(info.events - 1);
    const byId = ['trace', 'spec-big', seq, '--json', '--root', root, ...SPEC];
    const bigCold = await runCli([...byId, '--no-cache'], { env });
    expect(bigCold.code).toBe(0);
    await runCli(byId, { env });
    expect(debugged(await runCli(['trace', big, seq, '--json', ...SPEC], { env }))).toEqual({ r: bigCold, ended: 'won' });
    expect(debugged(await runCli(byId, { env }))).toEqual({ r: bigCold, ended: 'won' });
  }, 120_000);
});

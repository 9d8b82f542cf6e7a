/**
 * What a warm (index-answered) read holds: memory grows with the events a
 * view asks for, not with the log's event count. On the bench's 2 GB log
 * (12.85 M events) a one-event answer used to cost a 100 MB array.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectSession } from '../tools/generate.js';
import { ArtifactEncoder } from '../src/log/writer.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTargetIndexed } from '../src/log/session.js';
import { cacheConfig } from '../src/log/index/cache.js';
import { contentHash } from '../src/log/index/content-hash.js';
import { FileSource, MemorySource } from '../src/physical/source.js';
import { CITATIONS, SESSION_FOLDS, foldOf } from '../src/views/index-folds.js';
import { DISPATCHES } from '../src/views/dispatch-fold.js';
import type { SessionEvent } from '../src/log/types.js';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { dispatchFacts } from './helpers/index-facts.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-warm-memory-'));
afterAll(() => fs.rmSync(TMP, { recursive: true, force: true }));

/** A log of many small events (about 114,000), zstd, written with the project's writer. */
async function manyEventsLog(): Promise<{ file: string; total: number }> {
  const s = collectSession({ seed: 7, id: 'warm-memory', targetBytes: 10_000_000, toolOutputBytes: [16, 64], verbosity: 0.1 });
  const enc = new ArtifactEncoder({ header: s.header, encoding: 'zstd' });
  const parts: Buffer[] = [await enc.header()];
  for (const b of s.batches) parts.push(await enc.batch(b));
  const file = path.join(TMP, 'session.jsonl.zstd');
  fs.writeFileSync(file, Buffer.concat(parts));
  return { file, total: s.events.length };
}

let log: { file: string; total: number };
const cacheDir = path.join(TMP, 'cache');
const use = () => ({ cache: cacheConfig({ DSH_CACHE_DIR: cacheDir }), folds: SESSION_FOLDS });

beforeAll(async () => {
  log = await manyEventsLog();
  const cold = await inspectTargetIndexed(resolveTarget(log.file), {}, use());
  cold.close();
  expect(cold.inspection.error).toBeUndefined();
}, 120_000);

describe('a warm read holds what it answers, not the log', () => {
  it('100 one-event answers of a 100k-event log, held together, take a few MB (not 100 x 8 bytes per event)', async () => {
    expect(log.total).toBeGreaterThan(100_000);
    const warm = await inspectTargetIndexed(resolveTarget(log.file), {}, use());
    try {
      expect(warm.warm).toBe(true);
      const seq = Math.floor(log.total / 2);
      // Warm up the decoder and the segment cache before measuring.
      const first = await warm.events!([[seq, seq]]);
      expect(first[seq]?.seq).toBe(seq);
      expect(first.length).toBe(log.total + warm.inspection.closers.length);
      const held: SessionEvent[][] = [];
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 100; i++) held.push(await warm.events!([[seq, seq]]));
      const grew = process.memoryUsage().heapUsed - before;
      for (const h of held) expect(h[seq]).toEqual(first[seq]);
      // One 8-byte slot per event would be 100 x 0.9 MB; the events themselves are a few hundred bytes each.
      expect(grew).toBeLessThan(24 * 1024 * 1024);
      // Reading into an earlier answer (trace's provenance walk) keeps it sparse too.
      const into = await warm.events!([[seq, seq]]);
      const before2 = process.memoryUsage().heapUsed;
      const more: SessionEvent[][] = [];
      for (let i = 0; i < 50; i++) {
        const fresh = await warm.events!([[seq, seq]]);
        more.push(await warm.events!([[seq + 1, seq + 1]], fresh));
      }
      expect(process.memoryUsage().heapUsed - before2).toBeLessThan(24 * 1024 * 1024);
      expect(more[0]![seq + 1]?.seq).toBe(seq + 1);
      expect(into[seq + 1]).toBeUndefined();
    } finally {
      warm.close();
    }
  }, 120_000);
});

/** Who cites each seq, straight from the events (the rule the citations fold keeps). */
function naiveDerived(events: readonly SessionEvent[]): Map<number, number[]> {
  const out = new Map<number, number[]>(events.map((e) => [e.seq, []]));
  for (const e of events) {
    if (!Array.isArray(e.sourceEventSeqs)) continue;
    for (const s of e.sourceEventSeqs) if (Number.isSafeInteger(s) && s >= 0 && s < e.seq) out.get(s)?.push(e.seq);
  }
  return out;
}

describe('the citations fold keeps runs of consecutive sources', () => {
  const sources: unknown[][] = [[], [0], [], [0, 1, 2], [2, 1, 0], [1, 1, 2, 2], [9, 3, 4, 5, 0], [], ['1', 2.5, -1, null, 4, 5, 6], [7, 8, 3, 4, 5, 6], [], [], [10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]];
  const events = sources.map((src, seq) => ({ seq, type: 'assistant/message', time: 0, sourceEventSeqs: src }) as unknown as SessionEvent);
  const all = events.map((e) => e.seq);

  it('answers who cites what exactly (order, duplicates, unordered and invalid sources), built, saved and resumed', () => {
    const fresh = CITATIONS.create();
    for (const e of events) fresh.observe(e);
    const want = naiveDerived(events);
    expect(fresh.result().derivedOf(all)).toEqual(want);
    const saved = fresh.encode()!;
    expect(CITATIONS.decode(saved).derivedOf(all)).toEqual(want);
    expect(CITATIONS.decode(saved).derivedOf([3, 99])).toEqual(new Map([[3, want.get(3)], [99, []]]));
    for (let cut = 0; cut <= events.length; cut++) {
      const head = CITATIONS.create();
      for (const e of events.slice(0, cut)) head.observe(e);
      const tail = CITATIONS.resume!(head.encode()!, { storedEventCount: cut, surface: { nodes: [], replaceGeneration: 0, toolResults: new Map() } });
      for (const e of events.slice(cut)) tail.observe(e);
      expect({ cut, derived: tail.result().derivedOf(all) }).toEqual({ cut, derived: want });
      expect({ cut, saved: tail.encode() }).toEqual({ cut, saved });
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('warm folds equal the cold pass on every corpus artifact', () => {
  it('the saved dispatch index (decoded on demand) and citations answer as the cold builders do', async () => {
    const cache = cacheConfig({ DSH_CACHE_DIR: path.join(TMP, 'corpus-cache') });
    let compared = 0;
    for (const c of corpusCases()) {
      const cold = await inspectTargetIndexed(resolveTarget(c.artifact), {}, { cache, folds: SESSION_FOLDS });
      const warm = await inspectTargetIndexed(resolveTarget(c.artifact), {}, { cache, folds: SESSION_FOLDS });
      try {
        if (!warm.warm) continue;
        compared++;
        expect({ case: c.name, ...(await dispatchFacts(warm)) }).toEqual({ case: c.name, ...(await dispatchFacts(cold)) });
        const total = cold.inspection.storedEventCount + cold.inspection.closers.length;
        const seqs = Array.from({ length: total + 2 }, (_, i) => i);
        const closers = cold.inspection.closers;
        expect({ case: c.name, derived: foldOf(warm.folds, CITATIONS).derivedOf(seqs, closers) }).toEqual({ case: c.name, derived: foldOf(cold.folds, CITATIONS).derivedOf(seqs, closers) });
        const events = total > 0 ? await cold.events!([[0, total - 1]]) : [];
        const want = naiveDerived(events.filter((e) => e.seq < cold.inspection.storedEventCount));
        for (const e of closers) for (const s of e.sourceEventSeqs ?? []) if (Number.isSafeInteger(s) && s >= 0 && s < e.seq) want.get(s)?.push(e.seq);
        const got = foldOf(warm.folds, CITATIONS).derivedOf([...want.keys()], closers);
        expect({ case: c.name, derived: got }).toEqual({ case: c.name, derived: want });
      } finally {
        cold.close();
        warm.close();
      }
    }
    expect(compared).toBeGreaterThan(150);
  }, 600_000);
});

describe('the content hash an index is keyed by', () => {
  it('is the same on two threads (a file) as on one (memory), and a prefix hashes as a file of that size', async () => {
    const piece = 1 << 20;
    const bytes = Buffer.alloc(5 * piece + 123);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
    const file = path.join(TMP, 'hash-me.bin');
    fs.writeFileSync(file, bytes);
    const fileSource = new FileSource(file);
    try {
      const whole = await contentHash(new MemorySource('m', bytes), undefined, piece);
      expect((await contentHash(fileSource, undefined, piece)).sha256).toEqual(whole.sha256);
      for (const cut of [0, 1, piece - 1, piece, piece + 1, 3 * piece + 17, 4 * piece, bytes.length - 1]) {
        const alone = await contentHash(new MemorySource('m', bytes.subarray(0, cut)), undefined, piece);
        const onFile = await contentHash(fileSource, cut, piece);
        const inMemory = await contentHash(new MemorySource('m', bytes), cut, piece);
        expect({ cut, file: onFile.prefixSha256, memory: inMemory.prefixSha256, whole: onFile.sha256 }).toEqual({ cut, file: alone.sha256, memory: alone.sha256, whole: whole.sha256 });
      }
      // A changed byte in any piece changes the key.
      for (const at of [0, piece + 5, 4 * piece + 99, bytes.length - 1]) {
        const flipped = Buffer.from(bytes);
        flipped[at] = (flipped[at] as number) ^ 1;
        expect((await contentHash(new MemorySource('m', flipped), undefined, piece)).sha256.equals(whole.sha256)).toBe(false);
      }
    } finally {
      fileSource.close();
    }
  });

  it('is the same however the two threads share the pieces of a file (small pieces, shared as each thread is free)', async () => {
    const piece = 256 << 10;
    const bytes = Buffer.alloc(48 * (1 << 20) + 4321);
    for (let i = 0; i + 4 <= bytes.length; i += 4) bytes.writeUInt32LE((i * 2654435761) >>> 0, i);
    const file = path.join(TMP, 'hash-me-big.bin');
    fs.writeFileSync(file, bytes);
    const whole = await contentHash(new MemorySource('m', bytes), undefined, piece);
    const cut = 17 * piece + 999;
    const alone = await contentHash(new MemorySource('m', bytes.subarray(0, cut)), undefined, piece);
    for (let run = 0; run < 5; run++) {
      const fileSource = new FileSource(file);
      try {
        const got = await contentHash(fileSource, cut, piece);
        expect({ whole: got.sha256, prefix: got.prefixSha256 }).toEqual({ whole: whole.sha256, prefix: alone.sha256 });
        // Hashed in the background (the worker alone, while this thread goes on): the same key.
        let cancel: (() => void) | undefined;
        const beside = contentHash(fileSource, cut, piece, { background: true, started: (c) => (cancel = c) });
        expect(cancel).toBeTypeOf('function');
        const back = await beside;
        expect({ whole: back.sha256, prefix: back.prefixSha256 }).toEqual({ whole: whole.sha256, prefix: alone.sha256 });
        // This thread helps once it would wait (at once, or after a while): it takes the pieces left, and the key is the same.
        let help: (() => void) | undefined;
        const helped = contentHash(fileSource, cut, piece, { background: true, started: (_c, h) => (help = h) });
        if (run > 0) await new Promise((r) => setTimeout(r, run * 5));
        help!();
        const joint = await helped;
        expect({ run, whole: joint.sha256, prefix: joint.prefixSha256 }).toEqual({ run, whole: whole.sha256, prefix: alone.sha256 });
      } finally {
        fileSource.close();
      }
    }
    // A file of one piece, hashed in the background: on the worker (it hands out a cancel), the same key.
    const small = path.join(TMP, 'hash-me-small.bin');
    fs.writeFileSync(small, bytes.subarray(0, 5 << 20));
    const smallSource = new FileSource(small);
    try {
      let started = false;
      const inMemory = await contentHash(new MemorySource('m', bytes.subarray(0, 5 << 20)));
      const onWorker = await contentHash(smallSource, undefined, undefined, { background: true, started: () => (started = true) });
      expect({ started, sha256: onWorker.sha256 }).toEqual({ started: true, sha256: inMemory.sha256 });
    } finally {
      smallSource.close();
      fs.rmSync(small);
    }
    // Cancelled, a background hash rejects rather than answering (or hashing the rest on this thread).
    const fileSource = new FileSource(file);
    try {
      const cancelled = contentHash(fileSource, undefined, piece, { background: true, started: (c) => c() });
      await expect(cancelled).rejects.toThrow(/cancelled/);
    } finally {
      fileSource.close();
    }
    fs.rmSync(file);
  });
});

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
import { SESSION_FOLDS } from '../src/views/index-folds.js';
import type { SessionEvent } from '../src/log/types.js';

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

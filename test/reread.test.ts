import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget, inspectTargetIndexed } from '../src/log/session.js';
import { collectSession, writeGeneratedArtifact } from '../tools/generate.js';
import { writeArtifact } from '../src/log/writer.js';
import type { SessionEvent } from '../src/log/types.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

/** Re-read `ranges` through the index and compare with the collected logical events. */
async function compareRereads(file: string, ranges: (all: number) => [number, number][], options: { bigFrameBytes?: number } = {}) {
  const held = await inspectTarget(resolveTarget(file), { collect: true, ...options });
  const indexed = await inspectTargetIndexed(resolveTarget(file), options);
  try {
    expect(indexed.inspection.error).toEqual(held.error);
    if (held.error) {
      expect(indexed.events).toBeUndefined();
      return 0;
    }
    // Logs with migrated legacy events are answered from held logical events, the same contract.
    if (held.migratedEvents > 0) expect(indexed.rereader).toBeUndefined();
    const events = held.events as SessionEvent[];
    let n = 0;
    for (const [a, b] of ranges(events.length)) {
      const got = await indexed.events!([[a, b]]);
      expect(got.length).toBe(events.length);
      for (let s = 0; s < events.length; s++) {
        if (s >= a && s <= b) expect(got[s]).toEqual(events[s]);
        else expect(got[s]).toBeUndefined();
      }
      n++;
    }
    return n;
  } finally {
    indexed.close();
  }
}

const everyRange = (all: number): [number, number][] => {
  const out: [number, number][] = [[0, all - 1]];
  for (let s = 0; s < all; s += Math.max(1, Math.floor(all / 7))) out.push([s, s], [s, Math.min(all - 1, s + 3)]);
  out.push([all - 1, all - 1]);
  return out;
};

describe('indexed re-reading', () => {
  it.skipIf(!HAVE_CORPUS)('returns exactly the collected logical events for any range, on every corpus artifact', async () => {
    let compared = 0;
    for (const c of corpusCases()) compared += await compareRereads(c.artifact, everyRange);
    expect(compared).toBeGreaterThan(1000);
  });

  it('works across many frames, streamed big frames, a torn tail, and raw logs', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-reread-'));
    const opts = { seed: 7, id: 'reread', targetBytes: 3_000_000, crash: 'mid-tool' as const, tornTail: true };
    const zstd = path.join(dir, 'session.jsonl.zstd');
    await writeGeneratedArtifact(zstd, { ...opts, encoding: 'zstd' });
    const raw = path.join(dir, 'session.jsonl');
    await writeGeneratedArtifact(raw, { ...opts, encoding: 'none' });
    expect(await compareRereads(zstd, everyRange)).toBeGreaterThan(10);
    expect(await compareRereads(zstd, everyRange, { bigFrameBytes: 1 })).toBeGreaterThan(10);
    expect(await compareRereads(raw, everyRange)).toBeGreaterThan(10);
    // A torn tail and in-memory closers (seqs past the stored ones) are part of what came back.
    const held = await inspectTarget(resolveTarget(zstd), { collect: true });
    expect(held.torn).not.toBeNull();
    expect(held.closers.length).toBeGreaterThan(0);
  });

  it('decodes only the segments that hold the asked-for events', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-reread-'));
    const s = collectSession({ seed: 9, id: 'reread2', targetBytes: 6_000_000 });
    const zstd = path.join(dir, 'session.jsonl.zstd');
    writeFileSync(zstd, await writeArtifact({ header: s.header, encoding: 'zstd', batches: s.batches }));
    const indexed = await inspectTargetIndexed(resolveTarget(zstd));
    try {
      const last = indexed.inspection.storedEventCount - 1;
      const got = await indexed.events!([[last, last]]);
      expect(got[last]?.seq).toBe(last);
      expect(indexed.rereader!.decodedSegments).toBe(1);
    } finally {
      indexed.close();
    }
  });

  it('reports a file that changed between the reads as an I/O problem, not a wrong answer', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-reread-'));
    const s = collectSession({ seed: 11, id: 'reread3', targetBytes: 400_000 });
    const raw = path.join(dir, 'session.jsonl');
    const text = await writeArtifact({ header: s.header, encoding: 'none', batches: s.batches });
    writeFileSync(raw, text);
    const indexed = await inspectTargetIndexed(resolveTarget(raw));
    try {
      // Another process rewrites the file (same size, different seqs).
      writeFileSync(raw, text.toString('utf8').replace(/"seq":(\d+)/g, (_m, d) => `"seq":${String((Number(d) + 1) % 10)}`.padEnd(_m.length, ' ')));
      await expect(indexed.events!([[5, 5]])).rejects.toThrow(/changed while it was being read/);
    } finally {
      indexed.close();
    }
  });
});

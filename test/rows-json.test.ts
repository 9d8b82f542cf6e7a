import { describe, expect, it } from 'vitest';
import { decodeStorageRecord, expandedChunkJson, packBatchLines } from '../src/log/rows.js';
import { collectSession } from '../tools/generate.js';
import type { SessionEvent } from '../src/log/types.js';

describe('expandedChunkJson', () => {
  it('equals JSON.stringify for every event expanded from a packed row (text, reasoning, tool with and without name, odd numbers, escapes)', () => {
    const rows = [
      { type: 'text-chunks', seq0: 7, time0: 1000, data: { turn: 1, step: 1, index: 0, dt: [5, -2], texts: ['He', 'llo\n"\u2028', '\u0000\ud83d'] } },
      { type: 'reasoning-chunks', seq0: 0, time0: -5, data: { turn: 1.5, step: -0, index: 1e21, dt: [0], texts: ['a', ''] } },
      { type: 'tool-call-chunks', seq0: 3, time0: 9, data: { turn: 2, step: 3, index: 0, id: 'c"1', name: 'r\u00e9ad', dt: [1, 1], args: ['{"p', 'ath":', '"x"}'] } },
      { type: 'tool-call-chunks', seq0: 3, time0: 9, data: { turn: 2, step: 3, index: 0, id: 'c1', dt: [1], args: ['{', '}'] } },
    ];
    let n = 0;
    for (const row of rows) {
      for (const e of decodeStorageRecord(JSON.parse(JSON.stringify(row)))) {
        expect(expandedChunkJson(e)).toBe(JSON.stringify(e));
        n++;
      }
    }
    // And every packed chunk of a generated session (the writer packs runs into rows).
    const s = collectSession({ seed: 3, id: 'rows', targetBytes: 400_000 });
    for (const batch of s.batches) {
      for (const line of packBatchLines(batch as SessionEvent[])) {
        const value = JSON.parse(line);
        if (!String(value.type).endsWith('-chunks')) continue;
        for (const e of decodeStorageRecord(value)) {
          expect(expandedChunkJson(e)).toBe(JSON.stringify(e));
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(1000);
  });
});

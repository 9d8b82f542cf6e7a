import { afterEach, describe, expect, it, vi } from 'vitest';
import { LineSplitter } from '../src/log/reread.js';

afterEach(() => vi.restoreAllMocks());

describe("the re-reader's line splitter", () => {
  it('joins a line spread over many chunks with copies linear in the line, not one copy of the carry per chunk', () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const chunks = 400; // a 25 MiB line
    const seen: (Buffer | string)[] = [];
    const splitter = new LineSplitter((line) => (seen.push(line), true));
    let copied = 0;
    const concat = Buffer.concat.bind(Buffer);
    vi.spyOn(Buffer, 'concat').mockImplementation((list: readonly Uint8Array[], total?: number) => {
      const out = concat(list, total);
      copied += out.length;
      return out;
    });
    const from = Buffer.from.bind(Buffer) as (...a: unknown[]) => Buffer;
    vi.spyOn(Buffer, 'from').mockImplementation(((...a: unknown[]) => {
      const out = from(...a);
      copied += out.length;
      return out;
    }) as typeof Buffer.from);
    splitter.push(Buffer.from('first\nsec'));
    for (let i = 0; i < chunks; i++) splitter.push(chunk);
    splitter.push(Buffer.from('ond\nthird\n'));
    expect(seen.map((l) => l.length)).toEqual([5, 3 + chunks * chunk.length + 3, 5]);
    expect(seen[1]!.subarray(0, 3).toString()).toBe('sec');
    expect(seen[1]!.subarray(-3).toString()).toBe('ond');
    expect(seen[2]!.toString()).toBe('third');
    const line = chunks * chunk.length;
    expect(copied).toBeLessThan(3 * line);
  });

  it('hands a huge line over as its text, decoded piece by piece exactly as its joined bytes decode', () => {
    // 40 MiB of 3-byte characters, cut mid-character by 64 KiB chunks, with a bad byte and a cut 4-byte sequence.
    const body = Buffer.concat([Buffer.from('€'.repeat(14 * 1024 * 1024)), Buffer.from([0xff, 0x41, 0xf0, 0x9f]), Buffer.from('€'.repeat(100))]);
    const bytes = Buffer.concat([Buffer.from('a\n'), body, Buffer.from('\nb\n')]);
    const seen: (Buffer | string)[] = [];
    const splitter = new LineSplitter((line) => (seen.push(line), true));
    for (let at = 0; at < bytes.length; at += 64 * 1024 + 1) splitter.push(bytes.subarray(at, at + 64 * 1024 + 1));
    expect(seen).toHaveLength(3);
    expect(Buffer.isBuffer(seen[0]) && seen[0].toString()).toBe('a');
    expect(typeof seen[1]).toBe('string');
    expect(seen[1] === body.toString('utf8')).toBe(true);
    expect(Buffer.isBuffer(seen[2]) && seen[2].toString()).toBe('b');
  });

  it('stops at the first line the visitor refuses and keeps nothing after it', () => {
    const seen: string[] = [];
    const splitter = new LineSplitter((line) => (seen.push(line.toString()), line.toString() !== 'b'));
    splitter.push(Buffer.from('a\nb\nc'));
    splitter.push(Buffer.from('\nd\n'));
    expect(seen).toEqual(['a', 'b']);
    expect(splitter.stopped).toBe(true);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { LineSplitter } from '../src/log/reread.js';

afterEach(() => vi.restoreAllMocks());

describe("the re-reader's line splitter", () => {
  it('joins a line spread over many chunks with copies linear in the line, not one copy of the carry per chunk', () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const chunks = 400; // a 25 MiB line
    const seen: Buffer[] = [];
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

  it('stops at the first line the visitor refuses and keeps nothing after it', () => {
    const seen: string[] = [];
    const splitter = new LineSplitter((line) => (seen.push(line.toString()), line.toString() !== 'b'));
    splitter.push(Buffer.from('a\nb\nc'));
    splitter.push(Buffer.from('\nd\n'));
    expect(seen).toEqual(['a', 'b']);
    expect(splitter.stopped).toBe(true);
  });
});

/**
 * The JSON text format for long strings: the explicit-stack serializer writes a string of more than
 * a MiB in slices, and `jsonByteLength` sizes a value without building its text when it holds one.
 * Slices are cut between surrogate pairs, never inside one, so every escape (quotes, controls,
 * U+2028, lone surrogates) comes out as in `JSON.stringify` of the whole.
 */
import { describe, expect, it } from 'vitest';
import { jsonByteLength, toJsonIterative } from '../src/core/json.js';

const MIB = 1 << 20;

describe('long strings in JSON text', () => {
  // A pair straddles each MiB boundary (its high half at MiB - 1), lone halves, escapes and non-ASCII around them.
  const unit = 'a"\\\n\u2028é€';
  const long = (n: number) => {
    let s = unit.repeat(Math.ceil((MIB - 1) / unit.length)).slice(0, MIB - 1) + '😀';
    while (s.length < n) s += s;
    return s.slice(0, n - 3) + '\ud800x\udc00';
  };
  const values: unknown[] = [
    { text: long(3 * MIB + 5) },
    [long(MIB + 1), { nested: [long(2 * MIB)] }, 'short', 1, null],
    { a: undefined, b: long(MIB + 2), c: [undefined, () => 1] },
  ];

  it('serializes them in slices to the text JSON.stringify gives, with and without indentation', () => {
    for (const v of values) for (const space of [undefined, 2]) expect(toJsonIterative(v, space) === JSON.stringify(v, null, space)).toBe(true);
  });

  it('sizes a value holding one to the UTF-8 length of its text, and a plain value the same way', () => {
    for (const v of [...values, { plain: 'é', n: [1, 2, { x: '\u2028' }] }, 'x', 3, null]) expect(jsonByteLength(v)).toBe(Buffer.byteLength(JSON.stringify(v)));
  });
});

describe('jsonText: a document as pieces to write', () => {
  it('gives a plain value in one piece, and one holding a long string in pieces that join to its text', async () => {
    const { jsonText } = await import('../src/core/json.js');
    expect([...jsonText({ a: [1, 'x'] })]).toEqual(['{"a":[1,"x"]}']);
    const doc = { pages: [{ events: [{ seq: 1, text: 'é'.repeat(3 * MIB) }, { seq: 2, deep: [[['\u2028'.repeat(MIB + 7)]]] }] }] };
    const pieces = [...jsonText(doc)];
    expect(pieces.length).toBeGreaterThan(4);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThanOrEqual(6 * MIB + 2);
    expect(pieces.join('') === JSON.stringify(doc)).toBe(true);
    expect([...jsonText('é'.repeat(MIB + 1))].join('')).toBe(JSON.stringify('é'.repeat(MIB + 1)));
  });
});

import { describe, expect, it } from 'vitest';
import { bytesLength, decodeIndexFile, encodeIndexFile, IndexFormatError, joined, VarReader, VarWriter } from '../src/log/index/codec.js';

/** A deterministic generator (the test is the same every run). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/** The varint of `v` as the format defines it: 7 bits at a time, low first, the high bit set on all but the last byte. */
function reference(v: number): number[] {
  const out: number[] = [];
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

describe('the session index codec', () => {
  const rnd = lcg(11);
  const edges = [0, 1, 127, 128, 255, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35 + 7, 2 ** 49 + 3, Number.MAX_SAFE_INTEGER];
  const values = [...edges, ...Array.from({ length: 3000 }, () => Math.floor(rnd() * 2 ** (rnd() * 53)))];

  it('writes every unsigned value as the format defines it, and reads it back', () => {
    const w = new VarWriter();
    for (const v of values) w.uint(v);
    const bytes = w.done();
    expect([...bytes]).toEqual(values.flatMap(reference));
    const r = new VarReader(bytes);
    expect(values.map(() => r.uint())).toEqual(values);
    expect(r.atEnd).toBe(true);
  });

  it('round-trips signed values, arrays and ascending arrays', () => {
    const signed = values.filter((v) => v < 2 ** 51).map((v, i) => (i % 2 && v !== 0 ? -v : v));
    const ascending = [...values].sort((a, b) => a - b);
    const w = new VarWriter();
    for (const v of signed) w.int(v);
    w.uints(values).ascending(ascending);
    const r = new VarReader(w.done());
    expect(signed.map(() => r.int())).toEqual(signed);
    expect(r.uints()).toEqual(values);
    expect(r.ascending()).toEqual(ascending);
  });

  it('a writer given shared runs (carried over by reference) writes the bytes a copying writer writes, as pieces', () => {
    const rnd2 = lcg(5);
    for (const capacity of [16, 1 << 12, 1 << 20]) {
      const copying = new VarWriter();
      const sharing = new VarWriter(capacity);
      const runs: Buffer[] = [];
      for (let i = 0; i < 200; i++) {
        const v = Math.floor(rnd2() * 2 ** 40);
        copying.uint(v);
        sharing.uint(v);
        if (i % 7 === 0) {
          // Runs below and above the size a piece of its own is worth, and empty ones.
          const run = Buffer.alloc([0, 5, 4095, 4096, 9000][i % 5] as number, i);
          runs.push(run);
          copying.raw(run);
          sharing.shared(run);
        }
      }
      const pieces = sharing.pieces();
      expect(pieces.length).toBeGreaterThan(1);
      // The big runs are the caller's buffers themselves, not copies.
      for (const run of runs.filter((r) => r.length >= 4096)) expect(pieces).toContain(run);
      expect(Buffer.concat(pieces).equals(copying.done())).toBe(true);
      expect(sharing.done().equals(copying.done())).toBe(true);
      expect(bytesLength(pieces)).toBe(copying.done().length);
      expect(joined(pieces).equals(copying.done())).toBe(true);
    }
    expect(new VarWriter().pieces().map((p) => p.length)).toEqual([0]);
  });

  it('an index file written as pieces reads back as the sections it was given', () => {
    const big = Buffer.alloc(10_000, 7);
    const sections = new Map<number, Buffer | Buffer[]>([
      [1, Buffer.from('small')],
      [2, [Buffer.from([1, 2, 3]), big, Buffer.alloc(0), big]],
      [3, big],
    ]);
    const file = Buffer.concat(encodeIndexFile(sections));
    const read = decodeIndexFile(file);
    expect([...read.keys()]).toEqual([1, 2, 3]);
    for (const [tag, body] of sections) expect(read.get(tag)?.equals(joined(body))).toBe(true);
    file[file.length >> 1] ^= 1;
    expect(() => decodeIndexFile(file)).toThrow(IndexFormatError);
  });

  it('steps over arrays, and splits them where their values reach a bound', () => {
    const ascending = [...values].sort((a, b) => a - b);
    const w = new VarWriter().ascending(ascending).uints(values).uint(42);
    const bytes = w.done();
    const skipped = new VarReader(bytes);
    skipped.skipArray();
    skipped.skipArray();
    expect(skipped.uint()).toBe(42);
    for (const bound of [0, 1, ascending[100] as number, (ascending[100] as number) + 1, 2 ** 40, Infinity]) {
      const r = new VarReader(bytes);
      const below = ascending.filter((v) => v < bound);
      const split = r.ascendingBelow(bound);
      expect({ bound, length: split.length, below: split.below, last: split.last }).toEqual({ bound, length: ascending.length, below: below.length, last: below.at(-1) ?? 0 });
      // The bytes before the split are those of the values below it, read as an array of that length.
      const head = new VarWriter().uint(below.length);
      head.raw(bytes.subarray(split.start, split.split));
      expect(new VarReader(head.done()).ascending()).toEqual(below);
      const values2 = r.uintsSplit(below.length);
      expect(new VarReader(Buffer.concat([new VarWriter().uint(below.length).done(), bytes.subarray(values2.start, values2.split)])).uints()).toEqual(values.slice(0, below.length));
      expect(r.uint()).toBe(42);
    }
    expect(() => new VarReader(Buffer.from([3, 0x80])).skipArray()).toThrow(IndexFormatError);
    expect(() => new VarReader(Buffer.from([1, 0])).uintsSplit(2)).toThrow(IndexFormatError);
  });

  it('refuses what it cannot write, and damaged bytes', () => {
    for (const bad of [-1, 0.5, 2 ** 53, NaN, Infinity]) expect(() => new VarWriter().uint(bad)).toThrow(IndexFormatError);
    expect(() => new VarReader(Buffer.from([0x80, 0x80])).uint()).toThrow(/truncated/);
    expect(() => new VarReader(Buffer.alloc(0)).uint()).toThrow(/truncated/);
    expect(() => new VarReader(Buffer.alloc(10, 0xff)).uint()).toThrow(/too long/);
  });
});

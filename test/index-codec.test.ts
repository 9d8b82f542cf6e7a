import { describe, expect, it } from 'vitest';
import { IndexFormatError, VarReader, VarWriter } from '../src/log/index/codec.js';

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

  it('refuses what it cannot write, and damaged bytes', () => {
    for (const bad of [-1, 0.5, 2 ** 53, NaN, Infinity]) expect(() => new VarWriter().uint(bad)).toThrow(IndexFormatError);
    expect(() => new VarReader(Buffer.from([0x80, 0x80])).uint()).toThrow(/truncated/);
    expect(() => new VarReader(Buffer.alloc(0)).uint()).toThrow(/truncated/);
    expect(() => new VarReader(Buffer.alloc(10, 0xff)).uint()).toThrow(/too long/);
  });
});

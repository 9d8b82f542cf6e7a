import { describe, expect, it } from 'vitest';
import { AscendingNumberMap } from '../src/core/sorted.js';
import { LayeredNumberMap } from '../src/core/sorted.js';

/** A small deterministic generator (the test must be the same every run). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

describe('AscendingNumberMap (the dispatch index owners)', () => {
  it('answers as a Map does, sorted by key, whatever the order keys are set in', () => {
    for (const [seed, ascendingShare] of [[1, 1], [2, 0.9], [3, 0.5], [4, 0]] as const) {
      const rnd = lcg(seed);
      const map = new AscendingNumberMap();
      const want = new Map<number, number>();
      let next = 0;
      for (let i = 0; i < 3000; i++) {
        // Mostly appends above every key (a fold in seq order), else any key, repeats included.
        const key = rnd() < ascendingShare ? (next += 1 + Math.floor(rnd() * 3)) : Math.floor(rnd() * (next + 10)) - 5;
        const value = Math.floor(rnd() * 1000);
        map.set(key, value);
        want.set(key, value);
        if (i % 97 === 0) {
          const probe = Math.floor(rnd() * (next + 20)) - 10;
          expect({ probe, got: map.get(probe), has: map.has(probe) }).toEqual({ probe, got: want.get(probe), has: want.has(probe) });
        }
      }
      const sorted = [...want].sort((a, b) => a[0] - b[0]);
      expect(map.size).toBe(want.size);
      expect([...map]).toEqual(sorted);
      expect(Array.from(map.keys())).toEqual(sorted.map((e) => e[0]));
      expect(Array.from(map.values())).toEqual(sorted.map((e) => e[1]));
      for (const [k, v] of sorted) expect(map.get(k)).toBe(v);
      expect(new AscendingNumberMap(sorted.reverse())).toEqual(map);
    }
  });
  it('truncates to the keys below a bound (a resumed fold drops its closers\' entries)', () => {
    const map = new AscendingNumberMap([[1, 10], [4, 40], [9, 90], [12, 120]]);
    map.truncate(9);
    expect([...map]).toEqual([[1, 10], [4, 40]]);
    map.truncate(100);
    expect(map.size).toBe(2);
    map.set(20, 200);
    expect([...map]).toEqual([[1, 10], [4, 40], [20, 200]]);
    map.truncate(0);
    expect([map.size, map.get(1)]).toEqual([0, undefined]);
  });
  it('taken over from sorted arrays (a saved index read back), it answers and grows as one built by set', () => {
    const rnd = lcg(7);
    const built = new AscendingNumberMap();
    let key = 0;
    for (let i = 0; i < 500; i++) built.set((key += 1 + Math.floor(rnd() * 5)), i);
    const taken = AscendingNumberMap.fromSorted(built.keys(), built.values());
    expect([...taken]).toEqual([...built]);
    for (const [k, v] of [[key + 3, 1], [2, 2], [key + 9, 3], [key + 9, 4], [-1, 5]] as const) {
      built.set(k, v);
      taken.set(k, v);
    }
    expect([...taken]).toEqual([...built]);
    taken.truncate(100);
    built.truncate(100);
    expect([...taken]).toEqual([...built]);
    const empty = AscendingNumberMap.fromSorted(new Float64Array(0), new Float64Array(0));
    empty.set(3, 30).set(1, 10);
    expect([...empty]).toEqual([[1, 10], [3, 30]]);
    expect(() => AscendingNumberMap.fromSorted(Float64Array.of(1, 1), Float64Array.of(0, 0))).toThrow(RangeError);
    expect(() => AscendingNumberMap.fromSorted(Float64Array.of(1, 2), Float64Array.of(0))).toThrow(RangeError);
  });
  it('holds nothing it was not given', () => {
    const map = new AscendingNumberMap([[5, 1]]);
    expect([map.get(4), map.get(6), map.get(Infinity), map.get(NaN), map.has(5), map.size]).toEqual([undefined, undefined, undefined, undefined, true, 1]);
    expect(() => map.set(NaN, 1)).toThrow(RangeError);
  });
});

describe('LayeredNumberMap (a resumed fold\'s owners: saved entries loaded on need, new ones apart)', () => {
  const saved = (n: number, rnd: () => number) => {
    const m = new AscendingNumberMap();
    let k = 0;
    for (let i = 0; i < n; i++) m.set((k += 1 + Math.floor(rnd() * 4)), Math.floor(rnd() * 100));
    return m;
  };
  it('answers as the map it continues, whatever is read, set or truncated; loads its base only when a key of it is touched', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const rnd = lcg(seed);
      const base = saved(seed === 1 ? 0 : 200, rnd);
      const keys = base.keys();
      const last = keys.length > 0 ? (keys[keys.length - 1] as number) : -Infinity;
      const want = AscendingNumberMap.fromSorted(base.keys(), base.values());
      let loads = 0;
      const map = new LayeredNumberMap(base.size, last, () => (loads++, AscendingNumberMap.fromSorted(base.keys(), base.values())));
      let next = Number.isFinite(last) ? last : 0;
      // New keys above every saved one: the base is never loaded.
      for (let i = 0; i < 100; i++) {
        const k = (next += 1 + Math.floor(rnd() * 3));
        map.set(k, i);
        want.set(k, i);
        expect(map.get(k)).toBe(i);
      }
      expect(map.get(next + 1)).toBeUndefined();
      expect({ loads, size: map.size, changed: map.baseChanged }).toEqual({ loads: 0, size: want.size, changed: false });
      // Then anything: reads of saved keys load it (unchanged), sets and truncates below the saved end change it.
      for (let i = 0; i < 400; i++) {
        const r = rnd();
        const k = Math.floor(rnd() * (next + 10)) - 5;
        if (r < 0.5) expect({ k, got: map.get(k), has: map.has(k) }).toEqual({ k, got: want.get(k), has: want.has(k) });
        else if (r < 0.97) {
          const key = rnd() < 0.5 ? (next += 1) : k;
          map.set(key, i);
          want.set(key, i);
        } else {
          map.truncate(k);
          want.truncate(k);
        }
        expect(map.size).toBe(want.size);
      }
      expect([...map]).toEqual([...want]);
      expect(Array.from(map.keys())).toEqual(Array.from(want.keys()));
      expect(Array.from(map.values())).toEqual(Array.from(want.values()));
      expect(loads).toBeLessThanOrEqual(1);
    }
  });
  it('with a peek, the first reads of saved keys are answered without loading the base; later reads and any change load it', () => {
    for (const seed of [6, 7, 8]) {
      const rnd = lcg(seed);
      const base = saved(300, rnd);
      const keys = base.keys();
      const last = keys[keys.length - 1] as number;
      const want = AscendingNumberMap.fromSorted(base.keys(), base.values());
      let loads = 0;
      let peeked = 0;
      const map = new LayeredNumberMap(base.size, last, () => (loads++, AscendingNumberMap.fromSorted(base.keys(), base.values())), (k) => (peeked++, base.get(k)), 5);
      // Saved keys and gaps between them, and the saved end: five peeks, then the base is loaded.
      const probes = [keys[0] as number, (keys[0] as number) - 1, last, last - 0.5, keys[10] as number, keys[20] as number, (keys[30] as number) + 0.5];
      for (const [i, k] of probes.entries()) {
        expect({ k, got: map.get(k) }).toEqual({ k, got: want.get(k) });
        expect({ i, loads, peeked }).toEqual({ i, loads: i < 5 ? 0 : 1, peeked: Math.min(i + 1, 5) });
      }
      // Keys above the saved end never peek or load.
      const other = new LayeredNumberMap(base.size, last, () => (loads++, base), (k) => (peeked++, base.get(k)), 5);
      other.set(last + 1, 1);
      expect([other.get(last + 1), other.get(last + 2), peeked, loads]).toEqual([1, undefined, 5, 1]);
      // A set below the saved end loads the base even with peeks left.
      const third = new LayeredNumberMap(base.size, last, () => (loads++, AscendingNumberMap.fromSorted(base.keys(), base.values())), (k) => (peeked++, base.get(k)), 5);
      third.set(keys[3] as number, -1);
      expect([loads, third.baseChanged, third.get(keys[3] as number), peeked]).toEqual([2, true, -1, 5]);
    }
  });
  it('a read of a saved key loads the base without changing it; a set at or below the saved end changes it', () => {
    const base = new AscendingNumberMap([[2, 20], [5, 50]]);
    const map = new LayeredNumberMap(2, 5, () => AscendingNumberMap.fromSorted(base.keys(), base.values()));
    map.set(9, 90);
    expect([map.get(5), map.get(3), map.baseChanged]).toEqual([50, undefined, false]);
    expect([...map.tail]).toEqual([[9, 90]]);
    map.set(5, 55);
    expect([map.baseChanged, [...map]]).toEqual([true, [[2, 20], [5, 55], [9, 90]]]);
    const other = new LayeredNumberMap(2, 5, () => AscendingNumberMap.fromSorted(base.keys(), base.values()));
    other.set(7, 70).truncate(6);
    expect([other.baseChanged, [...other.tail]]).toEqual([false, []]);
    other.truncate(3);
    expect([other.baseChanged, other.size, [...other]]).toEqual([true, 1, [[2, 20]]]);
    expect(() => new LayeredNumberMap(3, 5, () => base).get(1)).toThrow(RangeError);
  });
});

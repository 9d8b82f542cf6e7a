import { describe, expect, it } from 'vitest';
import { Labels } from '../src/views/labels.js';
import { analysisOf } from '../src/views/trace.js';

/** A small deterministic generator (the test must be the same every run). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

interface Rep {
  seq: number;
  start: number;
  end: number;
  shadowedSeqs: number[];
}

/** Replacements as a fold may hold them: a seq may be shadowed by more than one (the last wins). */
function replacements(seed: number, count: number, span: number, base = 0): Rep[] {
  const rnd = lcg(seed);
  const out: Rep[] = [];
  for (let i = 0; i < count; i++) {
    const shadowed = new Set<number>();
    const n = Math.floor(rnd() * 12);
    for (let k = 0; k < n; k++) shadowed.add(base + Math.floor(rnd() * span));
    out.push({ seq: base + span + i, start: 0, end: 0, shadowedSeqs: [...shadowed].sort((a, b) => a - b) });
  }
  return out;
}

/** The analysis as a Map of every shadowed seq gives it (what `analysisOf` must answer as). */
function reference(reps: readonly Rep[]): { replacedBy: Map<number, number>; replacedEventSeqs: Map<number, number[]> } {
  const replacedBy = new Map<number, number>();
  const replacedEventSeqs = new Map<number, number[]>();
  for (const r of reps) {
    replacedEventSeqs.set(r.seq, [...r.shadowedSeqs]);
    for (const s of r.shadowedSeqs) replacedBy.set(s, r.seq);
  }
  return { replacedBy, replacedEventSeqs };
}

describe('analysisOf: replacement lookups without a Map of every shadowed seq', () => {
  // The last case has seqs so large that seq × replacement count leaves the safe integers: the
  // index then keeps plain seqs and finds the replacement by scanning.
  for (const [seed, count, span, base] of [[1, 1, 5, 0], [2, 40, 30, 0], [3, 300, 2000, 0], [4, 25, 50, 2 ** 50]] as const) {
    it(`answers as the Map does (seed ${seed}, ${count} replacements over ${span} seqs from ${base})`, () => {
      const reps = replacements(seed, count, span, base);
      const nodes = [base + 1, base + 3, base + span + count + 1];
      const got = analysisOf({ nodes, replacements: reps }, new Map());
      const want = reference(reps);
      for (let s = base - 2; s < base + span + count + 3; s++) {
        expect({ s, by: got.replacedBy.get(s), has: got.replacedBy.has(s) }).toEqual({ s, by: want.replacedBy.get(s), has: want.replacedBy.has(s) });
        const label = nodes.includes(s) ? 'current' : want.replacedBy.has(s) ? 'shadowed' : 'log-only';
        expect({ s, label: got.labels.of(s) }).toEqual({ s, label });
      }
      // Walking the whole map gives the Map's entries in its order (the report's facts depend on it).
      expect([...got.replacedBy]).toEqual([...want.replacedBy]);
      expect(got.replacedBy.size).toBe(want.replacedBy.size);
      expect([...got.replacedBy.keys()]).toEqual([...want.replacedBy.keys()]);
      expect([...got.replacedEventSeqs].map(([k, v]) => [k, [...v]])).toEqual([...want.replacedEventSeqs]);
      // Labels built straight from the replacements agree with the analysis's.
      const labels = new Labels(nodes, reps);
      for (let s = base - 2; s < base + span + count + 3; s++) expect(labels.of(s)).toBe(got.labels.of(s));
    });
  }

  it('answers for the replacements there were when it was made, whatever is added to their list later', () => {
    const reps: Rep[] = [{ seq: 10, start: 0, end: 0, shadowedSeqs: [1, 2] }];
    const labels = new Labels([5], reps);
    const analysis = analysisOf({ nodes: [5], replacements: reps }, new Map());
    reps.push({ seq: 11, start: 0, end: 0, shadowedSeqs: [3] });
    expect([labels.of(2), labels.of(3), analysis.labels.of(3), analysis.replacedBy.get(3)]).toEqual(['shadowed', 'log-only', 'log-only', undefined]);
    expect([...analysis.replacedBy]).toEqual([[1, 10], [2, 10]]);
    expect([...analysis.replacedEventSeqs.keys()]).toEqual([10]);
  });

  it('answers nothing for seqs that are not non-negative integers', () => {
    const got = analysisOf({ nodes: [], replacements: replacements(5, 10, 20) }, new Map());
    for (const s of [-1, 0.5, NaN, Infinity]) expect(got.replacedBy.get(s)).toBeUndefined();
  });
});

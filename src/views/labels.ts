import type { SessionEvent } from '../log/types.js';
import type { Replacement } from '../log/surface.js';
import { lowerBound } from '../core/sorted.js';

export type SurfaceLabel = 'current' | 'shadowed' | 'log-only';

/** session-query's `SessionEventRecord`. */
export interface EventRecord {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  surface: SurfaceLabel;
}

/** Whether an event of `type` can be a surface node (its label needs the fold); any other type is log-only. */
export function labelNeedsFold(type: string): boolean {
  return type === 'user/message' || type === 'assistant/message' || type === 'tool/result';
}

/** Lookups a `ShadowIndex` answers by scanning before it sorts its keys (a scan costs ~0.3 ms on the 2 GB bench log). */
const SCANNED_LOOKUPS = 32;

/**
 * Which replacements shadow which seqs. A log's replacements shadow far more seqs than the surface
 * holds nodes (186,452 against 233 on the 2 GB bench log): a view that asks about a few seqs (trace,
 * request) gets each answer from a scan of the replacements' own arrays (last first); one that asks
 * about more gets them by halving one typed array of (seq, replacement number) keys, sorted once
 * (~25 ms there), instead of a Map of every shadowed seq (~70 ms).
 */
export class ShadowIndex {
  /** seq × width + replacement number, ascending (a seq shadowed twice has two keys); built on the first lookup past `SCANNED_LOOKUPS`. */
  private keys: Float64Array | undefined;
  /** The replacement count (each key's low part); 0 when the keys would not stay exact: they are plain seqs then, and replacements are found by scanning. */
  private width = 0;
  private lookups = 0;
  /** The replacements as they were when it was made (a fold that goes on adds to its own list, not to this one). */
  readonly replacements: readonly Replacement[];
  constructor(replacements: readonly Replacement[]) {
    this.replacements = replacements.slice();
  }
  /** Whether any replacement shadows `seq`. */
  has(seq: number): boolean {
    const keys = this.sorted();
    if (!keys) return this.scan(seq) !== undefined;
    if (this.width !== 0) return this.last(keys, seq) !== undefined;
    const at = lowerBound(keys, seq);
    return at < keys.length && keys[at] === seq;
  }
  /** The last replacement (in fold order) that shadows `seq`. */
  replacerOf(seq: number): Replacement | undefined {
    const keys = this.sorted();
    const i = keys && this.width !== 0 ? this.last(keys, seq) : this.scan(seq);
    return i === undefined ? undefined : this.replacements[i];
  }
  /** The sorted keys, once enough lookups were made to be worth them. */
  private sorted(): Float64Array | undefined {
    if (this.keys || ++this.lookups <= SCANNED_LOOKUPS) return this.keys;
    const reps = this.replacements;
    let n = 0;
    for (let i = 0; i < reps.length; i++) n += (reps[i] as Replacement).shadowedSeqs.length;
    const keys = new Float64Array(n);
    const width = Math.max(1, reps.length);
    let k = 0;
    let max = 0;
    for (let i = 0; i < reps.length; i++) {
      const shadowed = (reps[i] as Replacement).shadowedSeqs;
      for (let j = 0; j < shadowed.length; j++) {
        const s = shadowed[j] as number;
        if (s > max) max = s;
        keys[k++] = s * width + i;
      }
    }
    if ((max + 1) * width <= Number.MAX_SAFE_INTEGER) this.width = width;
    else {
      k = 0;
      for (let i = 0; i < reps.length; i++) for (const s of (reps[i] as Replacement).shadowedSeqs) keys[k++] = s;
    }
    this.keys = keys.sort();
    return this.keys;
  }
  /** The number of the last replacement (in fold order) shadowing `seq`, by halving the keys. */
  private last(keys: Float64Array, seq: number): number | undefined {
    if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
    const at = lowerBound(keys, (seq + 1) * this.width) - 1;
    if (at < 0) return undefined;
    const i = (keys[at] as number) - seq * this.width;
    return i >= 0 && i < this.width ? i : undefined;
  }
  /** The same, by scanning the replacements' arrays, last first. */
  private scan(seq: number): number | undefined {
    for (let i = this.replacements.length - 1; i >= 0; i--) if ((this.replacements[i] as Replacement).shadowedSeqs.includes(seq)) return i;
    return undefined;
  }
}

/** Label lookup from a folded surface (session-query `analyzeEventLog`). */
export class Labels {
  private current: Set<number>;
  readonly shadows: ShadowIndex;
  constructor(nodes: readonly number[], replacements: readonly Replacement[] | ShadowIndex) {
    this.current = new Set(nodes);
    this.shadows = replacements instanceof ShadowIndex ? replacements : new ShadowIndex(replacements);
  }
  /** The label of an event of a valid log: a type that can never be a surface node is log-only without a lookup. */
  ofEvent(event: SessionEvent): SurfaceLabel {
    if (!labelNeedsFold(event.type)) return 'log-only';
    return this.of(event.seq);
  }
  of(seq: number): SurfaceLabel {
    if (this.current.has(seq)) return 'current';
    if (this.shadows.has(seq)) return 'shadowed';
    return 'log-only';
  }
}

export function eventRecord(sessionId: string, event: SessionEvent, labels: Labels): EventRecord {
  return { sessionId, seq: event.seq, type: event.type, time: event.time, surface: labels.of(event.seq) };
}

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

/** Label lookup from a folded surface (session-query `analyzeEventLog`). */
export class Labels {
  private current: Set<number>;
  /**
   * Every shadowed seq, ascending (repeats kept), searched by halving: a log's replacements shadow
   * far more seqs than the surface holds nodes (186,452 against 233 on the 2 GB bench log), and a
   * typed array sorts them in a tenth of the time a Set takes to hold them.
   */
  private shadowed: Float64Array;
  constructor(nodes: readonly number[], replacements: readonly Replacement[]) {
    this.current = new Set(nodes);
    let n = 0;
    for (const r of replacements) n += r.shadowedSeqs.length;
    const shadowed = new Float64Array(n);
    let k = 0;
    for (const r of replacements) for (const s of r.shadowedSeqs) shadowed[k++] = s;
    this.shadowed = shadowed.sort();
  }
  /** The label of an event of a valid log: a type that can never be a surface node is log-only without a lookup. */
  ofEvent(event: SessionEvent): SurfaceLabel {
    if (!labelNeedsFold(event.type)) return 'log-only';
    return this.of(event.seq);
  }
  of(seq: number): SurfaceLabel {
    if (this.current.has(seq)) return 'current';
    if (this.isShadowed(seq)) return 'shadowed';
    return 'log-only';
  }
  private isShadowed(seq: number): boolean {
    const at = lowerBound(this.shadowed, seq);
    return at < this.shadowed.length && this.shadowed[at] === seq;
  }
}

export function eventRecord(sessionId: string, event: SessionEvent, labels: Labels): EventRecord {
  return { sessionId, seq: event.seq, type: event.type, time: event.time, surface: labels.of(event.seq) };
}

import type { SessionEvent } from '../log/types.js';
import type { Replacement } from '../log/surface.js';

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
  private shadowed = new Set<number>();
  constructor(nodes: readonly number[], replacements: readonly Replacement[]) {
    this.current = new Set(nodes);
    for (const r of replacements) for (const s of r.shadowedSeqs) this.shadowed.add(s);
  }
  /** The label of an event of a valid log: a type that can never be a surface node is log-only without a lookup. */
  ofEvent(event: SessionEvent): SurfaceLabel {
    if (!labelNeedsFold(event.type)) return 'log-only';
    return this.of(event.seq);
  }
  of(seq: number): SurfaceLabel {
    if (this.current.has(seq)) return 'current';
    if (this.shadowed.has(seq)) return 'shadowed';
    return 'log-only';
  }
}

export function eventRecord(sessionId: string, event: SessionEvent, labels: Labels): EventRecord {
  return { sessionId, seq: event.seq, type: event.type, time: event.time, surface: labels.of(event.seq) };
}

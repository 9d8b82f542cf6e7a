import type { CommonPayloadKeys, SessionEvent } from '../log/types.js';

export interface TurnSummary {
  turn: number;
  startSeq: number;
  endSeq: number | null;
  steps: number;
  reason: string;
  /** The turn/end is a synthetic crash closer. */
  synthetic: boolean;
}

/** Turns, steps and event counts of a log (`dsh inspect`). */
export interface SessionSummary {
  turns: TurnSummary[];
  steps: number;
  countsByType: [string, number][];
  eventCount: number;
  firstTime: number | null;
  lastTime: number | null;
}

export function reasonText(reason: unknown): string {
  const r = reason as NonNullable<CommonPayloadKeys['reason']>;
  if (!reason || typeof reason !== 'object') return String(reason);
  const kind = String(r.kind);
  if (kind === 'aborted' && r.reason) return `aborted (${r.reason.kind}${r.reason.reason ? `: ${r.reason.reason}` : ''})`;
  if (kind === 'error' && r.error) return `error (${r.error['code'] ?? ''}${r.error['message'] ? `: ${r.error['message']}` : ''})`;
  return kind;
}

/**
 * Streaming turn/step/type summary: feed logical events in order, memory
 * grows with the number of turns and distinct types, not with the log.
 */
export class Summarizer {
  private turns: TurnSummary[] = [];
  private open: TurnSummary | undefined;
  private steps = 0;
  private counts = new Map<string, number>();
  private count = 0;
  private firstTime: number | null = null;
  private lastTime: number | null = null;

  constructor(private readonly closerStart = Number.POSITIVE_INFINITY) {}

  observe(e: SessionEvent): void {
    this.count += 1;
    const type = String(e.type);
    this.counts.set(type, (this.counts.get(type) ?? 0) + 1);
    if (typeof e.time === 'number') {
      if (this.firstTime === null) this.firstTime = e.time;
      this.lastTime = e.time;
    }
    if (type === 'turn/start') {
      this.open = { turn: e.data?.turn as number, startSeq: e.seq, endSeq: null, steps: 0, reason: 'open', synthetic: false };
      this.turns.push(this.open);
    } else if (type === 'step/start') {
      this.steps += 1;
      if (this.open) this.open.steps += 1;
    } else if (type === 'turn/end') {
      const t = this.open && this.open.turn === e.data?.turn ? this.open : this.turns.find((x) => x.turn === e.data?.turn && x.endSeq === null);
      if (t) {
        t.endSeq = e.seq;
        t.reason = reasonText(e.data?.reason);
        t.synthetic = e.seq >= this.closerStart;
      }
      this.open = undefined;
    }
  }

  /** Mark closers (seq >= storedEventCount) once the stored count is known. */
  setCloserStart(seq: number): void {
    for (const t of this.turns) if (t.endSeq !== null && t.endSeq >= seq) t.synthetic = true;
  }

  result(): SessionSummary {
    return {
      turns: this.turns,
      steps: this.steps,
      countsByType: [...this.counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
      eventCount: this.count,
      firstTime: this.firstTime,
      lastTime: this.lastTime,
    };
  }
}

/** Summarize a logical log in one pass (closers start at `closerStart`). */
export function summarize(events: readonly SessionEvent[], closerStart: number): SessionSummary {
  const s = new Summarizer(closerStart);
  for (const e of events) s.observe(e);
  return s.result();
}

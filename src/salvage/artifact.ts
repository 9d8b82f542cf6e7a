import { SurfaceFold } from '../log/surface.js';
import type { SessionEvent, SessionHeader } from '../log/types.js';
import type { EventOrigin, SalvageGap } from './salvage.js';
import { cloneJson, toJson } from '../core/json.js';

/**
 * Turn salvaged events (original seqs, possibly with gaps) into a log DSH can
 * load. DSH requires `events[i].seq === i`, so:
 *
 * 1. Seqs are renumbered contiguously from 0 in file order. The mapping is
 *    recorded as runs (`seqMap`) in `seq-map.json` and in the notes.
 * 2. Each gap becomes one synthetic event at the place of the loss:
 *    `{"type":"dsh/salvage-note","seq":…,"time":…,"data":{…},"ignorable":true}`
 *    — an unknown type marked ignorable, which DSH keeps and does not refuse.
 *    Its data names the original seqs that are missing, the bytes lost and
 *    why, and the original seq the log resumes at (null for a lost tail).
 * 3. Seq references are remapped: `sourceEventSeqs` (references to lost
 *    events are removed; an emptied list is dropped from the envelope),
 *    `surfaceOp` replace `start`/`end`, and the payload references
 *    `compaction/summary|prune.shadowedSeqs` (+ `shadowedRange` recomputed as
 *    their first/last), `session/title[-llm-request].messageSeqs`,
 *    `command/done.sourceEventSeq` (removed when lost).
 * 4. Every surface event is then checked with DSH's surface fold (S1-S12); an
 *    event the fold rejects after remapping (a replacement whose target was
 *    lost, a tool-result replacement whose original was lost, …) is DROPPED
 *    and listed in `dropped` — never rewritten into something DSH did not log.
 * 5. The header is the original's; `seedLength` (fork children) is moved to
 *    the new position of the first event past the inherited seed.
 */

export const SALVAGE_NOTE_TYPE = 'dsh/salvage-note';

export interface DroppedEvent {
  originalSeq: number;
  type: string;
  why: string;
}

export interface SeqRun {
  /** First original seq of the run. */
  from: number;
  /** Last original seq of the run. */
  to: number;
  /** New seq of `from`. */
  newFrom: number;
}

export interface SalvageArtifactPlan {
  header: SessionHeader;
  seqMap: SeqRun[];
  notes: { seq: number; gap: SalvageGap }[];
  dropped: DroppedEvent[];
  /** Events written (notes included). */
  events: number;
  /** Payload references that pointed at lost events and could not be remapped. */
  unmappedRefs: { seq: number; field: string; value: number }[];
}

export interface BatchSink {
  (batch: SessionEvent[]): Promise<void> | void;
}

const RAW_BATCH = 1024;

export class SalvageArtifactBuilder {
  private fold = new SurfaceFold(false);
  private map = new Map<number, number>();
  private runs: SeqRun[] = [];
  private pendingGaps: SalvageGap[] = [];
  private batch: SessionEvent[] = [];
  private batchUnit: number | undefined;
  private lastTime: number | undefined;
  private seedTarget: number | undefined;
  private seedNew: number | undefined;
  readonly plan: SalvageArtifactPlan;

  constructor(header: SessionHeader, private readonly sink: BatchSink, private readonly salvagedFrom: string, private readonly raw: boolean) {
    this.plan = { header: { ...header }, seqMap: this.runs, notes: [], dropped: [], events: 0, unmappedRefs: [] };
    if (header.seedLength !== undefined) this.seedTarget = header.seedLength;
  }

  gap(gap: SalvageGap): void {
    this.pendingGaps.push(gap);
  }

  private get next(): number {
    return this.fold.eventCount;
  }

  private async flush(): Promise<void> {
    if (this.batch.length === 0) return;
    const b = this.batch;
    this.batch = [];
    await this.sink(b);
  }

  private async place(event: SessionEvent, unit: number | undefined): Promise<void> {
    if (unit !== undefined && this.batchUnit !== undefined && unit !== this.batchUnit) await this.flush();
    if (unit !== undefined) this.batchUnit = unit;
    this.batch.push(event);
    this.plan.events += 1;
    this.lastTime = event.time;
    if (this.raw && this.batch.length >= RAW_BATCH) await this.flush();
  }

  private async notes(unit: number | undefined, nextTime: number | undefined): Promise<void> {
    for (const gap of this.pendingGaps) {
      const seq = this.next;
      const note: SessionEvent = {
        type: SALVAGE_NOTE_TYPE,
        seq,
        time: this.lastTime ?? nextTime ?? this.plan.header.createdAt,
        data: {
          kind: 'gap',
          missingOriginalSeqs: { from: gap.fromSeq, to: gap.toSeq },
          missing: gap.missing,
          bytesLost: gap.bytesLost,
          why: gap.why,
          resumesAtOriginalSeq: gap.toSeq === null ? null : gap.toSeq + 1,
          salvagedFrom: this.salvagedFrom,
        },
        ignorable: true,
      };
      this.fold.apply(note);
      this.plan.notes.push({ seq, gap });
      await this.place(note, unit);
    }
    this.pendingGaps = [];
  }

  private mapSeq(orig: number): number | undefined {
    return this.map.get(orig);
  }

  /** False while a fork child's new `seedLength` is still unknown (hold the header back). */
  get seedResolved(): boolean {
    return this.seedTarget === undefined || this.seedNew !== undefined;
  }

  async event(original: SessionEvent, origin: EventOrigin): Promise<void> {
    if (this.seedTarget !== undefined && this.seedNew === undefined && original.seq >= this.seedTarget) {
      this.seedNew = this.next + this.pendingGaps.length;
      this.plan.header.seedLength = this.seedNew;
    }
    if (this.batchUnit !== undefined && origin.unit !== this.batchUnit) await this.flush();
    await this.notes(origin.unit, typeof original.time === 'number' ? original.time : undefined);
    const seq = this.next;
    const e = cloneJson(original) as SessionEvent & Record<string, unknown>;
    e.seq = seq;
    const drop = (why: string) => {
      this.plan.dropped.push({ originalSeq: original.seq, type: String(original.type), why });
    };
    if (Array.isArray(e.sourceEventSeqs)) {
      const mapped: number[] = [];
      for (const s of e.sourceEventSeqs as unknown[]) {
        const m = typeof s === 'number' ? this.mapSeq(s) : undefined;
        if (m !== undefined) mapped.push(m);
      }
      if (mapped.length === 0 && e.type !== 'assistant/message') delete e.sourceEventSeqs;
      else e.sourceEventSeqs = mapped;
    }
    const op = e.surfaceOp as unknown;
    if (op !== null && typeof op === 'object' && !Array.isArray(op)) {
      const r = op as { op?: unknown; start?: unknown; end?: unknown };
      const start = typeof r.start === 'number' ? this.mapSeq(r.start) : undefined;
      const end = typeof r.end === 'number' ? this.mapSeq(r.end) : undefined;
      if (start === undefined || end === undefined) {
        drop(`surface replacement of original seqs ${String(r.start)}..${String(r.end)}, which were lost`);
        return;
      }
      e.surfaceOp = { op: 'replace', start, end };
    }
    const envelope = envelopeProblem(e);
    if (envelope) {
      drop(`invalid event envelope (${envelope}); DSH's restore would reject the whole log`);
      return;
    }
    this.remapPayload(e, original.seq);
    try {
      this.fold.apply(e);
    } catch (error) {
      drop(`after renumbering, DSH's surface fold rejects it: ${(error as Error).message}`);
      return;
    }
    this.map.set(original.seq, seq);
    const last = this.runs[this.runs.length - 1];
    if (last && last.to + 1 === original.seq && last.newFrom + (last.to - last.from) + 1 === seq) last.to = original.seq;
    else this.runs.push({ from: original.seq, to: original.seq, newFrom: seq });
    await this.place(e, origin.unit);
  }

  private remapPayload(e: SessionEvent, originalSeq: number): void {
    const data = e.data as Record<string, unknown> | null;
    if (data === null || typeof data !== 'object' || Array.isArray(data)) return;
    const mapList = (field: string) => {
      const list = data[field];
      if (!Array.isArray(list)) return undefined;
      const out: number[] = [];
      for (const v of list) {
        if (typeof v !== 'number') continue;
        const m = this.mapSeq(v);
        if (m === undefined) this.plan.unmappedRefs.push({ seq: originalSeq, field, value: v });
        else out.push(m);
      }
      data[field] = out;
      return out;
    };
    switch (e.type) {
      case 'compaction/summary':
      case 'compaction/prune': {
        const out = mapList('shadowedSeqs');
        const range = data['shadowedRange'] as Record<string, unknown> | undefined;
        if (out && out.length > 0 && range && typeof range === 'object') {
          data['shadowedRange'] = { ...range, start: out[0], end: out[out.length - 1] };
        }
        break;
      }
      case 'session/title':
      case 'session/title-llm-request':
        mapList('messageSeqs');
        break;
      case 'command/done': {
        const v = data['sourceEventSeq'];
        if (typeof v === 'number') {
          const m = this.mapSeq(v);
          if (m === undefined) {
            this.plan.unmappedRefs.push({ seq: originalSeq, field: 'sourceEventSeq', value: v });
            delete data['sourceEventSeq'];
          } else data['sourceEventSeq'] = m;
        }
        break;
      }
    }
  }

  async finish(): Promise<SalvageArtifactPlan> {
    await this.notes(this.batchUnit, undefined);
    if (this.seedTarget !== undefined && this.seedNew === undefined) {
      // Every salvaged event is inherited seed.
      this.seedNew = this.next;
      this.plan.header.seedLength = this.seedNew;
    }
    await this.flush();
    return this.plan;
  }
}

const ENVELOPE_KEYS = new Set(['type', 'seq', 'time', 'data', 'surfaceOp', 'sourceEventSeqs', 'ignorable']);

/** DSH's restore-time envelope rules (C2), without the message-shape part (legacy shapes are migrated first). */
function envelopeProblem(e: Record<string, unknown>): string | undefined {
  for (const key of Object.keys(e)) if (!ENVELOPE_KEYS.has(key)) return `unexpected key ${toJson(key)}`;
  if (typeof e['time'] !== 'number' || !Number.isSafeInteger(e['time'])) return 'time is not a safe integer';
  if (e['data'] === undefined) return 'no data';
  if (e['ignorable'] !== undefined && e['ignorable'] !== true) return 'ignorable is not true';
  return undefined;
}

/** Original seq → new seq through the recorded runs (undefined: not in the artifact). */
export function mapThroughRuns(runs: readonly SeqRun[], seq: number): number | undefined {
  let lo = 0;
  let hi = runs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = runs[mid]!;
    if (seq < r.from) hi = mid - 1;
    else if (seq > r.to) lo = mid + 1;
    else return r.newFrom + (seq - r.from);
  }
  return undefined;
}

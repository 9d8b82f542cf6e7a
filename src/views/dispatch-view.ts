/**
 * The model dispatches of an indexed log: the saved dispatch index, whose entries are hydrated and
 * whose events are re-read only for the dispatches a view shows (`dsh request`, `dsh diff <t> <A> <B>`,
 * `Session.request*`). The log itself is never held.
 */
import type { SessionEvent } from '../log/types.js';
import type { SeqRange } from '../log/reread.js';
import type { Dispatches } from './dispatch-fold.js';
import { pickDispatch, pickDispatchPair, summarizeDispatch, type DispatchEntry, type DispatchIndex, type DispatchSummary, type SeqResolution } from './requests.js';

/** Re-reads the logical events of some seq ranges into a sparse array indexed by seq. */
export type Reread = (ranges: readonly SeqRange[], into?: SessionEvent[]) => Promise<SessionEvent[]>;

/** One dispatch picked by a seq inside it or by `turn/step[#attempt]`, with the events a view of it reads. */
export interface DispatchDetail {
  entry: DispatchEntry;
  /** The dispatch before it in the session, if any (hydrated). */
  previous: DispatchEntry | null;
  /** The dispatch after it, if any (hydrated). */
  next: DispatchEntry | null;
  /** How many dispatches the session has. */
  total: number;
  /** How it was picked (`seq 19`, `--step 1/1`). */
  from: string;
  via: Extract<SeqResolution, { ok: true }>['via'];
  /** The events this view read, as a sparse array indexed by seq. */
  events: readonly SessionEvent[];
}

/** Two dispatches of one session, the earlier first, and the events `diffDispatches(a, b)` reads (sparse, by seq). */
export interface DispatchPair {
  a: DispatchEntry;
  b: DispatchEntry;
  events: readonly SessionEvent[];
}

/** What a dispatch view reads beside the dispatch's input surface. */
export interface DispatchReads {
  /** The chunks of the dispatch and a few events after it (the human view). */
  around?: boolean;
  /** What `diffDispatches` from the previous dispatch reads. */
  diff?: boolean;
}

/** Seq ranges `diffDispatches(from, to)` reads. */
export function diffRanges(from: DispatchEntry | null, to: DispatchEntry): [number, number][] {
  const ranges: [number, number][] = to.surfaceNodes.map((s) => [s, s]);
  if (from) for (const s of from.surfaceNodes) ranges.push([s, s]);
  ranges.push([from?.prefixEventCount ?? 0, to.prefixEventCount - 1]);
  if (from) ranges.push([from.lastChunkSeq + 1, to.firstChunkSeq - 1]);
  return ranges;
}

/** The seqs `pickDispatch` may need to resolve: the argument when it is a number. */
function askedSeqs(...args: (string | undefined)[]): number[] {
  return args.filter((a): a is string => a !== undefined && /^\d+$/.test(a.trim())).map((a) => Number(a.trim()));
}

export class IndexedDispatches {
  private held: SessionEvent[] = [];
  constructor(
    private readonly dispatches: Dispatches,
    private readonly reread: Reread,
  ) {
    dispatches.useEvents(() => this.held);
  }

  get index(): DispatchIndex {
    return this.dispatches.index;
  }

  private async fetch(ranges: readonly SeqRange[], into?: SessionEvent[]): Promise<SessionEvent[]> {
    this.held = await this.reread(ranges, into);
    return this.held;
  }

  private hydrate(entries: readonly (DispatchEntry | null | undefined)[]): Promise<void> {
    return this.dispatches.hydrate(entries, (ranges) => this.reread(ranges));
  }

  /** Every dispatch, one summary each (`dsh request --list`). */
  async list(): Promise<DispatchSummary[]> {
    const requests = this.index.requests;
    await this.hydrate(requests);
    return requests.map((e, i) => summarizeDispatch(e, i > 0 ? (requests[i - 1] as DispatchEntry) : null));
  }

  /** The dispatch `seq` (any seq inside it) or `step` (`T/S[#n]`) names, and the events `reads` asks for. */
  async detail(seq: string | undefined, step: string | undefined, reads: DispatchReads = {}): Promise<DispatchDetail> {
    const index = this.index;
    const asked = askedSeqs(step === undefined ? seq : undefined)[0];
    const sparse = asked !== undefined ? await this.fetch([[asked, asked]]) : [];
    const picked = pickDispatch(index, sparse, seq, step);
    const entry = picked.entry;
    const at = entry.index;
    const previous = at > 0 ? (index.requests[at - 1] as DispatchEntry) : null;
    const next = at + 1 < index.requests.length ? (index.requests[at + 1] as DispatchEntry) : null;
    await this.hydrate([previous, entry, next]);
    const ranges: [number, number][] = entry.surfaceNodes.map((s) => [s, s]);
    if (asked !== undefined) ranges.push([asked, asked]);
    if (entry.assistantMessageSeq !== null) ranges.push([entry.assistantMessageSeq, entry.assistantMessageSeq]);
    if (reads.around) {
      ranges.push([entry.firstChunkSeq, entry.lastChunkSeq]);
      ranges.push([entry.lastChunkSeq + 1, (next ? next.firstChunkSeq : entry.lastChunkSeq + 9) - 1]);
    }
    if (reads.diff) ranges.push(...diffRanges(previous, entry));
    const events = await this.fetch(ranges);
    return { entry, previous, next, total: index.requests.length, from: picked.from, via: picked.resolution.via, events };
  }

  /** Two dispatches, each by a seq inside it or `T/S[#n]`, the earlier first, and the events `diffDispatches(a, b)` reads. */
  async pair(first: string, second: string): Promise<DispatchPair> {
    await this.hydrate(this.index.requests);
    const asked = askedSeqs(first, second);
    const sparse = await this.fetch(asked.map((s) => [s, s] as [number, number]));
    const { a, b } = pickDispatchPair(this.index, sparse, first, second);
    const events = await this.fetch(diffRanges(a, b));
    return { a, b, events };
  }
}

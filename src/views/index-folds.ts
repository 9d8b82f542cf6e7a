/**
 * The view folds kept in the persistent session index (`src/log/index`):
 * built on every cold validating pass, whatever the command, so any later
 * command on the same bytes loads them instead of reading the log. Each holds
 * numbers only.
 */
import type { SessionEvent } from '../log/types.js';
import { VarReader, VarWriter } from '../log/index/codec.js';
import type { FoldBuilder, FoldResults, PersistentFold } from '../log/index/session-index.js';
import { MessageGroups } from './history.js';
import { DISPATCHES } from './dispatch-fold.js';
import { isSurfaceEvent } from '../log/surface.js';
import { REPLAY_PLAN } from './replay.js';
import { lowerBound, upperBound } from '../core/sorted.js';

/**
 * Every event's citations of earlier events (`sourceEventSeqs` that are
 * seqs before it), in log order: the reverse citation index `trace` needs.
 * Kept encoded and scanned, never expanded: only the events that cite
 * something, each as its distance from the previous such event and its
 * sources in their order as runs of consecutive seqs (a message cites the
 * chunks it was assembled from: 12.7 M citations are 0.35 M runs on the bench's
 * 2 GB log).
 */
export class Citations {
  /** `complete`: every event was folded (false: the log's seqs were not contiguous, the fold stopped). */
  constructor(
    private readonly bytes: Buffer,
    readonly complete = true,
  ) {}
  /** For each of `seqs`, the later events that cite it, in log order (closers and other `extra` events after). */
  derivedOf(seqs: Iterable<number>, extra: readonly SessionEvent[] = []): Map<number, number[]> {
    const out = new Map<number, number[]>();
    for (const s of seqs) out.set(s, []);
    const wanted = [...out.keys()].sort((a, b) => a - b);
    const lowest = wanted.length > 0 ? (wanted[0] as number) : Infinity;
    const highest = wanted.length > 0 ? (wanted[wanted.length - 1] as number) : -Infinity;
    this.eachRun((seq, first, last) => {
      if (last < lowest || first > highest) return;
      // The wanted seqs in [first, last], each cited once by this run.
      for (let i = lowerBound(wanted, first); i < wanted.length && (wanted[i] as number) <= last; i++) out.get(wanted[i] as number)!.push(seq);
    });
    for (const e of extra) for (const s of citedBefore(e)) out.get(s)?.push(e.seq);
    return out;
  }

  /** Every run of cited seqs, as `visit(citer, first, last)`, in log order (no object per run: there are 0.35 M on the 2 GB bench log). */
  private eachRun(visit: (citer: number, first: number, last: number) => void): void {
    const r = new VarReader(this.bytes);
    for (let seq = -1; !r.atEnd; ) {
      seq += 1 + r.uint();
      for (let runs = r.uint(); runs > 0; runs--) {
        const first = seq - r.uint();
        visit(seq, first, first + r.uint());
      }
    }
  }

  /**
   * Every cited seq's citers, as segments `[first, end, citers]`: each seq in `[first, end)` is cited by
   * `citers` (ascending; a citer that cites a seq n times is there n times), the stored events' citations
   * then those of `extra` (closers, later seqs). Segments are ascending and disjoint, seqs between them
   * are cited by none, and two adjacent segments may have the same list. A sweep over the runs' ends:
   * it holds the runs, never a list per seq.
   */
  *citedSegments(extra: readonly SessionEvent[] = []): Generator<[number, number, number[]]> {
    const starts: number[] = [];
    const ends: number[] = [];
    const citers: number[] = [];
    const add = (citer: number, first: number, last: number) => {
      starts.push(first);
      ends.push(last + 1);
      citers.push(citer);
    };
    this.eachRun(add);
    for (const e of extra) for (const [first, last] of citedRuns(e)) add(e.seq, first, last);
    const n = starts.length;
    const byStart = Uint32Array.from({ length: n }, (_, i) => i).sort((a, b) => (starts[a] as number) - (starts[b] as number));
    const byEnd = Uint32Array.from({ length: n }, (_, i) => i).sort((a, b) => (ends[a] as number) - (ends[b] as number));
    const active: number[] = [];
    let i = 0;
    let j = 0;
    while (j < n) {
      const at = Math.min(i < n ? (starts[byStart[i] as number] as number) : Infinity, ends[byEnd[j] as number] as number);
      for (; j < n && ends[byEnd[j] as number] === at; j++) active.splice(lowerBound(active, citers[byEnd[j] as number] as number), 1);
      for (; i < n && starts[byStart[i] as number] === at; i++) {
        const c = citers[byStart[i] as number] as number;
        active.splice(upperBound(active, c), 0, c);
      }
      if (active.length === 0) continue;
      const next = Math.min(i < n ? (starts[byStart[i] as number] as number) : Infinity, ends[byEnd[j] as number] as number);
      yield [at, next, active.slice()];
    }
  }
}

/** Does `e` cite `s` as an earlier event (what the citation index keeps)? */
function citesEarlier(e: SessionEvent, s: unknown): s is number {
  return Number.isSafeInteger(s) && (s as number) >= 0 && (s as number) < e.seq;
}

function citedBefore(e: SessionEvent): number[] {
  if (!Array.isArray(e.sourceEventSeqs)) return [];
  return e.sourceEventSeqs.filter((s): s is number => citesEarlier(e, s));
}

/** What `citedRuns` answers for an event that cites nothing (shared; never changed). */
const NO_RUNS: readonly (readonly [number, number])[] = [];

/**
 * The earlier seqs `e` cites, in its order, as runs `[first, last]` of consecutive ascending seqs
 * (built straight from its list: this runs for every event of a log that writes the index).
 */
function citedRuns(e: SessionEvent): readonly (readonly [number, number])[] {
  const list = e.sourceEventSeqs;
  if (!Array.isArray(list) || list.length === 0) return NO_RUNS;
  const runs: [number, number][] = [];
  for (const s of list) {
    if (!citesEarlier(e, s)) continue;
    const run = runs[runs.length - 1];
    if (run && s === run[1] + 1) run[1] = s;
    else runs.push([s, s]);
  }
  return runs;
}

/**
 * The citations builder, going on after `events` events (the last that cites something being
 * `lastCiting`, -1 for none) whose encoding is `before` (empty: a fresh one).
 */
function citationsBuilder(events: number, lastCiting: number, before: Buffer): FoldBuilder<Citations> {
  const w = new VarWriter();
  let broken = false;
  const body = () => (before.length > 0 ? Buffer.concat([before, w.done()]) : w.done());
  return {
    observe(e) {
      // Seqs ascend in an accepted log (contiguous, but a lean pass skips rows' chunks, which cite
      // nothing); anything else is not indexed.
      if (!(e.seq >= events)) broken = true;
      events = e.seq + 1;
      if (broken) return;
      const runs = citedRuns(e);
      if (runs.length === 0) return;
      w.uint(e.seq - lastCiting - 1).uint(runs.length);
      for (const [first, last] of runs) w.uint(e.seq - first).uint(last - first);
      lastCiting = e.seq;
    },
    end(_closers, storedEventCount) {
      if (storedEventCount < events) broken = true;
      events = storedEventCount;
    },
    result: () => new Citations(body(), !broken),
    encode: () => (broken ? undefined : Buffer.concat([new VarWriter().uint(events).uint(lastCiting + 1).done(), body()])),
  };
}

/** The persistent fold of which events cite which (trace). */
export const CITATIONS: PersistentFold<Citations> = {
  tag: 100,
  leanRows: true,
  skipsRowChunks: true,
  create: () => citationsBuilder(0, -1, Buffer.alloc(0)),
  decode(bytes) {
    const r = new VarReader(bytes);
    r.uint();
    r.uint();
    return new Citations(bytes.subarray(r.offset));
  },
  resume(bytes, prefix) {
    const r = new VarReader(bytes);
    const events = r.uint();
    const lastCiting = r.uint() - 1;
    if (events !== prefix.storedEventCount) throw new Error('the saved citations are not of this prefix');
    return citationsBuilder(events, lastCiting, Buffer.from(bytes.subarray(r.offset)));
  },
};

/** The (seq, group start) pairs of `groups`, appended to `w`; false when one is not a safe integer. */
function writePairs(w: VarWriter, groups: MessageGroups): boolean {
  const { seqs, starts } = groups.pairs();
  for (let i = 0; i < seqs.length; i++) if (!Number.isSafeInteger(seqs[i]) || !Number.isSafeInteger(starts[i])) return false;
  for (let i = 0; i < seqs.length; i++) w.uint(seqs[i] as number).int((seqs[i] as number) - (starts[i] as number));
  return true;
}

function messageGroupsBuilder(groups: MessageGroups): FoldBuilder<MessageGroups> {
  return {
    observe: (e) => groups.observe(e),
    result: () => groups,
    encode: () => {
      const w = new VarWriter().uint(groups.pairs().seqs.length);
      return writePairs(w, groups) ? w.done() : undefined;
    },
  };
}

/**
 * A message-groups fold that goes on from its saved bytes without decoding them: the new pairs are
 * kept apart, the saved pairs' bytes carried into the next save as they are (pieces), and the saved
 * groups decoded only when a view reads the fold.
 */
function resumedMessageGroupsBuilder(bytes: Buffer): FoldBuilder<MessageGroups> {
  const r = new VarReader(bytes);
  const count = r.uint();
  const pairs = bytes.subarray(r.offset);
  const added = new MessageGroups();
  let whole: MessageGroups | undefined;
  return {
    observe: (e) => {
      added.observe(e);
      whole?.observe(e);
    },
    result: () => {
      if (!whole) {
        const saved = MESSAGE_GROUPS.decode(bytes).pairs();
        const more = added.pairs();
        whole = new MessageGroups(saved.seqs.concat(more.seqs), saved.starts.concat(more.starts));
      }
      return whole;
    },
    encode: () => {
      const w = new VarWriter().uint(count + added.pairs().seqs.length).shared(pairs);
      return writePairs(w, added) ? w.pieces() : undefined;
    },
  };
}

/** The persistent fold of the message groups (surface, transcript, history). */
export const MESSAGE_GROUPS: PersistentFold<MessageGroups> = {
  tag: 101,
  leanRows: true,
  skipsRowChunks: true,
  create: () => messageGroupsBuilder(new MessageGroups()),
  resume: (bytes) => resumedMessageGroupsBuilder(bytes),
  decode(bytes) {
    const r = new VarReader(bytes);
    const n = r.uint();
    // Sized once (92,000 pairs on the 2 GB bench log): no growth copies.
    const seqs = new Array<number>(n);
    const starts = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const seq = r.uint();
      seqs[i] = seq;
      starts[i] = seq - r.int();
    }
    return new MessageGroups(seqs, starts);
  },
};


/** The result of one persistent fold among those a read built. */
export function foldOf<T>(results: FoldResults, fold: PersistentFold<T>): T {
  const v = results.get(fold.tag);
  if (v === undefined) throw new Error(`fold ${fold.tag} was not built`);
  return v as T;
}

/** Seqs of the surface events (messages with a surfaceOp), ascending: `surface` replays its fold from them. */
function surfaceEventsBuilder(seqs: number[]): FoldBuilder<number[]> {
  return {
    observe: (e) => {
      if (isSurfaceEvent(e)) seqs.push(e.seq);
    },
    result: () => seqs,
    encode: () => new VarWriter().ascending(seqs).done(),
  };
}

/** The persistent fold of the seqs of surface events. */
export const SURFACE_EVENTS: PersistentFold<number[]> = {
  tag: 103,
  leanRows: true,
  skipsRowChunks: true,
  create: () => surfaceEventsBuilder([]),
  decode: (bytes) => new VarReader(bytes).ascending(),
  resume: (bytes) => surfaceEventsBuilder(new VarReader(bytes).ascending()),
};

/** Seqs of the `turn/start` events, ascending: `events --from` finds the turn its first event belongs to. */
export const TURN_STARTS: PersistentFold<number[]> = {
  tag: 104,
  leanRows: true,
  skipsRowChunks: true,
  create: () => turnStartsBuilder([]),
  decode: (bytes) => new VarReader(bytes).ascending(),
  resume: (bytes) => turnStartsBuilder(new VarReader(bytes).ascending()),
};

function turnStartsBuilder(seqs: number[]): FoldBuilder<number[]> {
  return {
    observe: (e) => {
      if (e.type === 'turn/start') seqs.push(e.seq);
    },
    result: () => seqs,
    encode: () => new VarWriter().ascending(seqs).done(),
  };
}

/** Every fold the index keeps, in tag order. */
export const SESSION_FOLDS: readonly PersistentFold[] = [CITATIONS, MESSAGE_GROUPS, DISPATCHES, SURFACE_EVENTS, TURN_STARTS, REPLAY_PLAN];

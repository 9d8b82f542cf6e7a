/**
 * The dispatch index (`request`) as a persistent fold: every number of every
 * dispatch is kept (keys, chunk spans, owners, steps, surface snapshots), and
 * the values that are log text (the request header, the request context, the
 * finish reason, usage) are kept as the seq of the event they come from and
 * re-read from the log when a view shows that dispatch (`hydrate`).
 */
import type { SessionEvent } from '../log/types.js';
import { VarReader, VarWriter } from '../log/index/codec.js';
import type { FoldBuilder, PersistentFold } from '../log/index/session-index.js';
import type { SeqRange } from '../log/reread.js';
import { canonicalHeader } from './header.js';
import { dispatchKey, stepKey } from '../core/keys.js';
import { AscendingNumberMap } from '../core/sorted.js';
import { appendTo } from '../core/arrays.js';
import { DispatchBuilder, lazySnapshot, restoredEntry, settle, type ChunkSources, type DispatchEntry, type DispatchIndex, type DispatchResumeState, type StepEntry } from './requests.js';

/** Reads the events of some seq ranges back from the artifact (to hydrate dispatches from the index). */
export type Fetch = (ranges: readonly SeqRange[]) => Promise<readonly SessionEvent[]>;

/** Every dispatch's chunk span, in index order: `first[i]`/`last[i]` are dispatch i's first and last chunk seqs. */
export interface DispatchSpans {
  readonly first: ArrayLike<number>;
  readonly last: ArrayLike<number>;
}

/** The chunk spans of some entries (reading each one). */
export function spansOf(entries: readonly DispatchEntry[]): DispatchSpans {
  const first = new Float64Array(entries.length);
  const last = new Float64Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as DispatchEntry;
    first[i] = e.firstChunkSeq;
    last[i] = e.lastChunkSeq;
  }
  return { first, last };
}

export class Dispatches {
  private events: () => readonly SessionEvent[] = () => [];
  private readonly hydrated = new Set<number>();
  constructor(
    readonly index: DispatchIndex,
    private readonly sources: ChunkSources,
    private readonly savedSpans: DispatchSpans | null = null,
  ) {}
  /** Every dispatch's chunk span (a saved index reads them without building its entries). */
  spans(): DispatchSpans {
    return this.savedSpans ?? spansOf(this.index.requests);
  }
  /** The (sparse) logical events lazy entries derive their messages from. */
  useEvents(events: () => readonly SessionEvent[]): void {
    this.events = events;
  }
  get eventsFn(): () => readonly SessionEvent[] {
    return () => this.events();
  }
  /** Fill the text-valued fields of `entries` (those not filled yet) from the log. */
  async hydrate(entries: readonly (DispatchEntry | null | undefined)[], fetch: Fetch): Promise<void> {
    const src = this.sources;
    const todo = entries.filter((e): e is DispatchEntry => !!e && !this.hydrated.has(e.index));
    if (todo.length === 0) return;
    const seqs = new Set<number>();
    for (const e of todo) {
      for (const s of [e.headerSeq, e.requestContextSeq, e.assistantMessageSeq, src.finishSeq[e.index], src.usageSeq[e.index]]) if (s !== null && s !== undefined) seqs.add(s);
    }
    const got = await fetch([...seqs].map((s) => [s, s] as [number, number]));
    for (const e of todo) {
      const at = (s: number | null | undefined) => (s === null || s === undefined ? undefined : got[s]);
      e.header = e.headerSeq !== null ? canonicalHeader(at(e.headerSeq)?.data?.header) : null;
      e.requestContext = e.requestContextSeq !== null ? (at(e.requestContextSeq)?.data ?? null) : null;
      const fin = at(src.finishSeq[e.index]);
      e.finish = fin ? (fin.data?.chunk?.reason ?? null) : null;
      const use = at(src.usageSeq[e.index]);
      e.chunkUsage = use ? (use.data?.chunk?.usage ?? null) : null;
      const msg = at(e.assistantMessageSeq);
      e.messageUsage = msg ? (msg.data?.usage ?? null) : null;
      this.hydrated.add(e.index);
    }
  }
  /**
   * Let hydrated entries forget their text-valued fields again (a later {@link hydrate} re-reads
   * them), so a walk over many dispatches holds the headers of a few at a time.
   */
  release(entries: readonly DispatchEntry[]): void {
    for (const e of entries) {
      if (!this.hydrated.delete(e.index)) continue;
      e.header = null;
      e.requestContext = null;
      e.finish = null;
      e.chunkUsage = null;
      e.messageUsage = null;
    }
  }
}

const safe = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const opt = (v: number | null) => (v === null ? 0 : v + 1);
const unopt = (v: number) => (v === 0 ? null : v - 1);

/** The fold around a builder (which records where each dispatch's finish and usage come from, in `src`): keeps the resume state. */
function dispatchFold(builder: DispatchBuilder, src: ChunkSources, result: () => Dispatches): FoldBuilder<Dispatches> {
  let state: DispatchResumeState | undefined;
  let index: DispatchIndex | undefined;
  const done = () => (index ??= builder.finish());
  return {
    observe: (e) => void builder.apply(e),
    end: (closers) => {
      // The state to go on from is the stored events' (closers are in memory only).
      state ??= builder.resumeState();
      for (const c of closers) builder.apply(c);
    },
    result: () => {
      done();
      return result();
    },
    encode: () => {
      state ??= builder.resumeState();
      const x = done();
      const main = encodeDispatches(x, src);
      return main && Buffer.concat([main, encodeResumeState(state)]);
    },
  };
}

/** The persistent fold of the dispatch index (what `dsh request` and `diff` read from the index cache). */
export const DISPATCHES: PersistentFold<Dispatches> = {
  tag: 102,
  leanRows: true,
  create(): FoldBuilder<Dispatches> {
    let result: Dispatches | undefined;
    const sources: ChunkSources = { finishSeq: [], usageSeq: [] };
    const builder = new DispatchBuilder({ lazy: () => result!.eventsFn(), trusted: true, sources });
    // Its entries keep seqs, not the request headers and usage they point at: a view re-reads those it shows.
    result = new Dispatches(builder.out, sources);
    return dispatchFold(builder, sources, () => result!);
  },
  decode: (bytes) => savedDispatches(bytes),
  resume(bytes, prefix) {
    const r = new VarReader(bytes);
    let result: Dispatches | undefined;
    const events = () => result!.eventsFn();
    const decoded = decodeDispatches(r, events);
    const state = decodeResumeState(r);
    if (state.eventCount !== prefix.storedEventCount) throw new Error('the saved dispatch state is not of this prefix');
    const builder = DispatchBuilder.resume(decoded.result.index, state, prefix.surface, events, decoded.sources);
    // Entries are re-read for their text-valued fields, old and new alike.
    result = new Dispatches(builder.out, decoded.sources);
    return dispatchFold(builder, decoded.sources, () => result!);
  },
};

function encodeResumeState(s: DispatchResumeState): Buffer {
  const w = new VarWriter().uint(s.eventCount).uint(opt(s.openIndex)).uint(opt(s.headerSeq)).uint(opt(s.contextSeq));
  w.uints(s.silentNodes).uint(s.mirrorLength).uint(s.mirrorShared ? 1 : 0).uint(s.callOwners.size);
  for (const [digest, owner] of s.callOwners) w.bytes(Buffer.from(digest, 'latin1')).uint(owner);
  return w.done();
}

function decodeResumeState(r: VarReader): DispatchResumeState {
  const eventCount = r.uint();
  const openIndex = unopt(r.uint());
  const headerSeq = unopt(r.uint());
  const contextSeq = unopt(r.uint());
  const silentNodes = r.uints();
  const mirrorLength = r.uint();
  const mirrorShared = r.uint() === 1;
  const callOwners = new Map<string, number>();
  for (let n = r.uint(), i = 0; i < n; i++) callOwners.set(r.bytes().toString('latin1'), r.uint());
  return { eventCount, openIndex, headerSeq, contextSeq, silentNodes, mirrorLength, mirrorShared, callOwners };
}

function encodeDispatches(x: DispatchIndex, src: ChunkSources): Buffer | undefined {
  const w = new VarWriter().uint(x.eventCount);
  const snapshots = new Map<readonly number[], number>();
  const order: (readonly number[])[] = [];
  for (const e of x.requests) {
    const snap = lazySnapshot(e);
    if (!snap) return undefined;
    if (!snapshots.has(snap[0])) {
      snapshots.set(snap[0], order.length);
      order.push(snap[0]);
    }
  }
  w.uint(order.length);
  for (const s of order) {
    if (!s.every(safe)) return undefined;
    w.uints(s.map((v) => (v < 0 ? -1 : v)));
    if (s.some((v) => v < 0)) return undefined;
  }
  w.uint(x.requests.length);
  for (const e of x.requests) {
    if (!safe(e.turn) || !safe(e.step) || !safe(e.firstChunkTime) || !safe(e.lastChunkTime)) return undefined;
    const snap = lazySnapshot(e)!;
    w.int(e.turn).int(e.step).uint(e.attemptInStep).uint(e.firstChunkSeq).uint(e.lastChunkSeq).uint(e.chunkCount);
    w.uint(opt(src.finishSeq[e.index] ?? null)).uint(opt(src.usageSeq[e.index] ?? null));
    w.uint(opt(e.assistantMessageSeq)).uint(e.prefixEventCount).uint(opt(e.headerSeq)).uint(opt(e.requestContextSeq));
    w.uint(e.messageCount).int(e.firstChunkTime).int(e.lastChunkTime).uint(snapshots.get(snap[0])!).uint(snap[1]);
  }
  w.ascending(x.owners.keys()).uints(x.owners.values());
  w.ascending([...x.inSpan].sort((a, b) => a - b));
  w.uint(x.steps.length);
  for (const s of x.steps) {
    if (!safe(s.turn) || !safe(s.step)) return undefined;
    w.int(s.turn).int(s.step).uint(s.startSeq).uint(opt(s.endSeq)).uints(s.requestHeaderSeqs).uints(s.requestIndexes);
  }
  return w.done();
}

/** The numbers of one saved dispatch (the encoder's order). */
const RECORD_VALUES = 17;

/** One saved dispatch read from `r`: its entry's fields (in the order the builder creates them: JSON output follows it), where its finish and usage come from, and its snapshot. */
function readRecord(r: VarReader, i: number) {
  const turn = r.int();
  const step = r.int();
  const attemptInStep = r.uint();
  const firstChunkSeq = r.uint();
  const lastChunkSeq = r.uint();
  const chunkCount = r.uint();
  const finishSeq = unopt(r.uint());
  const usageSeq = unopt(r.uint());
  const assistantMessageSeq = unopt(r.uint());
  const prefixEventCount = r.uint();
  const headerSeq = unopt(r.uint());
  const requestContextSeq = unopt(r.uint());
  const messageCount = r.uint();
  const firstChunkTime = r.int();
  const lastChunkTime = r.int();
  const snap = r.uint();
  const length = r.uint();
  const fields = {
    index: i,
    key: dispatchKey(turn, step, attemptInStep),
    turn,
    step,
    attemptInStep,
    firstChunkSeq,
    lastChunkSeq,
    chunkCount,
    finish: null,
    assistantMessageSeq,
    prefixEventCount,
    headerSeq,
    header: null,
    requestContextSeq,
    requestContext: null,
    messageCount,
    firstChunkTime,
    lastChunkTime,
    chunkUsage: null,
    messageUsage: null,
  };
  return { fields, finishSeq, usageSeq, snap, length };
}

function readOwners(r: VarReader): AscendingNumberMap {
  const keys = r.ascending();
  const values = r.uints();
  const owners = new AscendingNumberMap();
  keys.forEach((k, i) => owners.set(k, values[i] as number));
  return owners;
}

function readSteps(r: VarReader): StepEntry[] {
  const steps: StepEntry[] = [];
  for (let n = r.uint(), i = 0; i < n; i++) steps.push({ turn: r.int(), step: r.int(), startSeq: r.uint(), endSeq: unopt(r.uint()), requestHeaderSeqs: r.uints(), requestIndexes: r.uints() });
  return steps;
}

/** The saved dispatch index read from `r` (left after it), every entry built; restored entries read messages from `events` (default: the result's). */
function decodeDispatches(r: VarReader, events?: () => readonly SessionEvent[]): { result: Dispatches; sources: ChunkSources } {
  const eventCount = r.uint();
  const snapshots: number[][] = [];
  for (let n = r.uint(), i = 0; i < n; i++) snapshots.push(r.uints());
  const index: DispatchIndex = { requests: [], requestIndexByFirstChunkSeq: {}, requestIndexesByStep: {}, steps: [], owners: new AscendingNumberMap(), inSpan: new Set(), eventCount };
  const src: ChunkSources = { finishSeq: [], usageSeq: [] };
  let result: Dispatches | undefined;
  events ??= () => result!.eventsFn();
  for (let n = r.uint(), i = 0; i < n; i++) {
    const x = readRecord(r, i);
    const snap = snapshots[x.snap];
    if (!snap) throw new Error('dispatch snapshot out of range');
    src.finishSeq.push(x.finishSeq);
    src.usageSeq.push(x.usageSeq);
    index.requests.push(restoredEntry(x.fields, snap, x.length, events));
    index.requestIndexByFirstChunkSeq[x.fields.firstChunkSeq] = i;
    const key = stepKey(x.fields.turn, x.fields.step);
    index.requestIndexesByStep[key] = appendTo(index.requestIndexesByStep[key], i);
  }
  index.owners = readOwners(r);
  for (const s of r.ascending()) index.inSpan.add(s);
  index.steps = readSteps(r);
  result = new Dispatches(index, src);
  return { result, sources: src };
}

/**
 * The saved dispatch index as a warm view reads it: one walk finds where each dispatch's numbers
 * lie, and an entry, a snapshot, the owners, the steps or the by-step lists are decoded only when
 * first read (a view shows a few of 70,000 dispatches; building them all cost 70 MB on the bench's
 * 2 GB log). Equal, field for field, to `decodeDispatches`.
 */
function savedDispatches(bytes: Buffer): Dispatches {
  const r = new VarReader(bytes);
  const eventCount = r.uint();
  const snapshotAt = new Float64Array(r.uint());
  for (let i = 0; i < snapshotAt.length; i++) {
    snapshotAt[i] = r.offset;
    r.skipArray();
  }
  const recordAt = new Float64Array(r.uint());
  const firstChunk = new Float64Array(recordAt.length);
  const lastChunk = new Float64Array(recordAt.length);
  for (let i = 0; i < recordAt.length; i++) {
    recordAt[i] = r.offset;
    r.skip(3);
    firstChunk[i] = r.uint();
    lastChunk[i] = r.uint();
    r.skip(RECORD_VALUES - 7);
    if (r.uint() >= snapshotAt.length) throw new Error('dispatch snapshot out of range');
    r.uint();
  }
  const ownersAt = r.offset;
  r.skipArray();
  r.skipArray();
  const inSpanAt = r.offset;
  r.skipArray();
  const stepsAt = r.offset;
  const at = (offset: number) => new VarReader(bytes).seek(offset);
  const snapshots: number[][] = [];
  const snapshot = (k: number) => (snapshots[k] ??= at(snapshotAt[k] as number).uints());
  const src: ChunkSources = { finishSeq: [], usageSeq: [] };
  let result: Dispatches | undefined;
  const events = () => result!.eventsFn();
  const requests = lazyArray<DispatchEntry>(recordAt.length, (i) => {
    const x = readRecord(at(recordAt[i] as number), i);
    src.finishSeq[i] = x.finishSeq;
    src.usageSeq[i] = x.usageSeq;
    return restoredEntry(x.fields, snapshot(x.snap), x.length, events);
  });
  const index = {
    requests,
    eventCount,
    get requestIndexByFirstChunkSeq(): Record<string, number> {
      const out: Record<string, number> = {};
      firstChunk.forEach((seq, i) => (out[String(seq)] = i));
      return settle(this, 'requestIndexByFirstChunkSeq', out);
    },
    get requestIndexesByStep(): Record<string, number[]> {
      const out: Record<string, number[]> = {};
      for (let i = 0; i < recordAt.length; i++) {
        const rr = at(recordAt[i] as number);
        const turn = rr.int();
        const key = stepKey(turn, rr.int());
        out[key] = appendTo(out[key], i);
      }
      return settle(this, 'requestIndexesByStep', out);
    },
    get owners(): AscendingNumberMap {
      return settle(this, 'owners', readOwners(at(ownersAt)));
    },
    get inSpan(): Set<number> {
      return settle(this, 'inSpan', new Set(at(inSpanAt).ascending()));
    },
    get steps(): StepEntry[] {
      return settle(this, 'steps', readSteps(at(stepsAt)));
    },
  };
  result = new Dispatches(index, src, { first: firstChunk, last: lastChunk });
  return result;
}

/**
 * An array of `length` whose element `i` is `make(i)`, made on first read (then kept). It reads,
 * iterates and serializes as the array of every element; enumerating its keys makes them all.
 */
function lazyArray<T>(length: number, make: (i: number) => T): T[] {
  const target = new Array<T>(length);
  const slot = (p: string | symbol): number | undefined => {
    if (typeof p !== 'string' || p.length === 0 || p.charCodeAt(0) < 48 || p.charCodeAt(0) > 57) return undefined;
    const i = Number(p);
    return Number.isInteger(i) && i < length && String(i) === p ? i : undefined;
  };
  const fill = (i: number) => (i in target ? target[i] : (target[i] = make(i)));
  const fillAll = () => {
    for (let i = 0; i < length; i++) fill(i);
  };
  return new Proxy(target, {
    get(t, p, receiver) {
      const i = slot(p);
      return i === undefined ? Reflect.get(t, p, receiver) : fill(i);
    },
    has(t, p) {
      return slot(p) !== undefined || Reflect.has(t, p);
    },
    getOwnPropertyDescriptor(t, p) {
      const i = slot(p);
      if (i !== undefined) fill(i);
      return Reflect.getOwnPropertyDescriptor(t, p);
    },
    ownKeys(t) {
      fillAll();
      return Reflect.ownKeys(t);
    },
  });
}

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
import { DispatchBuilder, lazySnapshot, restoredEntry, type DispatchEntry, type DispatchIndex, type DispatchResumeState, type StepEntry } from './requests.js';

/** Reads the events of some seq ranges back from the artifact (to hydrate dispatches from the index). */
export type Fetch = (ranges: readonly SeqRange[]) => Promise<readonly SessionEvent[]>;

/** Where each dispatch's text-valued fields come from. */
interface Sources {
  finishSeq: (number | null)[];
  usageSeq: (number | null)[];
}

export class Dispatches {
  private events: () => readonly SessionEvent[] = () => [];
  private readonly hydrated = new Set<number>();
  constructor(
    readonly index: DispatchIndex,
    private readonly sources: Sources | null,
  ) {}
  /** The (sparse) logical events lazy entries derive their messages from. */
  useEvents(events: () => readonly SessionEvent[]): void {
    this.events = events;
  }
  get eventsFn(): () => readonly SessionEvent[] {
    return () => this.events();
  }
  /** Fill the text-valued fields of `entries` from the log (a no-op for dispatches built by a full pass). */
  async hydrate(entries: readonly (DispatchEntry | null | undefined)[], fetch: Fetch): Promise<void> {
    const src = this.sources;
    if (!src) return;
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
}

const safe = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const opt = (v: number | null) => (v === null ? 0 : v + 1);
const unopt = (v: number) => (v === 0 ? null : v - 1);

/** The fold around a builder: records where each dispatch's finish and usage come from, keeps the resume state. */
function dispatchFold(builder: DispatchBuilder, src: Sources, result: () => Dispatches): FoldBuilder<Dispatches> {
  let state: DispatchResumeState | undefined;
  const observe = (e: SessionEvent) => {
    builder.apply(e);
    if (e.type !== 'assistant/chunk') return;
    const reqs = builder.out.requests;
    const entry = reqs[reqs.length - 1];
    if (!entry || entry.lastChunkSeq !== e.seq) return;
    const t = e.data?.chunk?.type;
    if (t === 'usage') src.usageSeq[entry.index] = e.seq;
    if (t === 'finish') src.finishSeq[entry.index] = e.seq;
  };
  let index: DispatchIndex | undefined;
  const done = () => (index ??= builder.finish());
  return {
    observe,
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
  create(): FoldBuilder<Dispatches> {
    let result: Dispatches | undefined;
    const builder = new DispatchBuilder({ lazy: () => result!.eventsFn() });
    result = new Dispatches(builder.out, null);
    return dispatchFold(builder, { finishSeq: [], usageSeq: [] }, () => result!);
  },
  decode(bytes) {
    return decodeDispatches(new VarReader(bytes)).result;
  },
  resume(bytes, prefix) {
    const r = new VarReader(bytes);
    let result: Dispatches | undefined;
    const events = () => result!.eventsFn();
    const decoded = decodeDispatches(r, events);
    const state = decodeResumeState(r);
    if (state.eventCount !== prefix.storedEventCount) throw new Error('the saved dispatch state is not of this prefix');
    const builder = DispatchBuilder.resume(decoded.result.index, state, prefix.surface, events);
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

function encodeDispatches(x: DispatchIndex, src: Sources): Buffer | undefined {
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
  const owners = [...x.owners].sort((a, b) => a[0] - b[0]);
  w.ascending(owners.map((o) => o[0])).uints(owners.map((o) => o[1]));
  w.ascending([...x.inSpan].sort((a, b) => a - b));
  w.uint(x.steps.length);
  for (const s of x.steps) {
    if (!safe(s.turn) || !safe(s.step)) return undefined;
    w.int(s.turn).int(s.step).uint(s.startSeq).uint(opt(s.endSeq)).uints(s.requestHeaderSeqs).uints(s.requestIndexes);
  }
  return w.done();
}

/** The saved dispatch index read from `r` (left after it); restored entries read messages from `events` (default: the result's). */
function decodeDispatches(r: VarReader, events?: () => readonly SessionEvent[]): { result: Dispatches; sources: Sources } {
  const eventCount = r.uint();
  const snapshots: number[][] = [];
  for (let n = r.uint(), i = 0; i < n; i++) snapshots.push(r.uints());
  const index: DispatchIndex = { requests: [], requestIndexByFirstChunkSeq: {}, requestIndexesByStep: {}, steps: [], owners: new Map(), inSpan: new Set(), eventCount };
  const src: Sources = { finishSeq: [], usageSeq: [] };
  let result: Dispatches | undefined;
  events ??= () => result!.eventsFn();
  for (let n = r.uint(), i = 0; i < n; i++) {
    const turn = r.int();
    const step = r.int();
    const attemptInStep = r.uint();
    const firstChunkSeq = r.uint();
    const lastChunkSeq = r.uint();
    const chunkCount = r.uint();
    src.finishSeq.push(unopt(r.uint()));
    src.usageSeq.push(unopt(r.uint()));
    const assistantMessageSeq = unopt(r.uint());
    const prefixEventCount = r.uint();
    const headerSeq = unopt(r.uint());
    const requestContextSeq = unopt(r.uint());
    const messageCount = r.uint();
    const firstChunkTime = r.int();
    const lastChunkTime = r.int();
    const snap = snapshots[r.uint()];
    const length = r.uint();
    if (!snap) throw new Error('dispatch snapshot out of range');
    const key = stepKey(turn, step);
    // Field order as the builder creates them (JSON output follows it).
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
    const entry = restoredEntry(fields, snap, length, events);
    index.requests.push(entry);
    index.requestIndexByFirstChunkSeq[String(firstChunkSeq)] = i;
    (index.requestIndexesByStep[key] ??= []).push(i);
  }
  const ownerKeys = r.ascending();
  const ownerValues = r.uints();
  ownerKeys.forEach((k, i) => index.owners.set(k, ownerValues[i] as number));
  for (const s of r.ascending()) index.inSpan.add(s);
  for (let n = r.uint(), i = 0; i < n; i++) {
    const s: StepEntry = { turn: r.int(), step: r.int(), startSeq: r.uint(), endSeq: unopt(r.uint()), requestHeaderSeqs: r.uints(), requestIndexes: r.uints() };
    index.steps.push(s);
  }
  result = new Dispatches(index, src);
  return { result, sources: src };
}

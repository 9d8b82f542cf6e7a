/**
 * The dispatch index (`request`) as a persistent fold: every number of every
 * dispatch is kept (keys, chunk spans, owners, steps, surface snapshots), and
 * the values that are log text (the request header, the request context, the
 * finish reason, usage) are kept as the seq of the event they come from and
 * re-read from the log when a view shows that dispatch (`hydrate`).
 */
import type { SessionEvent } from '../log/types.js';
import { joined, VarReader, VarWriter, type Bytes } from '../log/index/codec.js';
import type { FoldBuilder, PersistentFold } from '../log/index/session-index.js';
import type { SeqRange } from '../log/reread.js';
import { canonicalHeader } from './header.js';
import { dispatchKey, stepKey } from '../core/keys.js';
import { AscendingNumberMap, LayeredNumberMap, type NumberMap } from '../core/sorted.js';
import { appendTo } from '../core/arrays.js';
import { DispatchBuilder, lazySnapshot, restoredEntry, settle, type CallOwnerLookup, type ChunkSources, type DispatchEntry, type DispatchIndex, type DispatchResumeState, type StepDispatches, type StepEntry } from './requests.js';

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

/** Thrown by a resumed fold whose index cannot be kept (the extension is given up; the cold pass decides). */
class CannotExtend extends Error {}

/**
 * The fold around a builder (which records where each dispatch's finish and usage come from, in
 * `src`): keeps the resume state. A cold fold answers with its builder's index; a resumed one
 * (`saved`: the bytes it goes on from) answers with the index it saves, read as a warm view reads it.
 */
function dispatchFold(builder: DispatchBuilder, src: ChunkSources, cold: Dispatches | undefined, saved?: Saved): FoldBuilder<Dispatches> {
  let state: DispatchResumeState | undefined;
  let index: DispatchIndex | undefined;
  let bytes: Bytes | undefined;
  let warm: Dispatches | undefined;
  const done = () => (index ??= builder.finish());
  // Pieces: what a resumed fold carries over are runs of the saved bytes, not copies of them.
  const encode = () => {
    state ??= builder.resumeState();
    const w = encodeDispatches(done(), src, saved);
    if (!w) return undefined;
    encodeResumeState(w, state, saved?.callOwners);
    return saved ? w.pieces() : w.done();
  };
  return {
    observe: (e) => void builder.apply(e),
    end: (closers) => {
      // The state to go on from is the stored events' (closers are in memory only).
      state ??= builder.resumeState();
      for (const c of closers) builder.apply(c);
      if (saved) {
        bytes = encode();
        if (!bytes) throw new CannotExtend('this dispatch index cannot be kept');
      }
    },
    result: () => (cold ? (done(), cold) : (warm ??= savedDispatches(joined(bytes!)))),
    encode: () => bytes ?? encode(),
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
    return dispatchFold(builder, sources, result);
  },
  decode: (bytes) => savedDispatches(bytes),
  resume(bytes, prefix) {
    // Only what the new events can touch is decoded: the last dispatch, the open steps, what new
    // events point at. The rest of the saved bytes is copied into the index saved next.
    const count = prefix.storedEventCount;
    const x = layoutOf(bytes);
    const steps = stepLayout(bytes, x.stepsAt);
    const saved = savedState(bytes, steps.end);
    if (saved.state.eventCount !== count) throw new Error('the saved dispatch state is not of this prefix');
    const at = (offset: number) => new VarReader(bytes).seek(offset);
    const src: ChunkSources = { finishSeq: [], usageSeq: [] };
    const snapshots: number[][] = [];
    const snapshot = (k: number) => (snapshots[k] ??= at(x.snapshotAt[k] as number).uints());
    const owners = savedOwners(bytes, x.ownersAt, count);
    // The builder's entries read no messages (its index is saved, and the answer read back from that).
    const none = () => [];
    const requests = lazyElements<DispatchEntry>(x.turn.length, (i) => {
      const r = readRecord(at(x.recordAt[i] as number), i);
      src.finishSeq[i] = r.finishSeq;
      src.usageSeq[i] = r.usageSeq;
      return restoredEntry(r.fields, snapshot(r.snap), r.length, none);
    });
    // A step the closers ended is open again (the closers are the old end's, not this one's).
    const stepList = lazyElements<StepEntry>(steps.turn.length, (i) => {
      const s = readStep(at(steps.at[i] as number));
      if (s.endSeq !== null && s.endSeq >= count) s.endSeq = null;
      return s;
    });
    const index: DispatchIndex = {
      requests: requests.array,
      // The builder writes these two (and reads its own lists before the saved ones): the index it saves derives them from the records.
      requestIndexByFirstChunkSeq: {},
      requestIndexesByStep: {},
      steps: stepList.array,
      owners: owners.map,
      inSpan: new Set(at(x.inSpanAt).ascending()),
      eventCount: x.eventCount,
    };
    const openSteps = openStepsOf(steps, count).map((i) => stepList.array[i] as StepEntry);
    const builder = DispatchBuilder.resume(index, saved.state, prefix.surface, none, src, {
      openSteps,
      callOwners: saved.callOwners,
      stepDispatches: savedStepDispatches(x),
      firstChunkSeqs: plainArray(x.firstChunk),
    });
    return dispatchFold(builder, src, undefined, { bytes, layout: x, steps, requests, stepList, snapshots, callOwners: saved.callOwners, owners });
  },
};

/** A copy as a plain array, to push to (a loop: `Array.from` of a typed array walks its iterator, ~13 ms for 70,000). */
function plainArray(values: ArrayLike<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) out.push(values[i] as number);
  return out;
}

/** Lookups of saved steps `savedStepDispatches` answers by scanning before it lists every step (a scan: ~0.3 ms for 70,000 dispatches). */
const SCANNED_STEP_LOOKUPS = 16;

/**
 * The saved dispatches of a turn and step. A turn after every saved one has none (most lookups: new
 * steps); a few others (an extension's open step) scan the saved turns and steps; past those, every
 * saved step's dispatches are listed once (70,000 keys: ~40 ms).
 */
function savedStepDispatches(x: Layout): StepDispatches {
  let lastTurn = -Infinity;
  for (let i = 0; i < x.turn.length; i++) if ((x.turn[i] as number) > lastTurn) lastTurn = x.turn[i] as number;
  let byStep: Map<string, number[]> | undefined;
  let scans = 0;
  return (turn, step) => {
    // A number above every saved turn spells no saved step's key.
    if (typeof turn === 'number' && turn > lastTurn) return undefined;
    // Saved turns and steps are safe integers: numbers spell the same key exactly when they are equal.
    if (!byStep && typeof turn === 'number' && typeof step === 'number' && scans++ < SCANNED_STEP_LOOKUPS) {
      let found: number[] | undefined;
      for (let i = 0; i < x.turn.length; i++) if (x.turn[i] === turn && x.step[i] === step) (found ??= []).push(i);
      return found;
    }
    if (!byStep) {
      byStep = new Map();
      for (let i = 0; i < x.turn.length; i++) {
        const key = stepKey(x.turn[i], x.step[i]);
        byStep.set(key, appendTo(byStep.get(key), i));
      }
    }
    return byStep.get(stepKey(turn, step));
  };
}

/** The saved index a resumed fold goes on from: its bytes, where their parts lie, what of them was decoded. */
interface Saved {
  bytes: Buffer;
  layout: Layout;
  steps: StepLayout;
  requests: LazyElements<DispatchEntry>;
  stepList: LazyElements<StepEntry>;
  /** The snapshots decoded, by id (sparse). */
  snapshots: readonly (readonly number[] | undefined)[];
  callOwners: SavedCallOwners;
  owners: SavedOwners;
}

/**
 * The owners a resumed fold goes on from: the saved entries of the prefix's events (those of its
 * closers dropped) as a map that decodes them only if a new event reads or changes one, and the
 * bytes they were read from, written out again as they are when none was changed.
 */
interface SavedOwners {
  map: LayeredNumberMap;
  count: number;
  /** The value the next key's delta is taken from (the last saved key; 0 when none). */
  last: number;
  keyBytes: Buffer;
  valueBytes: Buffer;
}

function savedOwners(bytes: Buffer, offset: number, count: number): SavedOwners {
  const r = new VarReader(bytes).seek(offset);
  const keys = r.ascendingBelow(count);
  const values = r.uintsSplit(keys.below);
  if (values.length !== keys.length) throw new Error('the saved owners have as many keys as values');
  const load = () => {
    const owners = readOwners(new VarReader(bytes).seek(offset));
    owners.truncate(count);
    return owners;
  };
  // One saved owner, read off the bytes: the keys' deltas summed up to it, then its value skipped to.
  const peek = (key: number): number | undefined => {
    const r = new VarReader(bytes).seek(keys.start);
    let k = 0;
    for (let i = 0; i < keys.below; i++) {
      k += r.uint();
      if (k < key) continue;
      if (k !== key) return undefined;
      const v = new VarReader(bytes).seek(values.start);
      v.skip(i);
      return v.uint();
    }
    return undefined;
  };
  const map = new LayeredNumberMap(keys.below, keys.below > 0 ? keys.last : -Infinity, load, peek);
  return { map, count: keys.below, last: keys.last, keyBytes: bytes.subarray(keys.start, keys.split), valueBytes: bytes.subarray(values.start, values.split) };
}

/** Write `owners` (as `ascending` keys, then `uints` values), copying the saved entries' bytes when they were not decoded. */
function writeOwners(w: VarWriter, owners: NumberMap, saved?: SavedOwners): void {
  if (!saved || owners !== saved.map || saved.map.baseChanged) {
    w.ascending(owners.keys()).uints(owners.values());
    return;
  }
  const tailKeys = saved.map.tail.keys();
  const total = saved.count + tailKeys.length;
  w.uint(total).shared(saved.keyBytes);
  let prev = saved.last;
  for (let i = 0; i < tailKeys.length; i++) {
    const k = tailKeys[i] as number;
    w.uint(k - prev);
    prev = k;
  }
  const tailValues = saved.map.tail.values();
  w.uint(total).shared(saved.valueBytes);
  for (let i = 0; i < tailValues.length; i++) w.uint(tailValues[i] as number);
}

/** The call owners of a saved resume state: looked up (decoded on first miss), or copied as bytes. */
interface SavedCallOwners extends CallOwnerLookup {
  count: number;
  bytes: Buffer;
}

function encodeResumeState(w: VarWriter, s: DispatchResumeState, prior?: SavedCallOwners): VarWriter {
  w.uint(s.eventCount).uint(opt(s.openIndex)).uint(opt(s.headerSeq)).uint(opt(s.contextSeq));
  w.uints(s.silentNodes).uint(s.mirrorLength).uint(s.mirrorShared ? 1 : 0).uint((prior?.count ?? 0) + s.callOwners.size);
  // A digest both hold is read last-wins: the later builder's owner, as its lookup has it.
  if (prior) w.shared(prior.bytes);
  for (const [digest, owner] of s.callOwners) w.bytes(Buffer.from(digest, 'latin1')).uint(owner);
  return w;
}

/** The resume state saved at `offset` of `bytes` (its call owners decoded when first looked up). */
function savedState(bytes: Buffer, offset: number): { state: DispatchResumeState; callOwners: SavedCallOwners } {
  const r = new VarReader(bytes).seek(offset);
  const eventCount = r.uint();
  const openIndex = unopt(r.uint());
  const headerSeq = unopt(r.uint());
  const contextSeq = unopt(r.uint());
  const silentNodes = r.uints();
  const mirrorLength = r.uint();
  const mirrorShared = r.uint() === 1;
  const count = r.uint();
  const from = r.offset;
  for (let i = 0; i < count; i++) {
    r.skipBytes();
    r.uint();
  }
  const pairs = bytes.subarray(from, r.offset);
  let map: Map<string, number> | undefined;
  const callOwners: SavedCallOwners = {
    count,
    bytes: pairs,
    get(digest) {
      if (!map) {
        map = new Map();
        const p = new VarReader(pairs);
        for (let i = 0; i < count; i++) map.set(p.bytes().toString('latin1'), p.uint());
      }
      return map.get(digest);
    },
  };
  return { state: { eventCount, openIndex, headerSeq, contextSeq, silentNodes, mirrorLength, mirrorShared, callOwners: new Map() }, callOwners };
}

/**
 * The bytes of a dispatch index; with `saved`, the index a resumed builder made from those bytes:
 * what it never decoded is copied from them (a saved part it did not decode is one no new event touched).
 */
function encodeDispatches(x: DispatchIndex, src: ChunkSources, saved?: Saved): VarWriter | undefined {
  // What a resumed fold carries over is shared, not copied: the writer holds what the new events add.
  const w = new VarWriter(1 << 16).uint(x.eventCount);
  const savedBytes = saved?.bytes ?? Buffer.alloc(0);
  // Copies of adjacent runs are joined: one copy per run of untouched parts.
  let runFrom = 0;
  let runTo = 0;
  const flush = () => {
    if (runTo > runFrom) w.shared(savedBytes.subarray(runFrom, runTo));
    runFrom = runTo = 0;
  };
  const copy = (from: number, to: number) => {
    if (from !== runTo) {
      flush();
      runFrom = from;
    }
    runTo = to;
  };
  // Snapshots are numbered in the order dispatches first show them: the saved ones keep their numbers.
  const oldSnapshots = saved ? saved.layout.snapshotAt.length - 1 : 0;
  const oldRequests = saved ? saved.layout.turn.length : 0;
  const snapshots = new Map<readonly number[], number>();
  saved?.snapshots.forEach((s, k) => s && snapshots.set(s, k));
  const added: (readonly number[])[] = [];
  for (let i = oldRequests; i < x.requests.length; i++) {
    const snap = lazySnapshot(x.requests[i] as DispatchEntry);
    if (!snap) return undefined;
    if (!snapshots.has(snap[0])) {
      snapshots.set(snap[0], oldSnapshots + added.length);
      added.push(snap[0]);
    }
  }
  w.uint(oldSnapshots + added.length);
  for (let k = 0; k < oldSnapshots; k++) {
    const s = saved!.snapshots[k];
    if (!s) copy(saved!.layout.snapshotAt[k] as number, saved!.layout.snapshotAt[k + 1] as number);
    else if ((flush(), !writeSnapshot(w, s))) return undefined;
  }
  flush();
  for (const s of added) if (!writeSnapshot(w, s)) return undefined;
  w.uint(x.requests.length);
  for (let i = 0; i < x.requests.length; i++) {
    if (i < oldRequests && !saved!.requests.made(i)) copy(saved!.layout.recordAt[i] as number, saved!.layout.recordAt[i + 1] as number);
    else if ((flush(), !writeRecord(w, x.requests[i] as DispatchEntry, src, snapshots))) return undefined;
  }
  flush();
  writeOwners(w, x.owners, saved?.owners);
  w.ascending([...x.inSpan].sort((a, b) => a - b));
  const oldSteps = saved ? saved.steps.turn.length : 0;
  w.uint(x.steps.length);
  for (let i = 0; i < x.steps.length; i++) {
    if (i < oldSteps && !saved!.stepList.made(i)) copy(saved!.steps.at[i] as number, saved!.steps.at[i + 1] as number);
    else if ((flush(), !writeStep(w, x.steps[i] as StepEntry))) return undefined;
  }
  flush();
  return w;
}

function writeSnapshot(w: VarWriter, s: readonly number[]): boolean {
  for (let i = 0; i < s.length; i++) if (!safe(s[i]) || (s[i] as number) < 0) return false;
  w.uints(s);
  return true;
}

function writeRecord(w: VarWriter, e: DispatchEntry, src: ChunkSources, snapshots: ReadonlyMap<readonly number[], number>): boolean {
  if (!safe(e.turn) || !safe(e.step) || !safe(e.firstChunkTime) || !safe(e.lastChunkTime)) return false;
  const snap = lazySnapshot(e);
  if (!snap) return false;
  w.int(e.turn).int(e.step).uint(e.attemptInStep).uint(e.firstChunkSeq).uint(e.lastChunkSeq).uint(e.chunkCount);
  w.uint(opt(src.finishSeq[e.index] ?? null)).uint(opt(src.usageSeq[e.index] ?? null));
  w.uint(opt(e.assistantMessageSeq)).uint(e.prefixEventCount).uint(opt(e.headerSeq)).uint(opt(e.requestContextSeq));
  w.uint(e.messageCount).int(e.firstChunkTime).int(e.lastChunkTime).uint(snapshots.get(snap[0])!).uint(snap[1]);
  return true;
}

function writeStep(w: VarWriter, s: StepEntry): boolean {
  if (!safe(s.turn) || !safe(s.step)) return false;
  w.int(s.turn).int(s.step).uint(s.startSeq).uint(opt(s.endSeq)).uints(s.requestHeaderSeqs).uints(s.requestIndexes);
  return true;
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
  const keys = r.ascendingTyped();
  return AscendingNumberMap.fromSorted(keys, r.uintsTyped());
}

function readStep(r: VarReader): StepEntry {
  return { turn: r.int(), step: r.int(), startSeq: r.uint(), endSeq: unopt(r.uint()), requestHeaderSeqs: r.uints(), requestIndexes: r.uints() };
}

function readSteps(r: VarReader): StepEntry[] {
  const steps: StepEntry[] = [];
  for (let n = r.uint(), i = 0; i < n; i++) steps.push(readStep(r));
  return steps;
}

/** Where the parts of a saved dispatch index lie (one walk), with each dispatch's step and chunk span. */
interface Layout {
  eventCount: number;
  /** Where each snapshot starts, and (last) where the snapshots end. */
  snapshotAt: Float64Array;
  /** Where each dispatch's record starts, and (last) where the records end. */
  recordAt: Float64Array;
  turn: Float64Array;
  step: Float64Array;
  firstChunk: Float64Array;
  lastChunk: Float64Array;
  ownersAt: number;
  inSpanAt: number;
  stepsAt: number;
}

function layoutOf(bytes: Buffer): Layout {
  const r = new VarReader(bytes);
  const eventCount = r.uint();
  const snapshotAt = new Float64Array(r.uint() + 1);
  for (let i = 0; i + 1 < snapshotAt.length; i++) {
    snapshotAt[i] = r.offset;
    r.skipArray();
  }
  snapshotAt[snapshotAt.length - 1] = r.offset;
  const n = r.uint();
  const recordAt = new Float64Array(n + 1);
  const turn = new Float64Array(n);
  const step = new Float64Array(n);
  const firstChunk = new Float64Array(n);
  const lastChunk = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    recordAt[i] = r.offset;
    turn[i] = r.int();
    step[i] = r.int();
    r.uint();
    firstChunk[i] = r.uint();
    lastChunk[i] = r.uint();
    r.skip(RECORD_VALUES - 7);
    if (r.uint() + 1 >= snapshotAt.length) throw new Error('dispatch snapshot out of range');
    r.uint();
  }
  recordAt[n] = r.offset;
  const ownersAt = r.offset;
  r.skipArray();
  r.skipArray();
  const inSpanAt = r.offset;
  r.skipArray();
  return { eventCount, snapshotAt, recordAt, turn, step, firstChunk, lastChunk, ownersAt, inSpanAt, stepsAt: r.offset };
}

/** Where each saved step lies (and, last, where the steps end), with its turn, step and end seq (-1: none). */
interface StepLayout {
  at: Float64Array;
  turn: Float64Array;
  step: Float64Array;
  endSeq: Float64Array;
  end: number;
}

function stepLayout(bytes: Buffer, offset: number): StepLayout {
  const r = new VarReader(bytes).seek(offset);
  const n = r.uint();
  const at = new Float64Array(n + 1);
  const turn = new Float64Array(n);
  const step = new Float64Array(n);
  const endSeq = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    at[i] = r.offset;
    turn[i] = r.int();
    step[i] = r.int();
    r.uint();
    endSeq[i] = r.uint() - 1;
    r.skipArray();
    r.skipArray();
  }
  at[n] = r.offset;
  return { at, turn, step, endSeq, end: r.offset };
}

/**
 * The saved steps still open after the first `count` events (an end at or after it is a closer's):
 * each the last step of its `(turn, step)`, in log order.
 */
function openStepsOf(steps: StepLayout, count: number): number[] {
  const open: number[] = [];
  for (let i = 0; i < steps.endSeq.length; i++) if ((steps.endSeq[i] as number) < 0 || (steps.endSeq[i] as number) >= count) open.push(i);
  const n = steps.turn.length;
  const sameKey = (i: number, j: number) => steps.turn[i] === steps.turn[j] && steps.step[i] === steps.step[j];
  if (open.length <= 64) return open.filter((i) => !laterOf(i, n, sameKey));
  // Many steps never ended: the last step of each key, found once.
  const last = new Map<string, number>();
  for (let i = 0; i < n; i++) last.set(stepKey(steps.turn[i], steps.step[i]), i);
  return open.filter((i) => last.get(stepKey(steps.turn[i], steps.step[i])) === i);
}

function laterOf(i: number, n: number, sameKey: (i: number, j: number) => boolean): boolean {
  for (let j = i + 1; j < n; j++) if (sameKey(i, j)) return true;
  return false;
}

/**
 * The saved dispatch index as a warm view reads it: one walk finds where each dispatch's numbers
 * lie, and an entry, a snapshot, the owners, the steps or the by-step lists are decoded only when
 * first read (a view shows a few of 70,000 dispatches; building them all cost 70 MB on the bench's
 * 2 GB log).
 */
function savedDispatches(bytes: Buffer): Dispatches {
  const x = layoutOf(bytes);
  const at = (offset: number) => new VarReader(bytes).seek(offset);
  const snapshots: number[][] = [];
  const snapshot = (k: number) => (snapshots[k] ??= at(x.snapshotAt[k] as number).uints());
  const src: ChunkSources = { finishSeq: [], usageSeq: [] };
  let result: Dispatches | undefined;
  const events = () => result!.eventsFn();
  const requests = lazyElements<DispatchEntry>(x.turn.length, (i) => {
    const r = readRecord(at(x.recordAt[i] as number), i);
    src.finishSeq[i] = r.finishSeq;
    src.usageSeq[i] = r.usageSeq;
    return restoredEntry(r.fields, snapshot(r.snap), r.length, events);
  }).array;
  const index = {
    requests,
    eventCount: x.eventCount,
    get requestIndexByFirstChunkSeq(): Record<string, number> {
      const out: Record<string, number> = {};
      x.firstChunk.forEach((seq, i) => (out[String(seq)] = i));
      return settle(this, 'requestIndexByFirstChunkSeq', out);
    },
    get requestIndexesByStep(): Record<string, number[]> {
      const out: Record<string, number[]> = {};
      for (let i = 0; i < x.turn.length; i++) {
        const key = stepKey(x.turn[i], x.step[i]);
        out[key] = appendTo(out[key], i);
      }
      return settle(this, 'requestIndexesByStep', out);
    },
    get owners(): NumberMap {
      // A view reads a few owners (`request`: 3): read off the saved bytes, decoded only past those.
      return settle(this, 'owners', savedOwners(bytes, x.ownersAt, Infinity).map);
    },
    get inSpan(): Set<number> {
      return settle(this, 'inSpan', new Set(at(x.inSpanAt).ascending()));
    },
    get steps(): StepEntry[] {
      return settle(this, 'steps', readSteps(at(x.stepsAt)));
    },
  };
  result = new Dispatches(index, src, { first: x.firstChunk, last: x.lastChunk });
  return result;
}

/** An array whose elements are made on first read, and which of them were. */
interface LazyElements<T> {
  array: T[];
  made(i: number): boolean;
}

/**
 * An array of `length` whose element `i` is `make(i)`, made on first read (then kept). It reads,
 * iterates and serializes as the array of every element; enumerating its keys makes them all.
 * Elements pushed or stored past `length` are plain ones.
 */
function lazyElements<T>(length: number, make: (i: number) => T): LazyElements<T> {
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
  const array = new Proxy(target, {
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
  return { array, made: (i) => i in target };
}

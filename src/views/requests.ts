/**
 * Model-dispatch reconstruction (format.md §7.5-7.6, §11.1-11.2;
 * query-export.md §6.4): every model call the loop made, with the exact input
 * DSH handed to `ctx.llm.stream`, rebuilt from the log prefix before the
 * call's first `assistant/chunk`.
 *
 * Segmentation is {@link AttemptBoundaries} (views/attempts.ts). Everything is
 * computed in one forward pass; per dispatch only the surface node seqs, ids
 * and digest are kept — message bodies are re-read from the (retained) event
 * array on demand with {@link messagesOf}.
 */
import { floorIndexBy } from '../log/reread.js';
import { AscendingNumberMap, type NumberMap } from '../core/sorted.js';
import { appendTo } from '../core/arrays.js';
import { createHash, hash } from 'node:crypto';
import type { SessionEvent } from '../log/types.js';
import { UsageError } from '../core/errors.js';
import { SurfaceFold, deriveEventMessage, type Replacement } from '../log/surface.js';
import { canonicalHeader, headerChanges, type EpochHeader, type HeaderChange } from './header.js';
import { toJson } from '../core/json.js';
import { AttemptBoundaries, type ChunkPlace } from './attempts.js';
import { RowChunk } from '../log/pruned-event.js';
import { dispatchKey, stepKey } from '../core/keys.js';

export interface RequestContext {
  provider?: string;
  model?: string;
  contextWindow?: number;
  [key: string]: unknown;
}

/** One model dispatch; the fields up to `messagesSha256` are the corpus's `requests[]` entry. */
export interface DispatchEntry {
  index: number;
  /** `turn/step#attempt` (attempt counted from 0 within the step). */
  key: string;
  turn: number;
  step: number;
  attemptInStep: number;
  firstChunkSeq: number;
  lastChunkSeq: number;
  chunkCount: number;
  /** The `finish` chunk's `reason` verbatim, or null (cancelled attempt or crash tail). */
  finish: unknown | null;
  /** The `assistant/message` whose `sourceEventSeqs` cite this attempt's chunks (null for a failed attempt). */
  assistantMessageSeq: number | null;
  /** Number of events before the first chunk (the dispatch's input prefix). */
  prefixEventCount: number;
  headerSeq: number | null;
  header: EpochHeader | null;
  requestContextSeq: number | null;
  requestContext: RequestContext | null;
  /** Surface node seqs at dispatch, in model-visible order. */
  surfaceNodes: number[];
  messageIds: unknown[];
  /** sha256 (hex) of `JSON.stringify(messages)`. */
  messagesSha256: string;
  /** Number of messages sent (= messageIds.length, known without materializing). */
  messageCount: number;
  /** Present only when `keepMessages` asked for it. */
  messages?: unknown[];
  // --- dsh extras (not in the corpus entry) ---
  firstChunkTime: number;
  lastChunkTime: number;
  /** Last `usage` chunk of the attempt, if any. */
  chunkUsage: unknown | null;
  /** `usage` of the citing assistant/message, if any. */
  messageUsage: unknown | null;
}

export interface StepEntry {
  turn: number;
  step: number;
  startSeq: number;
  endSeq: number | null;
  requestHeaderSeqs: number[];
  requestIndexes: number[];
}

/** Every model dispatch of a log, by position, first chunk and step. */
export interface DispatchIndex {
  requests: DispatchEntry[];
  requestIndexByFirstChunkSeq: Record<string, number>;
  requestIndexesByStep: Record<string, number[]>;
  steps: StepEntry[];
  /**
   * Dispatch owning a non-chunk event seq: the citing assistant/message, the
   * tool/calls it requested, their tool/results. Chunks are owned by the
   * dispatch whose chunk span holds them (`chunkOwner`), so this map grows
   * with messages, not with the stream.
   */
  owners: NumberMap;
  /** Non-chunk events logged while a dispatch's chunk stream was open (they may sit inside its span). */
  inSpan: Set<number>;
  /** Events folded. */
  eventCount: number;
}

export interface DispatchOptions {
  /** Keep the message objects on each entry (all, or those whose index passes). Default false. */
  keepMessages?: boolean | ((entry: DispatchEntry) => boolean);
  /**
   * Lazy mode: pass the (retained) event array being applied, or a function
   * that returns it once it is available (a streaming reader re-reads just the
   * events a view needs). `surfaceNodes`, `messageIds` and `messagesSha256` are
   * then computed on first read, so a `--list` over a long log hashes nothing
   * and no message is held. Default: computed eagerly.
   */
  lazy?: readonly SessionEvent[] | (() => readonly SessionEvent[]);
  /**
   * The events are being accepted by a validating pass alongside (a persistent fold): the surface
   * is folded without checking DSH's rules again (see `SurfaceFold`). Default false.
   */
  trusted?: boolean;
  /**
   * Where to record, by dispatch index, the seq of each dispatch's last `usage` chunk and of its
   * `finish` chunk. With it the entries keep none of their text-valued fields (request header and
   * context, finish, usage: all null), only the seqs they come from; `Dispatches.hydrate` re-reads them.
   */
  sources?: ChunkSources;
}

/** {@link DispatchOptions.sources}: by dispatch index, the seq of its last `usage` chunk and of its `finish` chunk (null: none). */
export interface ChunkSources {
  finishSeq: (number | null)[];
  usageSeq: (number | null)[];
}

/** Canonical corpus field list of a `requests[]` entry (for comparisons and `--json`). */
export const CORPUS_REQUEST_FIELDS = [
  'index',
  'key',
  'turn',
  'step',
  'attemptInStep',
  'firstChunkSeq',
  'lastChunkSeq',
  'chunkCount',
  'finish',
  'assistantMessageSeq',
  'prefixEventCount',
  'headerSeq',
  'header',
  'requestContextSeq',
  'requestContext',
  'surfaceNodes',
  'messageIds',
  'messagesSha256',
] as const;

/** What a lazy builder keeps of a surface node's message: that it has one (shared, never changed). */
const LAZY_NODE = Object.freeze({ id: null, json: null, message: null });

/**
 * Incremental dispatch builder: `apply` each logical event in seq order, then
 * `finish()`. Holds the surface fold, the messages of current surface nodes
 * only, and compact per-dispatch records. Surface snapshots share storage:
 * appends extend one array that earlier snapshots view by length, and only a
 * replacement starts a new array, so memory follows the log plus one surface
 * copy per compaction — not dispatches × surface.
 */
export class DispatchBuilder {
  private readonly fold: SurfaceFold;
  /** Message (and, eager mode, its JSON text) of each current surface node that contributes one. */
  private readonly nodeMsgs = new Map<number, { id: unknown; json: string | null; message: unknown }>();
  /** Append-only mirror of `fold.nodes`, replaced (not mutated) on every surface replacement. */
  private mirror: number[] = [];
  /** Where dispatches start and end; the open one, if any, is the last entry started. */
  private readonly segments: DispatchSegmenter;
  /** The entries keep their text-valued fields (no `sources` to re-read them from). */
  private readonly values: boolean;
  /** What every lazy entry reads its messages from. */
  private readonly events: () => readonly SessionEvent[];
  private readonly callOwner = new Map<string, number>();
  private readonly openSteps = new Map<string, StepEntry>();
  /**
   * The last step of each key (a fold of `out.steps`), built only when a dispatch starts in a step
   * that is not open: most logs never need it.
   */
  private lastStepByKey: Map<string, StepEntry> | undefined;
  private lastStep: StepEntry | undefined;
  private readonly lazy: boolean;
  /** Call owners of the prefix a resumed builder goes on from (by `callIdDigest`). */
  private priorCallOwners: CallOwnerLookup | undefined;
  /** The dispatch started last (the one a chunk that starts none joins). */
  private last: DispatchEntry | undefined;
  /** Every dispatch's first chunk seq (where a cited chunk's owner is looked up). */
  private firstChunkSeqs: number[] = [];
  /** A resumed builder's dispatches of a step before it, by turn and step (a list it then keeps is its own). */
  private priorStepDispatches: StepDispatches | undefined;
  readonly out: DispatchIndex = {
    requests: [],
    requestIndexByFirstChunkSeq: {},
    requestIndexesByStep: {},
    steps: [],
    owners: new AscendingNumberMap(),
    inSpan: new Set(),
    eventCount: 0,
  };

  constructor(private readonly options: DispatchOptions = {}) {
    this.lazy = options.lazy !== undefined;
    this.fold = new SurfaceFold(false, options.trusted === true);
    this.values = options.sources === undefined;
    this.segments = new DispatchSegmenter(this.values);
    const lazy = options.lazy;
    this.events = typeof lazy === 'function' ? lazy : () => lazy ?? [];
  }

  /** The surface node seqs now, in model-visible order (read-only). */
  get surface(): readonly number[] {
    return this.fold.nodes;
  }

  /** Fold one event; returns the surface replacement it made, if any. */
  apply(event: SessionEvent): Replacement | undefined {
    if (event instanceof RowChunk) {
      // Most events of a long log: a path of its own, whose reads see one class of event.
      this.fold.applyRowChunk(event);
      this.out.eventCount += 1;
      this.chunkSeen(event, this.segments.observeRowChunk(event));
      return undefined;
    }
    const rep = this.fold.apply(event);
    this.out.eventCount += 1;
    const out = this.out;
    const seg = this.segments.observe(event);
    if (seg & IN_SPAN) out.inSpan.add(event.seq);
    switch (event.type) {
      case 'user/message':
      case 'assistant/message':
      case 'tool/result': {
        if (rep) {
          for (const s of rep.shadowedSeqs) this.nodeMsgs.delete(s);
          this.mirror = this.fold.nodes.slice();
        } else this.mirror.push(event.seq);
        const message = deriveEventMessage(event);
        if (message !== null && message !== undefined) {
          this.nodeMsgs.set(event.seq, this.lazy ? LAZY_NODE : { id: (message as { id?: unknown }).id, json: toJson(message), message });
        }
        if (event.type === 'assistant/message') this.onAssistantMessage(event);
        else if (event.type === 'tool/result') {
          const src = Array.isArray(event.sourceEventSeqs) ? event.sourceEventSeqs[0] : undefined;
          const owner = src !== undefined ? out.owners.get(src) : undefined;
          if (owner !== undefined) out.owners.set(event.seq, owner);
        }
        return rep;
      }
      case 'request/header': {
        if (this.lastStep) this.lastStep.requestHeaderSeqs.push(event.seq);
        return rep;
      }
      case 'step/start': {
        const s: StepEntry = { turn: event.data?.turn as number, step: event.data?.step as number, startSeq: event.seq, endSeq: null, requestHeaderSeqs: [], requestIndexes: [] };
        out.steps.push(s);
        const key = stepKey(s.turn, s.step);
        this.openSteps.set(key, s);
        this.lastStepByKey?.set(key, s);
        this.lastStep = s;
        return rep;
      }
      case 'step/end': {
        const key = stepKey(event.data?.turn, event.data?.step);
        const s = this.openSteps.get(key);
        if (s) {
          s.endSeq = event.seq;
          this.openSteps.delete(key);
        }
        if (this.lastStep === s) this.lastStep = undefined;
        return rep;
      }
      case 'tool/call': {
        const callId = event.data?.callId;
        let owner = typeof callId === 'string' ? (this.callOwner.get(callId) ?? this.priorCallOwners?.get(callIdDigest(callId))) : undefined;
        if (owner === undefined) {
          const list = this.out.requestIndexesByStep[stepKey(event.data?.turn, event.data?.step)] ?? this.priorStepDispatches?.(event.data?.turn, event.data?.step);
          owner = list && list.length ? list[list.length - 1] : undefined;
        }
        if (owner !== undefined) out.owners.set(event.seq, owner);
        return rep;
      }
      case 'assistant/chunk':
        this.onChunk(event, seg);
        return rep;
      default:
        return rep;
    }
  }

  /** A chunk at `seg` (the segmenter's bits) joins its dispatch, which it may start: the dispatch it joined. */
  private chunkSeen(event: SessionEvent, seg: number): DispatchEntry {
    const entry = seg & STARTS ? this.startDispatch(event) : (this.last as DispatchEntry);
    entry.lastChunkSeq = event.seq;
    entry.lastChunkTime = event.time;
    entry.chunkCount += 1;
    return entry;
  }

  private onChunk(event: SessionEvent, seg: number): void {
    const chunk = event.data?.chunk;
    const entry = this.chunkSeen(event, seg);
    const type = chunk?.type;
    const sources = this.options.sources;
    if (type === 'usage') {
      if (sources) sources.usageSeq[entry.index] = event.seq;
      else entry.chunkUsage = chunk!.usage ?? null;
    }
    if (seg & ENDS) {
      if (sources) sources.finishSeq[entry.index] = event.seq;
      else entry.finish = chunk!.reason ?? null;
    }
  }

  private startDispatch(event: SessionEvent): DispatchEntry {
    const out = this.out;
    const seg = this.segments;
    const stepKey = seg.stepKey;
    const snapshot = this.mirror;
    const snapshotLength = snapshot.length;
    const fields = {
      index: out.requests.length,
      key: seg.key,
      turn: seg.turn as number,
      step: seg.step as number,
      attemptInStep: seg.attempt,
      firstChunkSeq: event.seq,
      lastChunkSeq: event.seq,
      chunkCount: 0,
      finish: null,
      assistantMessageSeq: null,
      prefixEventCount: event.seq,
      headerSeq: seg.headerSeq,
      header: seg.header,
      requestContextSeq: seg.contextSeq,
      requestContext: seg.context,
    };
    const extras = {
      messageCount: this.nodeMsgs.size,
      firstChunkTime: event.time,
      lastChunkTime: event.time,
      chunkUsage: null,
      messageUsage: null,
    };
    const keep = this.options.keepMessages;
    let entry: DispatchEntry;
    if (this.lazy) {
      const events = this.events;
      // One class for every lazy entry: a long log has one entry per model call, and
      // per-object accessors would give each its own hidden class.
      entry = new LazyDispatchEntry(fields, extras, snapshot, snapshotLength, events) as unknown as DispatchEntry;
      if (keep === true || (typeof keep === 'function' && keep(entry))) entry.messages = messagesOf(entry, events());
    } else {
      entry = { ...fields, surfaceNodes: snapshot.slice(0, snapshotLength), messageIds: [], messagesSha256: '', ...extras };
      const parts: string[] = [];
      const messages: unknown[] = [];
      for (const seq of entry.surfaceNodes) {
        const m = this.nodeMsgs.get(seq);
        if (!m) continue;
        entry.messageIds.push(m.id);
        parts.push(m.json as string);
        messages.push(m.message);
      }
      entry.messagesSha256 = createHash('sha256').update('[' + parts.join(',') + ']').digest('hex');
      if (keep === true || (typeof keep === 'function' && keep(entry))) entry.messages = messages;
    }
    out.requests.push(entry);
    this.last = entry;
    this.firstChunkSeqs.push(event.seq);
    // A seq is an index-like key: stored as one (the same key as its string, no string made).
    out.requestIndexByFirstChunkSeq[event.seq] = entry.index;
    out.requestIndexesByStep[stepKey] = appendTo(out.requestIndexesByStep[stepKey] ?? this.priorStepDispatches?.(seg.turn, seg.step)?.slice(), entry.index);
    const s = this.openSteps.get(stepKey) ?? this.lastStepOf(stepKey);
    if (s) s.requestIndexes = appendTo(s.requestIndexes, entry.index);
    return entry;
  }

  private lastStepOf(key: string): StepEntry | undefined {
    if (!this.lastStepByKey) {
      this.lastStepByKey = new Map();
      for (const s of this.out.steps) this.lastStepByKey.set(stepKey(s.turn, s.step), s);
    }
    return this.lastStepByKey.get(key);
  }

  private onAssistantMessage(event: SessionEvent): void {
    const sources = Array.isArray(event.sourceEventSeqs) ? event.sourceEventSeqs : [];
    let owner: number | undefined;
    for (const s of sources) {
      // Only chunks cite attempts.
      const o = chunkOwner(this.out, s, this.firstChunkSeqs);
      if (o !== undefined) {
        owner = o;
        break;
      }
    }
    if (owner === undefined) return;
    const entry = this.out.requests[owner] as DispatchEntry;
    if (entry.assistantMessageSeq === null) {
      entry.assistantMessageSeq = event.seq;
      if (this.values) entry.messageUsage = event.data?.usage ?? null;
    }
    this.out.owners.set(event.seq, owner);
    const content = event.data?.message?.content;
    if (Array.isArray(content)) {
      for (const block of content) {
        if (block?.type === 'tool-call' && typeof block.id === 'string') this.callOwner.set(block.id, owner);
      }
    }
  }

  finish(): DispatchIndex {
    this.segments.close();
    return this.out;
  }

  /**
   * What this (lazy) builder needs beyond its index to go on after the events folded so far
   * (take it before any closer is applied): numbers only, call ids as sha256 digests. The call
   * owners are those of the tool calls this builder saw (a resumed builder's prior ones are its caller's).
   */
  resumeState(): DispatchResumeState {
    const last = this.last;
    const snap = last ? lazySnapshot(last) : undefined;
    const callOwners = new Map<string, number>();
    for (const [id, owner] of this.callOwner) callOwners.set(callIdDigest(id), owner);
    return {
      eventCount: this.out.eventCount,
      openIndex: this.segments.isOpen ? this.out.requests.length - 1 : null,
      headerSeq: this.segments.headerSeq,
      contextSeq: this.segments.contextSeq,
      silentNodes: this.fold.nodes.filter((s) => !this.nodeMsgs.has(s)),
      mirrorLength: this.mirror.length,
      mirrorShared: snap !== undefined && snap[0] === this.mirror,
      callOwners,
    };
  }

  /**
   * A lazy builder that goes on from `index` (taken over, not copied: the dispatch index of an accepted prefix, as saved:
   * its closers' traces are taken off here, but for the steps, whose end seqs the caller has taken off already)
   * and `state` (its `resumeState()`), with the prefix's surface fold (the current tool results' payloads included)
   * and `prior`: the steps still open after the prefix (each the last step of its key, none ended once the
   * closers are taken off), and the call owners of every builder before it. The index's lists may be
   * read lazily: the builder reads only the last dispatch, the open steps, and what new events point at.
   * Entries it starts carry no header, request context, finish or usage values: those are re-read from
   * their seqs (`Dispatches.hydrate`). Like the fold it goes on from, it trusts the validating pass it
   * runs alongside (`trusted`).
   */
  static resume(
    index: DispatchIndex,
    state: DispatchResumeState,
    surface: SurfaceState,
    lazy: () => readonly SessionEvent[],
    sources: ChunkSources | undefined,
    prior: { openSteps: readonly StepEntry[]; callOwners: CallOwnerLookup; stepDispatches: StepDispatches; firstChunkSeqs: number[] },
  ): DispatchBuilder {
    const b = new DispatchBuilder({ lazy, trusted: true, ...(sources ? { sources } : {}) });
    const count = state.eventCount;
    const out = b.out;
    // The builder takes the saved index's parts over (the caller lets go of `index`), not copies.
    out.requests = index.requests;
    out.requestIndexByFirstChunkSeq = index.requestIndexByFirstChunkSeq;
    out.requestIndexesByStep = index.requestIndexesByStep;
    b.priorStepDispatches = prior.stepDispatches;
    b.firstChunkSeqs = prior.firstChunkSeqs;
    out.owners = index.owners;
    out.owners.truncate(count);
    out.inSpan = index.inSpan;
    for (const s of out.inSpan) if (s >= count) out.inSpan.delete(s);
    out.eventCount = count;
    out.steps = index.steps;
    for (const s of prior.openSteps) b.openSteps.set(stepKey(s.turn, s.step), s);
    const lastStep = out.steps[out.steps.length - 1];
    if (lastStep && lastStep.endSeq === null) b.lastStep = lastStep;
    b.fold.restore({ count, nodes: surface.nodes, replaceGeneration: surface.replaceGeneration, replacements: [], toolResults: surface.toolResults });
    const silent = new Set(state.silentNodes);
    for (const s of surface.nodes) if (!silent.has(s)) b.nodeMsgs.set(s, LAZY_NODE);
    const last = out.requests[out.requests.length - 1];
    b.last = last;
    const snap = last ? lazySnapshot(last) : undefined;
    if (state.mirrorShared && snap) {
      const shared = snap[0] as number[];
      shared.length = state.mirrorLength;
      b.mirror = shared;
    } else b.mirror = surface.nodes.slice();
    const open = state.openIndex !== null ? (out.requests[state.openIndex] as DispatchEntry) : undefined;
    b.segments.restore(state.headerSeq, state.contextSeq, (turn, step) => prior.stepDispatches(turn, step)?.length, open);
    b.priorCallOwners = prior.callOwners;
    return b;
  }
}

/**
 * The dispatches of a log as a view that needs only where each starts and whom it went to sees them
 * (`secrets`): per dispatch its index, key, first chunk seq, request header and context seqs, provider
 * and model, in arrays of numbers and shared values. Its segmenter is {@link DispatchBuilder}'s; it
 * keeps no header, context or message: a log of many large request headers costs a few numbers each.
 */
export class DispatchStarts {
  private readonly segments = new DispatchSegmenter();
  /** The provider and model of the last dispatch (shared by the dispatches that repeat them). */
  private to: { provider: string | null; model: string | null } | undefined;
  readonly keys: string[] = [];
  readonly firstChunkSeqs: number[] = [];
  readonly headerSeqs: (number | null)[] = [];
  readonly contextSeqs: (number | null)[] = [];
  readonly sentTo: { readonly provider: string | null; readonly model: string | null }[] = [];

  get count(): number {
    return this.keys.length;
  }

  observe(event: SessionEvent): void {
    const seg = this.segments;
    if (!(seg.observe(event) & STARTS)) return;
    this.keys.push(seg.key);
    this.firstChunkSeqs.push(event.seq);
    this.headerSeqs.push(seg.headerSeq);
    this.contextSeqs.push(seg.contextSeq);
    const provider = dispatchProvider(seg.header, seg.context);
    const model = dispatchModel(seg.header, seg.context);
    if (!this.to || this.to.provider !== provider || this.to.model !== model) this.to = { provider, model };
    this.sentTo.push(this.to);
  }
}

/** {@link DispatchSegmenter.observe}: a non-chunk event logged while a dispatch's chunk stream was open. */
const IN_SPAN = 1;
/** {@link DispatchSegmenter.observe}: this chunk starts a dispatch (its key and step: the segmenter's). */
const STARTS = 2;
/** {@link DispatchSegmenter.observe}: this chunk ends its dispatch (a `finish` chunk). */
const ENDS = 4;

/**
 * Where each model dispatch starts and ends, its number within its step, and the request header and
 * context in force when it starts: the one place {@link DispatchBuilder} and {@link DispatchStarts}
 * segment a log. Attempt boundaries are {@link AttemptBoundaries}'; a dispatch is numbered by the
 * dispatches of its `(turn, step)` before it; the header and context are the last `request/header`
 * and `request/context` before its first chunk.
 */
class DispatchSegmenter {
  private readonly attempts = new AttemptBoundaries();
  private readonly perStep = new Map<string, number>();
  /** A resumed segmenter's dispatches per step before it. */
  private priorPerStep: ((turn: unknown, step: unknown) => number | undefined) | undefined;
  private open = false;
  header: EpochHeader | null = null;
  headerSeq: number | null = null;
  context: RequestContext | null = null;
  contextSeq: number | null = null;
  /** Of the dispatch the last {@link STARTS} began. */
  turn: unknown;
  step: unknown;
  stepKey = '';
  attempt = 0;

  /** `values`: keep the header and context themselves (else only their seqs: `header` and `context` stay null). */
  constructor(private readonly values = true) {}

  /** Fold one event (in seq order): {@link IN_SPAN}, {@link STARTS} and {@link ENDS} bits, or 0. */
  observe(event: SessionEvent): number {
    const place = this.attempts.observe(event);
    if (place === null) {
      const was = this.open;
      if (was && !this.attempts.isOpen) this.open = false;
      if (event.type === 'request/header') {
        if (this.values) this.header = canonicalHeader(event.data?.header);
        this.headerSeq = event.seq;
      } else if (event.type === 'request/context') {
        if (this.values) this.context = event.data ?? null;
        this.contextSeq = event.seq;
      }
      return was ? IN_SPAN : 0;
    }
    const d = event.data;
    return this.placed(place, d?.turn, d?.step);
  }

  /** {@link observe} of a packed row's lean member (a chunk of its row's turn and step, never a finish). */
  observeRowChunk(event: RowChunk): number {
    const d = event.data as { turn: number; step: number };
    return this.placed(this.attempts.chunk(d.turn, d.step, false), d.turn, d.step);
  }

  /** The bits of a chunk of `(turn, step)` at `place`. */
  private placed(place: ChunkPlace, turn: unknown, step: unknown): number {
    let bits = 0;
    if (place.starts || !this.open) {
      this.turn = turn;
      this.step = step;
      this.stepKey = stepKey(this.turn, this.step);
      this.attempt = this.perStep.get(this.stepKey) ?? this.priorPerStep?.(turn, step) ?? 0;
      this.perStep.set(this.stepKey, this.attempt + 1);
      bits |= STARTS;
    }
    if (place.ends) bits |= ENDS;
    this.open = !place.ends;
    return bits;
  }

  /** `turn/step#attempt` of the dispatch the last {@link STARTS} began. */
  get key(): string {
    return dispatchKey(this.turn, this.step, this.attempt);
  }

  /** Whether a dispatch's chunk stream is open. */
  get isOpen(): boolean {
    return this.open;
  }

  /** The log has ended: a chunk after this starts a dispatch. */
  close(): void {
    this.open = false;
  }

  /**
   * Go on from a prefix: the seqs of its last header and context (their values are not kept), the
   * number of its dispatches of a turn and step, and the dispatch whose stream is open, if any.
   */
  restore(headerSeq: number | null, contextSeq: number | null, perStep: (turn: unknown, step: unknown) => number | undefined, open: { turn: unknown; step: unknown } | undefined): void {
    this.headerSeq = headerSeq;
    this.contextSeq = contextSeq;
    this.priorPerStep = perStep;
    if (open) {
      this.open = true;
      this.attempts.restoreOpen(open.turn, open.step);
    }
  }
}

/** The surface fold state of a prefix a builder resumes after. */
export interface SurfaceState {
  nodes: readonly number[];
  replaceGeneration: number;
  toolResults: ReadonlyMap<number, unknown>;
}

/** `DispatchBuilder.resumeState()`. */
export interface DispatchResumeState {
  /** Stored events folded (closers excluded). */
  eventCount: number;
  /** The dispatch whose chunk stream is open, if any. */
  openIndex: number | null;
  headerSeq: number | null;
  contextSeq: number | null;
  /** Current surface nodes that contribute no message. */
  silentNodes: number[];
  /** The surface mirror's length, and whether it is the last dispatch's snapshot array. */
  mirrorLength: number;
  mirrorShared: boolean;
  /** The dispatch owning each tool-call id this builder saw (by `callIdDigest`). */
  callOwners: Map<string, number>;
}

/** The indexes of the dispatches of a turn and step (those of `requestIndexesByStep[stepKey(turn, step)]`), if any. */
export type StepDispatches = (turn: unknown, step: unknown) => readonly number[] | undefined;

/** The dispatch owning a tool-call id (by `callIdDigest`), as a resumed builder looks it up. */
export interface CallOwnerLookup {
  get(digest: string): number | undefined;
}

/** A tool-call id as the resumable dispatch state keeps it: a digest, never the log's text. */
export function callIdDigest(id: string): string {
  // One-shot hashing: a dispatch index of a long log keeps a digest per tool call (6x faster than a Hash object each).
  return hash('sha256', id, 'binary').slice(0, 16);
}

/** The dispatch whose chunk stream holds `seq`, if `seq` is one of its chunks. */
export function chunkOwner(index: DispatchIndex, seq: number, firstChunkSeqs?: ArrayLike<number>): number | undefined {
  if (index.owners.has(seq) || index.inSpan.has(seq)) return undefined;
  const at = lastStartedAtOrBefore(index.requests, seq, firstChunkSeqs);
  return at >= 0 && seq <= (index.requests[at] as DispatchEntry).lastChunkSeq ? at : undefined;
}

/** Index of the last dispatch whose first chunk is at or before `seq` (-1 if none); `firsts`: every dispatch's first chunk seq, when kept apart. */
function lastStartedAtOrBefore(reqs: readonly DispatchEntry[], seq: number, firsts?: ArrayLike<number>): number {
  if (firsts) return floorIndexBy(firsts.length, (i) => firsts[i] as number, seq);
  return floorIndexBy(reqs.length, (i) => (reqs[i] as DispatchEntry).firstChunkSeq, seq);
}

/**
 * A dispatch entry whose `surfaceNodes`, `messageIds` and `messagesSha256`
 * are computed on first read (then kept as plain own fields).
 */
class LazyDispatchEntry {
  readonly #snapshot: readonly number[];
  readonly #length: number;
  readonly #events: () => readonly SessionEvent[];
  constructor(fields: object, extras: object, snapshot: readonly number[], length: number, events: () => readonly SessionEvent[]) {
    Object.assign(this, fields, extras);
    this.#snapshot = snapshot;
    this.#length = length;
    this.#events = events;
  }
  /** The shared surface snapshot this entry views, and how much of it (for a persistent index). */
  static snapshotOf(entry: object): [readonly number[], number] | undefined {
    return #snapshot in entry ? [(entry as LazyDispatchEntry).#snapshot, (entry as LazyDispatchEntry).#length] : undefined;
  }
  get surfaceNodes(): number[] {
    return settle(this, 'surfaceNodes', this.#snapshot.slice(0, this.#length));
  }
  set surfaceNodes(v: number[]) {
    settle(this, 'surfaceNodes', v);
  }
  get messageIds(): unknown[] {
    return settle(this, 'messageIds', messagesOf(this as unknown as DispatchEntry, this.#events()).map((m) => (m as { id?: unknown }).id));
  }
  set messageIds(v: unknown[]) {
    settle(this, 'messageIds', v);
  }
  get messagesSha256(): string {
    return settle(this, 'messagesSha256', messagesDigest(messagesOf(this as unknown as DispatchEntry, this.#events())));
  }
  set messagesSha256(v: string) {
    settle(this, 'messagesSha256', v);
  }
}

/** A lazy entry's shared surface snapshot and length (undefined for an eager entry). */
export function lazySnapshot(entry: DispatchEntry): [readonly number[], number] | undefined {
  return LazyDispatchEntry.snapshotOf(entry);
}

/**
 * Let a lazy entry forget the `surfaceNodes` array it materialized (it reads them from its shared
 * snapshot again when asked), so a walk over many dispatches keeps one array per surface, not one
 * per dispatch. An eager entry keeps its own.
 */
export function releaseSurfaceNodes(entry: DispatchEntry): void {
  if (LazyDispatchEntry.snapshotOf(entry) && Object.prototype.hasOwnProperty.call(entry, 'surfaceNodes')) delete (entry as { surfaceNodes?: number[] }).surfaceNodes;
}

/** A lazy entry rebuilt from saved fields (the persistent index's warm path). */
export function restoredEntry(fields: object, snapshot: readonly number[], length: number, events: () => readonly SessionEvent[]): DispatchEntry {
  return new LazyDispatchEntry(fields, {}, snapshot, length, events) as unknown as DispatchEntry;
}

/** Replace a lazy accessor by its value (an enumerable data field from then on). */
export function settle<T>(obj: object, key: string, value: T): T {
  Object.defineProperty(obj, key, { value, enumerable: true, configurable: true, writable: true });
  return value;
}

/** sha256 (hex) of `JSON.stringify(messages)` — the corpus's `messagesSha256`. */
export function messagesDigest(messages: readonly unknown[]): string {
  return createHash('sha256').update(toJson(messages)).digest('hex');
}

/** All dispatches of a logical event list (one pass). */
export function deriveDispatches(events: Iterable<SessionEvent>, options: DispatchOptions = {}): DispatchIndex {
  const b = new DispatchBuilder(options);
  for (const e of events) b.apply(e);
  return b.finish();
}

/** The messages a dispatch was sent, re-read from the event array by its surface node seqs (§6.3). */
export function messagesOf(entry: Pick<DispatchEntry, 'surfaceNodes' | 'messages'>, events: readonly SessionEvent[]): unknown[] {
  if (entry.messages) return entry.messages;
  const out: unknown[] = [];
  for (const seq of entry.surfaceNodes) {
    const e = events[seq];
    if (!e) continue;
    const m = deriveEventMessage(e);
    if (m !== null && m !== undefined) out.push(m);
  }
  return out;
}

/** The corpus `requests[]` entry shape (with `messages`). */
export function corpusEntry(entry: DispatchEntry, events: readonly SessionEvent[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of CORPUS_REQUEST_FIELDS) out[k] = entry[k];
  out['messages'] = messagesOf(entry, events);
  return out;
}

/** Log-only records of auxiliary model calls that are not loop dispatches (format.md §7.7). */
const AUXILIARY_CALLS: Record<string, string> = {
  'compaction/summary': 'it records the one-shot compaction summary call, an auxiliary model call outside the loop; its request is not a dispatch',
  'session/title-llm-request': 'it records the session-title model call, whose exact request is in the event itself',
  'web/deepseek-search-llm-request': 'it records a web-search model call, whose exact body is in the event itself',
};

/** How a seq maps to a dispatch. */
export type SeqResolution =
  | { ok: true; index: number; via: 'first-chunk' | 'chunk' | 'assistant/message' | 'tool/call' | 'tool/result' | 'inside' }
  | { ok: false; reason: string; before: DispatchEntry | null; after: DispatchEntry | null };

/**
 * Map an event seq to the dispatch it belongs to. Rule: a chunk → its attempt;
 * an assistant/message → the attempt its sourceEventSeqs cite; a tool/call →
 * the attempt whose assistant/message carried that call id (else the step's
 * latest attempt); a tool/result → the attempt that requested its call; any
 * other seq strictly inside one attempt's chunk span → that attempt.
 * Anything else belongs to no dispatch (the nearest ones are reported).
 */
export function resolveSeq(index: DispatchIndex, seq: number, events?: readonly SessionEvent[]): SeqResolution {
  const reqs = index.requests;
  const owner = index.owners.get(seq) ?? chunkOwner(index, seq);
  const ev = events?.[seq];
  if (owner !== undefined) {
    const entry = reqs[owner] as DispatchEntry;
    if (entry.firstChunkSeq === seq) return { ok: true, index: owner, via: 'first-chunk' };
    const t = ev?.type;
    const via = t === 'assistant/message' || t === 'tool/call' || t === 'tool/result' ? t : 'chunk';
    return { ok: true, index: owner, via };
  }
  const at = lastStartedAtOrBefore(reqs, seq);
  const before = at >= 0 ? (reqs[at] as DispatchEntry) : null;
  if (before && seq <= before.lastChunkSeq) return { ok: true, index: at, via: 'inside' };
  const after = at + 1 < reqs.length ? (reqs[at + 1] as DispatchEntry) : null;
  let what = seq < 0 || seq >= index.eventCount ? `seq ${seq} is not in the log (seqs 0..${index.eventCount - 1})` : `seq ${seq}${ev ? ` (${ev.type})` : ''} belongs to no model dispatch`;
  const aux = ev ? AUXILIARY_CALLS[ev.type] : undefined;
  if (aux) what += ` (${aux})`;
  return { ok: false, reason: what, before, after };
}

/** Parse `--step <turn>/<step>[#attempt]` and find the dispatch (default: the step's last attempt). */
export function resolveStep(index: DispatchIndex, spec: string): SeqResolution | { ok: false; reason: string; before: null; after: null } {
  const m = /^(\d+)\/(\d+)(?:#(\d+))?$/.exec(spec.trim());
  if (!m) return { ok: false, reason: `--step wants <turn>/<step>[#attempt], got ${toJson(spec)}`, before: null, after: null };
  const key = stepKey(m[1], m[2]);
  const list = index.requestIndexesByStep[key];
  if (!list || list.length === 0) {
    const keys = Object.keys(index.requestIndexesByStep);
    return { ok: false, reason: `step ${key} made no model dispatch${keys.length ? ` (steps with dispatches: ${keys.slice(0, 20).join(', ')}${keys.length > 20 ? ', …' : ''})` : ' (the log has no dispatches)'}`, before: null, after: null };
  }
  if (m[3] === undefined) return { ok: true, index: list[list.length - 1] as number, via: 'first-chunk' };
  const attempt = Number(m[3]);
  const found = list.find((i) => (index.requests[i] as DispatchEntry).attemptInStep === attempt);
  if (found === undefined) {
    return { ok: false, reason: `step ${key} has attempts #0..#${list.length - 1}, not #${attempt}`, before: null, after: null };
  }
  return { ok: true, index: found, via: 'first-chunk' };
}

// ---------------------------------------------------------------------------
// Summaries for `--list` and `--diff` (plain data; renderers are pure).


export interface DispatchSummary {
  index: number;
  key: string;
  firstChunkSeq: number;
  lastChunkSeq: number;
  provider: string | null;
  model: string | null;
  messageCount: number;
  /** Header fields changed since the previous dispatch (`['initial']` for the first with a header). */
  headerChanges: string[];
  headerSeq: number | null;
  finish: unknown | null;
  assistantMessageSeq: number | null;
  /** The assistant/message usage when reported, else the attempt's last usage chunk. */
  usage: unknown | null;
  usageFrom: 'assistant/message' | 'usage chunk' | null;
  /** First chunk time → last chunk time, in ms. */
  durationMs: number;
  startTime: number;
}

/** The provider a dispatch went to: its request header's, else its request context's. */
export function dispatchProvider(header: EpochHeader | null, context: RequestContext | null): string | null {
  return header?.config?.provider ?? context?.provider ?? null;
}

/** The model a dispatch asked for: its request header's, else its request context's. */
export function dispatchModel(header: EpochHeader | null, context: RequestContext | null): string | null {
  return header?.config?.model ?? context?.model ?? null;
}

/** One row of `dsh request --list`: a dispatch with its header changes since the previous one. */
export function summarizeDispatch(entry: DispatchEntry, prev: DispatchEntry | null): DispatchSummary {
  const changes = prev === null ? (entry.header ? ['initial'] : []) : headerChanges(prev.header, entry.header).map((c) => c.field);
  const usage = entry.messageUsage ?? entry.chunkUsage ?? null;
  return {
    index: entry.index,
    key: entry.key,
    firstChunkSeq: entry.firstChunkSeq,
    lastChunkSeq: entry.lastChunkSeq,
    provider: dispatchProvider(entry.header, entry.requestContext),
    model: dispatchModel(entry.header, entry.requestContext),
    messageCount: entry.messageCount,
    headerChanges: changes,
    headerSeq: entry.headerSeq,
    finish: entry.finish,
    assistantMessageSeq: entry.assistantMessageSeq,
    usage,
    usageFrom: entry.messageUsage ? 'assistant/message' : entry.chunkUsage ? 'usage chunk' : null,
    durationMs: entry.lastChunkTime - entry.firstChunkTime,
    startTime: entry.firstChunkTime,
  };
}

export interface DiffMessage {
  seq: number;
  /** Position in the dispatch's messages (null when the node contributes no message). */
  position: number | null;
  type: string;
  role: unknown;
  id: unknown;
  /** Replacement events: the surface span they shadowed. */
  replace?: { start: number; end: number };
}

export interface DiffRemoved extends DiffMessage {
  /** The replacement event (present in this dispatch) that shadowed it, when known. */
  shadowedBy: number | null;
}

export interface DispatchDiff {
  from: string | null;
  to: string;
  fromFirstChunkSeq: number | null;
  toFirstChunkSeq: number;
  /** Events between the two dispatch inputs (prefix growth). */
  prefixEvents: { from: number; to: number };
  /** Event types (with counts, in first-seen order) logged after the previous dispatch's last chunk and before this one's first. */
  between: { type: string; count: number; firstSeq: number }[];
  header: { changed: boolean; fromSeq: number | null; toSeq: number | null; changes: HeaderChange[] };
  requestContext: { changed: boolean; from: RequestContext | null; to: RequestContext | null };
  messages: {
    fromCount: number;
    toCount: number;
    kept: number;
    added: DiffMessage[];
    removed: DiffRemoved[];
    /** Surface events appended after the previous dispatch and shadowed again before this one (never sent). */
    transient: DiffRemoved[];
  };
}

function describeNode(seq: number, events: readonly SessionEvent[], positions: Map<number, number>): DiffMessage {
  const e = events[seq];
  const msg = e ? (deriveEventMessage(e) as { role?: unknown; id?: unknown } | null) : null;
  const out: DiffMessage = { seq, position: positions.get(seq) ?? null, type: e?.type ?? '?', role: msg?.role ?? null, id: msg?.id ?? null };
  const op = e?.surfaceOp;
  if (op && typeof op === 'object') out.replace = { start: op.start, end: op.end };
  return out;
}

function positionsOf(entry: DispatchEntry, events: readonly SessionEvent[]): Map<number, number> {
  const pos = new Map<number, number>();
  let i = 0;
  for (const seq of entry.surfaceNodes) {
    const e = events[seq];
    if (e && deriveEventMessage(e) !== null) pos.set(seq, i++);
  }
  return pos;
}

/** What changed from `prev` (null: the session start) to `cur`. */
export function diffDispatches(prev: DispatchEntry | null, cur: DispatchEntry, events: readonly SessionEvent[]): DispatchDiff {
  const prevNodes = new Set(prev?.surfaceNodes ?? []);
  const curNodes = new Set(cur.surfaceNodes);
  const curPos = positionsOf(cur, events);
  const prevPos = prev ? positionsOf(prev, events) : new Map<number, number>();
  const added = cur.surfaceNodes.filter((s) => !prevNodes.has(s)).map((s) => describeNode(s, events, curPos));
  // Replacement events in the window between the two inputs, in log order.
  const windowStart = prev?.prefixEventCount ?? 0;
  const replacers: number[] = [];
  const transientSeqs: number[] = [];
  for (let seq = windowStart; seq < cur.prefixEventCount && seq < events.length; seq++) {
    const e = events[seq] as SessionEvent;
    if (e.surfaceOp === undefined) continue;
    if (typeof e.surfaceOp === 'object') replacers.push(seq);
    if (!curNodes.has(seq) && !prevNodes.has(seq)) transientSeqs.push(seq);
  }
  const shadowedBy = (s: number): number | null => {
    for (const r of replacers) {
      if (r <= s) continue;
      const src = events[r]?.sourceEventSeqs;
      if (Array.isArray(src) && src.includes(s)) return r;
    }
    return null;
  };
  const removed: DiffRemoved[] = (prev?.surfaceNodes ?? [])
    .filter((s) => !curNodes.has(s))
    .map((s) => ({ ...describeNode(s, events, prevPos), shadowedBy: shadowedBy(s) }));
  const transient: DiffRemoved[] = transientSeqs.map((s) => ({ ...describeNode(s, events, new Map()), shadowedBy: shadowedBy(s) }));
  const between = new Map<string, { type: string; count: number; firstSeq: number }>();
  for (let seq = prev ? prev.lastChunkSeq + 1 : 0; seq < cur.firstChunkSeq && seq < events.length; seq++) {
    const e = events[seq] as SessionEvent;
    if (e.type === 'assistant/chunk') continue;
    const b = between.get(e.type);
    if (b) b.count += 1;
    else between.set(e.type, { type: e.type, count: 1, firstSeq: seq });
  }
  const changes = headerChanges(prev?.header ?? null, cur.header);
  const ctxChanged = toJson(prev?.requestContext ?? null) !== toJson(cur.requestContext);
  return {
    from: prev?.key ?? null,
    to: cur.key,
    fromFirstChunkSeq: prev?.firstChunkSeq ?? null,
    toFirstChunkSeq: cur.firstChunkSeq,
    prefixEvents: { from: prev?.prefixEventCount ?? 0, to: cur.prefixEventCount },
    between: [...between.values()],
    header: { changed: changes.length > 0, fromSeq: prev?.headerSeq ?? null, toSeq: cur.headerSeq, changes },
    requestContext: { changed: ctxChanged, from: prev?.requestContext ?? null, to: cur.requestContext },
    messages: {
      fromCount: prev?.messageCount ?? 0,
      toCount: cur.messageCount,
      kept: cur.surfaceNodes.filter((s) => prevNodes.has(s) && curPos.has(s)).length,
      added: added,
      removed,
      transient,
    },
  };
}

/** One reconstructed model input (`dsh request --json`). */
export interface RequestDocument {
  key: string;
  firstChunkSeq: number;
  header: DispatchEntry['header'];
  requestContext: DispatchEntry['requestContext'];
  messages: unknown[];
}

/** The `--json` document of one request: DSH's reconstructed input. */
export function requestJson(entry: DispatchEntry, messages: unknown[]): RequestDocument {
  return { key: entry.key, firstChunkSeq: entry.firstChunkSeq, header: entry.header, requestContext: entry.requestContext, messages };
}

function nearestText(r: Extract<SeqResolution, { ok: false }>): string {
  const parts: string[] = [];
  if (r.before) parts.push(`${r.before.key} (chunks ${r.before.firstChunkSeq}..${r.before.lastChunkSeq}) before it`);
  if (r.after) parts.push(`${r.after.key} (first chunk ${r.after.firstChunkSeq}) after it`);
  return parts.length ? `; nearest dispatches: ${parts.join(', ')}` : '; the log has no model dispatches';
}

/** Pick the dispatch from `<seq>` or `--step`; throws UsageError (exit 2) with the nearest dispatches. */
export function pickDispatch(index: DispatchIndex, events: readonly unknown[], seqArg: string | undefined, step: string | undefined): { entry: DispatchEntry; resolution: Extract<SeqResolution, { ok: true }>; from: string } {
  let r: SeqResolution;
  let from: string;
  if (step !== undefined) {
    r = resolveStep(index, step);
    from = `--step ${step}`;
  } else {
    const text = String(seqArg).trim();
    if (!/^\d+$/.test(text)) throw new UsageError(`<seq> must be a non-negative integer event seq, got ${toJson(seqArg)}`);
    const seq = Number(text);
    r = resolveSeq(index, seq, events as never);
    from = `seq ${seq}`;
  }
  if (!r.ok) throw new UsageError(`${r.reason}${step !== undefined ? '' : nearestText(r)}`);
  return { entry: index.requests[r.index] as DispatchEntry, resolution: r, from };
}

/** Whether two dispatch inputs differ (header, request context or messages). */
export function dispatchesDiffer(d: DispatchDiff): boolean {
  return d.header.changed || d.requestContext.changed || d.messages.added.length > 0 || d.messages.removed.length > 0;
}

/**
 * Two dispatches of one session, each by any seq inside it or by `turn/step[#attempt]`, and
 * `diffDispatches` between them (`dsh diff <target> <A> <B>`). The earlier one must come first
 * (a diff runs forward through the log); otherwise a UsageError.
 */
export function pickDispatchPair(index: DispatchIndex, events: readonly unknown[], first: string, second: string): { a: DispatchEntry; b: DispatchEntry } {
  const pick = (arg: string) => (/^\d+\/\d+(#\d+)?$/.test(arg.trim()) ? pickDispatch(index, events, undefined, arg.trim()) : pickDispatch(index, events, arg, undefined)).entry;
  const a = pick(first);
  const b = pick(second);
  if (a.index > b.index) {
    throw new UsageError(`${first} is in dispatch ${a.key}, which comes after ${b.key} (${second}): give the earlier dispatch first (a diff runs forward through the log)`);
  }
  return { a, b };
}

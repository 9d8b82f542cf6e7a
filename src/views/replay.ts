/**
 * Stream replay (seed 004 contract "Stream replay"; format.md §7.5, §11.1,
 * §11.2): every model attempt rebuilt from its raw `assistant/chunk` events,
 * assembled with DSH's `BlockAssembler` rules, and checked against the
 * `assistant/message` that cites it.
 *
 * Segmentation is {@link AttemptBoundaries} (views/attempts.ts). An `assistant/message` whose
 * `sourceEventSeqs` is `[]` is a successful attempt that streamed nothing.
 *
 * Assembly rules (re-implemented from the spec, not copied):
 * - blocks are ordered by the first index seen (`block-start` or any delta);
 * - a `block-end` block is authoritative and freezes its index (later deltas
 *   and later `block-end`s for that index are ignored: first close wins);
 * - otherwise text/reasoning concatenate their deltas; a tool call is
 *   `{id: last delta id ?? "call-<index>", name: last non-empty name ?? "",
 *   arguments: concatenated argumentsDelta}`;
 * - usage = the last `usage` chunk; a missing `finish` means `{kind:'stop'}`;
 * - `max-tokens` drops tool-call blocks; the replay envelope is dropped when
 *   its `blocks` length differs from the number of seen blocks, and pruned in
 *   step with the max-tokens drop;
 * - an interrupted message keeps only text/reasoning blocks with
 *   non-whitespace text (`interruptedBlocks`).
 */
import type { SessionEvent, StreamChunkView } from '../log/types.js';
import { deepEqualJson } from '../log/surface.js';
import { AttemptBoundaries, type ChunkPlace } from './attempts.js';
import { RowChunk } from '../log/pruned-event.js';
import { dispatchKey, stepKey } from '../core/keys.js';
import { appendTo } from '../core/arrays.js';
import { VarReader, VarWriter } from '../log/index/codec.js';
import type { FoldBuilder, PersistentFold } from '../log/index/session-index.js';

export type ContentBlock = Record<string, unknown> & { type: string };

interface Partial {
  blockType: string;
  text: string;
  toolCallId?: unknown;
  toolCallName?: unknown;
  args: string;
  /** Set by the first `block-end`: authoritative and frozen. */
  closed?: ContentBlock;
}

/** Normalize a finish reason: objects carry `kind`; a bare string is its own kind. */
export function finishKind(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  if (reason && typeof reason === 'object' && typeof (reason as { kind?: unknown }).kind === 'string') return (reason as { kind: string }).kind;
  return 'unknown';
}

/** The failure carried by an `error`/`aborted` finish, if any. */
export function finishFailure(reason: unknown): Record<string, unknown> | null {
  if (reason && typeof reason === 'object') {
    const f = (reason as { failure?: unknown }).failure;
    if (f && typeof f === 'object') return f as Record<string, unknown>;
  }
  return null;
}

/** Incremental assembler with DSH's BlockAssembler semantics. */
export class StreamAssembler {
  private readonly partials = new Map<number, Partial>();
  private readonly order: number[] = [];
  private _usage: unknown;
  private _finish: unknown;
  private _replayState: unknown;
  /** Chunks whose shape this assembler did not understand (kept for the report). */
  readonly unknownChunks: number[] = [];

  private slot(index: number, blockType: string): Partial {
    let p = this.partials.get(index);
    if (!p) {
      p = { blockType, text: '', args: '' };
      this.partials.set(index, p);
      this.order.push(index);
    }
    return p;
  }

  /** Feed one chunk (the `data.chunk` of an `assistant/chunk`); `seq` only labels unknown chunks. */
  push(value: unknown, seq = -1): void {
    if (!value || typeof value !== 'object') {
      this.unknownChunks.push(seq);
      return;
    }
    // Read as DSH's BlockAssembler reads a chunk: the index keys the slot whatever it is, deltas are appended with `+=`.
    const chunk = value as NonNullable<StreamChunkView>;
    const index = chunk.index as number;
    switch (chunk.type) {
      case 'block-start':
        if (!this.partials.has(index)) this.slot(index, String(chunk.blockType));
        return;
      case 'text-delta':
      case 'reasoning-delta': {
        const p = this.slot(index, chunk.type === 'text-delta' ? 'text' : 'reasoning');
        if (p.closed) return;
        p.text += chunk.text as string;
        return;
      }
      case 'tool-call-delta': {
        const p = this.slot(index, 'tool-call');
        if (p.closed) return;
        p.toolCallId = chunk.id;
        if (chunk.name) p.toolCallName = chunk.name;
        p.args += chunk.argumentsDelta as string;
        return;
      }
      case 'block-end': {
        const p = this.slot(index, String(chunk.block?.type));
        if (p.closed) return;
        p.closed = chunk.block as ContentBlock;
        return;
      }
      case 'usage':
        this._usage = chunk.usage;
        return;
      case 'finish':
        this._finish = chunk.reason;
        this._replayState = chunk.replayState;
        return;
      default:
        this.unknownChunks.push(seq);
    }
  }

  private build(p: Partial, index: number): ContentBlock {
    if (p.closed) return p.closed;
    switch (p.blockType) {
      case 'text':
        return { type: 'text', text: p.text };
      case 'reasoning':
        return { type: 'reasoning', text: p.text };
      case 'tool-call':
        return { type: 'tool-call', id: p.toolCallId ?? `call-${index}`, name: p.toolCallName ?? '', arguments: p.args };
      default:
        throw new Error(`cannot assemble incomplete block of type "${p.blockType}"`);
    }
  }

  get finishReason(): unknown {
    return this._finish ?? { kind: 'stop' };
  }

  get sawFinish(): boolean {
    return this._finish !== undefined;
  }

  get usage(): unknown {
    return this._usage;
  }

  private assembled(): { blocks: ContentBlock[]; replay: unknown } {
    const all = this.order.map((index) => this.build(this.partials.get(index) as Partial, index));
    const maxTokens = finishKind(this.finishReason) === 'max-tokens';
    const keep = maxTokens ? all.map((b) => b.type !== 'tool-call') : undefined;
    const blocks = keep ? all.filter((_, i) => keep[i]) : all;
    const env = this._replayState as { response?: unknown; blocks?: unknown[] } | undefined;
    if (!env || env.blocks === undefined) return { blocks, replay: env };
    if (!Array.isArray(env.blocks) || env.blocks.length !== all.length) return { blocks, replay: undefined };
    if (!keep || blocks.length === all.length) return { blocks, replay: env };
    return { blocks, replay: { response: env.response, blocks: env.blocks.filter((_, i) => keep[i]) } };
  }

  /** The assembled content of a completed attempt (may throw on an unclosed unknown block). */
  blocks(): ContentBlock[] {
    return this.assembled().blocks;
  }

  get replayState(): unknown {
    return this.assembled().replay;
  }

  /** What an interrupted message keeps: text/reasoning blocks with non-whitespace text, stream order. */
  interruptedBlocks(): ContentBlock[] {
    const out: ContentBlock[] = [];
    for (const index of this.order) {
      const p = this.partials.get(index) as Partial;
      const type = p.closed?.type ?? p.blockType;
      if (type !== 'text' && type !== 'reasoning') continue;
      const b = this.build(p, index);
      if ((b.type === 'text' || b.type === 'reasoning') && typeof b['text'] === 'string' && (b['text'] as string).trim() !== '') out.push(b);
    }
    return out;
  }
}

export type AttemptOutcome =
  /** Cited by a normal `assistant/message`. */
  | 'success'
  /** Cited by an `interrupted: true` assistant/message (cancelled mid-stream). */
  | 'interrupted'
  /** Ended with an `error`/`aborted` finish; DSH commits no message for it. */
  | 'failed'
  /** Ended with a normal finish but nothing cites it (e.g. crash before the message). */
  | 'uncommitted'
  /** No finish and no message: cancelled before anything was committed, or a crash tail. */
  | 'unfinished';

export interface ReplayChunk {
  seq: number;
  time: number;
  chunk: unknown;
}

export interface ReplayAttempt {
  /** Position among all attempts of the log. */
  index: number;
  /** `turn/step#n`, n counted from 0 within the step (as the corpus's request keys). */
  key: string;
  turn: number;
  step: number;
  attemptInStep: number;
  /** Attempts of the same step (known after the pass). */
  attemptsInStep: number;
  chunkSeqs: number[];
  firstChunkSeq: number | null;
  lastChunkSeq: number | null;
  /**
   * The dispatch anchor: the latest non-chunk event before the first chunk
   * (the request was dispatched after it was logged). For an attempt with no
   * chunks, the event before its assistant/message.
   */
  anchorSeq: number | null;
  anchorTime: number | null;
  firstChunkTime: number | null;
  lastChunkTime: number | null;
  /** First chunk carrying a non-empty token delta (session-stats' `isTokenDelta`). */
  firstTokenSeq: number | null;
  firstTokenTime: number | null;
  /** firstTokenTime − anchorTime. */
  ttftMs: number | null;
  /** lastChunkTime − anchorTime. */
  durationMs: number | null;
  /** The finish chunk's reason verbatim, or null when the stream ended without one. */
  finish: unknown | null;
  finishKind: string | null;
  /** Failure of an error/aborted finish. */
  error: Record<string, unknown> | null;
  outcome: AttemptOutcome;
  /** A later attempt of the same step exists (DSH retried or recovered). */
  retried: boolean;
  /** `llm/retry` events of this step logged after this attempt and before the next one. */
  retryEventSeqs: number[];
  /** Assembled blocks (BlockAssembler.blocks(); for interrupted attempts interruptedBlocks()). */
  blocks: ContentBlock[];
  /** Assembly failure text (an unknown block type never closed), if any. */
  assemblyError: string | null;
  usage: unknown | null;
  replayState: unknown | null;
  /** Chunks of unknown shape (seqs). */
  unknownChunkSeqs: number[];
  /** The citing assistant/message, if any. */
  messageSeq: number | null;
  /**
   * How the message was linked: its sourceEventSeqs, `[]` (empty stream), inferred by step
   * (sourceEventSeqs absent), or `absent` (not recorded and no chunks: nothing to verify).
   */
  citation: 'sources' | 'empty' | 'inferred' | 'absent' | null;
  /** Assembled content equals the message's `content` (null when no message). */
  contentMatches: boolean | null;
  /** The message's usage equals the attempt's last usage chunk (null when either is absent). */
  usageMatches: boolean | null;
  /** The message's `source.replayState` equals the assembled envelope (null when neither exists). */
  replayStateMatches: boolean | null;
  /** Cited seqs that are not this attempt's chunks, or chunks not cited (mismatch evidence). */
  citationMismatch: { notChunks: number[]; uncited: number[] } | null;
  /** Human explanation when the message legitimately differs from the raw blocks (max-tokens, interrupted). */
  note: string | null;
  /** Present only when asked for (replay with chunks, --follow-timing). */
  chunks?: ReplayChunk[];
}

export interface ReplaySummary {
  attempts: number;
  success: number;
  interrupted: number;
  failed: number;
  uncommitted: number;
  unfinished: number;
  /** Attempts with a citing message whose assembled content equals it. */
  matched: number;
  mismatched: number;
  /** Messages with no recorded sources and no chunks (nothing to compare). */
  unverified: number;
  /** assistant/message events that cite chunks no attempt owns. */
  orphanMessages: number[];
}

export interface ReplayView {
  sessionId: string;
  attempts: ReplayAttempt[];
  summary: ReplaySummary;
}

export interface ReplayOptions {
  /** Keep each attempt's raw chunks (seq, time, chunk). */
  keepChunks?: boolean;
}

/** session-stats' `isTokenDelta`: a delta that carries content (first-token time). */
export function isTokenDelta(value: unknown): boolean {
  if (!value || typeof value !== 'object') return false;
  const chunk = value as NonNullable<StreamChunkView>;
  if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') return chunk.text !== '';
  if (chunk.type === 'tool-call-delta') return chunk.argumentsDelta !== '' || chunk.name !== undefined;
  return false;
}

/** The longest recorded gap between two chunks a timed replay plays (ms). */
export const MAX_CHUNK_GAP_MS = 2_000;

/** The recorded gap a timed replay plays before a chunk at `time` (after one at `prev`; 0 for the first): clamped to [0, maxGapMs]. */
export function chunkGap(prev: number | null, time: number, maxGapMs = MAX_CHUNK_GAP_MS): number {
  return prev === null ? 0 : Math.min(maxGapMs, Math.max(0, time - prev));
}

/** Where an attempt's times are measured from: an event's seq and time (raw, as logged). */
interface Anchor {
  seq: number;
  time: number;
}

function newAttempt(index: number, turn: number, step: number, attemptInStep: number, anchor: Anchor | undefined): ReplayAttempt {
  return {
    index,
    key: dispatchKey(turn, step, attemptInStep),
    turn,
    step,
    attemptInStep,
    attemptsInStep: 0,
    chunkSeqs: [],
    firstChunkSeq: null,
    lastChunkSeq: null,
    anchorSeq: anchor ? anchor.seq : null,
    anchorTime: anchor ? anchor.time : null,
    firstChunkTime: null,
    lastChunkTime: null,
    firstTokenSeq: null,
    firstTokenTime: null,
    ttftMs: null,
    durationMs: null,
    finish: null,
    finishKind: null,
    error: null,
    outcome: 'unfinished',
    retried: false,
    retryEventSeqs: [],
    blocks: [],
    assemblyError: null,
    usage: null,
    replayState: null,
    unknownChunkSeqs: [],
    messageSeq: null,
    citation: null,
    contentMatches: null,
    usageMatches: null,
    replayStateMatches: null,
    citationMismatch: null,
    note: null,
  };
}

function safeBlocks(asm: StreamAssembler, interrupted: boolean): { blocks: ContentBlock[]; error: string | null } {
  try {
    return { blocks: interrupted ? asm.interruptedBlocks() : asm.blocks(), error: null };
  } catch (error) {
    return { blocks: [], error: (error as Error).message };
  }
}


/**
 * What one attempt is, known before any of it is assembled: its place
 * (index, step, attempt in step, key, retried), its chunk span, its anchor,
 * its retries and the messages that cite it. Numbers and the raw turn/step only.
 */
interface AttemptPlan {
  index: number;
  turn: unknown;
  step: unknown;
  attemptInStep: number;
  attemptsInStep: number;
  firstChunkSeq: number | null;
  lastChunkSeq: number | null;
  /** The times of its first and last chunk, and the gaps a timed replay plays between its chunks, summed ({@link chunkGap}). */
  firstChunkTime: number | null;
  lastChunkTime: number | null;
  chunkGapsMs: number;
  anchor: Anchor | undefined;
  retryEventSeqs: number[];
  messageSeq: number | null;
  citation: ReplayAttempt['citation'];
  /** The messages that cited it by `sourceEventSeqs` (their citations are checked), in log order. */
  citedBy: number[];
  /** The seq after which everything the attempt needs has been read. */
  readyAt: number;
}

/** An assistant/message as the plan links it. */
interface PlannedMessage {
  seq: number;
  turn: unknown;
  step: unknown;
  sources: unknown;
  /** The event logged just before it (the anchor of a chunk-less attempt). */
  before: Anchor | undefined;
}

/** The plan of a whole replay: every attempt in order, the chunked ones in stream order, the orphans. */
export interface ReplayPlan {
  /** Every attempt, in the replay's order. */
  readonly attempts: readonly AttemptPlan[];
  /** The attempts that have chunks, in stream order (their chunk spans are disjoint and ascending). */
  readonly chunked: readonly AttemptPlan[];
  /** assistant/messages citing chunks no attempt owns. */
  readonly orphanMessages: number[];
}

/**
 * The first pass of a replay: attempt segmentation ({@link AttemptBoundaries}),
 * which message cites which attempt, where chunk-less attempts go and how
 * attempts are numbered in their step. It holds numbers per attempt and per
 * assistant/message, and one bit per chunk, never chunk content.
 */
export class ReplayPlanner {
  private readonly chunked: AttemptPlan[] = [];
  private readonly perStep = new Map<string, AttemptPlan[]>();
  private readonly messages: PlannedMessage[] = [];
  /** Which seqs are assistant/chunks (all of them belong to an attempt). */
  private chunkBits = new Uint8Array(1024);
  private readonly oddChunkSeqs = new Set<number>();
  private open: AttemptPlan | undefined;
  /** The last non-chunk event's seq and time (if there was one), and its anchor once an attempt took it. */
  private seenNonChunk = false;
  private lastNonChunkSeq = 0;
  private lastNonChunkTime = 0;
  private lastNonChunk: Anchor | undefined;
  private last: SessionEvent | undefined;
  private readonly boundaries = new AttemptBoundaries();

  observe(e: SessionEvent): void {
    if (e instanceof RowChunk) {
      // Most events of a long log: a path of its own, whose reads see one class of event.
      this.last = e;
      const d = e.data as { turn: number; step: number };
      this.chunk(this.boundaries.chunk(d.turn, d.step, false), e, d.turn, d.step);
      return;
    }
    const place = this.boundaries.observe(e);
    const last = this.last;
    this.last = e;
    if (place === null) {
      if (!this.boundaries.isOpen) this.open = undefined;
      if (e.type === 'assistant/message') {
        // Only a message citing no chunks (or not saying) anchors on the event before it (a logical log is contiguous).
        const sources = e.sourceEventSeqs;
        const before = (!Array.isArray(sources) || sources.length === 0) && last && last.seq === e.seq - 1 ? { seq: last.seq, time: last.time } : undefined;
        this.messages.push({ seq: e.seq, turn: e.data?.turn, step: e.data?.step, sources: Array.isArray(sources) ? (sources.length === 0 ? [] : [sources[0]]) : sources, before });
      }
      if (e.type === 'llm/retry') {
        const list = this.perStep.get(stepKey(e.data?.turn, e.data?.step));
        const attempt = list?.[list.length - 1];
        if (attempt) attempt.retryEventSeqs.push(e.seq);
      }
      // The anchor object is made only if an attempt starts after this event.
      this.seenNonChunk = true;
      this.lastNonChunkSeq = e.seq;
      this.lastNonChunkTime = e.time;
      this.lastNonChunk = undefined;
      return;
    }
    const d = e.data ?? {};
    this.chunk(place, e, d.turn, d.step);
  }

  /** Chunk `e` of `(turn, step)`, at `place`, joins its attempt (which it may start). */
  private chunk(place: ChunkPlace, e: SessionEvent, turn: unknown, step: unknown): void {
    if (place.starts || !this.open) {
      if (this.seenNonChunk) this.lastNonChunk ??= { seq: this.lastNonChunkSeq, time: this.lastNonChunkTime };
      this.open = this.start(turn, step, this.lastNonChunk);
    }
    const a = this.open;
    if (a.firstChunkSeq === null) {
      a.firstChunkSeq = e.seq;
      a.firstChunkTime = e.time;
    } else a.chunkGapsMs += chunkGap(a.lastChunkTime, e.time);
    a.lastChunkSeq = e.seq;
    a.lastChunkTime = e.time;
    this.markChunk(e.seq);
    if (place.ends) this.open = undefined;
  }

  private start(turn: unknown, step: unknown, anchor: Anchor | undefined): AttemptPlan {
    const key = stepKey(turn, step);
    const list = this.perStep.get(key);
    const a = plan(this.chunked.length, turn, step, list?.length ?? 0, anchor);
    this.perStep.set(key, appendTo(list, a));
    this.chunked.push(a);
    return a;
  }

  private markChunk(seq: number): void {
    if (!Number.isSafeInteger(seq) || seq < 0 || seq >= 2 ** 32) {
      this.oddChunkSeqs.add(seq);
      return;
    }
    const byte = Math.floor(seq / 8);
    if (byte >= this.chunkBits.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.chunkBits.length * 2));
      grown.set(this.chunkBits);
      this.chunkBits = grown;
    }
    this.chunkBits[byte]! |= 1 << seq % 8;
  }

  /** The attempt owning chunk `seq` (any value a message cites), if any. */
  private ownerOf(seq: unknown): AttemptPlan | undefined {
    if (typeof seq !== 'number') return undefined;
    const isChunk = Number.isSafeInteger(seq) && seq >= 0 && seq < 2 ** 32 ? ((this.chunkBits[Math.floor(seq / 8)] ?? 0) & (1 << seq % 8)) !== 0 : this.oddChunkSeqs.has(seq);
    if (!isChunk) return undefined;
    // Attempts own disjoint, ascending chunk spans: the last one starting at or before `seq`.
    let lo = 0;
    let hi = this.chunked.length - 1;
    let found: AttemptPlan | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const a = this.chunked[mid]!;
      if ((a.firstChunkSeq as number) <= seq) {
        found = a;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** The plan, once every logical event (closers included) was observed. */
  finish(): ReplayPlan {
    const { perStep } = this;
    const built: AttemptPlan[] = [...this.chunked];
    const orphanMessages: number[] = [];
    // Link each assistant/message to the attempt it cites.
    const emptyAttempts: { msg: PlannedMessage; a: AttemptPlan }[] = [];
    for (const msg of this.messages) {
      const sources = msg.sources;
      let a: AttemptPlan | undefined;
      let citation: ReplayAttempt['citation'] = 'sources';
      if (Array.isArray(sources) && sources.length === 0) {
        // A successful call that streamed nothing: an attempt with no chunks.
        a = plan(-1, msg.turn, msg.step, 0, msg.before);
        citation = 'empty';
        emptyAttempts.push({ msg, a });
      } else if (Array.isArray(sources)) {
        a = this.ownerOf(sources[0]);
        if (!a) {
          orphanMessages.push(msg.seq);
          continue;
        }
      } else {
        const list = perStep.get(stepKey(msg.turn, msg.step)) ?? [];
        a = [...list].reverse().find((x) => x.messageSeq === null && x.firstChunkSeq !== null && x.firstChunkSeq < msg.seq);
        citation = 'inferred';
        if (!a) {
          // Sources not recorded and no chunk in the step: a chunk-less attempt we cannot verify.
          a = plan(-1, msg.turn, msg.step, 0, msg.before);
          citation = 'absent';
          emptyAttempts.push({ msg, a });
        }
      }
      a.messageSeq = msg.seq;
      a.citation = citation;
      if (citation === 'sources') a.citedBy.push(msg.seq);
    }
    // Insert chunk-less attempts into their step, in log order.
    for (const { msg, a } of emptyAttempts) {
      const key = stepKey(a.turn, a.step);
      const list = perStep.get(key) ?? [];
      let pos = list.findIndex((x) => (x.firstChunkSeq ?? Infinity) > msg.seq);
      if (pos === -1) pos = list.length;
      list.splice(pos, 0, a);
      perStep.set(key, list);
      let at = built.findIndex((x) => (x.firstChunkSeq ?? x.messageSeq ?? Infinity) > msg.seq);
      if (at === -1) at = built.length;
      built.splice(at, 0, a);
    }
    built.forEach((a, i) => (a.index = i));
    for (const list of perStep.values()) {
      list.forEach((a, i) => {
        a.attemptInStep = i;
        a.attemptsInStep = list.length;
      });
    }
    return withNeeds(built, this.chunked, orphanMessages);
  }
}

/** The plan of `attempts`, each with the seq it is complete at. */
function withNeeds(attempts: AttemptPlan[], chunked: AttemptPlan[], orphanMessages: number[]): ReplayPlan {
  for (const a of attempts) a.readyAt = Math.max(a.lastChunkSeq ?? -Infinity, a.messageSeq ?? -Infinity, ...a.citedBy);
  return { attempts, chunked, orphanMessages };
}

function plan(index: number, turn: unknown, step: unknown, attemptInStep: number, anchor: Anchor | undefined): AttemptPlan {
  return { index, turn, step, attemptInStep, attemptsInStep: 0, firstChunkSeq: null, lastChunkSeq: null, firstChunkTime: null, lastChunkTime: null, chunkGapsMs: 0, anchor, retryEventSeqs: [], messageSeq: null, citation: null, citedBy: [], readyAt: -Infinity };
}

/**
 * The recorded gaps a timed replay of some attempts (`wanted`, in the plan's order) plays, summed:
 * the gaps ({@link chunkGap}) between consecutive chunks of those attempts, without reading them.
 */
export function replayGapTotal(p: ReplayPlan, wanted: (a: { turn: unknown; step: unknown }) => boolean): number {
  let total = 0;
  let prev: number | null = null;
  for (const a of p.attempts) {
    if (a.firstChunkTime === null || a.lastChunkTime === null || !wanted(a)) continue;
    total += chunkGap(prev, a.firstChunkTime) + a.chunkGapsMs;
    prev = a.lastChunkTime;
  }
  return total;
}

/** An attempt being assembled in the second pass. */
interface Assembling {
  attempt: ReplayAttempt;
  asm: StreamAssembler;
  /** The messages it reads, by seq. */
  messages: Map<number, SessionEvent>;
}

function emptySummary(orphanMessages: number[]): ReplaySummary {
  return { attempts: 0, success: 0, interrupted: 0, failed: 0, uncommitted: 0, unfinished: 0, matched: 0, mismatched: 0, unverified: 0, orphanMessages };
}

/**
 * The second pass of a replay: `push` every logical event in order again; it
 * returns the attempts completed by that event, in the replay's order, each
 * assembled and checked. It holds the attempts read but not yet returned
 * (normally the one being streamed) and the messages they wait for.
 */
export class ReplayAssembler {
  private readonly state = new Map<AttemptPlan, Assembling>();
  private readonly waiting = new Map<number, AttemptPlan[]>();
  private next = 0;
  private chunkAt = 0;
  /** Counted over every attempt returned so far (complete after `end`). */
  readonly summary: ReplaySummary;

  constructor(
    private readonly plan: ReplayPlan,
    private readonly options: ReplayOptions = {},
  ) {
    this.summary = emptySummary(plan.orphanMessages);
    for (const a of plan.attempts) {
      for (const s of new Set([...(a.messageSeq !== null ? [a.messageSeq] : []), ...a.citedBy])) {
        const list = this.waiting.get(s) ?? [];
        list.push(a);
        this.waiting.set(s, list);
      }
    }
  }

  private stateOf(p: AttemptPlan): Assembling {
    let s = this.state.get(p);
    if (!s) {
      // The turn and step as logged (numbers in any log DSH writes; the report carries whatever is there).
      s = { attempt: newAttempt(p.index, p.turn as number, p.step as number, p.attemptInStep, p.anchor), asm: new StreamAssembler(), messages: new Map() };
      this.state.set(p, s);
    }
    return s;
  }

  push(e: SessionEvent): ReplayAttempt[] {
    if (e.type === 'assistant/chunk') {
      const chunked = this.plan.chunked;
      while (this.chunkAt < chunked.length && (chunked[this.chunkAt]!.lastChunkSeq as number) < e.seq) this.chunkAt++;
      const p = chunked[this.chunkAt];
      if (p) this.chunk(this.stateOf(p), e);
    } else if (e.type === 'assistant/message') {
      for (const p of this.waiting.get(e.seq) ?? []) this.stateOf(p).messages.set(e.seq, e);
    }
    return this.ready(e.seq);
  }

  private chunk(s: Assembling, e: SessionEvent): void {
    const a = s.attempt;
    const d = e.data ?? {};
    a.chunkSeqs.push(e.seq);
    if (a.firstChunkSeq === null) {
      a.firstChunkSeq = e.seq;
      a.firstChunkTime = e.time;
    }
    a.lastChunkSeq = e.seq;
    a.lastChunkTime = e.time;
    if (a.firstTokenSeq === null && isTokenDelta(d.chunk)) {
      a.firstTokenSeq = e.seq;
      a.firstTokenTime = e.time;
    }
    if (this.options.keepChunks) (a.chunks ??= []).push({ seq: e.seq, time: e.time, chunk: d.chunk });
    s.asm.push(d.chunk, e.seq);
  }

  /** The attempts every needed event of which was read by `seq` (all of them at the end), in order. */
  private ready(seq: number): ReplayAttempt[] {
    const out: ReplayAttempt[] = [];
    const all = this.plan.attempts;
    while (this.next < all.length && all[this.next]!.readyAt <= seq) {
      const p = all[this.next++]!;
      const s = this.stateOf(p);
      this.state.delete(p);
      out.push(this.complete(p, s));
    }
    return out;
  }

  /** The attempts still open once the log has been read (none in a log read whole). */
  end(): ReplayAttempt[] {
    return this.ready(Infinity);
  }

  private complete(p: AttemptPlan, { attempt: a, asm, messages }: Assembling): ReplayAttempt {
    const { summary } = this;
    a.index = p.index;
    a.attemptInStep = p.attemptInStep;
    a.attemptsInStep = p.attemptsInStep;
    a.key = dispatchKey(a.turn, a.step, p.attemptInStep);
    a.retried = p.attemptInStep < p.attemptsInStep - 1;
    a.retryEventSeqs = p.retryEventSeqs;
    a.messageSeq = p.messageSeq;
    a.citation = p.citation;
    for (const seq of p.citedBy) {
      const sources = (messages.get(seq)?.sourceEventSeqs ?? []) as number[];
      const own = new Set(a.chunkSeqs);
      const cited = new Set(sources);
      const notChunks = sources.filter((s) => !own.has(s));
      const uncited = a.chunkSeqs.filter((s) => !cited.has(s));
      if (notChunks.length || uncited.length) a.citationMismatch = { notChunks, uncited };
    }
    const msg = a.messageSeq !== null ? messages.get(a.messageSeq) : undefined;
    const interrupted = msg?.data?.interrupted === true;
    a.finish = asm.sawFinish ? asm.finishReason : null;
    a.finishKind = asm.sawFinish ? finishKind(asm.finishReason) : null;
    a.error = a.finishKind === 'error' || a.finishKind === 'aborted' ? finishFailure(a.finish) : null;
    const { blocks, error } = safeBlocks(asm, interrupted);
    a.blocks = blocks;
    a.assemblyError = error;
    a.usage = asm.usage ?? null;
    try {
      a.replayState = interrupted ? null : (asm.replayState ?? null);
    } catch {
      a.replayState = null;
    }
    a.unknownChunkSeqs = asm.unknownChunks;
    if (a.anchorTime !== null) {
      if (a.firstTokenTime !== null) a.ttftMs = a.firstTokenTime - a.anchorTime;
      if (a.lastChunkTime !== null) a.durationMs = a.lastChunkTime - a.anchorTime;
      else if (msg) a.durationMs = msg.time - a.anchorTime;
    }
    if (msg) {
      a.outcome = interrupted ? 'interrupted' : 'success';
      const content = msg.data?.message?.content;
      a.contentMatches = a.citation === 'absent' ? null : deepEqualJson(a.blocks, content);
      const mu = msg.data?.usage;
      a.usageMatches = mu === undefined || a.usage === null ? null : deepEqualJson(mu, a.usage);
      const rs = msg.data?.message?.source?.replayState;
      a.replayStateMatches = rs === undefined && a.replayState === null ? null : deepEqualJson(rs ?? null, a.replayState);
      if (interrupted) a.note = 'interrupted: DSH keeps only text/reasoning blocks with non-whitespace text (tool calls omitted)';
      else if (a.finishKind === 'max-tokens') a.note = 'max-tokens: DSH drops tool-call blocks from the content';
      else if (a.citation === 'empty') a.note = 'the provider stream yielded no chunks (sourceEventSeqs [])';
      else if (a.citation === 'absent') a.note = 'sourceEventSeqs not recorded and no chunks logged for the step: nothing to verify';
      if (a.contentMatches === true) summary.matched++;
      else if (a.contentMatches === false) summary.mismatched++;
      else summary.unverified++;
    } else if (a.finishKind === 'error' || a.finishKind === 'aborted') a.outcome = 'failed';
    else if (a.finishKind !== null) a.outcome = 'uncommitted';
    else a.outcome = 'unfinished';
    summary.attempts++;
    summary[a.outcome]++;
    return a;
  }
}

/** Rebuild every model attempt of a logical event log (held). */
export function buildReplay(sessionId: string, events: readonly SessionEvent[], options: ReplayOptions = {}): ReplayView {
  const planner = new ReplayPlanner();
  for (const e of events) planner.observe(e);
  const asm = new ReplayAssembler(planner.finish(), options);
  const attempts: ReplayAttempt[] = [];
  for (const e of events) for (const a of asm.push(e)) attempts.push(a);
  for (const a of asm.end()) attempts.push(a);
  return { sessionId, attempts, summary: asm.summary };
}

/** The first pass of a replay over a logical log streamed in order (batches of events). */
export async function planReplay(batches: AsyncIterable<readonly SessionEvent[]>): Promise<ReplayPlan> {
  const planner = new ReplayPlanner();
  for await (const batch of batches) for (const e of batch) planner.observe(e);
  return planner.finish();
}

/**
 * The second pass over a logical log streamed in order: every attempt is
 * given to `emit` as soon as it is complete, in the replay's order; the
 * summary of them all is returned at the end.
 */
export async function streamReplay(
  plan: ReplayPlan,
  batches: AsyncIterable<readonly SessionEvent[]>,
  emit: (attempt: ReplayAttempt) => void | Promise<void>,
  options: ReplayOptions = {},
): Promise<ReplaySummary> {
  const asm = new ReplayAssembler(plan, options);
  for await (const batch of batches) for (const e of batch) for (const a of asm.push(e)) await emit(a);
  for (const a of asm.end()) await emit(a);
  return asm.summary;
}

const CITATIONS: readonly ReplayAttempt['citation'][] = [null, 'sources', 'empty', 'inferred', 'absent'];
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && Math.abs(v) < 2 ** 52;
const opt = (v: number | null) => (v === null ? 0 : v + 1);
const unopt = (v: number) => (v === 0 ? null : v - 1);

/** The encoding of the plan's bytes. */
const PLAN_ENCODING = 2;

/** A plan's bytes (numbers only), or undefined when a value is not a plain integer (the plan is then re-derived by re-reading). */
function encodePlan(p: ReplayPlan): Buffer | undefined {
  const w = new VarWriter().uint(PLAN_ENCODING).uint(p.attempts.length);
  for (const a of p.attempts) {
    if (!isInt(a.turn) || !isInt(a.step) || (a.anchor && (!isInt(a.anchor.seq) || !isInt(a.anchor.time) || a.anchor.seq < 0))) return undefined;
    const timed = a.firstChunkSeq !== null;
    if (timed && (!isInt(a.firstChunkTime) || !isInt(a.lastChunkTime) || !isInt(a.chunkGapsMs) || a.chunkGapsMs < 0)) return undefined;
    w.int(a.turn).int(a.step).uint(a.attemptInStep).uint(a.attemptsInStep);
    w.uint(opt(a.firstChunkSeq)).uint(opt(a.lastChunkSeq));
    if (timed) w.int(a.firstChunkTime as number).int(a.lastChunkTime as number).uint(a.chunkGapsMs);
    w.uint(a.anchor ? 1 : 0);
    if (a.anchor) w.uint(a.anchor.seq).int(a.anchor.time);
    w.uints(a.retryEventSeqs).uint(opt(a.messageSeq)).uint(CITATIONS.indexOf(a.citation)).uints(a.citedBy);
  }
  return w.uints(p.orphanMessages).done();
}

function decodePlan(bytes: Buffer): ReplayPlan | null {
  const r = new VarReader(bytes);
  if (r.uint() !== PLAN_ENCODING) return null;
  const attempts: AttemptPlan[] = [];
  for (let n = r.uint(), index = 0; index < n; index++) {
    const a = plan(index, r.int(), r.int(), r.uint(), undefined);
    a.attemptsInStep = r.uint();
    a.firstChunkSeq = unopt(r.uint());
    a.lastChunkSeq = unopt(r.uint());
    if (a.firstChunkSeq !== null) {
      a.firstChunkTime = r.int();
      a.lastChunkTime = r.int();
      a.chunkGapsMs = r.uint();
    }
    if (r.uint() === 1) a.anchor = { seq: r.uint(), time: r.int() };
    a.retryEventSeqs = r.uints();
    a.messageSeq = unopt(r.uint());
    a.citation = CITATIONS[r.uint()] ?? null;
    a.citedBy = r.uints();
    attempts.push(a);
  }
  return withNeeds(attempts, attempts.filter((a) => a.firstChunkSeq !== null), r.uints());
}

/**
 * The replay plan as a fold of the persistent session index: built on the
 * validating pass, so a replay re-reads the log once (the plan of a log
 * whose turns, steps or times are not plain integers is not kept: null, and
 * replay plans by re-reading).
 */
export const REPLAY_PLAN: PersistentFold<ReplayPlan | null> = {
  tag: 105,
  leanRows: true,
  create(): FoldBuilder<ReplayPlan | null> {
    const planner = new ReplayPlanner();
    let done: ReplayPlan | undefined;
    const finish = () => (done ??= planner.finish());
    return {
      observe: (e) => planner.observe(e),
      end: (closers) => {
        for (const c of closers) planner.observe(c);
      },
      result: finish,
      encode: () => {
        try {
          return encodePlan(finish()) ?? new VarWriter().uint(0).done();
        } catch {
          return new VarWriter().uint(0).done();
        }
      },
    };
  },
  decode: decodePlan,
};

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
import type { SessionEvent } from '../log/types.js';
import { deepEqualJson } from '../log/surface.js';
import { AttemptBoundaries } from './attempts.js';
import { dispatchKey, stepKey } from '../core/keys.js';

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
  push(chunk: any, seq = -1): void {
    if (!chunk || typeof chunk !== 'object') {
      this.unknownChunks.push(seq);
      return;
    }
    switch (chunk.type) {
      case 'block-start':
        if (!this.partials.has(chunk.index)) this.slot(chunk.index, String(chunk.blockType));
        return;
      case 'text-delta':
      case 'reasoning-delta': {
        const p = this.slot(chunk.index, chunk.type === 'text-delta' ? 'text' : 'reasoning');
        if (p.closed) return;
        p.text += chunk.text;
        return;
      }
      case 'tool-call-delta': {
        const p = this.slot(chunk.index, 'tool-call');
        if (p.closed) return;
        p.toolCallId = chunk.id;
        if (chunk.name) p.toolCallName = chunk.name;
        p.args += chunk.argumentsDelta;
        return;
      }
      case 'block-end': {
        const p = this.slot(chunk.index, String(chunk.block?.type));
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
export function isTokenDelta(chunk: any): boolean {
  if (!chunk || typeof chunk !== 'object') return false;
  if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') return chunk.text !== '';
  if (chunk.type === 'tool-call-delta') return chunk.argumentsDelta !== '' || chunk.name !== undefined;
  return false;
}

interface Building {
  attempt: ReplayAttempt;
  asm: StreamAssembler;
}

function newAttempt(index: number, turn: number, step: number, attemptInStep: number, anchor: SessionEvent | undefined): ReplayAttempt {
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

/** Rebuild every model attempt of a logical event log (held). */
export function buildReplay(sessionId: string, events: readonly SessionEvent[], options: ReplayOptions = {}): ReplayView {
  const b = new ReplayBuilder(options, (seq) => events[seq - 1]);
  for (const e of events) b.push(e);
  return b.view(sessionId);
}

/**
 * Rebuild every model attempt of a logical log streamed in order, holding
 * the attempts (the view) and the assistant/messages, never the chunks.
 */
export async function streamedReplay(sessionId: string, batches: AsyncIterable<readonly SessionEvent[]>, options: ReplayOptions = {}): Promise<ReplayView> {
  // The event before each assistant/message (a logical log is contiguous: the one before it in order).
  const before = new Map<number, SessionEvent | undefined>();
  let last: SessionEvent | undefined;
  const b = new ReplayBuilder(options, (seq) => before.get(seq));
  for await (const batch of batches) {
    for (const e of batch) {
      // Only a message citing no chunks (or not saying) anchors on the event before it.
      if (e.type === 'assistant/message' && (!Array.isArray(e.sourceEventSeqs) || e.sourceEventSeqs.length === 0)) {
        before.set(e.seq, last && last.seq === e.seq - 1 ? last : undefined);
      }
      b.push(e);
      last = e;
    }
  }
  return b.view(sessionId);
}

/** The replay fold: `push` every logical event in order, then `view`. */
class ReplayBuilder {
  private readonly built: Building[] = [];
  private readonly ownerOfChunk = new Map<number, Building>();
  private readonly perStep = new Map<string, Building[]>();
  private readonly messages: SessionEvent[] = [];
  private open: Building | undefined;
  private lastNonChunk: SessionEvent | undefined;
  private readonly boundaries = new AttemptBoundaries();

  constructor(
    private readonly options: ReplayOptions,
    /** The event at `seq - 1` (the anchor of a chunk-less attempt), for an assistant/message's seq. */
    private readonly eventBefore: (seq: number) => SessionEvent | undefined,
  ) {}

  private start(turn: number, step: number, anchor: SessionEvent | undefined): Building {
    const list = this.perStep.get(stepKey(turn, step)) ?? [];
    const b: Building = { attempt: newAttempt(this.built.length, turn, step, list.length, anchor), asm: new StreamAssembler() };
    list.push(b);
    this.perStep.set(stepKey(turn, step), list);
    this.built.push(b);
    return b;
  }

  push(e: SessionEvent): void {
    const { perStep, ownerOfChunk, options } = this;
    const place = this.boundaries.observe(e);
    if (place === null) {
      if (!this.boundaries.isOpen) this.open = undefined;
      if (e.type === 'assistant/message') this.messages.push(e);
      if (e.type === 'llm/retry') {
        const list = perStep.get(stepKey(e.data?.turn, e.data?.step));
        const last = list?.[list.length - 1];
        if (last) last.attempt.retryEventSeqs.push(e.seq);
      }
      this.lastNonChunk = e;
      return;
    }
    const d = e.data ?? {};
    const turn = d.turn as number;
    const step = d.step as number;
    if (place.starts || !this.open) this.open = this.start(turn, step, this.lastNonChunk);
    const open = this.open;
    const a = open.attempt;
    a.chunkSeqs.push(e.seq);
    ownerOfChunk.set(e.seq, open);
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
    if (options.keepChunks) (a.chunks ??= []).push({ seq: e.seq, time: e.time, chunk: d.chunk });
    open.asm.push(d.chunk, e.seq);
    if (place.ends) this.open = undefined;
  }

  view(sessionId: string): ReplayView {
    const { built, ownerOfChunk, perStep, messages } = this;
    const orphanMessages: number[] = [];
    // Link each assistant/message to the attempt it cites.
    const emptyAttempts: { msg: SessionEvent; b: Building }[] = [];
    for (const msg of messages) {
      const sources = msg.sourceEventSeqs;
      let b: Building | undefined;
      let citation: ReplayAttempt['citation'] = 'sources';
      if (Array.isArray(sources) && sources.length === 0) {
        // A successful call that streamed nothing: an attempt with no chunks.
        const prev = this.eventBefore(msg.seq);
        b = { attempt: newAttempt(-1, msg.data?.turn, msg.data?.step, 0, prev), asm: new StreamAssembler() };
        citation = 'empty';
        emptyAttempts.push({ msg, b });
      } else if (Array.isArray(sources)) {
        b = ownerOfChunk.get(sources[0] as number);
        if (!b) {
          orphanMessages.push(msg.seq);
          continue;
        }
      } else {
        const list = perStep.get(stepKey(msg.data?.turn, msg.data?.step)) ?? [];
        b = [...list].reverse().find((x) => x.attempt.messageSeq === null && x.attempt.firstChunkSeq !== null && (x.attempt.firstChunkSeq as number) < msg.seq);
        citation = 'inferred';
        if (!b) {
          // Sources not recorded and no chunk in the step: a chunk-less attempt we cannot verify.
          b = { attempt: newAttempt(-1, msg.data?.turn, msg.data?.step, 0, this.eventBefore(msg.seq)), asm: new StreamAssembler() };
          citation = 'absent';
          emptyAttempts.push({ msg, b });
        }
      }
      const a = b.attempt;
      a.messageSeq = msg.seq;
      a.citation = citation;
      if (citation === 'sources') {
        const own = new Set(a.chunkSeqs);
        const cited = new Set(sources as number[]);
        const notChunks = (sources as number[]).filter((s) => !own.has(s));
        const uncited = a.chunkSeqs.filter((s) => !cited.has(s));
        if (notChunks.length || uncited.length) a.citationMismatch = { notChunks, uncited };
      }
    }
    // Insert chunk-less attempts into their step, in log order.
    for (const { msg, b } of emptyAttempts) {
      const key = stepKey(b.attempt.turn, b.attempt.step);
      const list = perStep.get(key) ?? [];
      let pos = list.findIndex((x) => (x.attempt.firstChunkSeq ?? Infinity) > msg.seq);
      if (pos === -1) pos = list.length;
      list.splice(pos, 0, b);
      perStep.set(key, list);
      let at = built.findIndex((x) => (x.attempt.firstChunkSeq ?? x.attempt.messageSeq ?? Infinity) > msg.seq);
      if (at === -1) at = built.length;
      built.splice(at, 0, b);
    }
    built.forEach((b, i) => (b.attempt.index = i));
    for (const list of perStep.values()) {
      list.forEach((b, i) => {
        b.attempt.attemptInStep = i;
        b.attempt.attemptsInStep = list.length;
        b.attempt.key = dispatchKey(b.attempt.turn, b.attempt.step, i);
        b.attempt.retried = i < list.length - 1;
      });
    }

    const byMessage = new Map<number, SessionEvent>(messages.map((m) => [m.seq, m]));
    const summary: ReplaySummary = { attempts: built.length, success: 0, interrupted: 0, failed: 0, uncommitted: 0, unfinished: 0, matched: 0, mismatched: 0, unverified: 0, orphanMessages };
    for (const { attempt: a, asm } of built) {
      const msg = a.messageSeq !== null ? byMessage.get(a.messageSeq) : undefined;
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
      summary[a.outcome]++;
    }
    return { sessionId, attempts: built.map((b) => b.attempt), summary };
  }
}

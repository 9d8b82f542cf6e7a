import type { RuleCode } from '../core/rules.js';
import { lowerBound } from '../core/sorted.js';
import type { CheckedMessage, SessionEvent, SurfaceOp } from './types.js';
import { PrunedEvent, type RowChunk } from './pruned-event.js';

/** DSH's surface-eligible event types. */
export const SURFACE_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message', 'tool/result']);

export function isSurfaceEligibleType(type: string): boolean {
  return SURFACE_TYPES.has(type);
}
export function isSurfaceEvent(e: SessionEvent): boolean {
  return SURFACE_TYPES.has(e.type) && e.surfaceOp !== undefined;
}
export function isAppendSurfaceEvent(e: SessionEvent): boolean {
  return isSurfaceEvent(e) && e.surfaceOp === 'append';
}
export function isReplacementSurfaceEvent(e: SessionEvent): boolean {
  return isSurfaceEvent(e) && e.surfaceOp !== 'append';
}

/** `deriveEventMessage`: the model message an event contributes, or null. */
export function deriveEventMessage(event: SessionEvent): unknown | null {
  switch (event.type) {
    case 'user/message':
      return event.data;
    case 'assistant/message':
      return (event.data as { message: CheckedMessage }).message.content.length === 0 ? null : (event.data as { message: CheckedMessage }).message;
    case 'tool/result':
      return (event.data as { message: CheckedMessage }).message;
    default:
      return null;
  }
}

export interface Replacement {
  seq: number;
  start: number;
  end: number;
  shadowedSeqs: number[];
}

/** A surface rule violation, with DSH's exact text. */
export class SurfaceError extends Error {
  constructor(message: string, readonly seq: number, readonly rule: RuleCode) {
    super(message);
  }
}

function isEventSeq(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isReplaceOp(op: Record<string, unknown>): boolean {
  return (
    Object.keys(op).length === 3 &&
    Object.hasOwn(op, 'op') &&
    Object.hasOwn(op, 'start') &&
    Object.hasOwn(op, 'end') &&
    op['op'] === 'replace' &&
    isEventSeq(op['start']) &&
    isEventSeq(op['end'])
  );
}

/** Structural equality of two parsed JSON values (object key order ignored, array order kept). */
export function deepEqualJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqualJson(item, b[i]));
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => Object.hasOwn(b, k) && deepEqualJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Throws DSH's SurfaceError for `event` (a plain function: nothing is allocated unless it fails). */
function failOn(event: SessionEvent, message: string, rule: RuleCode): never {
  throw new SurfaceError(message, event.seq, rule);
}

/**
 * The surface-op shape rules (S2-S4), which read the event alone: null for an
 * event that does not touch the surface, else its replace range (undefined:
 * an append). Throws DSH's SurfaceError.
 */
export function surfaceShape(event: SessionEvent): { start: number; end: number } | undefined | null {
  const raw = event as SessionEvent & { surfaceOp?: unknown; sourceEventSeqs?: unknown };
  if (!SURFACE_TYPES.has(event.type)) {
    if (raw.surfaceOp !== undefined) failOn(event, `session event "${event.type}" is not surface-eligible and cannot carry surfaceOp`, 'DSH-S2');
    if (raw.sourceEventSeqs !== undefined) failOn(event, `session event "${event.type}" is not surface-eligible and cannot carry sourceEventSeqs`, 'DSH-S2');
    return null;
  }
  const op = raw.surfaceOp;
  if (op === undefined) failOn(event, `session event "${event.type}" is surface-eligible and requires a surfaceOp marker`, 'DSH-S3');
  if (op === 'append') return undefined;
  if (op === null || typeof op !== 'object' || Array.isArray(op)) failOn(event, `session event "${event.type}" carries an invalid surfaceOp`, 'DSH-S4');
  if (!isReplaceOp(op as Record<string, unknown>)) failOn(event, `session event "${event.type}" carries an invalid replace surfaceOp`, 'DSH-S4');
  return op as { start: number; end: number };
}

/** The seqs an event names in `sourceEventSeqs`, for membership tests (S10B). */
export interface SourceSeqs {
  has(seq: number): boolean;
}

const NO_SOURCES: SourceSeqs = { has: () => false };

/** Strictly ascending source seqs (the usual case: a message cites its chunks in order), searched in place. */
class AscendingSeqs implements SourceSeqs {
  constructor(private readonly seqs: readonly number[]) {}
  has(seq: number): boolean {
    return this.seqs[lowerBound(this.seqs, seq)] === seq;
  }
}

/**
 * The provenance rules (S6-S10), which read the event alone: the seqs it names. Throws DSH's
 * SurfaceError. A strictly ascending list has no duplicates, so it is searched as it is; only
 * another order is put in a Set to find them (a message citing thousands of chunks allocates nothing).
 */
export function provenance(event: SessionEvent): SourceSeqs {
  const list = (event as { sourceEventSeqs?: unknown }).sourceEventSeqs;
  if (list === undefined) return NO_SOURCES;
  if (!Array.isArray(list)) failOn(event, `sourceEventSeqs on event at seq ${event.seq} must be an array when present`, 'DSH-S6');
  const arr = list as unknown[];
  if (arr.length === 0 && event.type !== 'assistant/message') failOn(event, 'sourceEventSeqs must not be empty except on assistant/message', 'DSH-S7');
  let nonEarlier: number | undefined;
  let ascending = true;
  let previous = -1;
  // for...of visits holes as undefined, as DSH's loop does.
  for (const source of arr) {
    if (!isEventSeq(source)) failOn(event, `session event "${event.type}" sourceEventSeqs must densely contain non-negative safe integers`, 'DSH-S8');
    if ((source as number) <= previous) ascending = false;
    previous = source as number;
    if (nonEarlier === undefined && (source as number) >= event.seq) nonEarlier = source as number;
  }
  let sources: SourceSeqs = new AscendingSeqs(arr as number[]);
  if (!ascending) {
    const set = new Set(arr as number[]);
    if (set.size !== arr.length) failOn(event, 'sourceEventSeqs must not contain duplicates', 'DSH-S9');
    sources = set;
  }
  if (nonEarlier !== undefined) failOn(event, `sourceEventSeqs must reference earlier events: ${nonEarlier} >= current seq ${event.seq}`, 'DSH-S10');
  return sources;
}

/** A JSON value as text with object keys sorted: two values are `deepEqualJson` exactly when these are equal. */
function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) as string;
  if (Array.isArray(v)) return '[' + v.map(canonicalJson).join(',') + ']';
  const r = v as Record<string, unknown>;
  return '{' + Object.keys(r).sort().map((k) => JSON.stringify(k) + ':' + canonicalJson(r[k])).join(',') + '}';
}

/** A tool/result payload with its tool-result block's content taken out (what a content-only rewrite must keep). */
function withoutContent(data: unknown): unknown {
  // A tool/result that passed the message-shape check: its message has one content block.
  const d = data as { message: { content: unknown[] } };
  const rest: Record<string, unknown> = { ...d };
  rest['message'] = { ...d.message, content: [{ ...(d.message.content[0] as object), content: null }] };
  return rest;
}

/**
 * A tool/result payload's content-free part as canonical text (S12 compares it): what the fold keeps
 * of a tool/result a worker parsed, so memory follows the surface's count, not its payloads.
 */
export function contentFreeKey(data: unknown): string {
  return canonicalJson(withoutContent(data));
}

/** A retained tool/result known only by its `contentFreeKey` (a worker parsed it). */
class ContentFree {
  constructor(readonly key: string) {}
}

/** A retained tool/result payload with its tool-result block's content already taken out (`withoutContent`). */
class ContentStripped {
  constructor(readonly rest: unknown) {}
}

/**
 * What the fold keeps of a tool/result: its content-free key (a worker parsed it), else the payload
 * without its content, so the (large) tool output is garbage as soon as the event is folded
 * instead of being copied by every young-generation collection and promoted; a payload whose
 * shape has no content block to take out is kept whole.
 */
function retained(event: SessionEvent): unknown {
  const key = (event as PrunedEvent).contentFree;
  if (event instanceof PrunedEvent && key !== undefined) return new ContentFree(key);
  try {
    return new ContentStripped(withoutContent(event.data));
  } catch {
    return event.data;
  }
}

/** S12: does `data` differ from the retained `original` only in its content? */
function sameExceptContent(original: unknown, data: unknown): boolean {
  if (original instanceof ContentFree) return original.key === contentFreeKey(data);
  return deepEqualJson(original instanceof ContentStripped ? original.rest : withoutContent(original), withoutContent(data));
}

/**
 * The payload of a current tool/result the fold goes on without (a saved prefix's, see
 * `SurfaceFold.restore`): only a rewrite of that tool/result reads it, so the rewrite's check waits
 * until the payload is read back ({@link DeferredRewrite}).
 */
export const UNREAD_PAYLOAD: unique symbol = Symbol('unread tool/result payload');

/** A rewrite of a tool/result whose payload was {@link UNREAD_PAYLOAD}: what the content-only rule (S12) is checked on once it is read. */
export interface DeferredRewrite {
  /** The rewritten tool/result's seq (its payload is to be read back). */
  originalSeq: number;
  /** The rewriting event's seq and payload. */
  seq: number;
  data: unknown;
}

/**
 * DSH's content-only rule (S12) for a tool/result rewrite whose original payload was read back:
 * true when it holds (false, or an error thrown, when the fold would have refused the rewrite).
 */
export function rewriteKeepsToolResult(originalData: unknown, data: unknown): boolean {
  return sameExceptContent(originalData, data);
}

/**
 * DSH's surface fold (`foldSurface` / `SurfaceManager.validateNext`) as an
 * incremental state machine. `apply` validates one event (seq must equal the
 * count so far) and folds it, throwing a SurfaceError with DSH's text.
 * Only the tool/result payloads still on the surface are retained (for the
 * content-only rewrite rule), so memory follows the surface, not the log.
 */
export class SurfaceFold {
  nodes: number[] = [];
  replaceGeneration = 0;
  readonly replacements: Replacement[] = [];
  private count = 0;
  private toolResults = new Map<number, unknown>();
  private deferred: DeferredRewrite[] | undefined;

  /**
   * `trusted`: the events were (or are being) accepted by a validating fold of the same log, so
   * only the surface itself is kept: the provenance and tool/result rewrite rules (S6-S12) are not
   * checked again and no tool/result payload is retained. A view that folds alongside the
   * validating pass uses it to keep its own surface without paying for the rules twice.
   */
  constructor(
    private readonly keepReplacements = true,
    private readonly trusted = false,
  ) {}

  get eventCount(): number {
    return this.count;
  }

  /** Seqs of the current tool/result nodes (their payloads are what a later rewrite is checked against). */
  get toolResultSeqs(): number[] {
    return [...this.toolResults.keys()].sort((a, b) => a - b);
  }

  /**
   * Continue from the fold of an accepted prefix of `count` events (`toolResults`: the current
   * tool/result payloads, or {@link UNREAD_PAYLOAD} for one not read: a rewrite of such a
   * tool/result is then appended to `deferred`, its S12 check left to the caller).
   */
  restore(state: {
    count: number;
    nodes: readonly number[];
    replaceGeneration: number;
    replacements: readonly Replacement[];
    toolResults: ReadonlyMap<number, unknown>;
    deferred?: DeferredRewrite[];
  }): void {
    this.count = state.count;
    this.nodes = state.nodes.slice();
    this.replaceGeneration = state.replaceGeneration;
    if (this.keepReplacements) this.replacements.push(...state.replacements);
    this.toolResults = new Map(state.toolResults);
    this.deferred = state.deferred;
  }

  /** {@link apply} of a packed row's lean member, which is never a surface event: it is only counted. */
  applyRowChunk(event: RowChunk): void {
    if (event.seq === this.count) this.count += 1;
    else this.apply(event);
  }

  apply(event: SessionEvent): Replacement | undefined {
    const expected = this.count;
    // The common case (chunks, steps, tool calls), decided before any allocation: the checks below pass.
    const plain = event as SessionEvent & { surfaceOp?: unknown; sourceEventSeqs?: unknown };
    if (event.seq === expected && plain.surfaceOp === undefined && plain.sourceEventSeqs === undefined && !SURFACE_TYPES.has(event.type)) {
      this.count += 1;
      return undefined;
    }
    if (event.seq !== expected) failOn(event, `session event seq ${event.seq} is not contiguous; expected ${expected}`, 'DSH-S1');
    const replace = surfaceShape(event);
    if (replace === null) {
      this.count += 1;
      return undefined;
    }
    if (!replace) {
      // An append shadows nothing: of the checks below only provenance applies.
      if (!this.trusted) provenance(event);
      this.count += 1;
      this.nodes.push(event.seq);
      if (event.type === 'tool/result' && !this.trusted) this.toolResults.set(event.seq, retained(event));
      return undefined;
    }
    const startIdx = this.nodes.indexOf(replace.start);
    if (startIdx === -1) failOn(event, `surface replace: start seq ${replace.start} not found in surface`, 'DSH-S5');
    const endIdx = this.nodes.indexOf(replace.end);
    if (endIdx === -1) failOn(event, `surface replace: end seq ${replace.end} not found in surface`, 'DSH-S5');
    if (startIdx > endIdx) {
      failOn(event, `surface replace: start seq ${replace.start} (index ${startIdx}) is after end seq ${replace.end} (index ${endIdx})`, 'DSH-S5');
    }
    const shadowed = this.nodes.slice(startIdx, endIdx + 1);
    if (!this.trusted) this.checkReplacement(event, shadowed);
    // Apply.
    this.count += 1;
    this.nodes.splice(startIdx, endIdx - startIdx + 1, event.seq);
    this.replaceGeneration += 1;
    for (const s of shadowed) this.toolResults.delete(s);
    if (event.type === 'tool/result' && !this.trusted) this.toolResults.set(event.seq, retained(event));
    const rep: Replacement = { seq: event.seq, start: replace.start, end: replace.end, shadowedSeqs: shadowed };
    if (this.keepReplacements) this.replacements.push(rep);
    return rep;
  }

  /** The rules a replacement of the nodes `shadowed` must satisfy beyond its range (S6-S12). */
  private checkReplacement(event: SessionEvent, shadowed: readonly number[]): void {
    const sources = provenance(event);
    const missing = shadowed.filter((s) => !sources.has(s));
    if (missing.length > 0) {
      failOn(event, `surface replace: sourceEventSeqs must include every shadowed surface node; missing ${missing.join(', ')}`, 'DSH-S10B');
    }
    if (event.type === 'tool/result') {
      if (shadowed.length !== 1) failOn(event, 'tool/result surface replacement must rewrite exactly one current node', 'DSH-S11');
      const original = this.toolResults.get(shadowed[0] as number);
      if (original === undefined) failOn(event, 'tool/result surface replacement must target a current tool/result', 'DSH-S11');
      if (original === UNREAD_PAYLOAD) {
        if (!this.deferred) throw new Error('a tool/result restored without its payload is rewritten, and no one checks the rewrite');
        this.deferred.push({ originalSeq: shadowed[0] as number, seq: event.seq, data: event.data });
      } else if (!sameExceptContent(original, event.data)) failOn(event, 'tool/result surface replacement may change only content', 'DSH-S12');
    }
  }
}

export type { SurfaceOp };

/**
 * What the model saw: DSH's surface fold and `deriveMessages` over the
 * logical events (format.md §6), at the end of the log or as of any seq, plus
 * session-query's `readSurface` / `readTitle` shapes and shared helpers for
 * the other query views (error type, loaded-session accessor, previews).
 */
import type { Inspection } from '../log/inspect.js';
import type { KindView, SessionEvent, SessionHeader, StreamChunkView, UnknownEvent } from '../log/types.js';
import {
  SurfaceFold,
  deriveEventMessage,
  isAppendSurfaceEvent,
  isReplacementSurfaceEvent,
  isSurfaceEvent,
  type Replacement,
} from '../log/surface.js';
import type { SerializedError } from '../log/errors.js';
import { toJson } from '../core/json.js';
import { clipLine } from '../core/text.js';

/** session-query's `SessionQueryError`: a message plus a `SESSION_QUERY_*` code. */
export class SessionQueryError extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
    this.name = 'SessionQueryError';
  }
}

/** The inputs every query view needs: one successfully inspected session. */
export interface LoadedSession {
  sessionId: string;
  header: SessionHeader;
  /** Logical view: stored events (normalized) + synthetic crash closers. */
  events: SessionEvent[];
  /** Events before the synthetic closers (closer seqs are `>= storedEventCount`). */
  storedEventCount: number;
  /** The final fold, when the inspection already computed it. */
  surface?: { nodes: number[]; replaceGeneration: number; replacements: Replacement[] };
}

/** The inspection failed: DSH refuses or cannot read this log. */
export class InspectionFailure extends Error {
  constructor(readonly error: SerializedError & { kind?: string }) {
    super(error.message);
    this.name = error.class;
  }
}

/** A loaded session from an inspection, or an InspectionFailure carrying DSH's error. */
export function loadedFromInspection(r: Inspection): LoadedSession {
  if (r.error) throw new InspectionFailure(r.error);
  if (!r.meta || !r.events) throw new InspectionFailure({ name: 'Error', class: 'Error', message: 'session events were not collected' });
  return {
    sessionId: r.meta.id,
    header: r.meta,
    events: r.events,
    storedEventCount: r.storedEventCount,
    ...(r.surface ? { surface: r.surface } : {}),
  };
}

/** session-query's wrapping of a persistence failure (§4.5), for reference output. */
export function sessionQueryFailureMessage(sessionId: string, error: { class: string; message: string }): string {
  return error.class === 'SessionPersistenceCorruptionError'
    ? `stored session "${sessionId}" is corrupt: ${error.message}`
    : `failed to inspect session "${sessionId}": ${error.message}`;
}

/** The surface derivation facts the corpus oracle records under `derived.surface`. */
export interface DerivedSurface {
  nodes: number[];
  replaceGeneration: number;
  replacements: Replacement[];
  /** Union of every replacement's shadowed seqs, in replacement order. */
  shadowedSeqs: number[];
  /** Every surface event (eligible type with a surfaceOp), log order. */
  surfaceEventSeqs: number[];
  appendSurfaceSeqs: number[];
  replacementSurfaceSeqs: number[];
  /** Last seq folded, or null when nothing was folded. */
  capturedThroughSeq: number | null;
}

/**
 * Fold `events[0..throughSeq]` (inclusive; the whole log when omitted) with
 * DSH's surface rules. A rule violation throws session-query's
 * `invalid session surface: …` error.
 */
export function foldSurfaceAt(events: readonly SessionEvent[], throughSeq?: number): DerivedSurface {
  const last = throughSeq === undefined ? events.length - 1 : throughSeq;
  if (!Number.isSafeInteger(last) || last < -1 || last >= events.length) {
    throw new SessionQueryError(`seq ${throughSeq} is outside the log (0..${events.length - 1})`, 'SESSION_QUERY_EVENT_NOT_FOUND');
  }
  const fold = new SurfaceFold(true);
  const surfaceEventSeqs: number[] = [];
  const appendSurfaceSeqs: number[] = [];
  const replacementSurfaceSeqs: number[] = [];
  for (let i = 0; i <= last; i++) {
    const event = events[i] as SessionEvent;
    try {
      fold.apply(event);
    } catch (error) {
      throw new SessionQueryError(`invalid session surface: ${(error as Error).message}`, 'SESSION_QUERY_INVALID_SURFACE');
    }
    if (isSurfaceEvent(event)) {
      surfaceEventSeqs.push(event.seq);
      if (isAppendSurfaceEvent(event)) appendSurfaceSeqs.push(event.seq);
      else if (isReplacementSurfaceEvent(event)) replacementSurfaceSeqs.push(event.seq);
    }
  }
  const shadowedSeqs: number[] = [];
  for (const r of fold.replacements) shadowedSeqs.push(...r.shadowedSeqs);
  return {
    nodes: [...fold.nodes],
    replaceGeneration: fold.replaceGeneration,
    replacements: fold.replacements.map((r) => ({ ...r, shadowedSeqs: [...r.shadowedSeqs] })),
    shadowedSeqs,
    surfaceEventSeqs,
    appendSurfaceSeqs,
    replacementSurfaceSeqs,
    capturedThroughSeq: last >= 0 ? (events[last] as SessionEvent).seq : null,
  };
}

/** DSH `deriveMessages`: the model messages of the current nodes, in surface order. */
export function deriveMessages(events: readonly SessionEvent[], nodes: readonly number[]): unknown[] {
  const out: unknown[] = [];
  for (const seq of nodes) {
    const event = events[seq];
    if (!event) continue;
    const message = deriveEventMessage(event);
    if (message !== null) out.push(message);
  }
  return out;
}

/** One current surface node with the message it contributes (null: empty anchor). */
export interface SurfaceEntry {
  seq: number;
  type: string;
  time: number;
  op: 'append' | 'replace';
  /** Seqs this node shadowed when it was a replacement. */
  replaced: number[];
  message: unknown | null;
  /** An assistant message the user stopped (`data.interrupted`). */
  interrupted: boolean;
  synthetic: boolean;
}

export interface SurfaceView {
  sessionId: string;
  header: SessionHeader;
  /** The fold's last seq (`--at`, or the log's last seq). */
  at: number | null;
  lastSeq: number | null;
  storedEventCount: number;
  surface: DerivedSurface;
  entries: SurfaceEntry[];
  messages: unknown[];
}

/** One current node as the surface view shows it. */
function surfaceEntry(e: SessionEvent, replacedBy: ReadonlyMap<number, number[]>, storedEventCount: number): SurfaceEntry {
  return {
    seq: e.seq,
    type: e.type,
    time: e.time,
    op: e.surfaceOp === 'append' ? 'append' : 'replace',
    replaced: replacedBy.get(e.seq) ?? [],
    message: deriveEventMessage(e),
    interrupted: e.type === 'assistant/message' && e.data?.interrupted === true,
    synthetic: e.seq >= storedEventCount,
  };
}

/** The model's view of a session as of `atSeq` (inclusive; default: the whole log). */
export function surfaceView(session: LoadedSession, atSeq?: number): SurfaceView {
  const { events } = session;
  if (atSeq !== undefined && (!Number.isSafeInteger(atSeq) || atSeq < 0 || atSeq >= events.length || events[atSeq]?.seq !== atSeq)) {
    throw new SessionQueryError(`session "${session.sessionId}" has no event at seq ${atSeq}`, 'SESSION_QUERY_EVENT_NOT_FOUND');
  }
  const surface = foldSurfaceAt(events, atSeq);
  const replacedBy = new Map(surface.replacements.map((r) => [r.seq, r.shadowedSeqs]));
  const entries: SurfaceEntry[] = surface.nodes.map((seq) => surfaceEntry(events[seq] as SessionEvent, replacedBy, session.storedEventCount));
  return {
    sessionId: session.sessionId,
    header: session.header,
    at: surface.capturedThroughSeq,
    lastSeq: events.length > 0 ? (events[events.length - 1] as SessionEvent).seq : null,
    storedEventCount: session.storedEventCount,
    surface,
    entries,
    messages: entries.filter((x) => x.message !== null).map((x) => x.message),
  };
}

/** session-query `readSurface` (seqs of the current nodes + capturedThroughSeq + header). */
export function readSurface(session: LoadedSession): { capturedThroughSeq: number | null; eventSeqs: number[]; session: SessionHeader } {
  const s = foldSurfaceAt(session.events);
  return { capturedThroughSeq: s.capturedThroughSeq, eventSeqs: s.nodes, session: session.header };
}

/** session-query `readTitle`: the last `session/title` event's data + eventSeq + updatedAt, or null. */
export function readTitle(events: readonly SessionEvent[]): Record<string, unknown> | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as SessionEvent;
    if (e.type === 'session/title') {
      const data = e.data && typeof e.data === 'object' ? e.data : {};
      return { ...data, eventSeq: e.seq, updatedAt: e.time };
    }
  }
  return null;
}

// ---------------------------------------------------------------------------
// Previews (plain text; renderers escape control characters).

/** Visible text of content blocks: text, tool calls, nested tool results, image markers. */
export function blocksText(content: unknown, opts: { reasoning?: boolean } = {}): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const b of content) {
    if (!b || typeof b !== 'object') continue;
    const block = b as Record<string, unknown>;
    switch (block['type']) {
      case 'text':
        parts.push(String(block['text'] ?? ''));
        break;
      case 'reasoning':
        if (opts.reasoning) parts.push(`(reasoning) ${String(block['text'] ?? '')}`);
        break;
      case 'tool-call':
        parts.push(`${String(block['name'])}(${typeof block['arguments'] === 'string' ? block['arguments'] : toJson(block['arguments'])})`);
        break;
      case 'tool-result':
        parts.push(blocksText(block['content'], opts));
        break;
      case 'image':
        parts.push('[image]');
        break;
      default:
        parts.push(`[${String(block['type'])}]`);
    }
  }
  const shown = parts.filter((p) => p.length > 0);
  // One block (the common case): its text itself, not a copy of it (a message may be hundreds of MB).
  return shown.length === 1 ? (shown[0] as string) : shown.join(' ');
}

function jsonPreview(v: unknown): string {
  try {
    return toJson(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Code points `events` and `history` clip an event preview to. */
export const EVENT_PREVIEW_WIDTH = 100;

/**
 * A one-line, unescaped description of an event's payload: the one preview
 * every view prints (`events`, `history`, `trace`, the report's data).
 * Renderers clip and escape it.
 */
export function eventSummary(e: SessionEvent): string {
  const d: NonNullable<UnknownEvent['data']> = e.data ?? {};
  switch (e.type) {
    case 'user/message': {
      const src: NonNullable<KindView> = d['source'] ?? {};
      const tag = src.kind === 'plugin' ? `[${src.plugin}${src.compactionId ? ` ${src.compactionId}` : ''}] ` : src.kind && src.kind !== 'user' ? `[${src.kind}] ` : '';
      return tag + blocksText(d['content']);
    }
    case 'assistant/message': {
      const content = d['message']?.content;
      if (Array.isArray(content) && content.length === 0) return '(empty response: usage only)';
      return (d['interrupted'] ? '[interrupted] ' : '') + blocksText(content);
    }
    case 'tool/result':
      return (d['error'] ? `[${d['error'].code ?? d['error'].name}] ` : '') + blocksText(d['message']?.content);
    case 'tool/call':
      return `${d['name']}(${typeof d['arguments'] === 'string' ? d['arguments'] : jsonPreview(d['arguments'])})`;
    case 'assistant/chunk': {
      const c: NonNullable<StreamChunkView> = d['chunk'] ?? {};
      if (c.type === 'text-delta' || c.type === 'reasoning-delta') return `${c.type} ${toJson(c.text)}`;
      if (c.type === 'tool-call-delta') return `tool-call-delta ${c.name ? `${c.name} ` : ''}${toJson(c.argumentsDelta)}`;
      if (c.type === 'block-end') return `block-end ${blocksText([c.block])}`;
      if (c.type === 'finish') return `finish ${typeof c.reason === 'string' ? c.reason : jsonPreview(c.reason)}`;
      if (c.type === 'usage') return `usage ${jsonPreview(c.usage)}`;
      if (c.type === 'block-start') return `block-start ${c.blockType ?? ''}`;
      return String(c.type);
    }
    case 'compaction/summary':
      return `${d['compactionId'] ?? ''}: ${blocksText(d['summary'])}`;
    case 'compaction/start':
    case 'compaction/end':
      return String(d['compactionId'] ?? '');
    case 'compaction/prune':
      return `pruned ${Array.isArray(d['shadowedSeqs']) ? d['shadowedSeqs'].join(', ') : '?'}${d['shadowedTokenCount'] !== undefined ? ` (~${d['shadowedTokenCount']} tokens)` : ''}`;
    case 'turn/start':
      return `turn ${d['turn']}`;
    case 'turn/end': {
      const r = d['reason'];
      const why = r?.kind === 'aborted' && r.reason?.kind ? ` (${r.reason.kind})` : r?.kind === 'error' && r.error?.code ? ` (${r.error.code})` : '';
      return `turn ${d['turn']} ${r?.kind ?? jsonPreview(r)}${why}`;
    }
    case 'request/header': {
      const cfg = d['header']?.config;
      return `${d['reason'] ?? ''} ${cfg?.provider ?? ''}/${cfg?.model ?? ''}`;
    }
    case 'request/context':
      return `${d['provider']}/${d['model']}${d['contextWindow'] ? ` window ${d['contextWindow']}` : ''}`;
    case 'step/start':
    case 'step/end':
      return `turn ${d['turn']} step ${d['step']}`;
    case 'session/title':
      return String(d['title'] ?? '');
    case 'command/run':
      return `/${d['name'] ?? ''} ${d['args'] ?? ''}`.trim();
    case 'command/done':
      return `${d['kind'] ?? ''} ${d['text'] ?? ''}`.trim();
    default:
      return jsonPreview(e.data);
  }
}

/** Truncate to `max` code points with an ellipsis (no escaping). */
export function clip(text: string, max: number): string {
  return clipLine(text, max);
}

/**
 * The surface view in one streaming pass, in memory bounded by the surface:
 * only events currently on the surface are held (shadowed ones are dropped as
 * replacements arrive), so it works on logs far larger than memory. Equal to
 * `surfaceView` over the collected log. `atSeq` folds events 0..atSeq only.
 */
export class StreamingSurface {
  private fold = new SurfaceFold(true);
  private onSurface = new Map<number, SessionEvent>();
  private surfaceEventSeqs: number[] = [];
  private appendSurfaceSeqs: number[] = [];
  private replacementSurfaceSeqs: number[] = [];
  private count = 0;
  private lastFolded: number | null = null;
  private atFound = false;
  /** A fold failure (the log is refused as a whole by the reader; kept for completeness). */
  failure: string | undefined;

  constructor(private readonly atSeq?: number) {}

  /**
   * The same state `observe` reaches over a whole accepted log, rebuilt from a
   * session index: the seqs of its surface events (stored ones, ascending),
   * the final fold's replacements, the closers, and a fetch of the events on
   * the surface at `atSeq`. The surface fold is replayed from those numbers.
   */
  static async restored(
    atSeq: number | undefined,
    total: number,
    storedSurfaceSeqs: readonly number[],
    replacements: readonly Replacement[],
    closers: readonly SessionEvent[],
    fetch: (seqs: readonly number[]) => Promise<readonly SessionEvent[]>,
  ): Promise<StreamingSurface> {
    const s = new StreamingSurface(atSeq);
    s.count = total;
    const found = atSeq !== undefined && atSeq < total;
    s.atFound = found;
    const limit = found ? (atSeq as number) : total - 1;
    s.lastFolded = total > 0 ? limit : null;
    const bySeq = new Map(replacements.map((r) => [r.seq, r]));
    const surfaceSeqs = [...storedSurfaceSeqs, ...closers.filter((c) => isSurfaceEvent(c)).map((c) => c.seq)];
    const fold = s.fold;
    for (const seq of surfaceSeqs) {
      if (seq > limit) break;
      s.surfaceEventSeqs.push(seq);
      const r = bySeq.get(seq);
      if (!r) {
        s.appendSurfaceSeqs.push(seq);
        fold.nodes.push(seq);
        continue;
      }
      s.replacementSurfaceSeqs.push(seq);
      const from = fold.nodes.indexOf(r.start);
      fold.nodes.splice(from, fold.nodes.indexOf(r.end) - from + 1, seq);
      fold.replaceGeneration += 1;
      fold.replacements.push(r);
    }
    const events = await fetch(fold.nodes);
    for (const seq of fold.nodes) s.onSurface.set(seq, events[seq] as SessionEvent);
    return s;
  }

  observe(event: SessionEvent): void {
    this.count += 1;
    if (this.failure || (this.atSeq !== undefined && this.atFound)) return;
    if (this.atSeq !== undefined && event.seq === this.atSeq) this.atFound = true;
    let replacement;
    try {
      replacement = this.fold.apply(event);
    } catch (error) {
      this.failure = `invalid session surface: ${(error as Error).message}`;
      return;
    }
    this.lastFolded = event.seq;
    if (!isSurfaceEvent(event)) return;
    this.surfaceEventSeqs.push(event.seq);
    if (isAppendSurfaceEvent(event)) this.appendSurfaceSeqs.push(event.seq);
    else if (isReplacementSurfaceEvent(event)) this.replacementSurfaceSeqs.push(event.seq);
    if (replacement) for (const s of replacement.shadowedSeqs) this.onSurface.delete(s);
    this.onSurface.set(event.seq, event);
  }

  view(sessionId: string, header: SessionHeader, storedEventCount: number): SurfaceView {
    if (this.failure) throw new SessionQueryError(this.failure, 'SESSION_QUERY_INVALID_SURFACE');
    if (this.atSeq !== undefined && !this.atFound) {
      throw new SessionQueryError(`session "${sessionId}" has no event at seq ${this.atSeq}`, 'SESSION_QUERY_EVENT_NOT_FOUND');
    }
    const fold = this.fold;
    const shadowedSeqs: number[] = [];
    for (const r of fold.replacements) shadowedSeqs.push(...r.shadowedSeqs);
    const surface: DerivedSurface = {
      nodes: [...fold.nodes],
      replaceGeneration: fold.replaceGeneration,
      replacements: fold.replacements.map((r) => ({ ...r, shadowedSeqs: [...r.shadowedSeqs] })),
      shadowedSeqs,
      surfaceEventSeqs: this.surfaceEventSeqs,
      appendSurfaceSeqs: this.appendSurfaceSeqs,
      replacementSurfaceSeqs: this.replacementSurfaceSeqs,
      capturedThroughSeq: this.lastFolded,
    };
    const replacedBy = new Map(surface.replacements.map((r) => [r.seq, r.shadowedSeqs]));
    const entries: SurfaceEntry[] = surface.nodes.map((seq) => surfaceEntry(this.onSurface.get(seq) as SessionEvent, replacedBy, storedEventCount));
    return {
      sessionId,
      header,
      at: surface.capturedThroughSeq,
      lastSeq: this.count > 0 ? this.count - 1 : null,
      storedEventCount,
      surface,
      entries,
      messages: entries.filter((x) => x.message !== null).map((x) => x.message),
    };
  }
}

/** What the surface of an indexed log reads: the validated log's facts, the saved surface-event seqs and a re-reader. */
export interface SurfaceSource {
  inspection: { meta: SessionHeader | null; storedEventCount: number; closers: readonly SessionEvent[]; surface?: { replacements: readonly Replacement[] } | undefined };
  surfaceEvents: readonly number[];
  events: (ranges: readonly (readonly [number, number])[]) => Promise<SessionEvent[]>;
}

/**
 * What the model sees, now or as of `atSeq` (inclusive), from an indexed log: the surface fold is
 * replayed from the saved surface-event seqs and only the events on the surface then are re-read.
 */
export async function surfaceIndexed(source: SurfaceSource, atSeq?: number): Promise<SurfaceView> {
  const r = source.inspection;
  const total = r.storedEventCount + r.closers.length;
  const stream = await StreamingSurface.restored(atSeq, total, source.surfaceEvents, r.surface!.replacements, r.closers, (seqs) => source.events(seqs.map((x) => [x, x] as [number, number])));
  return stream.view(r.meta!.id, r.meta!, r.storedEventCount);
}

/**
 * Event tracing: session-query's `traceEvent` (query-export.md §2) exactly,
 * plus a transitive provenance tree that walks `sourceEventSeqs` back to the
 * original user messages, tool results and stream chunks.
 */
import type { SessionEvent } from '../log/types.js';
import type { Replacement } from '../log/surface.js';
import { Labels, ShadowIndex, eventRecord, type EventRecord, type SurfaceLabel } from './labels.js';
import { SessionQueryError, clip, eventSummary, foldSurfaceAt } from './messages.js';
import type { Citations } from './index-folds.js';
import { UsageError } from '../core/errors.js';

/** session-query's `SessionEventTrace` without `session` (`replacedBy` only when shadowed). */
export interface EventTrace {
  target: EventRecord;
  /** Immediate positional replacer; absent when the target was never shadowed. */
  replacedBy?: number;
  replacementChain: number[];
  replacedEventSeqs: number[];
  sourceEventSeqs: number[];
  derivedEventSeqs: number[];
}

/** The fold facts a trace needs; pass the inspection's surface to skip a refold. */
export interface FoldLike {
  nodes: readonly number[];
  replacements: readonly Replacement[];
}

/** The whole-log analysis (`analyzeEventLog`): labels plus replacement maps. */
export interface LogAnalysis {
  labels: Labels;
  /** Shadowed seq → the replacement that shadows it (the last, in fold order). */
  replacedBy: ReadonlyMap<number, number>;
  /** Replacement seq → the seqs it shadowed (the fold's own arrays). */
  replacedEventSeqs: ReadonlyMap<number, readonly number[]>;
  /** seq → later events citing it (ascending). */
  derived: Map<number, number[]>;
}

export function analyzeLog(events: readonly SessionEvent[], fold?: FoldLike): LogAnalysis {
  const derived = new Map<number, number[]>();
  for (const e of events) {
    for (const s of sourcesOf(e)) {
      if (s >= e.seq) continue;
      const list = derived.get(s);
      if (list) list.push(e.seq);
      else derived.set(s, [e.seq]);
    }
  }
  return analysisOf(fold ?? foldSurfaceAt(events), derived);
}

/**
 * The analysis from a final fold and a citation map: what a streaming reader
 * builds without holding the events (it collects `derived` only for the seqs
 * it will trace, see `DerivedCollector`).
 */
export function analysisOf(fold: FoldLike, derived: Map<number, number[]>): LogAnalysis {
  const shadows = new ShadowIndex(fold.replacements);
  const replacedEventSeqs = new Map<number, readonly number[]>();
  for (const r of shadows.replacements) replacedEventSeqs.set(r.seq, r.shadowedSeqs);
  return { labels: new Labels(fold.nodes, shadows), replacedBy: new ReplacedBy(shadows), replacedEventSeqs, derived };
}

/**
 * seq → the replacement that shadows it last (in fold order), as a map: a lookup searches the shadow
 * index; the map itself, for a reader that walks every entry, is built on first need.
 */
class ReplacedBy implements ReadonlyMap<number, number> {
  private whole: Map<number, number> | undefined;
  constructor(private readonly shadows: ShadowIndex) {}
  get(seq: number): number | undefined {
    return this.shadows.replacerOf(seq)?.seq;
  }
  has(seq: number): boolean {
    return this.shadows.has(seq);
  }
  private map(): Map<number, number> {
    if (!this.whole) {
      this.whole = new Map();
      for (const r of this.shadows.replacements) for (const s of r.shadowedSeqs) this.whole.set(s, r.seq);
    }
    return this.whole;
  }
  get size(): number {
    return this.map().size;
  }
  forEach(f: (value: number, key: number, map: ReadonlyMap<number, number>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.map()) f.call(thisArg, v, k, this);
  }
  entries(): MapIterator<[number, number]> {
    return this.map().entries();
  }
  keys(): MapIterator<number> {
    return this.map().keys();
  }
  values(): MapIterator<number> {
    return this.map().values();
  }
  [Symbol.iterator](): MapIterator<[number, number]> {
    return this.map()[Symbol.iterator]();
  }
}

/** Collects, event by event, which later events cite the given seqs (analyzeLog's `derived`, for a few seqs). */
export class DerivedCollector {
  readonly derived = new Map<number, number[]>();
  constructor(seqs: Iterable<number>) {
    for (const s of seqs) this.derived.set(s, []);
  }
  observe(e: SessionEvent): void {
    for (const s of sourcesOf(e)) {
      if (s >= e.seq) continue;
      this.derived.get(s)?.push(e.seq);
    }
  }
}

/** The sources a provenance walk follows from `e` (earlier seqs only). */
export function provenanceSources(e: SessionEvent): number[] {
  return sourcesOf(e).filter((s) => s < e.seq);
}

function sourcesOf(e: SessionEvent): number[] {
  return Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs : [];
}

function targetCheck(sessionId: string, events: readonly SessionEvent[], seq: number): SessionEvent {
  const target = Number.isInteger(seq) && seq >= 0 ? events[seq] : undefined;
  if (target === undefined || target.seq !== seq) {
    throw new SessionQueryError(`session "${sessionId}" has no event at seq ${seq}`, 'SESSION_QUERY_EVENT_NOT_FOUND');
  }
  return target;
}

/**
 * session-query `traceEvent`: target check first (even on an invalid log),
 * then the whole-log fold, then the direct relationships of one event.
 */
export function traceEvent(sessionId: string, events: readonly SessionEvent[], seq: number, fold?: FoldLike | LogAnalysis): EventTrace {
  const target = targetCheck(sessionId, events, seq);
  const a = fold && 'labels' in fold ? fold : analyzeLog(events, fold);
  const replacementChain: number[] = [];
  const guard = new Set<number>([seq]);
  let next = a.replacedBy.get(seq);
  while (next !== undefined && !guard.has(next)) {
    replacementChain.push(next);
    guard.add(next);
    next = a.replacedBy.get(next);
  }
  const replacedBy = a.replacedBy.get(seq);
  return {
    target: eventRecord(sessionId, target, a.labels),
    ...(replacedBy !== undefined ? { replacedBy } : {}),
    replacementChain,
    replacedEventSeqs: [...(a.replacedEventSeqs.get(seq) ?? [])],
    sourceEventSeqs: [...sourcesOf(target)],
    derivedEventSeqs: [...(a.derived.get(seq) ?? [])],
  };
}

/** Every event's trace, in log order (one fold for the whole log). */
export function traceAll(sessionId: string, events: readonly SessionEvent[], fold?: FoldLike): EventTrace[] {
  const a = analyzeLog(events, fold);
  return events.map((e) => traceEvent(sessionId, events, e.seq, a));
}

/** One node of the transitive provenance tree. */
export interface ProvenanceNode {
  seq: number;
  type: string;
  time: number;
  label: SurfaceLabel;
  /** How this node relates to its parent: it was shadowed by it, or only cited. */
  relation: 'target' | 'replaced' | 'source';
  preview: string;
  synthetic: boolean;
  /** Seqs this node shadowed (when it is a replacement). */
  replaced: number[];
  /** Sources not expanded because the depth limit was reached. */
  truncated?: number[];
  /** Already expanded elsewhere in this tree. */
  seen?: true;
  children: ProvenanceNode[];
}

export interface ProvenanceOptions {
  /** Levels of sources to expand below the target (Infinity: all). */
  depth: number;
  /** Preview length in code points. */
  previewChars?: number;
  /** Closer seqs start here (for the `synthetic` flag). */
  storedEventCount?: number;
}

export interface TraceExplanation {
  sessionId: string;
  trace: EventTrace;
  /** The event the target's surface position ended up in (last of the chain), if shadowed. */
  finalReplacement: number | null;
  tree: ProvenanceNode;
  /** Leaves reached: events that cite nothing (user prompts, chunks, tool calls…), ascending. */
  origins: number[];
}

/**
 * Transitive provenance: expand `sourceEventSeqs` from the target back to the
 * events that cite nothing. Sources always point backwards, so the walk ends;
 * an event reached twice is expanded once (later occurrences are `seen`).
 */
export function explainEvent(
  sessionId: string,
  events: readonly SessionEvent[],
  seq: number,
  options: ProvenanceOptions,
  fold?: FoldLike | LogAnalysis,
): TraceExplanation {
  const target = targetCheck(sessionId, events, seq);
  const a = fold && 'labels' in fold ? fold : analyzeLog(events, fold);
  const trace = traceEvent(sessionId, events, seq, a);
  const max = options.previewChars ?? 100;
  const stored = options.storedEventCount ?? events.length;
  const expanded = new Set<number>();
  const origins = new Set<number>();

  const make = (e: SessionEvent, relation: ProvenanceNode['relation']): ProvenanceNode => ({
    seq: e.seq,
    type: e.type,
    time: e.time,
    label: a.labels.of(e.seq),
    relation,
    preview: clip(eventSummary(e), max),
    synthetic: e.seq >= stored,
    replaced: [...(a.replacedEventSeqs.get(e.seq) ?? [])],
    children: [],
  });

  const root = make(target, 'target');
  // Iterative DFS (pre-order expansion) so very deep chains cannot overflow the stack.
  const stack: { node: ProvenanceNode; level: number }[] = [{ node: root, level: 0 }];
  expanded.add(seq);
  while (stack.length > 0) {
    const { node, level } = stack.pop()!;
    const e = events[node.seq] as SessionEvent;
    const sources = sourcesOf(e).filter((s) => s < e.seq && events[s]?.seq === s);
    if (sources.length === 0) {
      origins.add(node.seq);
      continue;
    }
    if (level >= options.depth) {
      node.truncated = sources;
      continue;
    }
    const shadowed = new Set(a.replacedEventSeqs.get(node.seq) ?? []);
    const pending: { node: ProvenanceNode; level: number }[] = [];
    for (const s of sources) {
      const child = make(events[s] as SessionEvent, shadowed.has(s) ? 'replaced' : 'source');
      node.children.push(child);
      if (expanded.has(s)) {
        child.seen = true;
        continue;
      }
      expanded.add(s);
      pending.push({ node: child, level: level + 1 });
    }
    for (let i = pending.length - 1; i >= 0; i--) stack.push(pending[i]!);
  }
  return {
    sessionId,
    trace,
    finalReplacement: trace.replacementChain.length > 0 ? trace.replacementChain[trace.replacementChain.length - 1]! : null,
    tree: root,
    origins: [...origins].sort((x, y) => x - y),
  };
}

/** What a trace over an indexed log reads: the validated log's facts, its saved folds and a re-reader of its events. */
export interface TraceSource {
  inspection: { meta: { id: string } | null; storedEventCount: number; closers: readonly SessionEvent[]; surface?: FoldLike | undefined };
  citations: Citations;
  events: (ranges: readonly (readonly [number, number])[], into?: SessionEvent[]) => Promise<SessionEvent[]>;
}

/**
 * The trace of `seq` and its provenance tree `depth` levels deep (Infinity: all), from an indexed log:
 * who cites it comes from the saved citations, and only the events of the tree are re-read, breadth
 * first, level by level. More than `maxEvents` events in the tree is refused (a usage error naming the
 * depth that fits) before they are read: each is held whole with its node and preview.
 */
export async function traceIndexed(source: TraceSource, seq: number, depth: number, maxEvents: number): Promise<TraceExplanation> {
  const r = source.inspection;
  const derived = source.citations.derivedOf([seq], r.closers);
  const fetch = source.events;
  const events = await fetch([[seq, seq]]);
  let frontier = events[seq] ? [seq] : [];
  const have = new Set<number>(frontier);
  for (let level = 0; level < depth && frontier.length > 0; level++) {
    const next: number[] = [];
    for (const s of frontier) {
      for (const src of provenanceSources(events[s] as SessionEvent)) {
        if (have.has(src)) continue;
        have.add(src);
        next.push(src);
      }
    }
    if (have.size > maxEvents) {
      const fewer = level > 0 ? `; --depth ${level} stays within it` : '';
      throw new UsageError(
        `trace: the provenance of seq ${seq} reaches more than ${maxEvents} events within ${level + 1} level${level > 0 ? 's' : ''}, more than this command holds (it reads and holds every event of the tree; DSH_TRACE_MAX_EVENTS, or DSH_MAX_HELD_BYTES and a larger heap, raise it)${fewer}`,
      );
    }
    if (next.length > 0) await fetch(next.map((s) => [s, s] as [number, number]), events);
    frontier = next;
  }
  return explainEvent(r.meta!.id, events, seq, { depth, storedEventCount: r.storedEventCount }, analysisOf(r.surface!, derived));
}

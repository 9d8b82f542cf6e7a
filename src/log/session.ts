import { inspectSource, type InspectOptions, type Inspection, type RepairPlan, type View } from './inspect.js';
import { identityWarnings, type ResolvedTarget } from './target.js';
import { detectEncoding, sniffEncoding } from './read.js';
import { LogIndexBuilder, Rereader, type LogIndex, type SeqRange } from './reread.js';
import { createDecoder } from '../physical/decoders.js';
import type { ByteSource } from '../physical/source.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';
import { CloserTracker } from './closers.js';
import { DEFAULT_MAX_LINE_BYTES } from './scanner.js';
import type { CacheConfig } from './index/cache.js';
import { contentKey, loadIndex, rereadHeader, saveIndex, type ContentKey, type FoldBuilder, type FoldResults, type IndexSummary, type PersistentFold } from './index/session-index.js';

export interface SessionInspection extends Inspection {
  target: { path: string; root?: string; expectedId?: string };
  warnings: string[];
}

/**
 * DSH goes by the name; when the bytes look like the other encoding, say so
 * (the observation beside DSH's verdict, and how to read them anyway).
 */
function encodingMismatchNote(encoding: Encoding, encodingBy: Inspection['encodingBy'], source: ByteSource): string | undefined {
  if (encodingBy !== 'name') return undefined;
  const seen = sniffEncoding(source);
  if (seen === undefined || seen === encoding) return undefined;
  return seen === 'none'
    ? 'the artifact is named .zstd but its bytes are plain JSONL (DSH reads it as zstd, as above); --encoding raw reads them anyway'
    : 'the artifact is named .jsonl but its bytes are a zstd stream (DSH reads it as plain JSONL, as above); --encoding zstd reads them anyway';
}

/** What a forensic read of `target` warns about (layout, identity, a mislabelled encoding). */
function targetWarnings(target: ResolvedTarget, meta: SessionHeader | null, note: string | undefined, encoding: Encoding): string[] {
  const warnings = [...target.layoutWarnings];
  if (meta) warnings.push(...identityWarnings(target, meta, encoding));
  if (note !== undefined) warnings.push(note);
  return warnings;
}

function targetInfo(target: ResolvedTarget): SessionInspection['target'] {
  return {
    path: target.path,
    ...(target.root !== undefined ? { root: target.root } : {}),
    ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
  };
}

/** Open a resolved target read-only, inspect it, close it. */
export async function inspectTarget(target: ResolvedTarget, options: InspectOptions = {}, opened?: ByteSource): Promise<SessionInspection> {
  const source = opened ?? target.open();
  try {
    const result = await inspectSource(source, {
      rawPath: target.rawPath,
      ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      ...(target.storedAt !== undefined ? { storedAt: target.storedAt } : {}),
      ...options,
    });
    const note = encodingMismatchNote(result.encoding, result.encodingBy, source);
    const warnings = targetWarnings(target, result.meta, note, result.encoding);
    return {
      ...result,
      // --json carries the observation in the {error} object (text mode prints the warnings).
      ...(result.error && note !== undefined ? { error: { ...result.error, note } } : {}),
      target: targetInfo(target),
      warnings,
    };
  } finally {
    if (!opened) source.close();
  }
}

/** An inspection that kept an index of the log instead of its events, and the open source to re-read from. */
export interface IndexedInspection {
  inspection: SessionInspection;
  /**
   * The logical events with seqs in `ranges` (closers included), as a sparse
   * array indexed by seq whose length is the logical event count (`into`,
   * when given, is filled and returned instead of a new array).
   * Undefined only when the log is refused.
   */
  events?: (ranges: readonly SeqRange[], into?: SessionEvent[]) => Promise<SessionEvent[]>;
  rereader?: Rereader;
  /** The results of the `folds` asked for, by tag (on an accepted log). */
  folds: FoldResults;
  /** True when the answer came from a saved session index (no validating pass). */
  warm: boolean;
  close(): void;
}

/** The persistent index an indexed inspection may use: where, and which folds to keep with it. */
export interface IndexUse {
  cache: CacheConfig;
  /** Every fold a later command may load (the cold pass builds them all). */
  folds: readonly PersistentFold[];
}

/**
 * Inspect a target in one streaming pass that holds an index, not events,
 * keeping the file open so a view can re-read the few events it needs.
 * With `use`, a saved index of the same bytes replaces the pass, and a cold
 * pass of an accepted log saves one. `options.onLogical` (a fold the index
 * does not keep) always takes the cold pass. The caller must `close()`.
 */
export async function inspectTargetIndexed(target: ResolvedTarget, options: InspectOptions = {}, use?: IndexUse): Promise<IndexedInspection> {
  const source = target.open();
  try {
    const encoding = detectEncoding(source).encoding;
    const decoder = options.decoder ?? createDecoder();
    const cacheOn = use !== undefined && use.cache.enabled;
    const key = cacheOn ? contentKey(source, encoding, decoder.name, options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES) : undefined;
    if (use && key && !options.onLogical && !options.onStored) {
      const loaded = loadIndex(use.cache, key, use.folds);
      if (loaded) {
        const warm = await warmInspection(target, source, decoder, loaded.summary, loaded.logIndex, loaded.folds);
        if (warm) return warm;
      }
    }
    return await coldIndexed(target, source, { ...options, decoder }, use, key);
  } catch (error) {
    source.close();
    throw error;
  }
}

function closeOnce(source: ByteSource): () => void {
  let closed = false;
  return () => {
    if (closed) return;
    closed = true;
    source.close();
  };
}

/** The sparse logical array a view reads: `found` stored events plus the closers in `ranges`. */
function sparseFill(total: number, closers: readonly SessionEvent[]) {
  return (found: Iterable<[number, SessionEvent]>, ranges: readonly SeqRange[], into?: SessionEvent[]): SessionEvent[] => {
    const sparse: SessionEvent[] = into ?? [];
    sparse.length = total;
    for (const [seq, e] of found) sparse[seq] = e;
    for (const c of closers) if (ranges.some(([a, b]) => c.seq >= a && c.seq <= b)) sparse[c.seq] = c;
    return sparse;
  };
}

async function coldIndexed(
  target: ResolvedTarget,
  source: ByteSource,
  options: InspectOptions & { decoder: NonNullable<InspectOptions['decoder']> },
  use: IndexUse | undefined,
  key: ContentKey | undefined,
): Promise<IndexedInspection> {
  const builder = new LogIndexBuilder(detectEncoding(source).encoding);
  // The folds are the view's answer whether or not the index is saved (`--no-cache` included).
  const builders: [number, FoldBuilder<unknown>][] = (use?.folds ?? []).map((f) => [f.tag, f.create()]);
  let lastTurnStart: number | null = null;
  // A log DSH refuses can trip a fold before the pass reaches the verdict: hold the first error,
  // raise it only once the log is accepted.
  let foldFailure: { error: unknown } | undefined;
  const inspection = await inspectTarget(
    target,
    {
      ...options,
      collect: false,
      skipArtifact: true,
      onStored: (event, line) => {
        builder.onStored(event, line);
        options.onStored?.(event, line);
      },
      onLogical: (event, text) => {
        if (event.type === 'turn/start') lastTurnStart = event.seq;
        if (!foldFailure) {
          try {
            for (const [, b] of builders) b.observe(event);
          } catch (error) {
            foldFailure = { error };
          }
        }
        options.onLogical?.(event, text);
      },
      onSegment: builder.onSegment,
    },
    source,
  );
  const close = closeOnce(source);
  if (inspection.error) return { inspection, folds: new Map(), warm: false, close };
  if (foldFailure) {
    close();
    throw foldFailure.error;
  }
  const closers = inspection.closers;
  for (const [, b] of builders) b.end?.(closers);
  const fill = sparseFill(inspection.storedEventCount + closers.length, closers);
  if (inspection.migratedEvents > 0) {
    // Migrated legacy events differ from their stored lines, so re-reading a line alone does not give
    // the logical event: hold this (old, small) log's logical events once and answer from them (never indexed).
    const held = (await inspectTarget(target, { decoder: options.decoder, collect: true, skipArtifact: true }, source)).events ?? [];
    const events = async (ranges: readonly SeqRange[], into?: SessionEvent[]) =>
      fill(
        held.filter((e) => e.seq < inspection.storedEventCount && ranges.some(([a, b]) => e.seq >= a && e.seq <= b)).map((e) => [e.seq, e] as [number, SessionEvent]),
        ranges,
        into,
      );
    return { inspection, events, folds: new Map(builders.map(([t, b]) => [t, b.result()])), warm: false, close };
  }
  const logIndex = builder.finish();
  if (use && key && inspection.meta && inspection.surface) {
    const summary: IndexSummary = {
      storedEventCount: inspection.storedEventCount,
      torn: inspection.torn,
      openTurnStartSeq: closers.length > 0 ? lastTurnStart : null,
      surface: inspection.surface,
    };
    saveIndex(
      use.cache,
      key,
      { sessionId: inspection.meta.id, path: target.path, logBytes: source.size, createdMs: Date.now() },
      summary,
      logIndex,
      new Map(builders.map(([t, b]) => [t, b.encode()])),
    );
  }
  const rereader = new Rereader(source, logIndex, options.decoder);
  const events = async (ranges: readonly SeqRange[], into?: SessionEvent[]) => fill(await rereader.events(ranges), ranges, into);
  return { inspection, events, rereader, folds: new Map(builders.map(([t, b]) => [t, b.result()])), warm: false, close };
}

/**
 * The inspection an indexed view needs, rebuilt from a saved index: the
 * header re-read from the log, the closers re-derived from the open last
 * turn's events. Undefined when the log does not match the index after all
 * (the caller then reads it cold).
 */
async function warmInspection(
  target: ResolvedTarget,
  source: ByteSource,
  decoder: NonNullable<InspectOptions['decoder']>,
  summary: IndexSummary,
  logIndex: LogIndex,
  folds: FoldResults,
): Promise<IndexedInspection | undefined> {
  const { encoding, by } = detectEncoding(source);
  const meta = await rereadHeader(source, encoding, target.rawPath, decoder);
  const rereader = new Rereader(source, logIndex, decoder);
  const count = summary.storedEventCount;
  let closers: SessionEvent[] = [];
  let closerReasons: Inspection['closerReasons'] = [];
  if (summary.openTurnStartSeq !== null && count > 0) {
    const tracker = new CloserTracker();
    const tail = await rereader.events([[summary.openTurnStartSeq, count - 1]]);
    for (let s = summary.openTurnStartSeq; s < count; s++) tracker.observe(tail.get(s) as SessionEvent);
    ({ closers, reasons: closerReasons } = tracker.closers());
  }
  const inspection: SessionInspection = {
    source: source.name,
    encoding,
    encodingBy: by,
    bytes: source.size,
    ...(encoding === 'zstd' ? { decoder: decoder.name } : {}),
    meta,
    storedEventCount: count,
    closers,
    closerReasons,
    torn: summary.torn,
    repairPlan: null,
    artifact: { filename: 'session.jsonl', meta },
    migratedEvents: 0,
    ignorableUnknown: [],
    surface: summary.surface,
    target: targetInfo(target),
    warnings: targetWarnings(target, meta, encodingMismatchNote(encoding, by, source), encoding),
  };
  const fill = sparseFill(count + closers.length, closers);
  const events = async (ranges: readonly SeqRange[], into?: SessionEvent[]) => fill(await rereader.events(ranges), ranges, into);
  return { inspection, events, rereader, folds, warm: true, close: closeOnce(source) };
}

/** The `--json` document: DSH's own shapes so it compares with expected.json. */
export function inspectDocument(r: SessionInspection, view: View = 'logical'): unknown {
  if (r.error && view !== 'artifact') return { error: { class: r.error.class, message: r.error.message, ...(r.error.cause ? { cause: r.error.cause } : {}), ...(r.error.note !== undefined ? { note: r.error.note } : {}) } };
  const torn = r.torn ? { truncateTo: r.torn.truncateTo, recoveredEventSeqs: r.torn.recoveredEventSeqs } : null;
  if (view === 'artifact') {
    if (r.artifact.error) return { error: { class: r.artifact.error.class, message: r.artifact.error.message } };
    return { encoding: r.encoding, ...r.artifact };
  }
  if (view === 'stored') {
    return { meta: r.meta, encoding: r.encoding, storedEventCount: r.storedEventCount, events: r.storedEvents ?? [], torn };
  }
  return inspectView(r);
}

/** The logical `inspect` view (`dsh inspect --json`): DSH's own shapes and values. */
export interface InspectView {
  meta: SessionHeader | null;
  encoding: Encoding;
  storedEventCount: number;
  /** The logical events, closers included. */
  events: SessionEvent[];
  /** The synthetic crash closers DSH adds in memory (inspect) and writes on load(). */
  closers: SessionEvent[];
  torn: { truncateTo: number; recoveredEventSeqs: number[] } | null;
  repairPlan: RepairPlan | null;
}

export function inspectView(r: SessionInspection): InspectView {
  return {
    meta: r.meta,
    encoding: r.encoding,
    storedEventCount: r.storedEventCount,
    events: r.events ?? [],
    closers: r.closers,
    torn: r.torn ? { truncateTo: r.torn.truncateTo, recoveredEventSeqs: r.torn.recoveredEventSeqs } : null,
    repairPlan: r.repairPlan,
  };
}

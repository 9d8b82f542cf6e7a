import { inspectSource, type InspectOptions, type Inspection, type RepairPlan, type View } from './inspect.js';
import { identityWarnings, type ResolvedTarget } from './target.js';
import { detectEncoding } from './read.js';
import { LogIndexBuilder, Rereader, type SeqRange } from './reread.js';
import { createDecoder } from '../physical/decoders.js';
import type { ByteSource } from '../physical/source.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';

export interface SessionInspection extends Inspection {
  target: { path: string; root?: string; expectedId?: string };
  warnings: string[];
}

/** Open a resolved target read-only, inspect it, close it. */
export async function inspectTarget(target: ResolvedTarget, options: InspectOptions = {}, opened?: ByteSource): Promise<SessionInspection> {
  const source = opened ?? target.open();
  try {
    const result = await inspectSource(source, {
      rawPath: target.rawPath,
      ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      ...options,
    });
    const warnings = [...target.layoutWarnings];
    if (result.meta) warnings.push(...identityWarnings(target, result.meta, result.encoding));
    if (result.encodingBy === 'content' && target.path.endsWith('.zstd')) {
      warnings.push('the artifact is named .zstd but holds plain JSONL; read as raw mode');
    }
    return {
      ...result,
      target: {
        path: target.path,
        ...(target.root !== undefined ? { root: target.root } : {}),
        ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      },
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
  close(): void;
}

/**
 * Inspect a target in one streaming pass that holds an index, not events,
 * keeping the file open so a view can re-read the few events it needs.
 * The caller must `close()`.
 */
export async function inspectTargetIndexed(target: ResolvedTarget, options: InspectOptions = {}): Promise<IndexedInspection> {
  const source = target.open();
  try {
    const builder = new LogIndexBuilder(detectEncoding(source).encoding);
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
        onSegment: builder.onSegment,
      },
      source,
    );
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      source.close();
    };
    if (inspection.error) return { inspection, close };
    const closers = inspection.closers;
    const total = inspection.storedEventCount + closers.length;
    const fill = (found: Iterable<[number, SessionEvent]>, ranges: readonly SeqRange[], into?: SessionEvent[]): SessionEvent[] => {
      const sparse: SessionEvent[] = into ?? [];
      sparse.length = total;
      for (const [seq, e] of found) sparse[seq] = e;
      for (const c of closers) if (ranges.some(([a, b]) => c.seq >= a && c.seq <= b)) sparse[c.seq] = c;
      return sparse;
    };
    if (inspection.migratedEvents > 0) {
      // Migrated legacy events differ from their stored lines, so re-reading a line alone does not give
      // the logical event: hold this (old, small) log's logical events once and answer from them.
      const held = (await inspectTarget(target, { ...(options.decoder ? { decoder: options.decoder } : {}), collect: true, skipArtifact: true }, source)).events ?? [];
      const events = async (ranges: readonly SeqRange[], into?: SessionEvent[]) =>
        fill(
          held.filter((e) => e.seq < inspection.storedEventCount && ranges.some(([a, b]) => e.seq >= a && e.seq <= b)).map((e) => [e.seq, e] as [number, SessionEvent]),
          ranges,
          into,
        );
      return { inspection, events, close };
    }
    const rereader = new Rereader(source, builder.finish(), options.decoder ?? createDecoder());
    const events = async (ranges: readonly SeqRange[], into?: SessionEvent[]) => fill(await rereader.events(ranges), ranges, into);
    return { inspection, events, rereader, close };
  } catch (error) {
    source.close();
    throw error;
  }
}

/** The `--json` document: DSH's own shapes so it compares with expected.json. */
export function inspectDocument(r: SessionInspection, view: View = 'logical'): unknown {
  if (r.error && view !== 'artifact') return { error: { class: r.error.class, message: r.error.message, ...(r.error.cause ? { cause: r.error.cause } : {}) } };
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

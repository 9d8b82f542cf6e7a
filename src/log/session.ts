import { inspectSource, type InspectOptions, type Inspection, type RepairPlan, type View } from './inspect.js';
import { identityWarnings, type ResolvedTarget } from './target.js';
import { storageIdentityRefusal } from './layout.js';
import { detectEncoding, sniffEncoding } from './read.js';
import { LogIndexBuilder, Rereader, type LogIndex, type SeqRange } from './reread.js';
import { createDecoder } from '../physical/decoders.js';
import type { ByteSource } from '../physical/source.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';
import { CloserTracker } from './closers.js';
import { RowChunk } from './pruned-event.js';
import type { Bytes } from './index/codec.js';
import { UNREAD_PAYLOAD, rewriteKeepsToolResult, type DeferredRewrite } from './surface.js';
import { DEFAULT_MAX_LINE_BYTES } from './scanner.js';
import { errorDocument } from '../core/errors.js';
import { entriesOfSize, holdsEntryOfSize, readPointer, writePointer, type CacheConfig } from './index/cache.js';
import { WORKER_MIN_BYTES } from './index/content-hash.js';
import {
  contentKey,
  entryName,
  loadIndex,
  peekIndex,
  rereadHeader,
  saveIndex,
  sameContentKey,
  type ContentKey,
  type FoldBuilder,
  type FoldResults,
  type IndexSummary,
  type LoadedIndex,
  type PeekedIndex,
  type PersistentFold,
  type ResumeFacts,
} from './index/session-index.js';

/** DSH's inspection of one artifact, with the target it was read from and the layout warnings that did not stop the read. */
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
  /**
   * Every logical event in order (closers last), in batches, re-read from the
   * log rather than held: a view that needs the final fold while it prints
   * walks this after the pass. Undefined only when the log is refused.
   */
  stream?: () => AsyncGenerator<SessionEvent[]>;
  /** The results of the `folds` asked for, by tag (on an accepted log). */
  folds: FoldResults;
  /** True when the answer came from a saved session index (no validating pass). */
  warm: boolean;
  /** True when a saved index of the log's unchanged prefix was extended (only the appended bytes were validated). */
  extended?: boolean;
  close(): void;
}

/** The persistent index an indexed inspection may use: where, and which folds to keep with it. */
export interface IndexUse {
  cache: CacheConfig;
  /** Every fold a later command may load (the cold pass builds them all). */
  folds: readonly PersistentFold[];
  /** The folds this view reads (default: all of `folds`); an entry that lacks only others still answers. */
  needs?: readonly PersistentFold[];
  /**
   * A log with migrated legacy events cannot be re-read through an index: answer it without `events`,
   * `stream` and `rereader` (the caller reads it another way) rather than holding its logical events.
   */
  indexOnly?: boolean;
  /**
   * Lets a big log's warm answer be worked out while its content hash is still being computed (the
   * hash is most of a warm read): see `Speculation`. Without it, the index is used only once the
   * hash has named it.
   */
  speculation?: Speculation;
}

/**
 * A caller that can hold back everything an answer shows until the index it came from is verified
 * (the CLI holds its output). When `open`, a warm read whose log's size has exactly one cached entry
 * answers from that entry at once and hands `bet` the check that the log's content hash names it.
 * The caller shows nothing of the answer before the check resolves true; when it resolves false, the
 * answer belongs to other bytes and the caller asks again without a speculation. The check closes
 * the source once the hash is done, whenever the answer's `close()` was called.
 */
export interface Speculation {
  /** Whether an unverified answer may be given now. */
  readonly open: boolean;
  /** The check, to be called once (it finishes the hash on the calling thread). */
  bet(verify: () => Promise<boolean>): void;
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
    // The entry last written for this path: when the log has grown since, its bytes may be a prefix of these.
    const pointer = cacheOn && target.path !== '-' ? readPointer(use.cache, target.path) : undefined;
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const prefixBytes = pointer && pointer.size < source.size ? pointer.size : undefined;
    if (cacheOn && prefixBytes === undefined && !holdsEntryOfSize(use.cache, source.size)) {
      // No entry can answer for a log of a size none has, and none is of a shorter log at this path to
      // extend: the cold pass starts at once, the key is hashed beside it (on the worker) for the save.
      const beside = keyBeside(source, encoding, decoder.name, maxLineBytes);
      try {
        const cold = await indexedPass(target, source, { ...options, decoder }, use, beside);
        if (!cold) throw new Error('a cold indexed pass always answers');
        return cold;
      } finally {
        // A pass that saved awaited the key (then this does nothing); one that did not, need not wait for it.
        beside.cancel();
      }
    }
    let hashed: (ContentKey & { prefixSha256?: Buffer }) | undefined;
    /** The extension ran beside the hash, and the hash showed the old bytes unchanged: it is not run again. */
    let extensionRan = false;
    if (cacheOn && prefixBytes !== undefined && !options.onLogical && !options.onStored && !holdsEntryOfSize(use.cache, source.size)) {
      // The log grew since this path's entry was written, and no entry is of its size: extend that entry
      // while the worker hashes the log. The extension answers only if the hash shows the old bytes are
      // the entry's (indexedPass checks before it saves or returns); else the decision below is made again.
      const needs = use.needs ?? use.folds;
      const prior = loadIndex(use.cache, undefined, use.folds, needs, pointer!.name, undefined, true);
      if (prior && mayExtend(prior, { size: prefixBytes, encoding, decoder: decoder.name, maxLineBytes }, needs)) {
        const beside = keyBeside(source, encoding, decoder.name, maxLineBytes, prefixBytes);
        let extended: IndexedInspection | undefined;
        let failure: { error: unknown } | undefined;
        try {
          extended = await indexedPass(target, source, { ...options, decoder }, use, beside, prior);
        } catch (error) {
          failure = { error };
        }
        hashed = await beside.key().catch(() => undefined);
        beside.cancel();
        if (extended) return extended;
        // Old bytes unchanged: the extension's outcome is the log's (its error, or a log it gives up on
        // for the cold pass). Else it read bytes that are not the entry's, and is forgotten.
        if (hashed && extendsPrefix(prior, hashed, needs)) {
          if (failure) throw failure.error;
          extensionRan = true;
        }
      }
    }
    let key = hashed;
    let peeked: PeekedIndex | undefined;
    if (cacheOn && !key) {
      const ofSize = !options.onLogical && !options.onStored && source.size >= (use.cache.peekMinBytes ?? WORKER_MIN_BYTES) ? entriesOfSize(use.cache, source.size) : [];
      if (ofSize.length === 1) {
        // A big log's one entry of its size is most likely its own: it is read and its checksum verified
        // while the worker hashes the log (then this thread helps), and used only if the key names it.
        const beside = keyBeside(source, encoding, decoder.name, maxLineBytes, prefixBytes);
        peeked = peekIndex(use.cache, ofSize[0]!, use.needs ?? use.folds);
        // A command that can hold its output answers from it at once (stdin is read once: never).
        if (peeked && use.speculation?.open && target.path !== '-' && !options.onLogical && !options.onStored) {
          const bet = await speculativeWarm(target, source, decoder, use, peeked, beside);
          if (bet) return bet;
        }
        key = await beside.key();
      } else key = await contentKey(source, encoding, decoder.name, maxLineBytes, prefixBytes);
    }
    if (use && key && !options.onLogical && !options.onStored) {
      const needs = use.needs ?? use.folds;
      const loaded = loadIndex(use.cache, key, use.folds, needs, undefined, peeked);
      peeked = undefined;
      if (loaded) {
        const warm = await warmInspection(target, source, decoder, loaded.summary, loaded.logIndex, loaded.folds);
        if (warm) {
          writePointer(use.cache, target.path, entryName(key), key.size);
          return warm;
        }
      }
      const prior = pointer && key.prefixSha256 && !extensionRan ? loadIndex(use.cache, undefined, use.folds, needs, pointer.name, undefined, true) : undefined;
      if (prior && extendsPrefix(prior, key, needs)) {
        const extended = await indexedPass(target, source, { ...options, decoder }, use, key, prior);
        if (extended) return extended;
      }
    }
    const cold = await indexedPass(target, source, { ...options, decoder }, use, key);
    if (!cold) throw new Error('a cold indexed pass always answers');
    return cold;
  } catch (error) {
    source.close();
    throw error;
  }
}

/**
 * The answer of the one cached entry of the log's size, before the hash has named it (see
 * `Speculation`): the check the speculation is handed compares the log's key with the entry's, and
 * records this path's entry once it holds. Undefined (no bet) when the entry does not load or give a
 * warm answer: the caller then waits for the key as it would have.
 */
async function speculativeWarm(
  target: ResolvedTarget,
  source: ByteSource,
  decoder: NonNullable<InspectOptions['decoder']>,
  use: IndexUse,
  peeked: PeekedIndex,
  beside: KeyBeside,
): Promise<IndexedInspection | undefined> {
  const loaded = loadIndex(use.cache, undefined, use.folds, use.needs ?? use.folds, peeked.name, peeked);
  if (!loaded) return undefined;
  let warm: IndexedInspection | undefined;
  try {
    warm = await warmInspection(target, source, decoder, loaded.summary, loaded.logIndex, loaded.folds);
  } catch {
    // Perhaps other bytes than the entry's: the key decides, as without a speculation.
    warm = undefined;
  }
  if (!warm) return undefined;
  // The hash worker reads through the source's descriptor: it is closed once the hash is done.
  let hashing = true;
  let closeAsked = false;
  const close = warm.close;
  use.speculation!.bet(async () => {
    try {
      const key = await beside.key();
      const named = entryName(key) === peeked.name && sameContentKey(loaded.key, key);
      if (named) writePointer(use.cache, target.path, peeked.name, key.size);
      return named;
    } catch {
      return false;
    } finally {
      hashing = false;
      if (closeAsked) close();
    }
  });
  return {
    ...warm,
    close: () => {
      closeAsked = true;
      if (!hashing) close();
    },
  };
}

/**
 * The content key of `source`, hashed by the worker thread while this one goes on; `cancel` stops a
 * hash that will not be awaited (the key then rejects, and nothing waits for it).
 */
function keyBeside(source: ByteSource, encoding: Encoding, decoder: string, maxLineBytes: number, prefixBytes?: number): KeyBeside {
  let cancel = () => {};
  let help = () => {};
  const promise = contentKey(source, encoding, decoder, maxLineBytes, prefixBytes, {
    background: true,
    started: (c, h) => {
      cancel = c;
      help = h;
    },
  });
  promise.catch(() => undefined);
  return {
    cancel: () => cancel(),
    key: () => {
      // This thread is about to wait for the hash: it hashes what the worker has not taken yet.
      help();
      return promise;
    },
  };
}

/** A content key hashed beside a pass: `key()` when this thread has nothing left but to wait for it. */
interface KeyBeside {
  key(): Promise<ContentKey & { prefixSha256?: Buffer }>;
  cancel(): void;
}

/** Is `prior` the index of this log's first bytes, with a point to continue from and every needed fold extendable? */
function extendsPrefix(prior: LoadedIndex, key: ContentKey & { prefixSha256?: Buffer }, needs: readonly PersistentFold[]): boolean {
  return key.prefixSha256 !== undefined && prior.key.size < key.size && prior.key.sha256.equals(key.prefixSha256) && mayExtend(prior, prior.key, needs) && sameReading(prior.key, key);
}

/**
 * Could `prior` be extended to a log read as `how` whose first `how.size` bytes are unchanged (all but
 * the hash): a point to continue from, every needed fold extendable, the same reading?
 */
function mayExtend(prior: LoadedIndex, how: Omit<ContentKey, 'sha256'>, needs: readonly PersistentFold[]): boolean {
  return prior.resume !== undefined && prior.key.size === how.size && sameReading(prior.key, how) && needs.every((f) => f.resume !== undefined && prior.foldBytes.has(f.tag));
}

function sameReading(a: Omit<ContentKey, 'sha256' | 'size'>, b: Omit<ContentKey, 'sha256' | 'size'>): boolean {
  return a.encoding === b.encoding && a.decoder === b.decoder && a.maxLineBytes === b.maxLineBytes;
}

function closeOnce(source: ByteSource): () => void {
  let closed = false;
  return () => {
    if (closed) return;
    closed = true;
    source.close();
  };
}

/**
 * An empty array of `length` that costs what it will hold, not `length` slots. V8 grows a fast
 * (holey) array's backing store to its length on the first store below it (100 MB for one event
 * of a 12.85 M-event log); a store far past the capacity makes it keep its elements in a
 * dictionary instead, and truncating the length back keeps that.
 */
export function sparseArray<T>(length: number): T[] {
  const a: T[] = [];
  a[length + 2048] = undefined as T;
  a.length = length;
  return a;
}

/** The sparse logical array a view reads: `found` stored events plus the closers in `ranges`. */
function sparseFill(total: number, closers: readonly SessionEvent[]) {
  return (found: Iterable<[number, SessionEvent]>, ranges: readonly SeqRange[], into?: SessionEvent[]): SessionEvent[] => {
    const sparse: SessionEvent[] = into ?? sparseArray(total);
    if (sparse.length < total) sparse.length = total;
    for (const [seq, e] of found) sparse[seq] = e;
    for (const c of closers) if (ranges.some(([a, b]) => c.seq >= a && c.seq <= b)) sparse[c.seq] = c;
    return sparse;
  };
}

/** The logical events of an indexed log in order: the stored ones re-read in batches, then the closers. */
function streamOf(rereader: Rereader, closers: readonly SessionEvent[]): () => AsyncGenerator<SessionEvent[]> {
  return async function* () {
    yield* rereader.batches();
    if (closers.length > 0) yield [...closers];
  };
}

/** What a pass that extends `prior` starts from: the validating state after the prefix, re-derived from the index and the prefix's bytes. */
async function resumeState(target: ResolvedTarget, source: ByteSource, decoder: NonNullable<InspectOptions['decoder']>, prior: LoadedIndex): Promise<NonNullable<InspectOptions['resume']>> {
  const r = prior.resume!;
  const s = prior.summary;
  const count = s.storedEventCount;
  const meta = await rereadHeader(source, prior.logIndex.encoding, target.rawPath, decoder);
  const old = new Rereader(source, prior.logIndex, decoder);
  // The closer tracker's state is the open last turn's events (none when every turn ended).
  const closers = new CloserTracker();
  if (s.openTurnStartSeq !== null && count > 0) {
    const tail = await old.events([[s.openTurnStartSeq, count - 1]]);
    for (let q = s.openTurnStartSeq; q < count; q++) closers.observe(tail.get(q) as SessionEvent);
  }
  // The surface fold's state: the saved nodes (closers taken off) and the current tool results, whose
  // payloads are read back only for those the new events rewrite (`rewritesHold`, after the pass).
  const toolResults = new Map<number, unknown>(r.toolResultSeqs.map((q) => [q, UNREAD_PAYLOAD]));
  const deferred: DeferredRewrite[] = [];
  return {
    read: { point: { meta, committedBytes: r.committedBytes, eventLine: r.eventLine, eventCount: count }, at: r.at, headerBytes: r.headerBytes },
    pipeline: {
      eventCount: count,
      closers,
      surface: { nodes: s.surface.nodes.filter((n) => n < count), replaceGeneration: s.surface.replaceGeneration, replacements: s.surface.replacements, toolResults, deferred },
    },
  };
}

/**
 * Whether the new events' rewrites of the prefix's tool results keep all but their content (DSH's
 * S12, deferred by the pass until the originals' payloads are read back here). False when one does
 * not: the extension is given up, and the cold pass refuses the log at that event with DSH's words.
 */
async function rewritesHold(source: ByteSource, decoder: NonNullable<InspectOptions['decoder']>, prior: LoadedIndex, deferred: readonly DeferredRewrite[]): Promise<boolean> {
  if (deferred.length === 0) return true;
  const seqs = [...new Set(deferred.map((d) => d.originalSeq))].sort((a, b) => a - b);
  const originals = await new Rereader(source, prior.logIndex, decoder).events(seqs.map((q) => [q, q] as const));
  return deferred.every((d) => {
    try {
      return rewriteKeepsToolResult((originals.get(d.originalSeq) as SessionEvent).data, d.data);
    } catch {
      return false;
    }
  });
}

/**
 * One validating pass that keeps an index: of the whole log (cold), or, with `prior`, of what
 * follows the unchanged prefix `prior` indexes. An extending pass gives up (undefined) when the
 * grown log is refused or holds migrated legacy events: the cold pass then decides, from byte 0.
 */
async function indexedPass(
  target: ResolvedTarget,
  source: ByteSource,
  options: InspectOptions & { decoder: NonNullable<InspectOptions['decoder']> },
  use: IndexUse | undefined,
  key: ContentKey | KeyBeside | undefined,
  prior?: LoadedIndex,
): Promise<IndexedInspection | undefined> {
  const resume = prior ? await resumeState(target, source, options.decoder, prior) : undefined;
  const builder = prior ? LogIndexBuilder.resume(prior.logIndex, prior.resume!.eventLine) : new LogIndexBuilder(detectEncoding(source).encoding);
  // The folds are the view's answer whether or not the index is saved (`--no-cache` included): with
  // no index to write, only those the view reads are built; written, every fold, but the view is
  // given (and holds) only those it reads.
  // Extending: the folds that can go on from their saved bytes (the others are left out of the new entry).
  const reads = use?.needs ?? use?.folds ?? [];
  const read = (tag: number) => reads.some((f) => f.tag === tag);
  const builders: [number, FoldBuilder<unknown>][] = [];
  /** The builders a packed row's lean chunk members are handed to. */
  const rowChunkObservers: Pick<FoldBuilder<unknown>, 'observe'>[] = [];
  const built = key ? (use?.folds ?? []) : reads;
  for (const f of built) {
    const length = builders.length;
    if (!prior) builders.push([f.tag, f.create()]);
    else {
      const bytes = prior.foldBytes.get(f.tag);
      if (!f.resume || !bytes) continue;
      try {
        builders.push([f.tag, f.resume(bytes, { storedEventCount: prior.summary.storedEventCount, surface: resume!.pipeline.surface })]);
      } catch {
        // A saved fold that cannot go on from here: the cold pass rebuilds it.
        return undefined;
      }
    }
    if (builders.length > length && f.skipsRowChunks !== true) rowChunkObservers.push(builders[length]![1]);
  }
  const observers: Pick<FoldBuilder<unknown>, 'observe'>[] = builders.map(([, b]) => b);
  // Rows' members need not be built when nothing here reads more of a chunk than the folds do.
  const lean = !options.onLogical && !options.onStored && built.every((f) => f.leanRows === true);
  let lastTurnStart: number | null = prior ? prior.summary.openTurnStartSeq : null;
  // A log DSH refuses can trip a fold before the pass reaches the verdict: hold the first error,
  // raise it only once the log is accepted.
  let foldFailure: { error: unknown } | undefined;
  const inspection = await inspectTarget(
    target,
    {
      ...options,
      collect: false,
      skipArtifact: true,
      ...(resume ? { resume } : {}),
      ...(lean ? { leanRows: () => true } : {}),
      onStored: (event, line) => {
        builder.onStored(event, line);
        options.onStored?.(event, line);
      },
      onLogical: (event, text) => {
        if (event.type === 'turn/start') lastTurnStart = event.seq;
        if (!foldFailure) {
          try {
            const to = event instanceof RowChunk ? rowChunkObservers : observers;
            for (let i = 0; i < to.length; i++) to[i]!.observe(event);
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
  if (prior && (inspection.error || inspection.migratedEvents > 0 || foldFailure)) return undefined;
  if (prior && !(await rewritesHold(source, options.decoder, prior, resume!.pipeline.surface.deferred ?? []))) return undefined;
  // An extension that ran while the log was hashed answers only for a log whose old bytes are the prior entry's.
  if (prior && key && 'cancel' in key) {
    const hashed = await key.key().catch(() => undefined);
    if (!hashed || !extendsPrefix(prior, hashed, use?.needs ?? use?.folds ?? [])) return undefined;
  }
  const close = closeOnce(source);
  if (inspection.error) return { inspection, folds: new Map(), warm: false, close };
  if (foldFailure) {
    close();
    throw foldFailure.error;
  }
  const closers = inspection.closers;
  for (const [, b] of builders) {
    try {
      b.end?.(closers, inspection.storedEventCount);
    } catch (error) {
      // A resumed fold whose index cannot be kept: the cold pass rebuilds it (and decides what to keep).
      if (prior) return undefined;
      throw error;
    }
  }
  const fill = sparseFill(inspection.storedEventCount + closers.length, closers);
  if (inspection.migratedEvents > 0 && use?.indexOnly) return { inspection, folds: new Map(builders.map(([t, b]) => [t, b.result()])), warm: false, close };
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
    async function* stream(): AsyncGenerator<SessionEvent[]> {
      yield held;
    }
    return { inspection, events, stream, folds: resultsOf(builders, read), warm: false, close };
  }
  const eventLine = builder.lastEventLine;
  const logIndex = builder.finish();
  // A key hashed beside the pass that could not be had (the file could not be read again) saves nothing.
  const saveKey = key && ('cancel' in key ? await key.key().catch(() => undefined) : key);
  if (use && saveKey && inspection.meta && inspection.surface) {
    const sections = new Map<number, Bytes | undefined>(builders.map(([t, b]) => [t, b.encode()]));
    const summary: IndexSummary = {
      storedEventCount: inspection.storedEventCount,
      torn: inspection.torn,
      openTurnStartSeq: closers.length > 0 ? lastTurnStart : null,
      surface: inspection.surface,
    };
    const point = inspection.resumePoint;
    const resumeFacts: ResumeFacts | undefined =
      point && inspection.surfaceToolResults ? { ...point, eventLine, toolResultSeqs: inspection.surfaceToolResults } : undefined;
    saveIndex(
      use.cache,
      saveKey,
      { sessionId: inspection.meta.id, path: target.path, logBytes: source.size, createdMs: Date.now() },
      summary,
      logIndex,
      new Map(built.filter((f) => sections.has(f.tag)).map((f) => [f.tag, sections.get(f.tag)])),
      resumeFacts,
    );
  }
  const rereader = new Rereader(source, logIndex, options.decoder);
  const events = async (ranges: readonly SeqRange[], into?: SessionEvent[]) => fill(await rereader.events(ranges), ranges, into);
  return { inspection, events, stream: streamOf(rereader, closers), rereader, folds: resultsOf(builders, read), warm: false, ...(prior ? { extended: true } : {}), close };
}

/** The results of the folds a view reads (the others, once saved, are let go). */
function resultsOf(builders: readonly [number, FoldBuilder<unknown>][], read: (tag: number) => boolean): Map<number, unknown> {
  return new Map(builders.filter(([t]) => read(t)).map(([t, b]) => [t, b.result()]));
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
  // The index does not know how the log was opened: a by-id read DSH's backend refuses gets the cold pass's refusal.
  if (storageIdentityRefusal(meta, target.rawPath, target.storedAt)) return undefined;
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
  return { inspection, events, stream: streamOf(rereader, closers), rereader, folds, warm: true, close: closeOnce(source) };
}

/** The `--json` document: DSH's own shapes so it compares with expected.json. */
export function inspectDocument(r: SessionInspection, view: View = 'logical'): unknown {
  if (r.error && view !== 'artifact') return errorDocument(r.error);
  const torn = r.torn ? { truncateTo: r.torn.truncateTo, recoveredEventSeqs: r.torn.recoveredEventSeqs } : null;
  if (view === 'artifact') {
    if (r.artifact.error) return errorDocument(r.artifact.error);
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

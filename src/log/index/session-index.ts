/**
 * The persistent session index: what one validating pass of an accepted log
 * learned, stored in the cache directory under the artifact's content hash,
 * so the next question about the same bytes costs only its answer.
 *
 * It holds numbers, types and hashes only, never log text: the verdict
 * (accepted; refused and corrupt logs are not indexed), the stored event
 * count, the torn-tail facts, the final surface fold, the re-read index
 * (`LogIndex`), where the open last turn starts (the crash closers are
 * re-derived from it), and the folds upper layers register
 * (`PersistentFold`). The session header and any event a view prints are
 * re-read from the log itself.
 */
import { createHash } from 'node:crypto';
import { FileSource, MemorySource, type ByteSource } from '../../physical/source.js';
import type { FrameDecoder } from '../../physical/decoders.js';
import { FrameWalker } from '../../physical/zstd-frames.js';
import type { LogIndex } from '../reread.js';
import type { PlaintextSegment } from '../read.js';
import type { Replacement } from '../surface.js';
import type { Encoding, SessionEvent, SessionHeader } from '../types.js';
import type { TornSummary } from '../inspect.js';
import { LogScanner } from '../scanner.js';
import { UsageError } from '../errors.js';
import { encodeIndexFile, IndexFileReader, IndexFormatError, VarReader, VarWriter, type Bytes } from './codec.js';
import { contentHash } from './content-hash.js';
import { dropEntry, readEntryParts, touchEntry, writeEntry, writePointer, type CacheConfig } from './cache.js';

/** A fold an upper layer wants kept with the index: built on the cold pass, loaded on warm ones. */
export interface PersistentFold<T = unknown> {
  /** Section tag, >= 100, unique. */
  readonly tag: number;
  /**
   * The fold reads of a packed row's chunk only its type, seq, time, turn and step: a pass that
   * builds only such folds, for a view that takes no events of its own, hands it rows' members
   * pruned (`InspectOptions.leanRows`) instead of building them.
   */
  readonly leanRows?: boolean;
  /**
   * The fold reads nothing of a packed row's chunk members, not even that they are there: a pass
   * that takes rows lean does not hand it their `RowChunk`s (the seqs it sees then skip them).
   */
  readonly skipsRowChunks?: boolean;
  create(): FoldBuilder<T>;
  decode(bytes: Buffer): T;
  /**
   * A builder that goes on from the saved fold of a prefix (a grown log), as if it had observed the
   * prefix's events itself. Absent: the fold is rebuilt by a full pass only.
   */
  resume?(bytes: Buffer, prefix: FoldPrefix): FoldBuilder<T>;
}

/** What a resumed fold may need of the prefix it goes on from (beyond its own saved bytes). */
export interface FoldPrefix {
  storedEventCount: number;
  /** The surface fold after the prefix's stored events (closers excluded), with the current tool results' payloads. */
  surface: { nodes: readonly number[]; replaceGeneration: number; toolResults: ReadonlyMap<number, unknown> };
}

export interface FoldBuilder<T> {
  /**
   * Every logical stored event, in order (closers are not fed), while the same pass validates it:
   * a fold need not check DSH's rules again, because a refused log's folds are thrown away.
   */
  observe(event: SessionEvent): void;
  /**
   * After an accepted pass of `storedEventCount` stored events: the crash closers, in seq order
   * (a fold that needs them applies them). A resumed fold may throw here when what it built cannot be
   * kept: the extension is given up, and the cold pass builds the fold again.
   */
  end?(closers: readonly SessionEvent[], storedEventCount: number): void;
  result(): T;
  /** The fold's bytes, or undefined when this log's fold cannot be kept (the index is then not saved). */
  encode(): Bytes | undefined;
}

/** The folds' results by tag. */
export interface FoldResults {
  get(tag: number): unknown;
  /** Let go of a fold's result (a view done with it; a saved fold is decoded again if read again). */
  delete(tag: number): boolean;
}

/** Saved folds, each decoded on first use (a view loads only the folds it reads). */
class LazyFolds implements FoldResults {
  private readonly done = new Map<number, unknown>();
  constructor(private readonly folds: ReadonlyMap<number, { fold: PersistentFold; bytes: Buffer }>) {}
  get(tag: number): unknown {
    if (this.done.has(tag)) return this.done.get(tag);
    const f = this.folds.get(tag);
    if (!f) return undefined;
    let v: unknown;
    try {
      v = f.fold.decode(f.bytes);
    } catch (error) {
      // The file's checksum matched, so its writer wrote this: not a stale answer, but not one to trust.
      throw new UsageError(`the cached session index has an undecodable section ${tag} (${(error as Error).message}); run \`dsh cache clear\` or use --no-cache`, 'io');
    }
    this.done.set(tag, v);
    return v;
  }
  delete(tag: number): boolean {
    return this.done.delete(tag);
  }
}

const TAG = { key: 1, listing: 2, summary: 3, logIndex: 4, resume: 5 } as const;

/** What a cached entry is keyed by: the bytes, and everything else that can change the answer. */
export interface ContentKey {
  sha256: Buffer;
  size: number;
  encoding: Encoding;
  decoder: string;
  maxLineBytes: number;
}

/**
 * The key of an artifact's bytes: their sha256 tree hash (`contentHash`: a changed byte anywhere
 * changes it); with `prefixBytes` (less than the size), also that of the first that many bytes,
 * from the same pass.
 */
export async function contentKey(
  source: ByteSource,
  encoding: Encoding,
  decoder: string,
  maxLineBytes: number,
  prefixBytes?: number,
  how?: Parameters<typeof contentHash>[3],
): Promise<ContentKey & { prefixSha256?: Buffer }> {
  const { sha256, prefixSha256 } = await contentHash(source, prefixBytes, undefined, how);
  return { sha256, size: source.size, encoding, decoder, maxLineBytes, ...(prefixSha256 ? { prefixSha256 } : {}) };
}

/** The cache entry's file name for a key. */
export function entryName(key: ContentKey): string {
  // The size first: a log of a size no entry has cannot be in the cache (`holdsEntryOfSize`).
  return `${key.size}-` + createHash('sha256')
    .update(key.sha256)
    .update(`\0${key.size}\0${key.encoding}\0${key.decoder}\0${key.maxLineBytes}`)
    .digest('hex')
    .slice(0, 40);
}

function encodeKey(key: ContentKey): Buffer {
  return new VarWriter().bytes(key.sha256).uint(key.size).string(key.encoding).string(key.decoder).uint(key.maxLineBytes).done();
}

function decodeKey(bytes: Buffer): ContentKey {
  const r = new VarReader(bytes);
  return { sha256: Buffer.from(r.bytes()), size: r.uint(), encoding: r.string() as Encoding, decoder: r.string(), maxLineBytes: r.uint() };
}

function sameKey(bytes: Buffer, key: ContentKey): boolean {
  return sameContentKey(decodeKey(bytes), key);
}

/** Whether two content keys name the same bytes read the same way. */
export function sameContentKey(a: ContentKey, b: ContentKey): boolean {
  return a.sha256.equals(b.sha256) && a.size === b.size && a.encoding === b.encoding && a.decoder === b.decoder && a.maxLineBytes === b.maxLineBytes;
}

/**
 * Where the validating pass of an indexed log can continue when the log grows (see
 * `Inspection.resumePoint`), and what it needs to: the last committed line's number and the
 * current surface's tool/result nodes (their payloads are re-read).
 */
export interface ResumeFacts {
  at: number;
  committedBytes: number;
  headerBytes: number;
  eventLine: number;
  toolResultSeqs: number[];
}

function encodeResume(x: ResumeFacts): Buffer {
  return new VarWriter().uint(x.at).uint(x.committedBytes).uint(x.headerBytes).uint(x.eventLine).ascending(x.toolResultSeqs).done();
}

function decodeResume(bytes: Buffer): ResumeFacts {
  const r = new VarReader(bytes);
  return { at: r.uint(), committedBytes: r.uint(), headerBytes: r.uint(), eventLine: r.uint(), toolResultSeqs: r.ascending() };
}

/** The accepted-log facts the index keeps (all numbers). */
export interface IndexSummary {
  storedEventCount: number;
  torn: TornSummary | null;
  /** Seq of the open last turn's `turn/start` (closers are re-derived from there), or null. */
  openTurnStartSeq: number | null;
  surface: { nodes: number[]; replaceGeneration: number; replacements: Replacement[] };
}

function encodeSummary(s: IndexSummary): Buffer {
  const w = new VarWriter().uint(s.storedEventCount);
  if (s.torn) {
    const t = s.torn;
    w.uint(1).uint(t.truncateTo).ascending(t.recoveredEventSeqs).uint(t.tornBytes).uint(t.lostPlaintextBytes);
  } else w.uint(0);
  w.uint(s.openTurnStartSeq === null ? 0 : s.openTurnStartSeq + 1);
  w.uints(s.surface.nodes).uint(s.surface.replaceGeneration).uint(s.surface.replacements.length);
  for (const r of s.surface.replacements) w.uint(r.seq).uint(r.start).uint(r.end).uints(r.shadowedSeqs);
  return w.done();
}

function decodeSummary(bytes: Buffer): IndexSummary {
  const r = new VarReader(bytes);
  const storedEventCount = r.uint();
  let torn: TornSummary | null = null;
  if (r.uint() === 1) torn = { truncateTo: r.uint(), recoveredEventSeqs: r.ascending(), tornBytes: r.uint(), lostPlaintextBytes: r.uint() };
  const open = r.uint();
  const nodes = r.uints();
  const replaceGeneration = r.uint();
  const n = r.uint();
  const replacements: Replacement[] = [];
  for (let i = 0; i < n; i++) replacements.push({ seq: r.uint(), start: r.uint(), end: r.uint(), shadowedSeqs: r.uints() });
  return { storedEventCount, torn, openTurnStartSeq: open === 0 ? null : open - 1, surface: { nodes, replaceGeneration, replacements } };
}

const SEGMENT_KINDS: PlaintextSegment['kind'][] = ['group', 'stream', 'torn'];

function encodeLogIndex(x: LogIndex): Buffer {
  const w = new VarWriter().string(x.encoding).uint(x.storedEventCount).ascending(x.checkpointSeqs).ascending(x.checkpointOffsets).uint(x.segments.length);
  for (const s of x.segments) w.uint(SEGMENT_KINDS.indexOf(s.kind)).uint(s.start).uint(s.end).uint(s.logicalStart).uint(s.logicalEnd);
  return w.done();
}

function decodeLogIndex(bytes: Buffer): LogIndex {
  const r = new VarReader(bytes);
  const encoding = r.string() as Encoding;
  const storedEventCount = r.uint();
  const checkpointSeqs = r.ascending();
  const checkpointOffsets = r.ascending();
  const n = r.uint();
  const segments: PlaintextSegment[] = [];
  for (let i = 0; i < n; i++) {
    const kind = SEGMENT_KINDS[r.uint()];
    if (!kind) throw new IndexFormatError('unknown segment kind');
    segments.push({ kind, start: r.uint(), end: r.uint(), logicalStart: r.uint(), logicalEnd: r.uint() });
  }
  return { encoding, storedEventCount, checkpointSeqs, checkpointOffsets, segments };
}

/** Who the entry is about, for `dsh cache` (the session id and the path read; no log content). */
export interface IndexListing {
  sessionId: string;
  path: string;
  logBytes: number;
  createdMs: number;
}

function encodeListing(l: IndexListing): Buffer {
  return new VarWriter().string(l.sessionId).string(l.path).uint(l.logBytes).uint(Math.floor(l.createdMs)).done();
}

export function decodeListing(bytes: Buffer): IndexListing {
  const r = new VarReader(bytes);
  return { sessionId: r.string(), path: r.string(), logBytes: r.uint(), createdMs: r.uint() };
}

/** Read the listing section of an index file held in memory; undefined when the file is damaged. */
export function listingOf(file: Buffer): IndexListing | undefined {
  return listingFrom(new MemorySource('index', file));
}

/**
 * Read the listing section of the index file at `file` (for `dsh cache`): its table and that section
 * only, not the whole entry. Undefined when it cannot be read or is damaged.
 */
export function listingOfFile(file: string): IndexListing | undefined {
  let source: FileSource;
  try {
    source = new FileSource(file);
  } catch {
    return undefined;
  }
  try {
    return listingFrom(source);
  } finally {
    source.close();
  }
}

function listingFrom(source: ByteSource): IndexListing | undefined {
  try {
    const l = new IndexFileReader(source).section(TAG.listing);
    return l ? decodeListing(l) : undefined;
  } catch {
    return undefined;
  }
}

export interface LoadedIndex {
  key: ContentKey;
  summary: IndexSummary;
  logIndex: LogIndex;
  folds: FoldResults;
  /** Absent when the log cannot be extended from this entry. */
  resume?: ResumeFacts;
  /** The saved folds' bytes, by tag (for extending them). */
  foldBytes: ReadonlyMap<number, Buffer>;
}

/**
 * Load the entry `name` (by default the one for `key`), verified (own checksum, format version,
 * and, with `key`, that it is that content's). Undefined when there is none, or when it lacks a
 * fold of `needs`; a damaged or foreign entry is dropped with a note (the caller rebuilds it).
 */
/** The sections every load reads: the key, the summary, the re-read index and the resume facts. */
const BASE_TAGS: readonly number[] = [TAG.key, TAG.summary, TAG.logIndex, TAG.resume];

/**
 * Read the sections of `tags` an entry has, each verified against the file's table (only those: an
 * index of a long log is megabytes, of which a view reads a few). Undefined when there is no
 * entry; throws when it is damaged or of another format (`IndexFormatError`) or cannot be read.
 */
function readSections(config: CacheConfig, name: string, tags: readonly number[]): { sections: Map<number, Buffer>; tags: ReadonlySet<number> } | undefined {
  return readEntryParts(config, name, (source) => {
    const file = new IndexFileReader(source);
    const sections = new Map<number, Buffer>();
    for (const tag of tags) {
      const body = file.section(tag);
      if (body) sections.set(tag, body);
    }
    return { sections, tags: new Set(file.sections.map((p) => p.tag)) };
  });
}

/** The section tags a load of `folds` reads. */
function tagsFor(folds: readonly PersistentFold[]): number[] {
  return [...BASE_TAGS, ...folds.map((f) => f.tag)];
}

/**
 * An entry read and its checksums verified ahead of knowing its key (a warm command does this while
 * the log is hashed): not marked used, nothing noted or dropped (`loadIndex` decides that once the
 * key is known). Undefined when it cannot be read or does not decode.
 */
export interface PeekedIndex {
  name: string;
  /** The sections read (those of the folds asked for, and the base ones). */
  sections: Map<number, Buffer>;
  /** Every section the entry has. */
  tags: ReadonlySet<number>;
  /** The tags asked for. */
  read: readonly number[];
}

/** Peek at entry `name`, reading the sections `folds` need. */
export function peekIndex(config: CacheConfig, name: string, folds: readonly PersistentFold[]): PeekedIndex | undefined {
  const read = tagsFor(folds);
  try {
    const got = readSections(config, name, read);
    return got && { name, ...got, read };
  } catch {
    return undefined;
  }
}

/**
 * The saved index of `key` (or of the entry `name`): its sections verified (the file's table, and
 * each section read against its own sha256), and, with `key`, that it is that content's. Of the folds,
 * those of `needs` are read, or with `all`, every one of `folds` the entry has (to extend them).
 * Undefined when there is none, or when it lacks a fold of `needs`; a damaged or foreign entry is
 * dropped with a note (the caller rebuilds it). `peeked`: an entry read and verified already, used
 * if it is that one and read what this load reads.
 */
export function loadIndex(
  config: CacheConfig,
  key: ContentKey | undefined,
  folds: readonly PersistentFold[],
  needs: readonly PersistentFold[] = folds,
  name = entryName(key!),
  peeked?: PeekedIndex,
  all = false,
): LoadedIndex | undefined {
  const wanted = tagsFor(all ? folds : needs);
  const early = peeked?.name === name && wanted.every((t) => peeked.read.includes(t)) ? peeked : undefined;
  try {
    const got = early ?? readSections(config, name, wanted);
    if (!got) return undefined;
    touchEntry(config, name);
    const sections = got.sections;
    const k = sections.get(TAG.key);
    if (!k || (key && !sameKey(k, key))) throw new IndexFormatError('it belongs to other content');
    const summary = decodeSummary(required(sections, TAG.summary));
    const logIndex = decodeLogIndex(required(sections, TAG.logIndex));
    const out = new Map<number, { fold: PersistentFold; bytes: Buffer }>();
    const foldBytes = new Map<number, Buffer>();
    for (const f of folds) {
      const body = sections.get(f.tag);
      if (!body) continue;
      out.set(f.tag, { fold: f, bytes: body });
      foldBytes.set(f.tag, body);
    }
    if (needs.some((f) => !out.has(f.tag))) return undefined;
    const r = sections.get(TAG.resume);
    return { key: decodeKey(k), summary, logIndex, folds: new LazyFolds(out), foldBytes, ...(r ? { resume: decodeResume(r) } : {}) };
  } catch (error) {
    const why = error instanceof IndexFormatError ? error.message : `it does not decode (${(error as Error).message})`;
    config.note(`note: the cached session index ${name} is unusable (${why}); rebuilding it`);
    dropEntry(config, name);
    return undefined;
  }
}

function required(sections: Map<number, Buffer>, tag: number): Buffer {
  const b = sections.get(tag);
  if (!b) throw new IndexFormatError(`section ${tag} is missing`);
  return b;
}

/** Save a freshly built index (best effort: failure is a warning from the cache). */
export function saveIndex(
  config: CacheConfig,
  key: ContentKey,
  listing: IndexListing,
  summary: IndexSummary,
  logIndex: LogIndex,
  folds: ReadonlyMap<number, Bytes | undefined>,
  resume?: ResumeFacts,
): boolean {
  if (!config.enabled) return false;
  for (const body of folds.values()) if (body === undefined) return false;
  const sections = new Map<number, Bytes>([
    [TAG.key, encodeKey(key)],
    [TAG.listing, encodeListing(listing)],
    [TAG.summary, encodeSummary(summary)],
    [TAG.logIndex, encodeLogIndex(logIndex)],
  ]);
  if (resume) sections.set(TAG.resume, encodeResume(resume));
  for (const [tag, body] of folds) sections.set(tag, body as Bytes);
  const name = entryName(key);
  const ok = writeEntry(config, name, encodeIndexFile(sections));
  if (ok) writePointer(config, listing.path, name, key.size);
  return ok;
}

/** Re-read the session header record (frame 0, or the first raw line) and parse it as the cold pass does. */
export async function rereadHeader(source: ByteSource, encoding: Encoding, rawPath: string, decoder: FrameDecoder): Promise<SessionHeader> {
  let record: Buffer;
  if (encoding === 'zstd') {
    const frame = new FrameWalker(source).next();
    if (!frame) throw new IndexFormatError('the log has no header frame');
    record = await decoder.decode(source.read(frame.start, frame.end));
  } else {
    const parts: Buffer[] = [];
    for (let at = 0; ; at += 1 << 16) {
      const chunk = source.read(at, Math.min(source.size, at + (1 << 16)));
      if (chunk.length === 0) throw new IndexFormatError('the log has no header line');
      const nl = chunk.indexOf(0x0a);
      if (nl !== -1) {
        parts.push(chunk.subarray(0, nl + 1));
        break;
      }
      parts.push(chunk);
    }
    record = Buffer.concat(parts);
  }
  return new LogScanner(record, rawPath, () => {}).meta;
}

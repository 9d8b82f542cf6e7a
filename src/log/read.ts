import { createHash } from 'node:crypto';
import type { ByteSource } from '../physical/source.js';
import { FrameWalker, type FrameInfo, type TornFrameInfo, ZSTD_MAGIC } from '../physical/zstd-frames.js';
import { createDecoder, DecodeFailure, forEachTornChunk, type FrameDecoder } from '../physical/decoders.js';
import { ArtifactText } from '../physical/artifact-text.js';
import { corrupt, LogError, UsageError, type SerializedError } from './errors.js';
import { parseHeaderMeta } from './header.js';
import { LogScanner, type EventSink, type LineInfo, type ScanPoint, DEFAULT_MAX_LINE_BYTES } from './scanner.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';
import { defaultReadJobs, LineWorkers, readTuning, PARALLEL_GROUP_BYTES, type DecodedLines, type FactLines } from './parallel.js';

/** Most bytes of a raw log's header line held in memory (the artifact view keeps as much of its first line). */
export const HEADER_LINE_BUDGET = 64 << 20;

export interface FrameReport {
  index: number;
  start: number;
  end: number;
  checksumFlag: boolean;
  contentSize: number | null;
  blocks: number;
  /** Present when frames were decoded individually (`frameDetail`). */
  plaintextBytes?: number;
  records?: number;
  plaintextSha256?: string;
  error?: SerializedError & { code?: string };
}

export interface TornFrameReport extends TornFrameInfo {
  recoveredPlaintextBytes: number;
  recoveredCompleteRecords: number;
}

export interface ArtifactView {
  filename: 'session.jsonl';
  meta?: SessionHeader;
  contentBytes?: number;
  contentSha256?: string;
  lines?: number;
  error?: LogError;
}

export interface TornMarker {
  /** Byte offset DSH's load() truncates the file to. */
  truncateTo: number;
  recoveredEventSeqs: number[];
  /** Bytes after `truncateTo` (what the torn tail occupies on disk). */
  tornBytes: number;
  /** Logical bytes decoded from the torn tail that did not form a complete record. */
  lostPlaintextBytes: number;
}

export interface StoredRead {
  meta: SessionHeader;
  eventCount: number;
  /** Collected events (only with `collect: true`). */
  events?: SessionEvent[];
  torn: TornMarker | null;
  /** Logical bytes committed (raw: file offset; zstd: plaintext offset). */
  committedBytes: number;
  /** zstd: the header frame's plaintext bytes. */
  headerBytes?: number;
  /** The first tolerated defect that ended the preserved prefix, if any. */
  defect?: { message: string; line: number };
}

export interface ReadOutcome {
  encoding: Encoding;
  /** How the encoding was decided. */
  encodingBy: 'magic' | 'name' | 'content' | 'flag';
  size: number;
  frames?: FrameReport[];
  tornFrame?: TornFrameReport | null;
  artifact: ArtifactView;
  stored?: StoredRead;
  error?: LogError;
  decoder?: string;
}

export interface ReadOptions {
  /** The path DSH would name in messages (`raw log: …`). */
  rawPath?: string;
  /** Expected session id (from the layout), for DSH's readRaw id check. */
  expectedId?: string;
  decoder?: FrameDecoder;
  collect?: boolean;
  onEvent?: EventSink;
  /** Called just before the torn final frame's recovered plaintext is scanned. */
  onTornTail?: () => void;
  /** Called once the header record parsed (before any event). */
  onHeader?: (meta: SessionHeader) => void;
  /** Receives the artifact view's bytes (export). */
  onArtifact?: (chunk: Buffer) => void;
  /** Decode every frame on its own to report per-frame plaintext facts. */
  frameDetail?: boolean;
  /** Compressed bytes per native decode call. */
  groupBytes?: number;
  maxLineBytes?: number;
  /** Skip the stored (event) pass: artifact view and frames only. */
  artifactOnly?: boolean;
  /** Awaited between decoded chunks: lets a consumer apply output backpressure. */
  between?: () => Promise<void> | void;
  /** Skip the artifact view's hashing (logical reads that do not report it). */
  skipArtifact?: boolean;
  /**
   * zstd only: where each run of logical text fed to the line scanner came
   * from, so a later reader can re-decode just the part it needs.
   */
  onSegment?: (segment: PlaintextSegment) => void;
  /** Frames that may decode to more than this are streamed (default `BIG_FRAME`; tests lower it). */
  bigFrameBytes?: number;
  /**
   * Threads for the read (default `defaultReadJobs()`, 1 unless set): above 1, and for logs of at least
   * `parallelMinBytes()`, worker threads decode and split the text while this
   * thread parses and folds it (see `parallel.ts`). The outcome is the same.
   */
  jobs?: number;
  /** Facts mode with workers: the share of groups this thread parses itself (default `mainShare()`; the bench sets 0 to time the main thread's fold alone). */
  mainShare?: number;
  /**
   * The consumers (`onEvent`) read only what a `PrunedEvent` carries (type, seq, time, surface op
   * and provenance, the turn of a turn/start, the step of a step/start): with workers, they parse
   * and check the lines and the events this thread folds are pruned (see `facts.ts`); on this thread,
   * packed rows' members are pruned events instead of built ones (except in a torn final frame).
   */
  pruned?: boolean;
  /**
   * The consumers read of an `assistant/chunk` only its type, seq, time, turn and step (`check`
   * without `--secrets`): packed rows' members reach them as `PrunedEvent`s carrying just that, as
   * with `pruned`, while every other line is parsed whole (no facts from workers). Asked of the
   * session header once it is read (a fork child's seed, say, needs its chunks whole). The members
   * of a torn final frame are always built (its repair plan prints them).
   */
  leanRows?: (meta: SessionHeader) => boolean;
  /**
   * Continue an earlier read of an unchanged prefix instead of starting at byte 0 (a grown log):
   * the scan goes on from `point`, the bytes from `at` (raw: the committed offset; zstd: the end
   * of the last complete frame). No artifact view (`skipArtifact` reads only).
   */
  resume?: ResumeAt;
  /** Called after each chunk or group of frames, and once at the end with `done`. */
  onProgress?: (progress: ReadProgress) => void;
}

/** How far a reading pass has got (for a progress display): artifact bytes read, events scanned. */
export interface ReadProgress {
  bytes: number;
  totalBytes: number;
  events: number;
  /** The pass is over (the last call). */
  done: boolean;
}

export interface ResumeAt {
  point: ScanPoint;
  at: number;
  /** zstd: the header frame's plaintext bytes (logical offsets count from the header's start). */
  headerBytes: number;
}

/**
 * A run of logical text and the compressed bytes that decode to it: `group`
 * (complete frames decoded in one call), `stream` (one big frame, decoded
 * streaming) or `torn` (the recoverable prefix of a torn final frame).
 */
export interface PlaintextSegment {
  kind: 'group' | 'stream' | 'torn';
  /** Compressed byte range. */
  start: number;
  end: number;
  /** Logical byte range (offsets in the text the line scanner saw, header included). */
  logicalStart: number;
  logicalEnd: number;
}

const RAW_CHUNK = 4 << 20;

/**
 * Compressed bytes per decode group on the one-thread path (the first group is smaller still). Each
 * group's plaintext (~3x) is one buffer the native decoder allocates; 256 KiB groups instead of
 * 1 MiB measured the same speed and ~12 MiB less peak RSS on the bench's 50 MB log (less decoded
 * text in flight, and big malloc'd buffers fragment the allocator's arenas).
 */
const GROUP_BYTES = 256 << 10;

/** Compressed bytes per decode group: `fallback`, or `ReadTuning.groupBytes` (tests make every frame its own group). */
function groupBytesDefault(fallback: number): number {
  return readTuning().groupBytes ?? fallback;
}
/** Frames that may decode to more than this are streamed, never held whole. */
export const BIG_FRAME = 64 << 20;

/** The encoding of a source as DSH decides it: an explicit `--encoding`, else the file name, else (stdin, other names) the magic bytes; with how it was decided. */
export function detectEncoding(source: ByteSource): { encoding: Encoding; by: ReadOutcome['encodingBy'] } {
  if (source.encoding) return { encoding: source.encoding, by: 'flag' };
  // DSH picks the codec from the configured encoding, i.e. the file name: a
  // name decides; only a nameless input (stdin, another name) is sniffed.
  if (/\.zstd?$/.test(source.name)) return { encoding: 'zstd', by: 'name' };
  if (/\.jsonl$/.test(source.name)) return { encoding: 'none', by: 'name' };
  const head = source.read(0, 4);
  if (head.length === 4 && head.readUInt32LE(0) === ZSTD_MAGIC) return { encoding: 'zstd', by: 'magic' };
  return { encoding: 'none', by: head.length === 0 ? 'name' : 'content' };
}

/** What the first bytes look like, whatever the name says: for telling a user the name and bytes disagree. */
export function sniffEncoding(source: ByteSource): Encoding | undefined {
  const head = source.read(0, 4);
  if (head.length === 4 && head.readUInt32LE(0) === ZSTD_MAGIC) return 'zstd';
  const first = head[0];
  return first === 0x7b ? 'none' : undefined;
}

function countLF(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) n++;
  return n;
}

function failureCause(error: unknown): SerializedError & { code?: string } {
  const f = error instanceof DecodeFailure ? error : new DecodeFailure(String((error as Error)?.message ?? error));
  return { name: 'Error', class: 'Error', message: f.message, ...(f.code ? { code: f.code } : {}) };
}

/**
 * Read one artifact in a single streaming pass, producing DSH's artifact view
 * (readRaw) and stored view (readFrom/loadStored), never writing anything.
 * Stage-1 (physical/JSONL) errors are returned in `error`, not thrown.
 *
 * The parts: {@link ArtifactRead} holds what both encodings share (the
 * artifact view, the line scanner, the two verdicts); {@link readRawLog}
 * feeds it a plain JSONL file; {@link ZstdRead} feeds it frame groups pulled
 * from a {@link FrameGroups} walk.
 */
export async function readArtifact(source: ByteSource, options: ReadOptions = {}): Promise<ReadOutcome> {
  const { encoding, by } = detectEncoding(source);
  const workers =
    // A resumed read (a grown log) validates only the appended bytes: no worker pool for that.
    options.frameDetail || options.artifactOnly || options.resume || encoding !== 'zstd'
      ? undefined
      : LineWorkers.open({
          jobs: options.jobs ?? defaultReadJobs(),
          size: source.size,
          decoder: (options.decoder ?? createDecoder()).name,
        });
  // Progress counts the events as they are scanned.
  const report = options.onProgress;
  let events = 0;
  const onEvent = options.onEvent;
  const counted: ReadOptions = report
    ? {
        ...options,
        onEvent: (event, line) => {
          events++;
          onEvent?.(event, line);
        },
        onProgress: (p) => report({ ...p, events }),
      }
    : options;
  try {
    const st = new ArtifactRead(source, counted, encoding, by);
    st.resumeScanner();
    const outcome = encoding === 'none' ? await readRawLog(source, st, counted) : await new ZstdRead(source, st, counted, workers).run();
    report?.({ bytes: source.size, totalBytes: source.size, events, done: true });
    return outcome;
  } finally {
    await workers?.close();
  }
}

/** What a read of either encoding accumulates: the artifact view, the scanner, and each view's verdict. */
class ArtifactRead {
  readonly outcome: ReadOutcome;
  readonly artifact: ArtifactText;
  readonly rawPath: string;
  readonly maxLine: number;
  private readonly events: SessionEvent[] | undefined;
  private readonly sink: EventSink;
  scanner: LogScanner | undefined;
  /** The stored view's (first) error: once set, nothing more is scanned. */
  storedError: LogError | undefined;
  /** The artifact view's error (zstd: a frame that fails to decode). */
  artifactError: LogError | undefined;
  /** Logical bytes handed to the scanner after the header. */
  fed = 0;
  /** Logical bytes of the header (zstd: frame 0), the origin of segment offsets. */
  headerBytes = 0;

  constructor(
    source: ByteSource,
    private readonly options: ReadOptions,
    encoding: Encoding,
    by: ReadOutcome['encodingBy'],
  ) {
    this.rawPath = options.rawPath ?? source.name;
    this.artifact = new ArtifactText(options.onArtifact, undefined, options.skipArtifact === true && !options.onArtifact);
    this.maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const events: SessionEvent[] | undefined = options.collect ? [] : undefined;
    const onEvent = options.onEvent;
    this.events = events;
    this.sink = (event: SessionEvent, line: LineInfo) => {
      events?.push(event);
      onEvent?.(event, line);
    };
    this.outcome = { encoding, encodingBy: by, size: source.size, artifact: { filename: 'session.jsonl' } };
  }

  /** A resumed read (a grown log): the scanner goes on from the earlier read's point. */
  resumeScanner(): void {
    const resume = this.options.resume;
    if (!resume) return;
    this.scanner = new LogScanner(resume.point, this.rawPath, this.sink, this.maxLine);
    this.scanner.prunedRows = this.prunesRows(this.scanner.meta);
    this.options.onHeader?.(this.scanner.meta);
  }

  /** How far the pass has got (`onProgress`; the event count is added by readArtifact). */
  progress(bytes: number): void {
    this.options.onProgress?.({ bytes, totalBytes: this.outcome.size, events: 0, done: false });
  }

  /** Whether packed rows' members reach the consumers pruned (`pruned`, or `leanRows` for this header). */
  private prunesRows(meta: SessionHeader): boolean {
    return this.options.pruned === true || this.options.leanRows?.(meta) === true;
  }

  /** Parse the header record and start the line scanner (a bad header is the stored view's error). */
  startScanner(record: Buffer): void {
    try {
      this.scanner = new LogScanner(record, this.rawPath, this.sink, this.maxLine);
      this.scanner.prunedRows = this.prunesRows(this.scanner.meta);
    } catch (error) {
      this.storedError = error as LogError;
    }
    // Outside the guard: a consumer's error is not a verdict about the header.
    if (this.scanner) this.options.onHeader?.(this.scanner.meta);
  }

  /** Hand logical text to the scanner (nothing once the stored view failed); `split`: its lines as a worker decoded (or parsed) them. */
  feed(chunk: Buffer, split?: DecodedLines | FactLines): void {
    if (!this.scanner || this.storedError) return;
    this.fed += chunk.length;
    try {
      if (split && 'facts' in split) this.scanner.writeFacts(chunk, split.ends, split.facts);
      else if (split) this.scanner.writeDecoded(chunk, split);
      else this.scanner.write(chunk);
    } catch (error) {
      // A consumer's resource limit is not a verdict about the log.
      if (error instanceof UsageError) throw error;
      this.storedError = error as LogError;
    }
  }

  /** Report where the text fed since logical offset `from` came from (`onSegment`). */
  segment(kind: PlaintextSegment['kind'], start: number, end: number, from: number): void {
    if (this.options.onSegment && this.scanner && !this.storedError && this.fed > from) {
      this.options.onSegment({ kind, start, end, logicalStart: this.headerBytes + from, logicalEnd: this.headerBytes + this.fed });
    }
  }

  /** Close the artifact view: its header check (DSH readRaw) and content facts. */
  finishArtifact(expectedId: string | undefined): void {
    const outcome = this.outcome;
    // A resumed read has no artifact view: the earlier read's header stands.
    if (this.options.resume) {
      outcome.artifact.meta = this.options.resume.point.meta;
      return;
    }
    this.artifact.end();
    if (this.artifactError) {
      outcome.artifact.error = this.artifactError;
      return;
    }
    let meta: SessionHeader | undefined;
    try {
      meta = parseHeaderMeta(this.artifact.firstLine());
    } catch (error) {
      // Retired header fields make DSH's readRaw throw their own error.
      outcome.artifact.error = error as LogError;
      return;
    }
    if (meta === undefined || (expectedId !== undefined && meta.id !== expectedId)) {
      outcome.artifact.error = corrupt(`corrupt session log: invalid header line in "${this.rawPath}"`, { rule: 'DSH-A1' });
      return;
    }
    outcome.artifact.meta = meta;
    // A light (skipArtifact) read tracked only the first line: it reports no content facts.
    if (this.artifact.isLight) return;
    outcome.artifact.contentBytes = this.artifact.bytes;
    outcome.artifact.contentSha256 = this.artifact.digest();
    outcome.artifact.lines = this.artifact.lines;
  }

  /** Close the stored view (when it has no error) with its torn marker; then the outcome's error. */
  finishStored(torn: (scanner: LogScanner) => TornMarker | null, headerBytes?: number): ReadOutcome {
    const { outcome, scanner } = this;
    if (!this.options.artifactOnly && !this.storedError && scanner) {
      outcome.stored = {
        meta: scanner.meta,
        eventCount: scanner.eventCount,
        ...(this.events ? { events: this.events } : {}),
        committedBytes: scanner.committedBytes,
        ...(headerBytes !== undefined ? { headerBytes } : {}),
        torn: torn(scanner),
        ...(scanner.issue ? { defect: { message: scanner.issue.message, line: scanner.issueLine ?? 0 } } : {}),
      };
    }
    if (this.storedError) outcome.error = this.storedError;
    return outcome;
  }
}

/** A plain JSONL log: chunks to the artifact view; the first line starts the scanner, the rest is fed. */
async function readRawLog(source: ByteSource, st: ArtifactRead, options: ReadOptions): Promise<ReadOutcome> {
  let headerParts: Buffer[] = [];
  let headerBytes = 0;
  let headerDone = options.resume !== undefined;
  for (let offset = options.resume?.at ?? 0; offset < source.size; offset += RAW_CHUNK) {
    if (offset > 0 && options.between) await options.between();
    const chunk = source.read(offset, offset + RAW_CHUNK);
    st.progress(offset + chunk.length);
    st.artifact.write(chunk);
    if (options.artifactOnly) continue;
    if (headerDone) {
      st.feed(chunk);
      continue;
    }
    const nl = chunk.indexOf(0x0a);
    if (nl === -1) {
      // A header line is held up to the first-line budget only (one past it cannot parse as kept).
      if (headerBytes + chunk.length <= Math.min(st.maxLine, HEADER_LINE_BUDGET)) headerParts.push(Buffer.from(chunk));
      headerBytes += chunk.length;
      continue;
    }
    headerDone = true;
    const record = Buffer.concat([...headerParts, chunk.subarray(0, nl + 1)]);
    headerParts = [];
    st.startScanner(record);
    st.feed(chunk.subarray(nl + 1));
  }
  if (!options.artifactOnly && !headerDone) st.storedError = corrupt('empty or header-less session log', { rule: 'DSH-A1' });
  st.finishArtifact(options.expectedId);
  return st.finishStored((scanner) => {
    const committed = scanner.committedBytes;
    return committed < source.size
      ? { truncateTo: committed, recoveredEventSeqs: [], tornBytes: source.size - committed, lostPlaintextBytes: source.size - committed }
      : null;
  });
}

/**
 * The structural frame walk, pulled as decoding needs it (so decoding starts
 * before the walk reaches the end of a big file), cut into groups of complete
 * frames. A walk error is kept in `scanError`: it decides the outcome, as if
 * the walk came first (DSH walks all frames first).
 */
class FrameGroups {
  private readonly walker: FrameWalker;
  readonly reports: FrameReport[] = [];
  scanError: unknown;
  private carry: FrameInfo | undefined;
  private firstGroup = true;

  constructor(
    source: ByteSource,
    start: number,
    private readonly groupBytes: number,
    private readonly bigFrame: number,
    private readonly oneFrameEach: boolean,
  ) {
    this.walker = new FrameWalker(source, start);
  }

  /** Put a pulled frame back: it opens the next group (a resumed read's first frame is a body frame). */
  putBack(frame: FrameInfo): void {
    this.carry = frame;
  }

  get torn(): TornFrameInfo | null {
    return this.walker.torn;
  }

  /** The next frame of the walk, with its report row (throws on a structural error). */
  pull(): FrameInfo | null {
    const f = this.walker.next();
    if (f) this.reports.push({ index: f.index, start: f.start, end: f.end, checksumFlag: f.checksumFlag, contentSize: f.contentSize, blocks: f.blocks });
    return f;
  }

  /** A frame decoding to more than `bigFrame`: streamed alone, never held whole. */
  isBig(group: FrameInfo[]): boolean {
    return group.length === 1 && group[0]!.maxPlaintext > this.bigFrame;
  }

  /** The next group of complete frames (about `groupBytes` compressed; a big frame alone); null at the end or after a walk error. */
  next(): FrameInfo[] | null {
    if (this.scanError !== undefined) return null;
    try {
      return this.take();
    } catch (error) {
      this.scanError = error;
      return null;
    }
  }

  private take(): FrameInfo[] | null {
    const current: FrameInfo[] = [];
    let bytes = 0;
    // The first group is small, so the first events (and a streaming command's first output) come at once.
    const limit = this.firstGroup ? Math.min(this.groupBytes, 64 << 10) : this.groupBytes;
    for (;;) {
      const f = this.carry ?? this.pull();
      this.carry = undefined;
      if (f === null) break;
      const size = f.end - f.start;
      const big = f.maxPlaintext > this.bigFrame;
      if (current.length > 0 && (bytes + size > limit || big || this.oneFrameEach)) {
        this.carry = f;
        break;
      }
      current.push(f);
      bytes += size;
      if (big) break;
    }
    if (current.length === 0) return null;
    this.firstGroup = false;
    return current;
  }

  /** Walk the remaining frames (their rows and a structural error still count). */
  finishWalk(): void {
    if (this.scanError !== undefined) return;
    try {
      while (this.pull() !== null);
    } catch (error) {
      this.scanError = error;
    }
  }
}

type Decoded = { ok: true; plaintext: Buffer; split?: DecodedLines | FactLines } | { ok: false; error: unknown } | { ok: 'streamed' };

/**
 * A zstd log: frame 0 (the header frame) decoded alone, later frames in
 * groups with one group decoded ahead, a failing group retried frame by frame
 * to name the frame, then the torn final frame's recoverable prefix.
 */
class ZstdRead {
  private readonly decoder: FrameDecoder;
  private readonly groups: FrameGroups;
  private readonly reports: FrameReport[];
  /** A complete frame failed to decode: both views end there (frameDetail still decodes the rest). */
  private fatal = false;

  constructor(
    private readonly source: ByteSource,
    private readonly st: ArtifactRead,
    private readonly options: ReadOptions,
    /** Worker threads that decode and split groups ahead (parallel.ts), if the read uses them. */
    private readonly workers: LineWorkers | undefined,
  ) {
    this.decoder = options.decoder ?? createDecoder();
    st.outcome.decoder = this.decoder.name;
    this.groups = new FrameGroups(source, options.resume?.at ?? 0, options.groupBytes ?? groupBytesDefault(workers ? PARALLEL_GROUP_BYTES : GROUP_BYTES), options.bigFrameBytes ?? BIG_FRAME, Boolean(options.frameDetail));
    this.reports = this.groups.reports;
  }

  async run(): Promise<ReadOutcome> {
    const { st, options, source, groups } = this;
    const outcome = st.outcome;
    let frame0: FrameInfo | null;
    try {
      frame0 = groups.pull();
    } catch (error) {
      return this.structural(error);
    }
    const resume = options.resume;
    if (resume) {
      st.headerBytes = resume.headerBytes;
      st.fed = resume.point.committedBytes - resume.headerBytes;
    }
    if (frame0 === null && !resume) {
      const e = corrupt('empty or header-less Zstandard session log', { rule: 'DSH-A1' });
      outcome.frames = this.reports;
      outcome.error = e;
      outcome.artifact.error = e;
      outcome.tornFrame = groups.torn ? { ...groups.torn, recoveredPlaintextBytes: 0, recoveredCompleteRecords: 0 } : null;
      return outcome;
    }
    // Frame 0: the header frame, decoded alone (a resumed read starts after it).
    if (!resume) await this.headerFrame(frame0!);
    else if (frame0) groups.putBack(frame0);
    await this.laterFrames();
    groups.finishWalk();
    if (groups.scanError !== undefined) return this.structural(groups.scanError);
    outcome.frames = this.reports;
    const scanner = st.scanner;
    if (!st.storedError && scanner && scanner.committedBytes !== scanner.consumedBytes) {
      st.storedError = corrupt('corrupt Zstandard session log: complete frame contains a torn JSONL record', { rule: 'DSH-A7' });
    }
    st.finishArtifact(options.expectedId);
    const recoveredFrom = await this.tornTail();
    const torn = groups.torn;
    return st.finishStored((scanner) => {
      if (!torn) return null;
      const count = scanner.eventCount;
      const seqs: number[] = [];
      for (let s = recoveredFrom ?? count; s < count; s++) seqs.push(s);
      return {
        truncateTo: torn.start,
        recoveredEventSeqs: seqs,
        tornBytes: source.size - torn.start,
        lostPlaintextBytes: scanner.consumedBytes - scanner.committedBytes,
      };
    }, st.headerBytes);
  }

  /** A structural error anywhere: both views fail with it and no frame rows are reported. */
  private structural(error: unknown): ReadOutcome {
    const outcome = this.st.outcome;
    delete outcome.frames;
    outcome.error = error as LogError;
    outcome.artifact.error = error as LogError;
    return outcome;
  }

  private frameFailure(frame: FrameInfo, error: unknown): LogError {
    return corrupt(`corrupt Zstandard session log: frame at byte ${frame.start} failed validation`, {
      byteOffset: frame.start,
      rule: 'DSH-A6',
      cause: failureCause(error),
    });
  }

  /** Per-frame plaintext facts (`frameDetail`). */
  private detail(frame: FrameInfo, plaintext: Buffer): void {
    if (!this.options.frameDetail) return;
    const r = this.reports[frame.index]!;
    r.plaintextBytes = plaintext.length;
    r.records = countLF(plaintext);
    r.plaintextSha256 = createHash('sha256').update(plaintext).digest('hex');
  }

  /** A complete frame that fails to decode: recorded on its row; the first one ends both views. */
  private failFrame(frame: FrameInfo, error: unknown): void {
    this.reports[frame.index]!.error = failureCause(error);
    if (this.fatal) return;
    const e = this.frameFailure(frame, error);
    this.st.artifactError = e;
    if (!this.st.storedError) this.st.storedError = e;
    this.fatal = true;
  }

  /** Frame 0 must decode to exactly one header line. */
  private async headerFrame(frame0: FrameInfo): Promise<void> {
    const st = this.st;
    let header: Buffer | undefined;
    try {
      header = await this.decoder.decode(this.source.read(frame0.start, frame0.end));
    } catch (error) {
      const e = this.frameFailure(frame0, error);
      this.reports[0]!.error = failureCause(error);
      st.storedError = e;
      st.artifactError = e;
      this.fatal = true;
    }
    if (!header) return;
    this.detail(frame0, header);
    st.artifact.write(header);
    if (this.options.artifactOnly) return;
    if (header.length === 0 || header.indexOf(0x0a) !== header.length - 1) {
      st.storedError = corrupt('corrupt Zstandard session log: first frame is not exactly one header line', { byteOffset: 0, rule: 'DSH-A1' });
      return;
    }
    st.startScanner(header);
    if (st.scanner) st.headerBytes = header.length;
  }

  /** Groups handed out so far (facts mode: which ones this thread parses itself). */
  private dealt = 0;

  /** Facts mode: does this thread parse the next group itself (`LineWorkers.mainShare` of them)? */
  private mainTakes(): boolean {
    const share = this.options.mainShare ?? this.workers!.mainShare;
    const g = this.dealt++;
    return Math.floor((g + 1) * share) > Math.floor(g * share);
  }

  private decodeGroup(group: FrameInfo[]): Promise<Decoded> {
    if (this.groups.isBig(group)) return Promise.resolve({ ok: 'streamed' as const });
    const input = this.source.read(group[0]!.start, group[group.length - 1]!.end);
    if (this.workers && !(this.options.pruned && this.mainTakes())) {
      return this.workers.lines(input, true, this.options.pruned ? { maxLine: this.st.maxLine } : undefined).then(
        (split) => ({ ok: true as const, plaintext: split.plaintext, split }),
        (error) => ({ ok: false as const, error }),
      );
    }
    return this.decoder.decode(input).then(
      (plaintext) => ({ ok: true as const, plaintext }),
      (error) => ({ ok: false as const, error }),
    );
  }

  /** Later frames, in groups, with groups decoding ahead of the one being scanned (one; more with workers). */
  private async laterFrames(): Promise<void> {
    const { groups, options } = this;
    const ahead: { group: FrameInfo[]; pending: Promise<Decoded> }[] = [];
    const prefetch = () => {
      while (ahead.length < (this.workers?.depth ?? 1)) {
        const next = groups.next();
        if (next === null) break;
        ahead.push({ group: next, pending: this.decodeGroup(next) });
      }
    };
    if (!this.fatal || options.frameDetail) prefetch();
    for (let g = 0; ahead.length > 0 && (!this.fatal || options.frameDetail); g++) {
      if (g > 0 && options.between) await options.between();
      const { group: current, pending } = ahead.shift()!;
      this.st.progress(current[current.length - 1]!.end);
      const result = await pending;
      prefetch();
      if (result.ok === 'streamed') await this.streamed(current[0]!);
      else if (result.ok) this.decoded(current, result.plaintext, result.split);
      else await this.frameByFrame(current);
    }
    for (const a of ahead) await a.pending;
  }

  /** One big frame, decoded streaming into both views. */
  private async streamed(frame: FrameInfo): Promise<void> {
    const st = this.st;
    let bytes = 0;
    let records = 0;
    const sha = this.options.frameDetail ? createHash('sha256') : undefined;
    const from = st.fed;
    let consumerError: unknown;
    try {
      await this.decoder.decodeStreaming(this.source.read(frame.start, frame.end), (chunk) => {
        bytes += chunk.length;
        if (sha) {
          sha.update(chunk);
          records += countLF(chunk);
        }
        if (!this.fatal) {
          try {
            st.artifact.write(chunk);
            st.feed(chunk);
          } catch (error) {
            consumerError = error;
            throw error;
          }
        }
      });
      st.segment('stream', frame.start, frame.end, from);
      if (sha) {
        const r = this.reports[frame.index]!;
        r.plaintextBytes = bytes;
        r.records = records;
        r.plaintextSha256 = sha.digest('hex');
      }
    } catch (error) {
      // A consumer's error is not a verdict about this frame.
      if (consumerError !== undefined) throw consumerError;
      this.failFrame(frame, error);
    }
  }

  /** A group decoded in one call: per-frame facts when each frame's size is known, then both views. */
  private decoded(current: FrameInfo[], plaintext: Buffer, lines: DecodedLines | FactLines | undefined): void {
    const st = this.st;
    // Split by declared content sizes when every frame declares one.
    let split: Buffer[] | undefined;
    if (this.options.frameDetail || current.length === 1) split = [plaintext];
    else {
      const sizes = current.map((f) => f.contentSize);
      if (sizes.every((s) => s !== null) && sizes.reduce<number>((a, b) => a + (b as number), 0) === plaintext.length) {
        split = [];
        let at = 0;
        for (const s of sizes as number[]) {
          split.push(plaintext.subarray(at, at + s));
          at += s;
        }
      }
    }
    if (this.options.frameDetail && split) for (let k = 0; k < current.length; k++) this.detail(current[k]!, split[k]!);
    if (!this.fatal) {
      st.artifact.write(plaintext);
      const from = st.fed;
      st.feed(plaintext, lines);
      st.segment('group', current[0]!.start, current[current.length - 1]!.end, from);
    }
  }

  /** The group failed: decode frame by frame to name the failing frame. */
  private async frameByFrame(current: FrameInfo[]): Promise<void> {
    const st = this.st;
    for (const frame of current) {
      // Only the decode is guarded: a consumer's error (a resource limit, a
      // failed write) is not a verdict about this frame.
      let plaintext: Buffer;
      try {
        plaintext = await this.decoder.decode(this.source.read(frame.start, frame.end));
      } catch (error) {
        this.failFrame(frame, error);
        if (!this.options.frameDetail) break;
        continue;
      }
      this.detail(frame, plaintext);
      if (!this.fatal) {
        st.artifact.write(plaintext);
        const from = st.fed;
        st.feed(plaintext);
        st.segment('group', frame.start, frame.end, from);
      }
    }
  }

  /** The torn final frame: its recoverable prefix is reported, and fed when the stored view holds. Returns the first recovered seq. */
  private async tornTail(): Promise<number | undefined> {
    const st = this.st;
    const torn = this.groups.torn;
    let recoveredFrom: number | undefined;
    let report: TornFrameReport | null = null;
    if (torn) {
      const bytes = this.source.read(torn.start, this.source.size);
      // Streamed: a torn frame may regenerate far more than it holds (a bomb); the scanner bounds each line.
      const deliver = !st.storedError && st.scanner !== undefined;
      const from = st.fed;
      if (deliver) {
        recoveredFrom = st.scanner!.eventCount;
        // The torn frame's recovered events are re-appended by DSH's load(): the repair plan prints them whole.
        st.scanner!.prunedRows = false;
        this.options.onTornTail?.();
      }
      const got = await forEachTornChunk(this.decoder, bytes, (chunk) => {
        if (deliver) st.feed(chunk);
      });
      report = { ...torn, recoveredPlaintextBytes: got.bytes, recoveredCompleteRecords: got.records };
      if (deliver) st.segment('torn', torn.start, this.source.size, from);
    }
    st.outcome.tornFrame = report;
    return recoveredFrom;
  }
}

export { LogError };

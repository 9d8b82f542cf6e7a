import { createHash } from 'node:crypto';
import type { ByteSource } from '../physical/source.js';
import { FrameWalker, type FrameInfo, type TornFrameInfo, ZSTD_MAGIC } from '../physical/zstd-frames.js';
import { createDecoder, DecodeFailure, forEachTornChunk, type FrameDecoder } from '../physical/decoders.js';
import { ArtifactText } from '../physical/artifact-text.js';
import { corrupt, LogError, UsageError, type SerializedError } from './errors.js';
import { parseHeaderMeta } from './header.js';
import { LogScanner, type EventSink, type LineInfo, type ScanPoint, DEFAULT_MAX_LINE_BYTES } from './scanner.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';
import { defaultReadJobs, LineWorkers, PARALLEL_GROUP_BYTES, type DecodedLines } from './parallel.js';

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

/** Compressed bytes per decode group: `fallback`, or `DSH_GROUP_BYTES` (tests make every frame its own group). */
function groupBytesDefault(fallback: number): number {
  const n = Number(process.env['DSH_GROUP_BYTES']);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}
/** Frames that may decode to more than this are streamed, never held whole. */
export const BIG_FRAME = 64 << 20;

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
 */
export async function readArtifact(source: ByteSource, options: ReadOptions = {}): Promise<ReadOutcome> {
  const { encoding } = detectEncoding(source);
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
    const outcome = await readWith(source, counted, workers);
    report?.({ bytes: source.size, totalBytes: source.size, events, done: true });
    return outcome;
  } finally {
    await workers?.close();
  }
}

async function readWith(source: ByteSource, options: ReadOptions, workers: LineWorkers | undefined): Promise<ReadOutcome> {
  const progress = (bytes: number) => options.onProgress?.({ bytes, totalBytes: source.size, events: 0, done: false });
  const rawPath = options.rawPath ?? source.name;
  const { encoding, by } = detectEncoding(source);
  const artifact = new ArtifactText(options.onArtifact, undefined, options.skipArtifact === true && !options.onArtifact);
  const maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const events: SessionEvent[] | undefined = options.collect ? [] : undefined;
  const onEvent = options.onEvent;
  const sink: EventSink = (event: SessionEvent, line: LineInfo) => {
    events?.push(event);
    onEvent?.(event, line);
  };
  const outcome: ReadOutcome = { encoding, encodingBy: by, size: source.size, artifact: { filename: 'session.jsonl' } };
  let storedError: LogError | undefined;
  let artifactError: LogError | undefined;
  let scanner: LogScanner | undefined;
  /** Logical bytes handed to the scanner after the header. */
  let fed = 0;
  const segment = (kind: PlaintextSegment['kind'], start: number, end: number, from: number) => {
    if (options.onSegment && scanner && !storedError && fed > from) {
      options.onSegment({ kind, start, end, logicalStart: headerBytes0 + from, logicalEnd: headerBytes0 + fed });
    }
  };
  let headerBytes0 = 0;

  const feed = (chunk: Buffer, split?: DecodedLines) => {
    if (!scanner || storedError) return;
    fed += chunk.length;
    try {
      if (split) scanner.writeDecoded(chunk, split);
      else scanner.write(chunk);
    } catch (error) {
      // A consumer's resource limit is not a verdict about the log.
      if (error instanceof UsageError) throw error;
      storedError = error as LogError;
    }
  };

  const finishArtifact = () => {
    artifact.end();
    if (artifactError) {
      outcome.artifact.error = artifactError;
      return;
    }
    let meta: SessionHeader | undefined;
    try {
      meta = parseHeaderMeta(artifact.firstLine());
    } catch (error) {
      // Retired header fields make DSH's readRaw throw their own error.
      outcome.artifact.error = error as LogError;
      return;
    }
    if (meta === undefined || (options.expectedId !== undefined && meta.id !== options.expectedId)) {
      outcome.artifact.error = corrupt(`corrupt session log: invalid header line in "${rawPath}"`, { rule: 'DSH-A1' });
      return;
    }
    outcome.artifact.meta = meta;
    // A light (skipArtifact) read tracked only the first line: it reports no content facts.
    if (artifact.isLight) return;
    outcome.artifact.contentBytes = artifact.bytes;
    outcome.artifact.contentSha256 = artifact.digest();
    outcome.artifact.lines = artifact.lines;
  };

  const resume = options.resume;
  if (resume) {
    scanner = new LogScanner(resume.point, rawPath, sink, maxLine);
    options.onHeader?.(scanner.meta);
  }
  if (encoding === 'none') {
    let headerParts: Buffer[] = [];
    let headerBytes = 0;
    let headerDone = resume !== undefined;
    for (let offset = resume?.at ?? 0; offset < source.size; offset += RAW_CHUNK) {
      if (offset > 0 && options.between) await options.between();
      const chunk = source.read(offset, offset + RAW_CHUNK);
      progress(offset + chunk.length);
      artifact.write(chunk);
      if (options.artifactOnly) continue;
      if (headerDone) {
        feed(chunk);
        continue;
      }
      const nl = chunk.indexOf(0x0a);
      if (nl === -1) {
        // A header line is held up to the first-line budget only (one past it cannot parse as kept).
        if (headerBytes + chunk.length <= Math.min(maxLine, HEADER_LINE_BUDGET)) headerParts.push(Buffer.from(chunk));
        headerBytes += chunk.length;
        continue;
      }
      headerDone = true;
      const record = Buffer.concat([...headerParts, chunk.subarray(0, nl + 1)]);
      headerParts = [];
      try {
        scanner = new LogScanner(record, rawPath, sink, maxLine);
      } catch (error) {
        storedError = error as LogError;
      }
      if (scanner) options.onHeader?.(scanner.meta);
      feed(chunk.subarray(nl + 1));
    }
    if (!options.artifactOnly && !headerDone) storedError = corrupt('empty or header-less session log', { rule: 'DSH-A1' });
    if (resume) outcome.artifact.meta = resume.point.meta;
    else finishArtifact();
    if (!options.artifactOnly && !storedError && scanner) {
      const committed = scanner.committedBytes;
      outcome.stored = {
        meta: scanner.meta,
        eventCount: scanner.eventCount,
        ...(events ? { events } : {}),
        committedBytes: committed,
        torn:
          committed < source.size
            ? { truncateTo: committed, recoveredEventSeqs: [], tornBytes: source.size - committed, lostPlaintextBytes: source.size - committed }
            : null,
        ...(scanner.issue ? { defect: { message: scanner.issue.message, line: scanner.issueLine ?? 0 } } : {}),
      };
    }
    if (storedError) outcome.error = storedError;
    return outcome;
  }

  // --- zstd ---
  const decoder = options.decoder ?? createDecoder();
  outcome.decoder = decoder.name;
  // Frames are walked as they are needed, so decoding starts before the walk reaches the end of
  // a big file; a structural error anywhere still decides the outcome, as if the walk came first.
  const walker = new FrameWalker(source, resume?.at ?? 0);
  const reports: FrameReport[] = [];
  const pull = (): FrameInfo | null => {
    const f = walker.next();
    if (f) reports.push({ index: f.index, start: f.start, end: f.end, checksumFlag: f.checksumFlag, contentSize: f.contentSize, blocks: f.blocks });
    return f;
  };
  const structural = (error: unknown): ReadOutcome => {
    delete outcome.frames;
    outcome.error = error as LogError;
    outcome.artifact.error = error as LogError;
    return outcome;
  };
  let frame0: FrameInfo | null;
  try {
    frame0 = pull();
  } catch (error) {
    return structural(error);
  }
  if (resume) {
    headerBytes0 = resume.headerBytes;
    fed = resume.point.committedBytes - resume.headerBytes;
  }
  if (frame0 === null && !resume) {
    const e = corrupt('empty or header-less Zstandard session log', { rule: 'DSH-A1' });
    outcome.frames = reports;
    outcome.error = e;
    outcome.artifact.error = e;
    outcome.tornFrame = walker.torn ? { ...walker.torn, recoveredPlaintextBytes: 0, recoveredCompleteRecords: 0 } : null;
    return outcome;
  }

  const frameFailure = (frame: FrameInfo, error: unknown): LogError =>
    corrupt(`corrupt Zstandard session log: frame at byte ${frame.start} failed validation`, {
      byteOffset: frame.start,
      rule: 'DSH-A6',
      cause: failureCause(error),
    });

  const detail = (frame: FrameInfo, plaintext: Buffer) => {
    if (!options.frameDetail) return;
    const r = reports[frame.index]!;
    r.plaintextBytes = plaintext.length;
    r.records = countLF(plaintext);
    r.plaintextSha256 = createHash('sha256').update(plaintext).digest('hex');
  };

  // Frame 0: the header frame, decoded alone (a resumed read starts after it).
  let fatal = false;
  let header: Buffer | undefined;
  try {
    if (!resume) header = await decoder.decode(source.read(frame0!.start, frame0!.end));
  } catch (error) {
    const e = frameFailure(frame0!, error);
    reports[0]!.error = failureCause(error);
    storedError = e;
    artifactError = e;
    fatal = true;
  }
  if (header) {
    detail(frame0!, header);
    artifact.write(header);
    if (!options.artifactOnly) {
      if (header.length === 0 || header.indexOf(0x0a) !== header.length - 1) {
        storedError = corrupt('corrupt Zstandard session log: first frame is not exactly one header line', { byteOffset: 0, rule: 'DSH-A1' });
      } else {
        try {
          scanner = new LogScanner(header, rawPath, sink, maxLine);
          headerBytes0 = header.length;
        } catch (error) {
          storedError = error as LogError;
        }
        // Outside the guard: a consumer's error is not a verdict about the header.
        if (scanner) options.onHeader?.(scanner.meta);
      }
    }
  }

  // Later frames, in groups, with a prefetch of the next group.
  const groupBytes = options.groupBytes ?? groupBytesDefault(workers ? PARALLEL_GROUP_BYTES : 1 << 20);
  const bigFrame = options.bigFrameBytes ?? BIG_FRAME;
  // A resumed read's first frame is a body frame: it opens the first group.
  let carry: FrameInfo | undefined = resume && frame0 ? frame0 : undefined;
  let firstGroup = true;
  /** The next group of complete frames (about `groupBytes` compressed; a big frame alone), pulled from the walk. */
  const nextGroup = (): FrameInfo[] | null => {
    const current: FrameInfo[] = [];
    let bytes = 0;
    // The first group is small, so the first events (and a streaming command's first output) come at once.
    const limit = firstGroup ? Math.min(groupBytes, 64 << 10) : groupBytes;
    for (;;) {
      const f = carry ?? pull();
      carry = undefined;
      if (f === null) break;
      const size = f.end - f.start;
      const big = f.maxPlaintext > bigFrame;
      if (current.length > 0 && (bytes + size > limit || big || options.frameDetail)) {
        carry = f;
        break;
      }
      current.push(f);
      bytes += size;
      if (big) break;
    }
    if (current.length === 0) return null;
    firstGroup = false;
    return current;
  };
  let scanError: unknown;
  const safeNextGroup = (): FrameInfo[] | null => {
    if (scanError !== undefined) return null;
    try {
      return nextGroup();
    } catch (error) {
      scanError = error;
      return null;
    }
  };

  type Decoded = { ok: true; plaintext: Buffer; split?: DecodedLines } | { ok: false; error: unknown } | { ok: 'streamed' };
  const isBig = (g: FrameInfo[]) => g.length === 1 && g[0]!.maxPlaintext > bigFrame;
  const decodeGroup = (group: FrameInfo[]): Promise<Decoded> => {
    if (isBig(group)) return Promise.resolve({ ok: 'streamed' as const });
    const first = group[0]!;
    const last = group[group.length - 1]!;
    const input = source.read(first.start, last.end);
    if (workers) {
      return workers.lines(input, true).then(
        (split) => ({ ok: true as const, plaintext: split.plaintext, split }),
        (error) => ({ ok: false as const, error }),
      );
    }
    return decoder.decode(input).then(
      (plaintext) => ({ ok: true as const, plaintext }),
      (error) => ({ ok: false as const, error }),
    );
  };

  // A complete frame that fails to decode: recorded on its row; the first one ends both views.
  const failFrame = (frame: FrameInfo, error: unknown) => {
    reports[frame.index]!.error = failureCause(error);
    if (fatal) return;
    const e = frameFailure(frame, error);
    artifactError = e;
    if (!storedError) storedError = e;
    fatal = true;
  };

  // Groups decoding ahead of the one being scanned (one; more with workers).
  const ahead: { group: FrameInfo[]; pending: Promise<Decoded> }[] = [];
  const prefetch = () => {
    while (ahead.length < (workers?.depth ?? 1)) {
      const next = safeNextGroup();
      if (next === null) break;
      ahead.push({ group: next, pending: decodeGroup(next) });
    }
  };
  if (!fatal || options.frameDetail) prefetch();
  for (let g = 0; ahead.length > 0 && (!fatal || options.frameDetail); g++) {
    if (g > 0 && options.between) await options.between();
    const { group: current, pending } = ahead.shift()!;
    progress(current[current.length - 1]!.end);
    const result = await pending;
    prefetch();
    if (result.ok === 'streamed') {
      const frame = current[0]!;
      let bytes = 0;
      let records = 0;
      const sha = options.frameDetail ? createHash('sha256') : undefined;
      const from = fed;
      let consumerError: unknown;
      try {
        await decoder.decodeStreaming(source.read(frame.start, frame.end), (chunk) => {
          bytes += chunk.length;
          if (sha) {
            sha.update(chunk);
            records += countLF(chunk);
          }
          if (!fatal) {
            try {
              artifact.write(chunk);
              feed(chunk);
            } catch (error) {
              consumerError = error;
              throw error;
            }
          }
        });
        segment('stream', frame.start, frame.end, from);
        if (sha) {
          const r = reports[frame.index]!;
          r.plaintextBytes = bytes;
          r.records = records;
          r.plaintextSha256 = sha.digest('hex');
        }
      } catch (error) {
        // A consumer's error is not a verdict about this frame.
        if (consumerError !== undefined) throw consumerError;
        failFrame(frame, error);
      }
      continue;
    }
    if (result.ok) {
      // Split by declared content sizes when every frame declares one.
      let split: Buffer[] | undefined;
      if (options.frameDetail || current.length === 1) split = [result.plaintext];
      else {
        const sizes = current.map((f) => f.contentSize);
        if (sizes.every((s) => s !== null) && sizes.reduce<number>((a, b) => a + (b as number), 0) === result.plaintext.length) {
          split = [];
          let at = 0;
          for (const s of sizes as number[]) {
            split.push(result.plaintext.subarray(at, at + s));
            at += s;
          }
        }
      }
      if (options.frameDetail && split) for (let k = 0; k < current.length; k++) detail(current[k]!, split[k]!);
      if (!fatal) {
        artifact.write(result.plaintext);
        const from = fed;
        feed(result.plaintext, result.split);
        segment('group', current[0]!.start, current[current.length - 1]!.end, from);
      }
      continue;
    }
    // The group failed: decode frame by frame to name the failing frame.
    for (const frame of current) {
      // Only the decode is guarded: a consumer's error (a resource limit, a
      // failed write) is not a verdict about this frame.
      let plaintext: Buffer;
      try {
        plaintext = await decoder.decode(source.read(frame.start, frame.end));
      } catch (error) {
        failFrame(frame, error);
        if (!options.frameDetail) break;
        continue;
      }
      detail(frame, plaintext);
      if (!fatal) {
        artifact.write(plaintext);
        const from = fed;
        feed(plaintext);
        segment('group', frame.start, frame.end, from);
      }
    }
  }
  for (const a of ahead) await a.pending;
  // Finish the structural walk: a structural error anywhere decides the outcome (DSH walks all frames first).
  if (scanError === undefined) {
    try {
      while (pull() !== null);
    } catch (error) {
      scanError = error;
    }
  }
  if (scanError !== undefined) return structural(scanError);
  outcome.frames = reports;
  const torn = walker.torn;

  if (!storedError && scanner && scanner.committedBytes !== scanner.consumedBytes) {
    storedError = corrupt('corrupt Zstandard session log: complete frame contains a torn JSONL record', { rule: 'DSH-A7' });
  }
  if (resume) outcome.artifact.meta = resume.point.meta;
  else finishArtifact();

  let tornReport: TornFrameReport | null = null;
  let recoveredFrom: number | undefined;
  if (torn) {
    const bytes = source.read(torn.start, source.size);
    // Streamed: a torn frame may regenerate far more than it holds (a bomb); the scanner bounds each line.
    const deliver = !storedError && scanner !== undefined;
    const from = fed;
    if (deliver) {
      recoveredFrom = scanner!.eventCount;
      options.onTornTail?.();
    }
    const got = await forEachTornChunk(decoder, bytes, (chunk) => {
      if (deliver) feed(chunk);
    });
    tornReport = { ...torn, recoveredPlaintextBytes: got.bytes, recoveredCompleteRecords: got.records };
    if (deliver) segment('torn', torn.start, source.size, from);
  }
  outcome.tornFrame = tornReport;

  if (!options.artifactOnly && !storedError && scanner) {
    const count = scanner.eventCount;
    let tornMarker: TornMarker | null = null;
    if (torn) {
      const from = recoveredFrom ?? count;
      const seqs: number[] = [];
      for (let s = from; s < count; s++) seqs.push(s);
      tornMarker = {
        truncateTo: torn.start,
        recoveredEventSeqs: seqs,
        tornBytes: source.size - torn.start,
        lostPlaintextBytes: scanner.consumedBytes - scanner.committedBytes,
      };
    }
    outcome.stored = {
      meta: scanner.meta,
      eventCount: count,
      ...(events ? { events } : {}),
      committedBytes: scanner.committedBytes,
      headerBytes: headerBytes0,
      torn: tornMarker,
      ...(scanner.issue ? { defect: { message: scanner.issue.message, line: scanner.issueLine ?? 0 } } : {}),
    };
  }
  if (storedError) outcome.error = storedError;
  return outcome;
}

export { LogError };

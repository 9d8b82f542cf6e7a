import type { ByteSource } from '../physical/source.js';
import { BIG_FRAME, detectEncoding } from '../log/read.js';
import { createDecoder, DecodeFailure, forEachTornChunk, frameChunksJs, type FrameDecoder } from '../physical/decoders.js';
import { parseHeaderMeta } from '../log/header.js';
import { decodeStorageRecord } from '../log/rows.js';
import { DEFAULT_MAX_LINE_BYTES, HUGE_LINE_BYTES } from '../log/scanner.js';
import type { Encoding, SessionEvent, SessionHeader } from '../log/types.js';
import { findMagic, walkSegments, type Segment } from './walker.js';
import { releaseMemory } from '../core/memory.js';

/**
 * Salvage: read PAST defects that make DSH (and `dsh inspect`) stop.
 *
 * Physical rules
 * - zstd: every structurally complete frame that decodes and checksum-verifies
 *   is kept; a frame that fails is reported (byte range, decoder error) and
 *   skipped; bytes that are not a frame (garbage, damaged frame headers) are
 *   skipped up to the next frame magic `28 B5 2F FD` (re-synchronisation); an
 *   incomplete final frame is decoded with the torn-prefix decoder, like DSH.
 *   A record that straddles a skipped region is lost (reported).
 * - raw: every complete line that parses (packed rows must validate) is kept;
 *   an unterminated final fragment is a torn tail.
 *
 * Sequence rule (no re-basing): original seqs are kept. Events are taken in
 * file order; an event is kept iff its `seq` is a safe integer greater than
 * the last kept seq (the first kept event may start above 0). A kept event
 * whose seq skips ahead opens a gap `{fromSeq, toSeq}` (the missing seqs),
 * attributed to the defects met since the previous kept event (`bytesLost`
 * = their byte total; `why` = their description; a gap with no damaged bytes
 * means the lines are simply missing). Events whose seq does not increase
 * (duplicates, rewinds) are dropped and reported. Damage after the last kept
 * event gives a trailing gap with `toSeq: null` (how many events were lost is
 * unknowable).
 */

export type DefectKind =
  | 'frame-failed'
  | 'garbage'
  | 'bad-structure'
  | 'torn-frame'
  | 'unparsable-line'
  | 'torn-line'
  | 'split-record'
  | 'invalid-event'
  | 'seq-not-increasing'
  | 'no-header';

export interface SalvageDefect {
  kind: DefectKind;
  /** Byte range in the input file (for zstd: the compressed bytes). */
  start: number;
  end: number;
  /** Bytes this defect made unreadable (0 for a torn frame that decoded completely, dropped events). */
  bytesLost: number;
  message: string;
  /** Zstd: index of the segment (frame slot) in file order. */
  frame?: number;
  /** 1-based body line (raw: file line minus the header; zstd: line within the decoded plaintext of the frame). */
  line?: number;
  /** Dropped events' seqs (seq-not-increasing). */
  seq?: number;
  /** Decoder error code (libzstd), when known. */
  code?: string;
}

export interface SalvageGap {
  /** First missing seq. */
  fromSeq: number;
  /** Last missing seq; null when the log's tail was lost (count unknowable). */
  toSeq: number | null;
  /** Number of missing seqs, when known. */
  missing: number | null;
  bytesLost: number;
  why: string;
  /** Indexes into `defects`. */
  defects: number[];
}

/** Where a kept event came from. */
export interface EventOrigin {
  /** zstd: frame start offset (a batch boundary); raw: always 0. */
  unit: number;
  /** Byte range of the containing frame (zstd) or line (raw). */
  start: number;
  end: number;
  /** True when decoded from a torn final frame / torn fragment region. */
  torn?: boolean;
}

export interface SalvageSummary {
  source: string;
  encoding: Encoding;
  bytes: number;
  header: SessionHeader | null;
  /** Events kept (original seqs). */
  keptEvents: number;
  firstSeq: number | null;
  lastSeq: number | null;
  /** zstd: frames decoded OK / frames found (complete + torn + failed). */
  frames?: { ok: number; failed: number; torn: boolean; total: number };
  /** Raw: complete body lines kept / seen. */
  lines?: { ok: number; failed: number; total: number };
  gaps: SalvageGap[];
  defects: SalvageDefect[];
  /** Sum of bytesLost over defects. */
  bytesLost: number;
  /** True when the input read without any defect (nothing to salvage). */
  clean: boolean;
}

export interface SalvageOptions {
  decoder?: FrameDecoder;
  /** Receives every kept event in order (original seq), with its origin; may be async. */
  onEvent?: (event: SessionEvent, origin: EventOrigin) => void | Promise<void>;
  /** Called when a gap is opened, before the event that closes it is delivered (trailing gaps at the end). */
  onGap?: (gap: SalvageGap) => void | Promise<void>;
  /** Called once the header is known (before any event); null when no header survived. */
  onHeader?: (header: SessionHeader | null) => void | Promise<void>;
  /** Keep all kept events in the result (tests, small logs). */
  collect?: boolean;
}

export interface SalvageResult extends SalvageSummary {
  events?: SessionEvent[];
}

const RAW_CHUNK = 4 << 20;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(defects: SalvageDefect[]): string {
  const parts: string[] = [];
  for (const d of defects) {
    if (d.kind === 'seq-not-increasing') continue;
    parts.push(`${d.kind} at bytes ${d.start}..${d.end}: ${d.message}`);
  }
  return parts.join('; ');
}

/** Defects that can hide events (as opposed to a dropped event or a clean torn frame). */
function canLoseEvents(d: SalvageDefect): boolean {
  if (d.kind === 'seq-not-increasing' || d.kind === 'no-header') return false;
  return d.bytesLost > 0;
}

class SeqKeeper {
  lastKept = -1;
  firstKept: number | null = null;
  kept = 0;
  pending: number[] = [];
  readonly gaps: SalvageGap[] = [];
  readonly events: SessionEvent[] | undefined;

  constructor(
    private readonly defects: SalvageDefect[],
    private readonly opts: SalvageOptions,
  ) {
    if (opts.collect) this.events = [];
  }

  defect(d: SalvageDefect): void {
    this.pending.push(this.defects.length);
    this.defects.push(d);
  }

  async offer(value: unknown, origin: EventOrigin, line: number | undefined, frame: number | undefined): Promise<void> {
    if (!isRecord(value) || typeof value['type'] !== 'string' || typeof value['seq'] !== 'number' || !Number.isSafeInteger(value['seq']) || (value['seq'] as number) < 0) {
      this.defect({
        kind: 'invalid-event',
        start: origin.start,
        end: origin.end,
        bytesLost: 0,
        message: 'record is not an event with a string type and a non-negative integer seq',
        ...(line !== undefined ? { line } : {}),
        ...(frame !== undefined ? { frame } : {}),
      });
      return;
    }
    const event = value as unknown as SessionEvent;
    if (event.seq <= this.lastKept) {
      this.defect({
        kind: 'seq-not-increasing',
        start: origin.start,
        end: origin.end,
        bytesLost: 0,
        message: `event seq ${event.seq} does not increase past ${this.lastKept}; dropped`,
        seq: event.seq,
        ...(line !== undefined ? { line } : {}),
        ...(frame !== undefined ? { frame } : {}),
      });
      return;
    }
    if (event.seq > this.lastKept + 1) {
      const ds = this.pending.map((i) => this.defects[i]!);
      const gap: SalvageGap = {
        fromSeq: this.lastKept + 1,
        toSeq: event.seq - 1,
        missing: event.seq - 1 - this.lastKept,
        bytesLost: ds.reduce((a, d) => a + d.bytesLost, 0),
        why: describe(ds) || 'seq discontinuity with no damaged bytes: the records are missing from the file',
        defects: this.pending.filter((i) => this.defects[i]!.kind !== 'seq-not-increasing'),
      };
      this.gaps.push(gap);
      await this.opts.onGap?.(gap);
    }
    this.pending = [];
    this.lastKept = event.seq;
    this.firstKept ??= event.seq;
    this.kept += 1;
    this.events?.push(event);
    await this.opts.onEvent?.(event, origin);
  }

  async finish(): Promise<void> {
    const ds = this.pending.map((i) => this.defects[i]!);
    if (ds.some(canLoseEvents)) {
      const lost = ds.filter(canLoseEvents);
      const gap: SalvageGap = {
        fromSeq: this.lastKept + 1,
        toSeq: null,
        missing: null,
        bytesLost: ds.reduce((a, d) => a + d.bytesLost, 0),
        why: `the log's tail after seq ${this.lastKept} is lost or was never written: ${describe(lost)}`,
        defects: this.pending.filter((i) => canLoseEvents(this.defects[i]!)),
      };
      this.gaps.push(gap);
      await this.opts.onGap?.(gap);
    }
    this.pending = [];
  }
}

/** Splits text into lines, remembering where each came from. */
/** What one line was: the header, and/or the records it holds. */
interface LineRead {
  header?: SessionHeader | null;
  records?: SessionEvent[];
}

class LineFeeder {
  /** The unterminated record's bytes so far, in one buffer grown by doubling (a record is never held twice to be joined). */
  private fragment: Buffer | undefined;
  fragmentBytes = 0;
  /** The fragment passed the line limit: its bytes are counted, not kept. */
  private fragmentOverflow = false;
  /** Body line counter (raw: file lines minus header). */
  line = 0;
  ok = 0;
  failed = 0;
  total = 0;
  headerSeen = false;
  header: SessionHeader | null = null;

  constructor(private readonly keeper: SeqKeeper, private readonly onHeader: (h: SessionHeader | null) => Promise<void>) {}

  /** Drop an unterminated fragment (the bytes before a skipped region). */
  dropFragment(range: { start: number; end: number }, frame?: number): void {
    if (this.fragmentBytes === 0) return;
    this.keeper.defect({
      kind: 'split-record',
      start: range.start,
      end: range.end,
      bytesLost: this.fragmentBytes,
      message: `a ${this.fragmentBytes}-byte record fragment was cut off by the damaged region that follows it`,
      ...(frame !== undefined ? { frame } : {}),
    });
    this.fragment = undefined;
    this.fragmentBytes = 0;
    this.fragmentOverflow = false;
  }

  /** The trailing fragment at EOF (torn tail). */
  tornFragment(range: { start: number; end: number }, frame?: number): void {
    if (this.fragmentBytes === 0) return;
    this.keeper.defect({
      kind: 'torn-line',
      start: range.start,
      end: range.end,
      bytesLost: this.fragmentBytes,
      message: `torn final record (${this.fragmentBytes} bytes without a terminating LF)`,
      ...(frame !== undefined ? { frame } : {}),
    });
    this.fragment = undefined;
    this.fragmentBytes = 0;
    this.fragmentOverflow = false;
  }

  /**
   * Feed text. `rangeOf(lineStart, lineEnd)` maps a line's offsets in `text`
   * (fragment included, may be negative) to the file byte range reported for it.
   */
  async feed(text: Buffer, origin: (lineStart: number, lineEnd: number) => EventOrigin, frame?: number): Promise<void> {
    let from = 0;
    for (let nl = text.indexOf(0x0a, from); nl !== -1; nl = text.indexOf(0x0a, from)) {
      const bytes = this.fragmentBytes + nl - from;
      const where = origin(from - this.fragmentBytes, nl + 1);
      if (this.fragmentOverflow || bytes > DEFAULT_MAX_LINE_BYTES) {
        this.dropPending();
        this.overlong(where, bytes, frame);
      } else {
        // A huge record is held as one thing at a time: bytes, then text, then value. Each step runs
        // in a frame of its own and the one before is freed after it returns (a live frame would
        // still refer to it).
        const huge = bytes >= HUGE_LINE_BYTES;
        const read = this.readLine(text, from, nl, bytes, where, huge, frame);
        if (huge) releaseMemory();
        if (read.header !== undefined) await this.onHeader(read.header);
        if (read.records) for (const r of read.records) await this.keeper.offer(r, where, this.line, frame);
      }
      from = nl + 1;
    }
    if (from < text.length) {
      // Past the line limit a fragment is counted, never kept (bounded memory).
      if (!this.fragmentOverflow && this.fragmentBytes + text.length - from > DEFAULT_MAX_LINE_BYTES) {
        this.fragment = undefined;
        this.fragmentOverflow = true;
      }
      if (!this.fragmentOverflow) this.keep(text.subarray(from));
      this.fragmentBytes += text.length - from;
    }
  }

  /** Append to the fragment (`fragmentBytes` is the caller's to advance). */
  private keep(bytes: Buffer): void {
    const need = this.fragmentBytes + bytes.length;
    // The buffer outgrown is given back before the record grows on (a 512 MiB record would
    // otherwise be held with all the sizes it went through).
    if (this.grow(need) >= 32 << 20) releaseMemory();
    bytes.copy(this.fragment!, this.fragmentBytes);
  }

  /** Make room for `need` bytes; the size of the buffer outgrown (0: none). */
  private grow(need: number): number {
    const old = this.fragment;
    if (old !== undefined && old.length >= need) return 0;
    this.fragment = Buffer.allocUnsafe(Math.min(DEFAULT_MAX_LINE_BYTES, Math.max(need, 2 * (old?.length ?? 0), 64 * 1024)));
    old?.copy(this.fragment, 0, 0, this.fragmentBytes);
    return old?.length ?? 0;
  }

  /**
   * The record being cut (the fragment) is already known to pass the line limit (a verdict pass
   * over its frame saw it): its bytes are counted from here on, never kept, as `feed` does once
   * the limit is reached.
   */
  overflowNow(): void {
    this.fragment = undefined;
    this.fragmentOverflow = true;
  }

  /** A line over the line limit: lost whole, like any line DSH cannot parse. */
  private overlong(where: EventOrigin, bytes: number, frame?: number): void {
    if (!this.headerSeen) {
      this.headerSeen = true;
      this.keeper.defect({ kind: 'no-header', start: where.start, end: where.end, bytesLost: 0, message: 'the first record is not a session header', ...(frame !== undefined ? { frame } : {}) });
      void this.onHeader(null);
    }
    this.line += 1;
    this.total += 1;
    this.failed += 1;
    this.keeper.defect({
      kind: 'unparsable-line',
      start: where.start,
      end: where.end,
      bytesLost: bytes + 1,
      message: `line ${this.line} is longer than the ${DEFAULT_MAX_LINE_BYTES >> 20} MiB line limit`,
      line: this.line,
      ...(frame !== undefined ? { frame } : {}),
    });
  }

  /** The line ending at `nl` of `chunk` (after the pending fragment), its text decoded and parsed. */
  private readLine(chunk: Buffer, from: number, nl: number, bytes: number, where: EventOrigin, huge: boolean, frame?: number): LineRead {
    const text = this.takeLine(chunk, from, nl, bytes);
    if (huge) releaseMemory();
    return this.parseLine(text, bytes, where, frame);
  }

  /** The line's text; the fragment it ends is let go. */
  private takeLine(chunk: Buffer, from: number, nl: number, bytes: number): string {
    if (this.fragmentBytes === 0) return chunk.toString('utf8', from, nl);
    this.keep(chunk.subarray(from, nl));
    const text = this.fragment!.toString('utf8', 0, bytes);
    this.dropPending();
    return text;
  }

  /** Forget the pending fragment. */
  private dropPending(): void {
    this.fragment = undefined;
    this.fragmentBytes = 0;
    this.fragmentOverflow = false;
  }

  /** A line's records, or the header it is (`header` null: the first line is not one; its records follow). */
  private parseLine(text: string, lineBytes: number, where: EventOrigin, frame?: number): LineRead {
    const read: LineRead = {};
    if (!this.headerSeen) {
      this.headerSeen = true;
      const meta = parseHeaderMeta(text);
      if (meta) {
        this.header = meta;
        read.header = meta;
        return read;
      }
      this.keeper.defect({ kind: 'no-header', start: where.start, end: where.end, bytesLost: 0, message: 'the first record is not a session header', ...(frame !== undefined ? { frame } : {}) });
      read.header = null;
    }
    this.line += 1;
    this.total += 1;
    let records: SessionEvent[];
    try {
      const parsed = JSON.parse(text);
      if (parsed === null) throw new Error('null record');
      records = decodeStorageRecord(parsed);
    } catch (error) {
      this.failed += 1;
      this.keeper.defect({
        kind: 'unparsable-line',
        start: where.start,
        end: where.end,
        bytesLost: lineBytes + 1,
        message: `line ${this.line} does not parse: ${(error as Error).message}`,
        line: this.line,
        ...(frame !== undefined ? { frame } : {}),
      });
      return read;
    }
    this.ok += 1;
    read.records = records;
    return read;
  }
}

function failureText(error: unknown): { message: string; code?: string } {
  if (error instanceof DecodeFailure) return { message: error.message, ...(error.code ? { code: error.code } : {}) };
  return { message: String((error as Error)?.message ?? error) };
}

/**
 * Salvage one artifact (zstd or raw, detected by magic). Never throws for
 * damaged input; the result lists what was kept and what was lost.
 */
export async function salvageSource(source: ByteSource, options: SalvageOptions = {}): Promise<SalvageResult> {
  const defects: SalvageDefect[] = [];
  const keeper = new SeqKeeper(defects, options);
  let headerDelivered = false;
  const onHeader = async (h: SessionHeader | null) => {
    if (headerDelivered) return;
    headerDelivered = true;
    await options.onHeader?.(h);
  };
  const feeder = new LineFeeder(keeper, onHeader);
  const zstd = detectEncoding(source).encoding === 'zstd';
  const result: SalvageResult = {
    source: source.name,
    encoding: zstd ? 'zstd' : 'none',
    bytes: source.size,
    header: null,
    keptEvents: 0,
    firstSeq: null,
    lastSeq: null,
    gaps: [],
    defects,
    bytesLost: 0,
    clean: false,
  };

  if (!zstd) {
    // Raw JSONL: line by line.
    let offset = 0;
    for (; offset < source.size; offset += RAW_CHUNK) {
      const chunk = source.read(offset, offset + RAW_CHUNK);
      const base = offset;
      await feeder.feed(chunk, (s, e) => ({ unit: 0, start: base + s, end: base + e }));
    }
    feeder.tornFragment({ start: source.size - feeder.fragmentBytes, end: source.size });
    result.lines = { ok: feeder.ok, failed: feeder.failed, total: feeder.total };
  } else {
    const decoder = options.decoder ?? createDecoder();
    const walk = walkSegments(source);
    let frames = 0;
    let ok = 0;
    let failed = 0;
    let torn = false;
    let index = -1;
    let step = walk.next();
    let contiguous = true;
    while (!step.done) {
      const seg: Segment = step.value;
      index += 1;
      let override: number | undefined;
      if (seg.kind === 'frame') {
        frames += 1;
        let plaintext: Buffer | undefined;
        let failure: { message: string; code?: string } | undefined;
        const bytes = source.read(seg.start, seg.end);
        // A frame that may decode to more than the reader holds is never held whole (it can be a
        // 65 KB frame of 2 GiB): decoded streaming once for the verdict (a frame that fails keeps
        // nothing), then pulled again chunk by chunk into the lines, as the reader streams it.
        const big = (seg.maxPlaintext ?? 0) > BIG_FRAME;
        // The verdict pass also finds the records that pass the line limit (between two LFs, the
        // first one continuing the fragment carried in): the delivery pass keeps none of their bytes.
        const overlong: [number, number][] = [];
        try {
          if (big) {
            let at = 0;
            let runStart = contiguous ? -feeder.fragmentBytes : 0;
            await decoder.decodeStreaming(bytes, (chunk) => {
              for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, nl + 1)) {
                if (at + nl - runStart > DEFAULT_MAX_LINE_BYTES) overlong.push([runStart, at + nl]);
                runStart = at + nl + 1;
              }
              at += chunk.length;
            });
            if (at - runStart > DEFAULT_MAX_LINE_BYTES) overlong.push([runStart, at]);
          } else plaintext = await decoder.decode(bytes);
        } catch (error) {
          failure = failureText(error);
        }
        if (plaintext || (big && !failure)) {
          ok += 1;
          if (!contiguous) feeder.dropFragment({ start: seg.start, end: seg.end }, index);
          contiguous = true;
          const fs = seg.start;
          const fe = seg.end;
          if (plaintext) await feeder.feed(plaintext, () => ({ unit: fs, start: fs, end: fe }), index);
          else {
            let at = 0;
            for (const chunk of frameChunksJs(bytes)) {
              if (overlong.some(([a, b]) => a < at && at <= b)) feeder.overflowNow();
              await feeder.feed(chunk, () => ({ unit: fs, start: fs, end: fe }), index);
              at += chunk.length;
            }
          }
        } else {
          failed += 1;
          // A damaged block size can make a frame swallow its successors:
          // re-synchronise on a later magic inside the declared extent.
          const next = findMagic(source, seg.start + 1);
          const end = next !== -1 && next < seg.end ? next : seg.end;
          if (end !== seg.end) override = end;
          feeder.dropFragment({ start: seg.start, end }, index);
          keeper.defect({
            kind: 'frame-failed',
            start: seg.start,
            end,
            bytesLost: end - seg.start,
            message: `frame failed validation: ${failure!.message}`,
            frame: index,
            ...(failure!.code ? { code: failure!.code } : {}),
          });
          contiguous = false;
        }
      } else if (seg.kind === 'torn') {
        frames += 1;
        torn = true;
        if (!contiguous) feeder.dropFragment({ start: seg.start, end: seg.end }, index);
        const fs = seg.start;
        const fe = seg.end;
        // Pulled chunk by chunk: a torn frame may regenerate far more than it holds (a bomb).
        const recovered = await forEachTornChunk(decoder, source.read(seg.start, seg.end), (chunk) =>
          feeder.feed(chunk, () => ({ unit: fs, start: fs, end: fe, torn: true }), index),
        );
        const fragment = feeder.fragmentBytes;
        keeper.defect({
          kind: 'torn-frame',
          start: seg.start,
          end: seg.end,
          bytesLost: 0,
          message: `incomplete final frame (${seg.reason}); ${recovered.bytes} plaintext bytes recovered by prefix decoding`,
          frame: index,
        });
        // The unrecoverable part: a cut record, or undecodable compressed bytes.
        if (fragment > 0) feeder.tornFragment({ start: seg.start, end: seg.end }, index);
        else if (recovered.bytes === 0) defects[defects.length - 1]!.bytesLost = seg.end - seg.start;
        contiguous = true;
      } else {
        if (seg.kind === 'bad-structure') frames += 1;
        feeder.dropFragment({ start: seg.start, end: seg.end }, index);
        keeper.defect({
          kind: seg.kind,
          start: seg.start,
          end: seg.end,
          bytesLost: seg.end - seg.start,
          message: seg.reason ?? seg.kind,
          frame: index,
        });
        contiguous = false;
      }
      step = walk.next(override);
    }
    feeder.tornFragment({ start: source.size, end: source.size });
    result.frames = { ok, failed, torn, total: frames };
  }
  if (!headerDelivered) await onHeader(null);
  await keeper.finish();
  result.header = feeder.header;
  result.keptEvents = keeper.kept;
  result.firstSeq = keeper.firstKept;
  result.lastSeq = keeper.kept > 0 ? keeper.lastKept : null;
  result.gaps = keeper.gaps;
  result.bytesLost = defects.reduce((a, d) => a + d.bytesLost, 0);
  result.clean = defects.length === 0 && keeper.firstKept === 0;
  if (keeper.events) result.events = keeper.events;
  return result;
}

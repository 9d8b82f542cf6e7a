/**
 * Random access to a log that was already read once: a sparse index built
 * during the validating pass (a checkpoint every ~256 KiB of logical text,
 * plus, for zstd, which compressed bytes decode to which logical bytes), and
 * a reader that re-decodes only the part that holds the events a view asks
 * for. Views that need a handful of events out of a multi-GB log keep this
 * index (kilobytes per 100 MB) instead of the parsed events (gigabytes).
 */
import { StringDecoder } from 'node:string_decoder';
import { releaseMemory } from '../core/memory.js';
import type { ByteSource } from '../physical/source.js';
import type { FrameDecoder } from '../physical/decoders.js';
import type { PlaintextSegment } from './read.js';
import { HUGE_LINE_BYTES, type LineInfo } from './scanner.js';
import { decodeStorageRecord } from './rows.js';
import { UsageError } from './errors.js';
import type { Encoding, SessionEvent } from './types.js';

/** Logical bytes between checkpoints. */
const CHECKPOINT_BYTES = 256 << 10;
const RAW_CHUNK = 1 << 20;

export interface LogIndex {
  encoding: Encoding;
  /** Seq of the first event of a checkpointed line, ascending. */
  checkpointSeqs: number[];
  /** Logical byte offset where that line starts. */
  checkpointOffsets: number[];
  /** zstd: compressed ↔ logical ranges, in logical order. */
  segments: PlaintextSegment[];
  /** Events in the stored view. */
  storedEventCount: number;
}

/** Collects a `LogIndex` from a reading pass (`onStored` + `onSegment`). */
export class LogIndexBuilder {
  private lastLine = -1;
  private nextOffset = 0;
  private count = 0;
  readonly index: LogIndex;

  constructor(encoding: Encoding) {
    this.index = { encoding, checkpointSeqs: [], checkpointOffsets: [], segments: [], storedEventCount: 0 };
  }

  readonly onStored = (event: SessionEvent, line: LineInfo): void => {
    this.count += 1;
    if (line.line === this.lastLine) return;
    this.lastLine = line.line;
    if (line.start < this.nextOffset) return;
    this.index.checkpointSeqs.push(event.seq);
    this.index.checkpointOffsets.push(line.start);
    this.nextOffset = line.start + CHECKPOINT_BYTES;
  };

  readonly onSegment = (segment: PlaintextSegment): void => {
    this.index.segments.push(segment);
  };

  /** Body line number of the last stored event's line (0 before any). */
  get lastEventLine(): number {
    return Math.max(0, this.lastLine);
  }

  finish(): LogIndex {
    this.index.storedEventCount = this.count;
    return this.index;
  }

  /** Go on collecting after the prefix `old` indexes (its last event on body line `eventLine`); a torn tail's segment is dropped. */
  static resume(old: LogIndex, eventLine: number): LogIndexBuilder {
    const b = new LogIndexBuilder(old.encoding);
    b.index.checkpointSeqs.push(...old.checkpointSeqs);
    b.index.checkpointOffsets.push(...old.checkpointOffsets);
    b.index.segments.push(...old.segments.filter((s) => s.kind !== 'torn'));
    b.count = old.storedEventCount;
    b.lastLine = eventLine;
    const lastCp = old.checkpointOffsets[old.checkpointOffsets.length - 1];
    b.nextOffset = lastCp === undefined ? 0 : lastCp + CHECKPOINT_BYTES;
    return b;
  }
}

/** Last position `i < count` whose `valueAt(i)` is <= x, for values ascending in `i` (-1 if none). */
export function floorIndexBy(count: number, valueAt: (i: number) => number, x: number): number {
  let lo = 0;
  let hi = count - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (valueAt(mid) <= x) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return at;
}

function floorIndex(values: readonly number[], x: number): number {
  return floorIndexBy(values.length, (i) => values[i] as number, x);
}

/** A seq range, inclusive at both ends. */
export type SeqRange = readonly [from: number, to: number];

/**
 * Re-reads stored events by seq from an indexed artifact. The file must be
 * the one the index was built from; a mismatch (the file changed) is an error,
 * never a wrong answer.
 */
export class Rereader {
  private cache: { segment: PlaintextSegment; text: Buffer } | undefined;
  private readonly segmentStarts: number[];
  /** Segments decoded so far (for statistics and tests). */
  decodedSegments = 0;

  constructor(
    private readonly source: ByteSource,
    private readonly index: LogIndex,
    private readonly decoder: FrameDecoder,
  ) {
    this.segmentStarts = index.segments.map((x) => x.logicalStart);
  }

  /**
   * The stored events with seqs in any of `ranges`, by seq; with `texts`, also the JSON line of
   * each event stored as one plain line (as the scanner's `LineInfo.text`).
   */
  async events(ranges: readonly SeqRange[], texts?: Map<number, string>): Promise<Map<number, SessionEvent>> {
    const out = new Map<number, SessionEvent>();
    const max = this.index.storedEventCount - 1;
    const sorted = ranges
      .map(([a, b]) => [Math.max(0, a), Math.min(max, b)] as [number, number])
      .filter(([a, b]) => a <= b)
      .sort((x, y) => x[0] - y[0]);
    const merged: [number, number][] = [];
    for (const r of sorted) {
      const last = merged[merged.length - 1];
      if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
      else merged.push([r[0], r[1]]);
    }
    for (let i = 0; i < merged.length; ) i = await this.sweep(merged, i, out, texts);
    return out;
  }

  /**
   * Read `ranges[i]` and the ranges after it that lie before the next checkpoint the scan would
   * otherwise jump to (one scan, not one per range); returns the index of the first range left.
   */
  private async sweep(ranges: readonly [number, number][], i: number, out: Map<number, SessionEvent>, texts?: Map<number, string>): Promise<number> {
    const seqs = this.index.checkpointSeqs;
    const cp = floorIndex(seqs, (ranges[i] as [number, number])[0]);
    if (cp < 0) throw changed();
    let expected = seqs[cp] as number;
    let at = i;
    await this.scanLines(this.index.checkpointOffsets[cp] as number, (line) => {
      let events: SessionEvent[];
      let text: string | undefined;
      try {
        text = typeof line === 'string' ? line : line.toString('utf8');
        const parsed: unknown = JSON.parse(text);
        events = decodeStorageRecord(parsed);
        if (!(events.length === 1 && events[0] === parsed)) text = undefined;
      } catch {
        throw changed();
      }
      if (texts && text !== undefined && events[0]) {
        const r = ranges[at] as [number, number];
        const q = events[0].seq;
        if (q >= r[0] && q <= r[1]) texts.set(q, text);
      }
      for (const e of events) {
        if (!e || e.seq !== expected) throw changed();
        expected += 1;
        const r = ranges[at] as [number, number];
        if (e.seq >= r[0] && e.seq <= r[1]) out.set(e.seq, e);
      }
      // Past the current range: go on to the next one in this scan unless a checkpoint lies between.
      while (at < ranges.length && expected > (ranges[at] as [number, number])[1]) {
        const next = ranges[at + 1];
        if (!next || (seqs[floorIndex(seqs, next[0])] as number) > expected) {
          at += 1;
          return false;
        }
        at += 1;
        // Events of this line already read that fall in the next range.
        for (const e of events) if (e.seq >= next[0] && e.seq <= next[1]) out.set(e.seq, e);
      }
      return true;
    });
    if (at === i || expected <= (ranges[at - 1] as [number, number])[1]) throw changed();
    return at;
  }

  /**
   * Every stored event in log order, in batches (one per decoded segment, or
   * per raw chunk), never the whole log: a view that prints each event with
   * the final fold at hand re-reads the log through this after the
   * validating pass (or the saved index). Seqs are checked as `events` does.
   */
  async *batches(): AsyncGenerator<SessionEvent[]> {
    const total = this.index.storedEventCount;
    const at = { expected: 0 };
    for await (const lines of this.lineBatches()) {
      const out = lineBatchEvents(lines, at, total);
      if (out.length > 0) yield out;
      if (at.expected >= total) break;
    }
    if (at.expected !== total) throw changed();
  }

  /**
   * The stored lines in log order, from the first event's line on, in batches (one per decoded
   * segment, or per raw chunk): each line without its LF, a view of the decoded text (valid until
   * the next batch), or a huge line's text (see `LineSplitter`). Lines after the stored events may follow (a torn tail the validating pass did
   * not commit): the caller counts events and stops at `storedEventCount`.
   */
  async *lineBatches(): AsyncGenerator<(Buffer | string)[]> {
    const seqs = this.index.checkpointSeqs;
    if (seqs.length === 0 || this.index.storedEventCount === 0) return;
    if (seqs[0] !== 0) throw changed();
    let lines: (Buffer | string)[] = [];
    const collect = (line: Buffer | string) => {
      lines.push(line);
      return true;
    };
    const take = (): (Buffer | string)[] => {
      const batch = lines;
      lines = [];
      return batch;
    };
    const offset = this.index.checkpointOffsets[0] as number;
    if (this.index.encoding === 'none') {
      const splitter = new LineSplitter(collect);
      for (let at = offset; at < this.source.size; at += RAW_CHUNK) {
        splitter.push(this.source.read(at, Math.min(this.source.size, at + RAW_CHUNK)));
        const batch = take();
        if (batch.length > 0) yield batch;
      }
    } else {
      const segments = this.index.segments;
      let s = floorIndex(this.segmentStarts, offset);
      if (s < 0) throw changed();
      // The next segment decodes (on the decoder's thread) while the caller handles this one's lines.
      let ahead: { seg: PlaintextSegment; text: Promise<Buffer> } | undefined;
      const decodeAhead = (i: number) => {
        const next = segments[i];
        ahead = next !== undefined && next.kind !== 'stream' ? { seg: next, text: this.decodeChecked(next) } : undefined;
        // Its failure is raised where it is awaited, not as an unhandled rejection meanwhile.
        ahead?.text.catch(() => undefined);
      };
      for (; s < segments.length; s++) {
        const seg = segments[s] as PlaintextSegment;
        const lines = new LineSplitter(collect);
        if (ahead?.seg === seg) {
          const text = await ahead.text;
          decodeAhead(s + 1);
          this.decodedSegments += 1;
          this.feedText(seg, offset, text, lines);
        } else {
          decodeAhead(s + 1);
          // A streamed (big) frame's lines come as one batch.
          await this.feedSegment(seg, offset, lines);
        }
        const batch = take();
        if (batch.length > 0) yield batch;
      }
    }
  }

  /** Visit complete lines from a logical offset on, until `visit` returns false or the text ends. */
  private async scanLines(offset: number, visit: (line: Buffer | string) => boolean): Promise<void> {
    if (this.index.encoding === 'none') {
      const lines = new LineSplitter(visit);
      for (let at = offset; at < this.source.size && !lines.stopped; at += RAW_CHUNK) {
        lines.push(this.source.read(at, Math.min(this.source.size, at + RAW_CHUNK)));
      }
      return;
    }
    const segments = this.index.segments;
    let s = floorIndex(this.segmentStarts, offset);
    if (s < 0) throw changed();
    for (; s < segments.length; s++) {
      const lines = new LineSplitter(visit);
      await this.feedSegment(segments[s] as PlaintextSegment, offset, lines);
      if (lines.stopped) return;
    }
  }

  /**
   * Decode one segment into `lines`, skipping the text before logical `offset`. Lines never span
   * segments (every complete frame ends with a newline): one splitter per segment.
   */
  private async feedSegment(seg: PlaintextSegment, offset: number, lines: LineSplitter): Promise<void> {
    if (seg.kind === 'stream') await this.decoder.decodeStreaming(this.source.read(seg.start, seg.end), this.feeder(seg, offset, lines));
    else this.feedText(seg, offset, await this.decoded(seg), lines);
  }

  /** Hands a segment's decoded text (or its streamed pieces) to `lines`, skipping the text before logical `offset`. */
  private feeder(seg: PlaintextSegment, offset: number, lines: LineSplitter): (chunk: Buffer) => void {
    let skip = Math.max(0, offset - seg.logicalStart);
    return (chunk: Buffer) => {
      if (lines.stopped) return;
      if (skip >= chunk.length) {
        skip -= chunk.length;
        return;
      }
      lines.push(skip > 0 ? chunk.subarray(skip) : chunk);
      skip = 0;
    };
  }

  private feedText(seg: PlaintextSegment, offset: number, text: Buffer, lines: LineSplitter): void {
    this.feeder(seg, offset, lines)(text);
  }

  private async decoded(seg: PlaintextSegment): Promise<Buffer> {
    if (this.cache?.segment === seg) return this.cache.text;
    const text = await this.decodeChecked(seg);
    this.decodedSegments += 1;
    this.cache = { segment: seg, text };
    return text;
  }

  /** A (group or torn) segment's decoded text, checked against the length the validating pass saw. */
  private async decodeChecked(seg: PlaintextSegment): Promise<Buffer> {
    const bytes = this.source.read(seg.start, seg.end);
    const text = seg.kind === 'torn' ? await this.decoder.decodeTornPrefix(bytes) : await this.decoder.decode(bytes);
    // The torn prefix may end in a partial record the scanner never committed.
    if (seg.kind !== 'torn' && text.length !== seg.logicalEnd - seg.logicalStart) throw changed();
    return text;
  }
}

/**
 * The events of a batch of re-read lines (`at.expected` advanced), stopping at `total` (past it: the
 * torn tail the validating pass did not commit). A function of its own, and the lines let go: no
 * suspended frame still refers to a huge line's text while its events are handled.
 */
function lineBatchEvents(lines: (Buffer | string)[], at: { expected: number }, total: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (const line of lines) {
    if (at.expected >= total) break;
    const events = lineEvents(line, at.expected);
    at.expected += events.length;
    for (const e of events) out.push(e);
  }
  lines.length = 0;
  return out;
}

/** The events of one re-read line, which must continue the seqs at `expected` (else the log changed). */
function lineEvents(line: Buffer | string, expected: number): SessionEvent[] {
  let events: SessionEvent[];
  try {
    events = decodeStorageRecord(JSON.parse(typeof line === 'string' ? line : line.toString('utf8')));
  } catch {
    throw changed();
  }
  for (const [i, e] of events.entries()) if (!e || e.seq !== expected + i) throw changed();
  return events;
}

/** The error of a re-read that does not match the validating pass (the file changed in between). */
export function changed(): UsageError {
  return new UsageError('the log changed while it was being read (its second read does not match the first)', 'io');
}


/**
 * Splits pushed chunks into complete lines (a partial line waits for the next chunk); `visit`
 * returning false stops it. A line is its bytes, or its text when it is huge (`HUGE_LINE_BYTES`).
 */
export class LineSplitter {
  /** The unterminated line so far, kept as its pieces: joined once, when its LF arrives. */
  private carry: Buffer[] = [];
  private carryBytes = 0;
  /** A huge unterminated line: its text pieces so far (the decoder carries a character cut between chunks). */
  private text: { pieces: string[]; decoder: StringDecoder } | undefined;
  stopped = false;
  constructor(private readonly visit: (line: Buffer | string) => boolean) {}
  push(chunk: Buffer): void {
    if (this.stopped) return;
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      let line: Buffer | string = chunk.subarray(start, nl);
      if (this.text) {
        line = this.takeText(line);
        releaseMemory();
      } else if (this.carry.length > 0) {
        this.carry.push(line);
        line = Buffer.concat(this.carry);
        this.carry = [];
        this.carryBytes = 0;
      }
      if (!this.visit(line)) {
        this.stopped = true;
        return;
      }
      start = nl + 1;
    }
    if (start === chunk.length) return;
    if (this.text) {
      this.text.pieces.push(this.text.decoder.write(chunk.subarray(start)));
      return;
    }
    // A copy: the caller may reuse the chunk's memory.
    this.carry.push(Buffer.from(chunk.subarray(start)));
    this.carryBytes += chunk.length - start;
    if (this.carryBytes >= HUGE_LINE_BYTES) {
      // What earlier work let go is freed before this line's text is held (as the scanner does).
      releaseMemory();
      const decoder = new StringDecoder('utf8');
      this.text = { pieces: this.carry.map((b) => decoder.write(b)), decoder };
      this.carry = [];
      this.carryBytes = 0;
    }
  }

  /** The huge line's text, ended by `last`; a method of its own, so no frame still refers to the pieces when they are freed. */
  private takeText(last: Buffer): string {
    const { pieces, decoder } = this.text!;
    this.text = undefined;
    pieces.push(decoder.write(last), decoder.end());
    return pieces.join('');
  }
}

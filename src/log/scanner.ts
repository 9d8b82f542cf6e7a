import { StringDecoder } from 'node:string_decoder';
import { releaseMemory } from '../core/memory.js';
import { corrupt, LogError } from './errors.js';
import { parseHeaderRecord } from './header.js';
import { decodeStorageRecord, isRowRecord } from './rows.js';
import type { SessionEvent, SessionHeader } from './types.js';
import { CHUNK_ROW, FACT_STRIDE, prunedChunks, prunedEvent, prunedRowMembers, SLOW, type LineFacts } from './facts.js';

export type EventSink = (event: SessionEvent, line: LineInfo) => void;

/** Where an event came from in the logical text. */
export interface LineInfo {
  /** 1-based body line number (header excluded; a packed row is one line). */
  line: number;
  /** Byte offset of the line in the logical (decoded) text. */
  start: number;
  /** Byte offset just after the line's LF. */
  end: number;
  /** The line's JSON text, when the line is one plain event (not a packed row). */
  text?: string;
}

/** Lines longer than this are unparsable for DSH too (V8 cannot make the string). */
export const DEFAULT_MAX_LINE_BYTES = 512 * 1024 * 1024;

/** Where a scan of an accepted prefix stopped cleanly (after its last committed line), to continue from. */
export interface ScanPoint {
  meta: SessionHeader;
  /** Logical bytes committed (header included): the next line starts here. */
  committedBytes: number;
  /** Body lines seen (the last committed line's number). */
  eventLine: number;
  eventCount: number;
}

/** A line's text, or undefined past V8's string limit (then unparsable, as for DSH). */
function utf8(buf: Buffer, start: number, end: number): string | undefined {
  try {
    return buf.toString('utf8', start, end);
  } catch {
    return undefined;
  }
}

/** A line at least this long is parsed only after its pieces are freed (see `releaseMemory`). */
export const HUGE_LINE_BYTES = 32 * 1024 * 1024;

/** A line's text pieces as one flat string, or undefined past V8's string limit. */
function joined(pieces: string[]): string | undefined {
  try {
    return pieces.length === 1 ? pieces[0] : pieces.join('');
  } catch {
    return undefined;
  }
}

/**
 * DSH's shared line scanner (`SessionLogScanner`) as a push parser: complete
 * lines are parsed and row-expanded; the first defect becomes the pending
 * issue that ends the preserved prefix; a later line that decodes to a
 * `turn/end` makes the issue fatal (thrown from `write`).
 */
export class LogScanner {
  readonly meta: SessionHeader;
  /**
   * The text of a line that began in earlier chunks, decoded as its bytes arrive (the decoder
   * carries a character split between chunks; decoding in pieces gives the text decoding the
   * joined bytes gives), so a long line is held as its text pieces only, never as bytes too.
   */
  private fragments: string[] = [];
  private readonly fragmentDecoder = new StringDecoder('utf8');
  private fragmentBytes = 0;
  private fragmentOverflow = false;
  private inputBytes: number;
  private committed: number;
  private eventLine = 0;
  private count = 0;
  issue: LogError | undefined;
  /** Line number of the first defect, for forensic reports. */
  issueLine: number | undefined;
  /**
   * Packed rows' members go to the sink as `PrunedEvent`s (type, seq, time and the row's turn and
   * step: what the fold and the step rules read of a chunk), not built, as a worker's facts hand
   * them over: for a read whose consumers take pruned events or lean rows (`ReadOptions.pruned`,
   * `ReadOptions.leanRows`). The reader turns it off where events are kept (a torn tail).
   */
  prunedRows = false;

  /** `header`: the header record, or the point an earlier scan of the same prefix stopped at. */
  constructor(
    header: Buffer | ScanPoint,
    rawPath: string,
    private readonly sink: EventSink,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {
    if (Buffer.isBuffer(header)) {
      this.meta = parseHeaderRecord(header, rawPath);
      this.inputBytes = header.length;
      this.committed = header.length;
    } else {
      this.meta = header.meta;
      this.inputBytes = header.committedBytes;
      this.committed = header.committedBytes;
      this.eventLine = header.eventLine;
      this.count = header.eventCount;
    }
  }

  get eventCount(): number {
    return this.count;
  }
  get committedBytes(): number {
    return this.committed;
  }
  get consumedBytes(): number {
    return this.inputBytes;
  }
  /** Bytes of an unterminated trailing fragment. */
  get pendingBytes(): number {
    return this.fragmentBytes;
  }

  write(chunk: Buffer): void {
    const chunkStart = this.inputBytes;
    this.inputBytes += chunk.length;
    let lineStart = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, lineStart)) {
      if (this.fragments.length > 0 || this.fragmentOverflow) this.joinFragments(chunk, lineStart, nl, chunkStart);
      else if (nl - lineStart > this.maxLineBytes) this.consume(undefined, chunkStart + lineStart, chunkStart + nl + 1);
      // No per-line Buffer: the line is decoded straight from the chunk.
      else this.consume(utf8(chunk, lineStart, nl), chunkStart + lineStart, chunkStart + nl + 1);
      lineStart = nl + 1;
    }
    this.keepFragment(chunk, lineStart);
  }

  /**
   * The same as `write(chunk)` when another thread already decoded the
   * chunk's complete lines (`splitText` in parallel.ts): line k is a slice of
   * its text piece, never decoded again; `ends[k]` is the byte offset just
   * past its LF.
   */
  writeDecoded(chunk: Buffer, split: { pieces: readonly (string | null)[]; pieceLines: ArrayLike<number>; ends: ArrayLike<number>; charEnds: ArrayLike<number> }): void {
    const { pieces, pieceLines, ends, charEnds } = split;
    const chunkStart = this.inputBytes;
    this.inputBytes += chunk.length;
    let lineStart = 0;
    let k = 0;
    for (let p = 0; p < pieces.length; p++) {
      const text = pieces[p];
      let charStart = 0;
      for (const last = k + (pieceLines[p] as number); k < last; k++) {
        const nl = (ends[k] as number) - 1;
        const charEnd = charEnds[k] as number;
        // A line that continues the pending fragment is joined from the bytes, as in `write`.
        if (k === 0 && (this.fragments.length > 0 || this.fragmentOverflow)) this.joinFragments(chunk, 0, nl, chunkStart);
        else if (text === null || text === undefined || nl - lineStart > this.maxLineBytes) this.consume(undefined, chunkStart + lineStart, chunkStart + nl + 1);
        else this.consume(text.slice(charStart, charEnd - 1), chunkStart + lineStart, chunkStart + nl + 1);
        lineStart = nl + 1;
        charStart = charEnd;
      }
    }
    this.keepFragment(chunk, lineStart);
  }

  /**
   * The same as `write(chunk)` when a worker already parsed and checked the chunk's complete
   * lines (`facts.ts`): a line it handed over as facts goes to the sink as pruned events without
   * being parsed here, unless this scanner's state says the line is not simply the next event
   * (a pending defect, a seq that is not the next one, a line that continues a fragment); that
   * line, and every line the worker left alone, is decoded and parsed here as `write` does.
   */
  writeFacts(chunk: Buffer, ends: ArrayLike<number>, facts: LineFacts): void {
    const chunkStart = this.inputBytes;
    this.inputBytes += chunk.length;
    const rows = facts.rows;
    let lineStart = 0;
    for (let k = 0; k < ends.length; k++) {
      const nl = (ends[k] as number) - 1;
      const kind = rows[k * FACT_STRIDE] as number;
      const start = chunkStart + lineStart;
      const end = chunkStart + nl + 1;
      if (k === 0 && (this.fragments.length > 0 || this.fragmentOverflow)) this.joinFragments(chunk, 0, nl, chunkStart);
      else if (kind === SLOW || nl - lineStart > this.maxLineBytes || this.issue !== undefined || rows[k * FACT_STRIDE + 1] !== this.count) {
        this.consume(nl - lineStart > this.maxLineBytes ? undefined : utf8(chunk, lineStart, nl), start, end);
      } else {
        this.eventLine += 1;
        if (kind === CHUNK_ROW) {
          const info: LineInfo = { line: this.eventLine, start, end };
          for (const event of prunedChunks(facts, k)) {
            this.count += 1;
            this.sink(event, info);
          }
        } else {
          this.count += 1;
          this.sink(prunedEvent(facts, k), { line: this.eventLine, start, end });
        }
        this.committed = end;
      }
      lineStart = nl + 1;
    }
    this.keepFragment(chunk, lineStart);
  }

  /** A line that began in earlier chunks ends at `nl` of `chunk`. */
  private joinFragments(chunk: Buffer, lineStart: number, nl: number, chunkStart: number): void {
    const start = chunkStart + lineStart - this.fragmentBytes;
    const length = this.fragmentBytes + (nl - lineStart);
    const overflow = this.fragmentOverflow || length > this.maxLineBytes;
    const text = this.takeFragments(overflow ? undefined : chunk.subarray(lineStart, nl));
    // The pieces are garbage now; free them before parsing makes the line's value (a copy as big).
    if (length >= HUGE_LINE_BYTES) releaseMemory();
    this.consume(text, start, chunkStart + nl + 1);
  }

  /**
   * The pending line's text ended by `last` (undefined: the line is dropped), and a fresh start.
   * A method of its own, so no frame still refers to the pieces when they are freed.
   */
  private takeFragments(last: Buffer | undefined): string | undefined {
    let text: string | undefined;
    if (last) {
      this.fragments.push(this.fragmentDecoder.write(last), this.fragmentDecoder.end());
      text = joined(this.fragments);
    } else this.fragmentDecoder.end();
    this.fragments = [];
    this.fragmentBytes = 0;
    this.fragmentOverflow = false;
    return text;
  }

  private keepFragment(chunk: Buffer, lineStart: number): void {
    if (lineStart < chunk.length) {
      const rest = chunk.length - lineStart;
      if (this.fragmentOverflow || this.fragmentBytes + rest > this.maxLineBytes) {
        // Past the line limit the text so far is dropped (the line is unparsable): freed now, not
        // when V8 next decides (a second read of the log would otherwise hold it again beside it).
        const dropped = this.fragments.length > 0;
        this.fragments = [];
        this.fragmentOverflow = true;
        if (dropped) releaseMemory();
      } else {
        // A line becoming huge: what earlier work let go (a pass given up for another) is freed
        // before this line's pieces, its text and its value are held.
        if (this.fragmentBytes < HUGE_LINE_BYTES && this.fragmentBytes + rest >= HUGE_LINE_BYTES) releaseMemory();
        this.fragments.push(this.fragmentDecoder.write(chunk.subarray(lineStart)));
      }
      this.fragmentBytes += rest;
    }
  }

  private unparsable(start: number): void {
    if (this.issue === undefined) {
      this.issue = corrupt(`corrupt session log: unparsable committed event at line ${this.eventLine}`, { byteOffset: start, rule: 'DSH-A8' });
      this.issueLine = this.eventLine;
    }
  }

  /** One complete line (`text` undefined: longer than the limit). */
  private consume(text: string | undefined, start: number, end: number): void {
    this.eventLine += 1;
    if (text === undefined) return this.unparsable(start);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return this.unparsable(start);
    }
    if (isRowRecord(parsed)) return this.consumeRow(parsed, start, end);
    // One plain value: one event (unvalidated, as DSH's decodeStorageRecord passes it through).
    if (parsed === null) throw this.nullRecord(start);
    const event = parsed as SessionEvent;
    const turnEnd = typeof parsed === 'object' && event.type === 'turn/end';
    if (this.issue !== undefined) {
      if (turnEnd) throw this.issue;
      return;
    }
    if (event.seq !== this.count) {
      this.seqGap(event.seq, start);
      if (turnEnd) throw this.issue;
      return;
    }
    this.count += 1;
    this.sink(event, { line: this.eventLine, start, end, text });
    this.committed = end;
  }

  /** A packed chunk row: validated and expanded (its members are chunks, never a turn/end). */
  private consumeRow(row: Record<string, unknown>, start: number, end: number): void {
    let decoded: SessionEvent[];
    try {
      decoded = this.prunedRows ? prunedRowMembers(row) : decodeStorageRecord(row);
    } catch {
      return this.unparsable(start);
    }
    if (this.issue !== undefined) return;
    const seq0 = (decoded[0] as SessionEvent).seq;
    if (seq0 !== this.count) return this.seqGap(seq0, start);
    const info: LineInfo = { line: this.eventLine, start, end };
    for (const event of decoded) {
      this.count += 1;
      this.sink(event, info);
    }
    this.committed = end;
  }

  private seqGap(seq: unknown, start: number): void {
    this.issue = corrupt(`corrupt session log: seq gap in committed region at line ${this.eventLine} (expected ${this.count}, got ${String(seq)})`, {
      byteOffset: start,
      rule: 'DSH-A9',
    });
    this.issueLine = this.eventLine;
  }

  private nullRecord(start: number): LogError {
    // DSH reads `.type`/`.seq` of a JSON null and dies with a TypeError.
    return new LogError(`Cannot read properties of null (reading '${this.issue !== undefined ? 'type' : 'seq'}')`, {
      dshClass: 'TypeError',
      kind: 'corrupt',
      byteOffset: start,
      rule: 'DSH-A8',
    });
  }
}

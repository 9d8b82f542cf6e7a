import { corrupt, LogError } from './errors.js';
import { parseHeaderRecord } from './header.js';
import { decodeStorageRecord } from './rows.js';
import type { SessionEvent, SessionHeader } from './types.js';

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

/**
 * DSH's shared line scanner (`SessionLogScanner`) as a push parser: complete
 * lines are parsed and row-expanded; the first defect becomes the pending
 * issue that ends the preserved prefix; a later line that decodes to a
 * `turn/end` makes the issue fatal (thrown from `write`).
 */
export class LogScanner {
  readonly meta: SessionHeader;
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private fragmentOverflow = false;
  private inputBytes: number;
  private committed: number;
  private eventLine = 0;
  private count = 0;
  issue: LogError | undefined;
  /** Line number of the first defect, for forensic reports. */
  issueLine: number | undefined;

  constructor(
    headerRecord: Buffer,
    rawPath: string,
    private readonly sink: EventSink,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {
    this.meta = parseHeaderRecord(headerRecord, rawPath);
    this.inputBytes = headerRecord.length;
    this.committed = headerRecord.length;
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
      let line = chunk.subarray(lineStart, nl);
      let overflow = false;
      let start = chunkStart + lineStart;
      if (this.fragments.length > 0 || this.fragmentOverflow) {
        start -= this.fragmentBytes;
        overflow = this.fragmentOverflow || this.fragmentBytes + line.length > this.maxLineBytes;
        line = overflow ? Buffer.alloc(0) : Buffer.concat([...this.fragments, line], this.fragmentBytes + line.length);
        this.fragments = [];
        this.fragmentBytes = 0;
        this.fragmentOverflow = false;
      } else if (line.length > this.maxLineBytes) {
        overflow = true;
      }
      this.consume(line, overflow, start, chunkStart + nl + 1);
      lineStart = nl + 1;
    }
    if (lineStart < chunk.length) {
      const rest = chunk.length - lineStart;
      if (this.fragmentOverflow || this.fragmentBytes + rest > this.maxLineBytes) {
        this.fragments = [];
        this.fragmentOverflow = true;
      } else {
        this.fragments.push(Buffer.from(chunk.subarray(lineStart)));
      }
      this.fragmentBytes += rest;
    }
  }

  private consume(line: Buffer, overflow: boolean, start: number, end: number): void {
    this.eventLine += 1;
    let decoded: SessionEvent[];
    let text = '';
    let plain = false;
    try {
      if (overflow) throw new Error('line too long');
      text = line.toString('utf8');
      const parsed: unknown = JSON.parse(text);
      decoded = decodeStorageRecord(parsed);
      plain = decoded.length === 1 && decoded[0] === parsed;
    } catch {
      if (this.issue === undefined) {
        this.issue = corrupt(`corrupt session log: unparsable committed event at line ${this.eventLine}`, { byteOffset: start, rule: 'DSH-A8' });
        this.issueLine = this.eventLine;
      }
      return;
    }
    if (decoded.some((e) => e === null)) {
      // DSH reads `.type`/`.seq` of a JSON null and dies with a TypeError.
      throw new LogError(`Cannot read properties of null (reading '${this.issue !== undefined ? 'type' : 'seq'}')`, {
        dshClass: 'TypeError',
        kind: 'corrupt',
        byteOffset: start,
        rule: 'DSH-A8',
      });
    }
    const hasTurnEnd = () => decoded.some((e) => typeof e === 'object' && e.type === 'turn/end');
    if (this.issue !== undefined) {
      if (hasTurnEnd()) throw this.issue;
      return;
    }
    for (let i = 0; i < decoded.length; i++) {
      const seq = (decoded[i] as SessionEvent).seq;
      if (seq !== this.count + i) {
        this.issue = corrupt(
          `corrupt session log: seq gap in committed region at line ${this.eventLine} (expected ${this.count + i}, got ${String(seq)})`,
          { byteOffset: start, rule: 'DSH-A9' },
        );
        this.issueLine = this.eventLine;
        if (hasTurnEnd()) throw this.issue;
        return;
      }
    }
    const info: LineInfo = { line: this.eventLine, start, end };
    if (plain) info.text = text;
    for (const event of decoded) {
      this.count += 1;
      this.sink(event, info);
    }
    this.committed = end;
  }
}

import type { Writable } from 'node:stream';
import { writeOut } from './io.js';
import { decimalBefore, textPieces, UsageError, type RowMemberBytes } from '../api/log.js';
export { forEachLogicalEvent, logicalEventJson, SINGLE_PASS_BYTES, type Emit, heldBytesBudget, streamValidated, streamPassBytes, targetBytes, type LineEmit, type RowMemberBytes } from '../api/log.js';

/** Room for a safe integer's digits and sign (`Output.pushInt`). */
const DIGITS = new Uint8Array(17);

/**
 * Buffered output with backpressure: lines are appended synchronously (from
 * the reader's callbacks) and flushed between decoded chunks, waiting for the
 * stream to drain, so a slow consumer never makes dsh buffer the whole log.
 */
export class Output {
  /** Filled buffers (each written up to its `doneUsed`) and huge texts (written in pieces), then the one being filled. */
  private done: (Buffer | string)[] = [];
  private doneUsed: number[] = [];
  private buf: Buffer;
  private used = 0;
  private size = 0;
  private started = false;
  /** Standard-size buffers whose writes completed, for reuse (no garbage per flush). */
  private readonly free: Buffer[] = [];
  private readonly chunk: number;
  /** Only a stream over a file descriptor is surely done with a chunk once its write completed (a PassThrough keeps it). */
  private readonly reuse: boolean;
  constructor(readonly stream: Writable, private readonly high = 1 << 20) {
    this.chunk = high + (high >> 2);
    this.buf = Buffer.allocUnsafe(this.chunk);
    this.reuse = typeof (stream as { fd?: unknown }).fd === 'number';
  }
  /** A buffer of at least `bytes`. */
  private fresh(bytes: number): Buffer {
    if (bytes <= this.chunk) return this.free.pop() ?? Buffer.allocUnsafe(this.chunk);
    return Buffer.allocUnsafe(bytes);
  }
  private next(bytes: number): void {
    if (this.used > 0) {
      this.done.push(this.buf);
      this.doneUsed.push(this.used);
    } else this.recycle(this.buf);
    this.buf = this.fresh(bytes);
    this.used = 0;
  }
  private recycle(buf: Buffer): void {
    if (buf.length === this.chunk && this.free.length < 4) this.free.push(buf);
  }
  /**
   * Append text, encoded straight into the output buffer (no join, no intermediate strings); a text
   * longer than a buffer is kept as the string it is and encoded piece by piece when flushed, so a
   * huge event's text never gets a second, encoded copy.
   */
  push(text: string): void {
    if (text.length > this.chunk) {
      this.next(0);
      this.done.push(text);
      this.doneUsed.push(-1);
      this.size += text.length;
      return;
    }
    // UTF-8 needs at most 3 bytes per UTF-16 code unit.
    if (this.used + text.length * 3 > this.buf.length) this.next(text.length * 3);
    const n = this.buf.write(text, this.used);
    this.used += n;
    this.size += n;
  }
  /** Append bytes as they are (copied: `bytes` may be a view of memory its owner reuses). */
  pushBytes(bytes: Buffer): void {
    if (this.used + bytes.length > this.buf.length) this.next(bytes.length);
    this.used += bytes.copy(this.buf, this.used);
    this.size += bytes.length;
  }
  /** Append `bytes[start, end)` as they are (copied; short runs byte by byte, with no call into the runtime). */
  pushRange(bytes: Buffer, start: number, end: number): void {
    const n = end - start;
    if (this.used + n > this.buf.length) this.next(n);
    const buf = this.buf;
    // Buffer#copy of a part makes a view of its source, ~50 ns a call; a byte here costs ~1 ns, so runs
    // up to ~48 bytes are cheaper copied here (a packed row member's record: pieces of 10-40 bytes, and
    // its event's head of ~100, which Buffer#copy takes in half the time of this loop).
    if (n <= 48) {
      let u = this.used;
      for (let i = start; i < end; i++) buf[u++] = bytes[i] as number;
    } else bytes.copy(buf, this.used, start, end);
    this.used += n;
    this.size += n;
  }
  /** Append the whole of `bytes` (text encoded once, copied each time; short ones byte by byte, see `pushRange`). */
  pushText(bytes: Buffer): void {
    this.pushRange(bytes, 0, bytes.length);
  }
  /** Append text known to be ASCII (a constant of the output's own format), byte by byte. */
  pushAscii(text: string): void {
    const n = text.length;
    if (this.used + n > this.buf.length) this.next(n);
    const buf = this.buf;
    let u = this.used;
    for (let i = 0; i < n; i++) buf[u++] = text.charCodeAt(i);
    this.used = u;
    this.size += n;
  }
  /** Append a number as `String(n)` writes it (a safe integer's digits without making the string). */
  pushInt(n: number): void {
    if (!Number.isSafeInteger(n)) return this.push(String(n));
    if (this.used + 17 > this.buf.length) this.next(17);
    const scratch = DIGITS;
    const start = decimalBefore(scratch, 17, n);
    const buf = this.buf;
    let u = this.used;
    for (let i = start; i < 17; i++) buf[u++] = scratch[i] as number;
    this.size += u - this.used;
    this.used = u;
  }
  /** Append a packed row member's event JSON (see `RowMemberBytes`). */
  pushRowMember(member: RowMemberBytes): void {
    this.pushRange(member.head, member.headStart, member.headEnd);
    this.pushRange(member.line, member.payloadStart, member.payloadEnd);
    this.pushAscii('}}}');
  }
  /** Bytes waiting to be written. */
  get pending(): number {
    return this.size;
  }
  async flush(): Promise<void> {
    if (this.size === 0) return;
    const parts = this.done;
    const used = this.doneUsed;
    if (this.used > 0) {
      parts.push(this.buf);
      used.push(this.used);
      this.buf = this.fresh(this.chunk);
    }
    this.done = [];
    this.doneUsed = [];
    this.used = 0;
    this.size = 0;
    if (!this.reuse) {
      // Runs of buffers joined into one write; a huge text written in pieces between them.
      for (let i = 0; i < parts.length; ) {
        const part = parts[i] as Buffer | string;
        if (typeof part === 'string') {
          await this.writeText(part);
          i++;
          continue;
        }
        let j = i;
        while (j < parts.length && typeof parts[j] !== 'string') j++;
        const run = (parts.slice(i, j) as Buffer[]).map((p, k) => p.subarray(0, used[i + k]));
        await writeOut(this.stream, run.length === 1 ? (run[0] as Buffer) : Buffer.concat(run));
        i = j;
      }
      return;
    }
    // Each part written as it is (no joined copy), its buffer reused once the write completed.
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as Buffer | string;
      if (typeof part === 'string') {
        await this.writeText(part);
        continue;
      }
      await writeOut(this.stream, part.subarray(0, used[i]), (error) => {
        if (!error) this.recycle(part);
      });
    }
  }
  /** A huge text written a piece at a time, each encoded as it goes. */
  private async writeText(text: string): Promise<void> {
    for (const piece of textPieces(text)) await writeOut(this.stream, piece);
  }
  /** Flush once enough is pending, and the very first time anything is (a first screen comes at once). */
  async maybeFlush(): Promise<void> {
    if (this.size >= this.high || (!this.started && this.size > 0)) {
      this.started = true;
      await this.flush();
    }
  }
}

/**
 * Thrown when held output outgrows its budget (the caller then prints in a second pass instead);
 * a UsageError, so the reader lets it through as itself rather than as a verdict on the log.
 */
export class HeldOutputFull extends UsageError {}

/** A text this long (UTF-16 units) is not held: holding it would add a third copy of a huge event. */
const HELD_TEXT_MAX = 32 << 20;

/**
 * Output printed during a validating pass and held until DSH's verdict: lines are encoded at once
 * into off-heap buffers (no event is held), and where a line's text depends on the final fold
 * (a surface label), a hole is left that `release` fills, or whose whole line it drops.
 */
export class HeldOutput {
  private readonly parts: Buffer[] = [];
  private buf: Buffer;
  private used = 0;
  private before = 0;
  /** Per hole: seq, line start, hole offset, line end (offsets in the held bytes). */
  private readonly holes: number[] = [];
  constructor(private readonly limit: number, private readonly chunk = 4 << 20) {
    this.buf = Buffer.allocUnsafe(chunk);
  }
  /** Bytes held. */
  get size(): number {
    return this.before + this.used;
  }
  push(text: string): void {
    // A huge event's text is printed in the second pass, from the one copy the reader holds then.
    if (text.length >= HELD_TEXT_MAX) throw new HeldOutputFull('a huge text is not held');
    if (this.used + text.length * 3 > this.buf.length) {
      if (this.used > 0) {
        this.parts.push(this.buf.subarray(0, this.used));
        this.before += this.used;
      }
      this.buf = Buffer.allocUnsafe(Math.max(this.chunk, text.length * 3));
      this.used = 0;
    }
    this.used += this.buf.write(text, this.used);
    if (this.size > this.limit) throw new HeldOutputFull('the held output outgrew its budget');
  }
  private lineStart = 0;
  private holeAt = 0;
  private holeSeq = 0;
  /** A line with a hole: `startLine()`, its text with `hole(seq)` where the late part goes, `endLine()`. */
  startLine(): void {
    this.lineStart = this.size;
  }
  hole(seq: number): void {
    this.holeAt = this.size;
    this.holeSeq = seq;
  }
  endLine(): void {
    this.holes.push(this.holeSeq, this.lineStart, this.holeAt, this.size);
  }
  /** Write everything to `stream`: each hole filled with `fill(seq)` (as bytes), or its line left out when that is null. */
  async release(stream: Writable, fill: (seq: number) => Buffer | null): Promise<void> {
    const parts = this.used > 0 ? [...this.parts, this.buf.subarray(0, this.used)] : [...this.parts];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const send = async (force: boolean) => {
      if (pendingBytes === 0 || (!force && pendingBytes < 1 << 20)) return;
      const chunk = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await writeOut(stream, chunk);
    };
    // The held bytes from `a` to `b`, across parts.
    let p = 0;
    let pStart = 0;
    const range = async (a: number, b: number) => {
      while (a < b) {
        while (pStart + (parts[p] as Buffer).length <= a) pStart += (parts[p++] as Buffer).length;
        const part = parts[p] as Buffer;
        const end = Math.min(b, pStart + part.length);
        pending.push(part.subarray(a - pStart, end - pStart));
        pendingBytes += end - a;
        a = end;
        await send(false);
      }
    };
    let at = 0;
    const h = this.holes;
    for (let i = 0; i < h.length; i += 4) {
      const seq = h[i] as number;
      const start = h[i + 1] as number;
      const hole = h[i + 2] as number;
      const value = fill(seq);
      if (value === null) {
        await range(at, start);
        at = h[i + 3] as number;
        continue;
      }
      await range(at, hole);
      pending.push(value);
      pendingBytes += value.length;
      at = hole;
    }
    await range(at, this.size);
    await send(true);
  }
}

/**
 * A per-event consumer fed during a validating pass. A log DSH refuses can
 * trip the consumer before the pass reaches DSH's verdict, so the consumer's
 * first error is held (the consumer is not called again) and `rethrow()`
 * raises it only when the caller knows DSH accepted the log.
 */
export function guardedConsumer<A extends unknown[]>(consume: (...args: A) => void): { observe: (...args: A) => void; rethrow(): void } {
  let failure: { error: unknown } | undefined;
  return {
    observe: (...args: A) => {
      if (failure) return;
      try {
        consume(...args);
      } catch (error) {
        failure = { error };
      }
    },
    rethrow() {
      if (failure) throw failure.error;
    },
  };
}

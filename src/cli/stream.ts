import type { Writable } from 'node:stream';
import { writeOut } from './io.js';
export { forEachLogicalEvent, logicalEventJson, SINGLE_PASS_BYTES, type Emit } from '../log/logical-stream.js';

/**
 * Buffered output with backpressure: lines are appended synchronously (from
 * the reader's callbacks) and flushed between decoded chunks, waiting for the
 * stream to drain, so a slow consumer never makes dsh buffer the whole log.
 */
export class Output {
  /** Filled buffers, then the one being filled. */
  private done: Buffer[] = [];
  private buf: Buffer;
  private used = 0;
  private size = 0;
  private started = false;
  constructor(private readonly stream: Writable, private readonly high = 1 << 20) {
    this.buf = Buffer.allocUnsafe(high + (high >> 2));
  }
  /** Append text, encoded straight into the output buffer (no join, no intermediate strings). */
  push(text: string): void {
    // UTF-8 needs at most 3 bytes per UTF-16 code unit.
    if (this.used + text.length * 3 > this.buf.length) {
      if (this.used > 0) this.done.push(this.buf.subarray(0, this.used));
      this.buf = Buffer.allocUnsafe(Math.max(this.high + (this.high >> 2), text.length * 3));
      this.used = 0;
    }
    const n = this.buf.write(text, this.used);
    this.used += n;
    this.size += n;
  }
  /** Bytes waiting to be written. */
  get pending(): number {
    return this.size;
  }
  async flush(): Promise<void> {
    if (this.size === 0) return;
    const parts = this.done;
    if (this.used > 0) parts.push(this.buf.subarray(0, this.used));
    this.done = [];
    this.buf = Buffer.allocUnsafe(this.buf.length);
    this.used = 0;
    this.size = 0;
    await writeOut(this.stream, parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));
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

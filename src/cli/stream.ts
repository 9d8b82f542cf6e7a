import type { Writable } from 'node:stream';
import { writeOut } from './io.js';
import { inspectTarget, type SessionInspection } from '../log/session.js';
import type { ResolvedTarget } from '../log/target.js';
import { heldBytesBudget, replayLogical, type InspectOptions } from '../log/inspect.js';
import { UsageError } from '../log/errors.js';
import type { SessionEvent } from '../log/types.js';
import { expandedChunkJson } from '../log/rows.js';

/** Logs up to this many bytes on disk are read once with events held in memory. */
export const SINGLE_PASS_BYTES = 48 << 20;

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
 * The JSON text of a logical event: its stored line when that line is the
 * event byte for byte; else serialized. With no line text, a chunk can only
 * come from a packed row (migrations never touch chunks, closers are never
 * chunks), so it takes the fast row serializer.
 */
export function logicalEventJson(e: SessionEvent, text: string | undefined): string {
  if (text !== undefined && !text.endsWith('\r')) return text;
  return text === undefined && e.type === 'assistant/chunk' ? expandedChunkJson(e) : JSON.stringify(e);
}

export type Emit = (event: SessionEvent, text: string | undefined, synthetic: boolean) => void;

/**
 * Deliver every logical event (closers last) to `emit`, only once the whole
 * log is known to be valid (DSH accepts or refuses a log as a whole): small
 * logs in one pass holding the events, large logs in two passes (validate,
 * then stream) in memory bounded by the surface, not the log.
 */
export async function forEachLogicalEvent(
  target: ResolvedTarget,
  options: InspectOptions,
  ready: (validated: SessionInspection) => Emit,
  out?: Output,
): Promise<SessionInspection> {
  const size = (() => {
    try {
      const s = target.open();
      const n = s.size;
      s.close();
      return n;
    } catch {
      return 0;
    }
  })();
  if (size <= SINGLE_PASS_BYTES) {
    const held: [SessionEvent, string | undefined][] = [];
    const budget = heldBytesBudget();
    let heldBytes = 0;
    let r: SessionInspection | undefined;
    try {
      r = await inspectTarget(target, {
        ...options,
        collect: false,
        skipArtifact: true,
        onLogical: (e, text) => {
          held.push([e, text]);
          heldBytes += text !== undefined ? text.length : 256;
          // A small file can still expand to more than memory holds: fall back to two passes.
          if (heldBytes > budget) throw new TooBigForOnePass('switch to two passes');
        },
      });
    } catch (error) {
      if (!(error instanceof TooBigForOnePass)) throw error;
      held.length = 0;
    }
    if (r) return emitHeld(r, held, ready, out);
  }
  return twoPasses(target, options, ready, out);
}

class TooBigForOnePass extends UsageError {}

async function emitHeld(r: SessionInspection, held: [SessionEvent, string | undefined][], ready: (validated: SessionInspection) => Emit, out?: Output): Promise<SessionInspection> {
  {
    if (r.error) return r;
    const emit = ready(r);
    for (const [e, text] of held) {
      emit(e, text, false);
      if (out && out.pending >= 1 << 20) await out.flush();
    }
    for (const c of r.closers) emit(c, undefined, true);
    return r;
  }
}

async function twoPasses(target: ResolvedTarget, options: InspectOptions, ready: (validated: SessionInspection) => Emit, out?: Output): Promise<SessionInspection> {
  const first = await inspectTarget(target, { ...options, collect: false, skipArtifact: true });
  if (first.error) return first;
  const emit = ready(first);
  // The verdict is in: the second pass only decodes and normalizes.
  const source = target.open();
  let second;
  try {
    second = await replayLogical(source, {
      rawPath: target.rawPath,
      ...(target.expectedId !== undefined ? { expectedId: target.expectedId } : {}),
      ...(options.decoder ? { decoder: options.decoder } : {}),
      onLogical: (e, text) => emit(e, text, false),
      ...(out ? { between: () => out.maybeFlush() } : {}),
    });
  } finally {
    source.close();
  }
  if (second.error || second.storedEventCount !== first.storedEventCount) {
    return { ...first, error: { name: 'Error', class: 'Error', message: `${target.path} changed while it was being read`, kind: 'io', stage: 'physical' } };
  }
  for (const c of first.closers) emit(c, undefined, true);
  return first;
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

/**
 * Following a live DSH log, read-only: each poll opens the file O_RDONLY,
 * reads only what was appended since the last committed unit (a complete
 * zstd frame, or a complete raw line), and feeds it to the same scanner and
 * logical pipeline every other reader uses. Labels are those of the surface
 * fold so far; a later replacement re-labels earlier events (`onRelabel`).
 *
 * A live log's states:
 * - a torn tail (an incomplete frame or line) is "being written", never
 *   corruption: it is read again on the next poll;
 * - DSH's `load()` after a crash truncates the torn tail and appends a frame
 *   (recovered events and closers): the committed prefix is untouched, so
 *   the follower says so and continues from the repaired log;
 * - the committed prefix shrinking or changing, or another file at the path:
 *   replaced; the path vanishing: removed;
 * - a committed unit that does not decode, or an event DSH would refuse:
 *   the log became unreadable (a LogError).
 */
import { statSync } from 'node:fs';
import { FileSource, type ByteSource } from '../physical/source.js';
import { FrameWalker, ZSTD_MAGIC } from '../physical/zstd-frames.js';
import { createDecoder, type FrameDecoder } from '../physical/decoders.js';
import { LogScanner } from '../log/scanner.js';
import { LogicalPipeline } from '../log/logical.js';
import { SurfaceFold, SURFACE_TYPES } from '../log/surface.js';
import { corrupt, LogError } from '../log/errors.js';
import type { Encoding, SessionEvent, SessionHeader } from '../log/types.js';
import type { SurfaceLabel } from './labels.js';
import { resultBlock, resultCallId } from './tool-pairs.js';

export type FollowNotice =
  | { kind: 'torn'; bytes: number }
  | { kind: 'torn-complete' }
  | { kind: 'repaired'; truncatedTo: number; droppedBytes: number }
  | { kind: 'replaced'; why: string }
  | { kind: 'removed' }
  /** The torn tail has not changed for a while: if the writer stopped, it is a crash tail DSH's load() would truncate. */
  | { kind: 'stalled'; bytes: number; ms: number };

export interface FollowSink {
  onMeta?(meta: SessionHeader, encoding: Encoding): void;
  onEvent(event: SessionEvent, text: string | undefined, label: SurfaceLabel): void;
  onRelabel?(seq: number, label: SurfaceLabel): void;
  onNotice?(notice: FollowNotice): void;
}

/** A window of a source starting at `offset` (frame offsets become relative to it). */
class Tail implements ByteSource {
  readonly size: number;
  readonly name: string;
  constructor(private readonly source: ByteSource, private readonly offset: number) {
    this.size = Math.max(0, source.size - offset);
    this.name = source.name;
  }
  read(start: number, end: number): Buffer {
    return this.source.read(this.offset + start, this.offset + end);
  }
  close(): void {}
}

const GUARD = 64;

/** The state of a followed log after a poll. */
export interface FollowState {
  events: number;
  /** Bytes of the committed prefix consumed. */
  committed: number;
  size: number;
  /** Bytes after the committed prefix (a tail being written). */
  pending: number;
  /** Is a turn open (started, not ended)? */
  openTurn: number | null;
  openToolCalls: number;
  compactions: number;
  gone: boolean;
}

export class LogFollower {
  private encoding: Encoding | undefined;
  private scanner: LogScanner | undefined;
  private pipeline: LogicalPipeline | undefined;
  private readonly fold = new SurfaceFold(true);
  private current = new Set<number>();
  private shadowed = new Set<number>();
  private committed = 0;
  private guard: Buffer = Buffer.alloc(0);
  private pendingHead: Buffer = Buffer.alloc(0);
  private ino: number | undefined;
  private lastSize = 0;
  private pending = 0;
  private lineText: string | undefined;
  private error: LogError | undefined;
  private openTurn: number | null = null;
  private openCalls = new Set<string>();
  private compactions = 0;
  private gone = false;
  private count = 0;

  private pendingSince = 0;
  private stalledSaid = false;

  constructor(
    readonly path: string,
    private readonly sink: FollowSink,
    private readonly decoder: FrameDecoder = createDecoder(),
    /** After this long without change, a torn tail is reported as possibly abandoned. */
    private readonly stallMs = 5_000,
  ) {}

  get state(): FollowState {
    return { events: this.count, committed: this.committed, size: this.lastSize, pending: this.pending, openTurn: this.openTurn, openToolCalls: this.openCalls.size, compactions: this.compactions, gone: this.gone };
  }

  private labelOf(seq: number): SurfaceLabel {
    return this.current.has(seq) ? 'current' : this.shadowed.has(seq) ? 'shadowed' : 'log-only';
  }

  private reset(): void {
    // A replaced file is followed from its start: a new follower state.
    Object.assign(this, new LogFollower(this.path, this.sink, this.decoder, this.stallMs));
  }

  /** Read what was committed since the last poll. Throws a LogError when the log became unreadable. */
  async poll(): Promise<void> {
    if (this.error) throw this.error;
    let st;
    try {
      st = statSync(this.path);
    } catch {
      if (!this.gone) this.sink.onNotice?.({ kind: 'removed' });
      this.gone = true;
      return;
    }
    if (this.gone || (this.ino !== undefined && st.ino !== this.ino)) {
      const wasGone = this.gone;
      this.reset();
      this.sink.onNotice?.({ kind: 'replaced', why: wasGone ? 'the file is back at its path' : 'another file now has its path' });
    }
    let source: FileSource;
    try {
      source = new FileSource(this.path);
    } catch {
      return; // vanished between stat and open: the next poll says so
    }
    try {
      this.ino = st.ino;
      const size = source.size;
      if (size < this.committed || (this.committed > 0 && !source.read(this.committed - this.guard.length, this.committed).equals(this.guard))) {
        this.reset();
        this.sink.onNotice?.({ kind: 'replaced', why: size < this.committed ? `it shrank below the ${this.committed} bytes already read` : 'bytes already read changed' });
        this.ino = st.ino;
        return this.pollSource(source);
      }
      if (this.pendingHead.length > 0 && !source.read(this.committed, this.committed + this.pendingHead.length).equals(this.pendingHead)) {
        // The torn tail was rewritten in place, as DSH's load() does after a crash (truncate, then append).
        this.sink.onNotice?.({ kind: 'repaired', truncatedTo: this.committed, droppedBytes: this.pending });
        this.pending = 0;
      }
      await this.pollSource(source);
    } finally {
      source.close();
    }
  }

  private async pollSource(source: FileSource): Promise<void> {
    const size = source.size;
    const hadPending = this.pending;
    if (this.encoding === undefined) {
      if (size === 0) return;
      const head = source.read(0, 4);
      if (head.length < 4 && head.length < size) return;
      this.encoding = head.length === 4 && head.readUInt32LE(0) === ZSTD_MAGIC ? 'zstd' : 'none';
    }
    if (this.encoding === 'zstd') await this.readFrames(source);
    else this.readLines(source);
    this.lastSize = size;
    this.pending = size - this.committed;
    if (this.committed > 0) this.guard = source.read(Math.max(0, this.committed - GUARD), this.committed);
    this.pendingHead = this.pending > 0 ? source.read(this.committed, this.committed + Math.min(this.pending, GUARD)) : Buffer.alloc(0);
    if (this.pending > 0 && this.pending !== hadPending) {
      this.sink.onNotice?.({ kind: 'torn', bytes: this.pending });
      this.pendingSince = Date.now();
      this.stalledSaid = false;
    } else if (this.pending > 0 && !this.stalledSaid && Date.now() - this.pendingSince >= this.stallMs) {
      this.stalledSaid = true;
      this.sink.onNotice?.({ kind: 'stalled', bytes: this.pending, ms: Date.now() - this.pendingSince });
    }
    if (this.pending === 0 && hadPending > 0) this.sink.onNotice?.({ kind: 'torn-complete' });
  }

  private fail(error: unknown): never {
    this.error = error instanceof LogError ? error : corrupt(`corrupt session log: ${(error as Error).message}`);
    throw this.error;
  }

  private startScanner(header: Buffer): void {
    try {
      this.scanner = new LogScanner(header, this.path, (event, line) => {
        this.lineText = line.text;
        this.pipeline!.observe(event);
        this.lineText = undefined;
      });
    } catch (error) {
      this.fail(error);
    }
    const meta = this.scanner.meta;
    this.pipeline = new LogicalPipeline(meta, this.path, { onEvent: (event, stored) => this.emit(event, event === stored ? this.lineText : undefined) });
    this.sink.onMeta?.(meta, this.encoding!);
  }

  private emit(event: SessionEvent, text: string | undefined): void {
    let replacement;
    try {
      replacement = this.fold.apply(event);
    } catch (error) {
      this.fail(new LogError((error as Error).message, { seq: event.seq }));
    }
    if (SURFACE_TYPES.has(event.type)) this.current.add(event.seq);
    if (replacement) {
      for (const s of replacement.shadowedSeqs) {
        this.current.delete(s);
        this.shadowed.add(s);
      }
    }
    this.track(event);
    this.count += 1;
    this.sink.onEvent(event, text, SURFACE_TYPES.has(event.type) ? this.labelOf(event.seq) : 'log-only');
    if (replacement) for (const s of replacement.shadowedSeqs) this.sink.onRelabel?.(s, 'shadowed');
  }

  private track(e: SessionEvent): void {
    if (e.type === 'turn/start') this.openTurn = typeof e.data?.turn === 'number' ? e.data.turn : 0;
    else if (e.type === 'turn/end') this.openTurn = null;
    else if (e.type === 'tool/call' && typeof e.data?.callId === 'string') this.openCalls.add(e.data.callId);
    else if (e.type === 'tool/result') {
      const id = resultCallId(e) ?? resultBlock(e)?.toolCallId;
      if (typeof id === 'string') this.openCalls.delete(id);
    } else if (e.type === 'compaction/summary' || e.type === 'compaction/prune') this.compactions += 1;
  }

  private readLines(source: FileSource): void {
    const size = source.size;
    const CHUNK = 1 << 20;
    for (let at = this.committed; at < size; ) {
      const chunk = source.read(at, Math.min(size, at + CHUNK));
      if (chunk.length === 0) break;
      const nl = chunk.lastIndexOf(0x0a);
      if (nl === -1) {
        if (chunk.length === CHUNK) return this.fail(new Error(`a line at byte ${at} is longer than ${CHUNK} bytes and still being written`));
        break; // an unterminated line: being written
      }
      const complete = chunk.subarray(0, nl + 1);
      if (!this.scanner) {
        const first = complete.indexOf(0x0a);
        this.startScanner(Buffer.from(complete.subarray(0, first + 1)));
        this.feed(complete.subarray(first + 1));
      } else {
        this.feed(complete);
      }
      at += complete.length;
      this.committed = at;
    }
  }

  private feed(text: Buffer): void {
    try {
      this.scanner!.write(text);
    } catch (error) {
      this.fail(error);
    }
    if (this.scanner!.issue) this.fail(this.scanner!.issue);
  }

  private async readFrames(source: FileSource): Promise<void> {
    const base = this.committed;
    const tail = new Tail(source, base);
    let walker: FrameWalker;
    try {
      walker = new FrameWalker(tail);
    } catch (error) {
      return this.fail(error);
    }
    for (;;) {
      let frame;
      try {
        frame = walker.next();
      } catch (error) {
        return this.fail(error);
      }
      if (!frame) break;
      let plain: Buffer;
      try {
        plain = await this.decoder.decode(tail.read(frame.start, frame.end));
      } catch (error) {
        return this.fail(corrupt(`corrupt Zstandard session log: frame at byte ${base + frame.start} does not decode (${(error as Error).message})`, { byteOffset: base + frame.start }));
      }
      if (!this.scanner) {
        if (plain.length === 0 || plain.indexOf(0x0a) !== plain.length - 1) return this.fail(corrupt('corrupt Zstandard session log: first frame is not exactly one header line', { byteOffset: 0 }));
        this.startScanner(plain);
      } else {
        this.feed(plain);
      }
      this.committed = base + frame.end;
    }
  }
}

/**
 * A warm answer worked out while the log's content hash is still being computed (`Speculation` in
 * the library): the command runs with its stdout and stderr held back, and what it wrote is let
 * through only once every index it answered from is verified to be the log's. When one is not (the
 * log was replaced by another of the same size), what it wrote is dropped and the command runs again
 * without a speculation, so its output is always that of a read that waited for the hash.
 *
 * Held output is capped: a command that writes more waits at the cap for the verdict, then writes
 * through. A command that has written anything before it reads the log gives no speculation.
 */
import { Writable } from 'node:stream';
import type { Speculation } from '../api/log.js';
import { BrokenPipe, type Io } from './io.js';

/** What a command may hold back while its index is verified (a warm view's answer is far smaller). */
export const HELD_BYTES = 16 << 20;

/** The hidden `--speculation-hold-bytes <n>` (a test hook), else `HELD_BYTES`. */
export function heldBytesFor(given: string | undefined): number {
  const n = Number(given);
  return given !== undefined && given.trim() !== '' && Number.isSafeInteger(n) && n >= 0 ? n : HELD_BYTES;
}

type Real = Io['stdout'];

/** Holds what a command writes to stdout and stderr until its bets are settled. */
export class OutputGate implements Speculation {
  readonly stdout: GatedStream;
  readonly stderr: GatedStream;
  /** Chunks held, in the order written, with the stream each was written to. */
  private held: [Real, string | Buffer][] = [];
  private heldBytes = 0;
  private pending: (() => Promise<boolean>)[] = [];
  /** How many bets were taken. */
  bets = 0;
  /** Whatever passed through before a bet (then none is taken). */
  private passed = false;
  private state: 'through' | 'holding' | 'lost' = 'through';
  private settling: Promise<boolean> | undefined;

  constructor(stdout: Real, stderr: Real, readonly cap = HELD_BYTES) {
    this.stdout = new GatedStream(stdout, this);
    this.stderr = new GatedStream(stderr, this);
  }

  get open(): boolean {
    return this.state !== 'lost' && !this.passed && this.settling === undefined;
  }

  bet(verify: () => Promise<boolean>): void {
    if (!this.open) throw new Error('a speculation was offered after output');
    this.pending.push(verify);
    this.bets++;
    this.state = 'holding';
  }

  /** Write `chunk` to `real` now, or hold a copy of it; false when the writer should wait for 'drain'. */
  write(real: Real, chunk: unknown, done?: (error?: Error | null) => void): boolean {
    if (this.state === 'lost') throw new BrokenPipe();
    if (this.state === 'through') {
      this.passed = true;
      return done ? real.write(chunk, done) : real.write(chunk);
    }
    // A copy: a writer may reuse its buffer once the write's callback ran.
    const piece = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array);
    this.held.push([real, piece]);
    this.heldBytes += typeof piece === 'string' ? piece.length * 3 : piece.length;
    if (done) process.nextTick(done);
    if (this.heldBytes < this.cap) return true;
    void this.settle().then((won) => {
      for (const s of [this.stdout, this.stderr]) s.emit(won ? 'drain' : 'close');
    });
    return false;
  }

  /**
   * Run every bet's check (once): all true, the held output is written and what follows passes
   * through; else it is dropped and every later write fails. True when nothing was lost.
   */
  settle(): Promise<boolean> {
    this.settling ??= (async () => {
      const checks = this.pending;
      this.pending = [];
      let won = true;
      for (const verify of checks) if (!(await verify())) won = false;
      const held = this.held;
      this.held = [];
      this.heldBytes = 0;
      if (!won) {
        this.state = 'lost';
        return false;
      }
      this.state = 'through';
      for (const [real, chunk] of held) {
        this.passed = true;
        real.write(chunk);
      }
      return true;
    })();
    return this.settling;
  }

  /** Stop forwarding the real streams' events. */
  detach(): void {
    this.stdout.detach();
    this.stderr.detach();
  }
}

/** A stream a command writes to through the gate (the real stream's TTY facts, its drain and errors). */
export class GatedStream extends Writable {
  readonly isTTY?: boolean;
  readonly columns?: number;
  /**
   * The real stream's descriptor: a writer may reuse a chunk's buffer once its write's callback ran
   * (`Output`), which holds here too (a held chunk is a copy; one let through is the real stream's).
   */
  readonly fd?: number;
  private readonly forward: [string, (...a: unknown[]) => void][];

  constructor(readonly real: Real, private readonly gate: OutputGate) {
    super();
    if (real.isTTY !== undefined) this.isTTY = real.isTTY;
    if (real.columns !== undefined) this.columns = real.columns;
    const fd = (real as { fd?: unknown }).fd;
    if (typeof fd === 'number') this.fd = fd;
    this.forward = [
      ['drain', () => this.emit('drain')],
      ['close', () => this.emit('close')],
      // Only to a writer waiting on it (writeOut listens while it waits): an unheard 'error' would throw.
      ['error', (e) => void (this.listenerCount('error') > 0 && this.emit('error', e))],
    ];
    for (const [event, f] of this.forward) real.on(event, f);
  }

  override write(chunk: unknown, encoding?: BufferEncoding | ((error?: Error | null) => void), cb?: (error?: Error | null) => void): boolean {
    if ((this.real as { destroyed?: boolean }).destroyed) throw new BrokenPipe();
    return this.gate.write(this.real, chunk, typeof encoding === 'function' ? encoding : cb);
  }

  detach(): void {
    for (const [event, f] of this.forward) this.real.off(event, f);
  }
}

/**
 * The parallel part of one cold read: worker threads decode groups of zstd
 * frames (or take raw byte ranges), split them into lines and decode each
 * line to a string; the main thread keeps everything order-dependent (the
 * line scanner, `JSON.parse`, the fold and every verdict), so outputs and
 * error precedence are the one-thread path's by construction. A worker that
 * fails a group hands it back, and the main thread decodes it frame by frame
 * as the one-thread path does.
 *
 * Measured on the bench's 50 MB log (Node 20): structured-cloning parsed
 * events to the main thread costs more there (v8 deserialize 518 ms) than
 * parsing them (~400 ms), so workers hand over text, never parsed objects:
 * each group's UTF-8 decoding in pieces of whole lines (one copy to receive,
 * ~75 ms for 50 MB; lines are slices of them) instead of ~235 ms of per-line
 * decoding on the main thread.
 */
import { Worker } from 'node:worker_threads';
import { defaultJobs, workersAvailable } from './pool.js';
import type { DecoderName } from '../physical/decoders.js';
import type { LineFacts } from './facts.js';

/**
 * Compressed bytes per group a worker decodes (the one-thread path uses 1 MiB): smaller groups keep
 * less text in flight between the threads (measured on the 50 MB bench log at -j 2: peak RSS 274 MiB
 * with 1 MiB groups, 181 MiB with 256 KiB, at the same speed).
 */
export const PARALLEL_GROUP_BYTES = 256 << 10;

/** Logs smaller than this (bytes on disk) are read on one thread: starting workers costs more than they save. */
export const PARALLEL_MIN_BYTES = 4 << 20;

/**
 * Test hooks of this process's reads, not settings (the CLI's hidden `--parallel-min-bytes` and
 * `--group-bytes`): `parallelMinBytes` 0 runs workers on small corpus logs, `groupBytes` 1 makes
 * every frame a decode group of its own.
 */
export interface ReadTuning {
  parallelMinBytes?: number;
  groupBytes?: number;
}
let tuning: ReadTuning = {};
/** Set the reads' test hooks (each call replaces the last; `{}` restores the defaults). */
export function setReadTuning(t: ReadTuning): void {
  tuning = { ...t };
}
export function readTuning(): Readonly<ReadTuning> {
  return tuning;
}

/** `ReadTuning.parallelMinBytes`, else `PARALLEL_MIN_BYTES`. */
export function parallelMinBytes(): number {
  return tuning.parallelMinBytes ?? PARALLEL_MIN_BYTES;
}

/**
 * Threads for one log's read when none are asked for: the machine's available parallelism from 4
 * up, else 1. With fewer cores the main thread gets one worker at most, and on the 2-core bench
 * machine that measured slower than one thread (50 MB log: inspect 1.25 s at -j 1, 2.00 s at -j 2;
 * in-process best of 5: 786 vs 1110 ms): the one-thread path already decodes the next group on
 * libuv's pool, so a worker only takes the UTF-8 decoding off the main thread, and on two busy
 * cores that does not pay for the hand-over.
 */
export function defaultReadThreads(): number {
  const cores = defaultJobs();
  return cores >= 4 ? cores : 1;
}

let readJobs = 1;
/** Threads for reads that do not name `jobs` (default 1; the CLI sets `-j` / `DSH_JOBS` here once per command). */
export function setReadJobs(jobs: number): void {
  readJobs = Math.max(1, Math.floor(jobs));
}
export function defaultReadJobs(): number {
  return readJobs;
}

/**
 * Text pieces are at most this many bytes (a longer line is a piece alone): strings past V8's
 * large-object size (~128 KiB) would be received straight into the large-object space, which only
 * a full collection frees (measured: +47 MiB of main-thread heap at -j 2 with one string per group).
 */
const PIECE_BYTES = 64 << 10;

/**
 * `plaintext`'s complete lines decoded to text in pieces of whole lines: `ends[k]` is the byte
 * offset just past the k-th LF, `charEnds[k]` the offset just past it in its piece, and piece p
 * holds `pieceLines[p]` lines (null: a line too long for one string, unparsable on every path).
 * Decoding whole lines together equals decoding each alone: LF never belongs to a multi-byte
 * sequence, so no replacement character spans one.
 */
export function splitText(plaintext: Buffer): { pieces: (string | null)[]; pieceLines: Float64Array; ends: Float64Array; charEnds: Float64Array } {
  const byteEnds: number[] = [];
  for (let nl = plaintext.indexOf(0x0a); nl !== -1; nl = plaintext.indexOf(0x0a, nl + 1)) byteEnds.push(nl + 1);
  const ends = Float64Array.from(byteEnds);
  const charEnds = new Float64Array(ends.length);
  const pieces: (string | null)[] = [];
  const pieceLines: number[] = [];
  let first = 0;
  while (first < ends.length) {
    const start = first === 0 ? 0 : (ends[first - 1] as number);
    let last = first + 1;
    while (last < ends.length && (ends[last] as number) - start <= PIECE_BYTES) last++;
    let text: string | null = null;
    try {
      text = plaintext.toString('utf8', start, ends[last - 1] as number);
    } catch {
      // Past V8's string limit (a single line): no text.
    }
    if (text !== null) {
      let k = first;
      for (let nl = text.indexOf('\n'); nl !== -1 && k < last; nl = text.indexOf('\n', nl + 1)) charEnds[k++] = nl + 1;
    }
    pieces.push(text);
    pieceLines.push(last - first);
    first = last;
  }
  return { pieces, pieceLines: Float64Array.from(pieceLines), ends, charEnds };
}

/**
 * The share of a facts-mode read's groups the main thread parses itself, next to `workers` workers:
 * per line, folding a pruned event costs the main thread about half
 * of parsing and folding it, and a worker's parse and checks about 1.3x the main thread's parse,
 * so with one worker the threads finish together when the main thread takes about 40%.
 */
export function mainShare(workers: number): number {
  return workers <= 1 ? 0.4 : workers === 2 ? 0.2 : 0;
}

/** A small young generation for the workers: their strings are short-lived (each leaves in its answer). */
const YOUNG_MB = 4;

export interface DecodedLines extends ReturnType<typeof splitText> {
  plaintext: Buffer;
}

/** A group a worker parsed and checked (facts mode): its line ends and per-line facts. */
export interface FactLines {
  plaintext: Buffer;
  ends: Float64Array;
  facts: LineFacts;
}

/** Process-wide counters: reads that used workers, worker threads started, groups they decoded, of those the groups they also parsed (facts; tests prove the parallel path ran). */
export interface ParallelStats {
  reads: number;
  groups: number;
  workers: number;
  factGroups: number;
}

const stats: ParallelStats = { reads: 0, groups: 0, workers: 0, factGroups: 0 };

/**
 * Started workers are kept for the next read of this process (a command may read a log more than
 * once, a test many logs), unreferenced while idle so they never keep the process alive.
 */
const idle = new Map<string, LineWorkers>();
/** How many reads of this process ran on worker threads, with how many workers and groups (`dsh --debug-parallel`, a hidden test hook). */
export function parallelStats(): Readonly<ParallelStats> {
  return stats;
}

/** A fixed set of line workers, used by one read at a time; tasks are answered in any order, each by its own promise. */
export class LineWorkers {
  private workers: Worker[] = [];
  private next = 0;
  private seq = 0;
  private waiting = new Map<number, { resolve: (d: DecodedLines | FactLines) => void; reject: (e: Error) => void }>();
  private failed: Error | undefined;
  /** Groups to keep in flight ahead of the one being folded. */
  readonly depth: number;
  /**
   * In facts mode, the share of groups this thread parses itself (on the one-thread path) while
   * the workers parse the others: folding pruned events leaves it idle otherwise. `mainShare()`.
   */
  readonly mainShare: number;
  readonly count: number;

  private constructor(private readonly key: string, count: number, decoder: DecoderName) {
    const url = new URL('./line-worker.js', import.meta.url);
    for (let i = 0; i < count; i++) {
      const w = new Worker(url, { workerData: { decoder }, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB } });
      w.on('message', (msg: Partial<ReturnType<typeof splitText>> & { id: number; error?: string; plaintext?: Uint8Array; facts?: LineFacts }) => {
        const p = this.waiting.get(msg.id);
        if (!p) return;
        this.waiting.delete(msg.id);
        this.reference();
        if (msg.error !== undefined || !msg.plaintext) p.reject(new Error(msg.error ?? 'no result'));
        else {
          stats.groups += 1;
          const plaintext = Buffer.from(msg.plaintext.buffer, msg.plaintext.byteOffset, msg.plaintext.byteLength);
          if (msg.facts) {
            stats.factGroups += 1;
            p.resolve({ plaintext, ends: msg.ends!, facts: msg.facts });
          }
          else p.resolve({ plaintext, pieces: msg.pieces!, pieceLines: msg.pieceLines!, ends: msg.ends!, charEnds: msg.charEnds! });
        }
      });
      // A worker that dies fails what it held; the reader then decodes those groups itself.
      w.on('error', (error) => this.fail(error));
      w.on('exit', (code) => {
        if (code !== 0) this.fail(new Error(`line worker exited with code ${code}`));
      });
      this.workers.push(w);
    }
    this.depth = count + 1;
    this.count = count;
    this.mainShare = mainShare(count);
    stats.workers += count;
  }

  /** Workers are referenced (keep the process alive) exactly while a task is outstanding. */
  private reference(): void {
    const busy = this.waiting.size > 0;
    for (const w of this.workers) {
      if (busy) w.ref();
      else w.unref();
    }
  }

  /**
   * Workers for a read of `size` bytes at `jobs` threads, or undefined for the
   * one-thread path: `jobs` 1, a small log, or a build that cannot start
   * workers (the TypeScript sources under test).
   */
  static open(options: { jobs: number; size: number; decoder: DecoderName }): LineWorkers | undefined {
    if (options.jobs <= 1 || options.size < parallelMinBytes() || !workersAvailable(import.meta.url)) return undefined;
    // The main thread parses and folds; the other threads decode and split.
    const count = options.jobs - 1;
    const key = `${count}/${options.decoder}`;
    let workers = idle.get(key);
    idle.delete(key);
    try {
      workers ??= new LineWorkers(key, count, options.decoder);
    } catch {
      // No threads to be had (a resource limit): the one-thread path gives the same answer.
      return undefined;
    }
    stats.reads += 1;
    return workers;
  }

  private fail(error: Error): void {
    this.failed ??= error;
    for (const p of this.waiting.values()) p.reject(error);
    this.waiting.clear();
    this.reference();
  }

  /**
   * Decode (zstd) or take (raw) `input`, split into lines; with `facts`, also parse and check each
   * line (`facts.ts`). Rejects when the worker could not decode it.
   */
  lines(input: Buffer, zstd: boolean, facts?: { maxLine: number }): Promise<DecodedLines | FactLines> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.seq++;
    const w = this.workers[this.next]!;
    this.next = (this.next + 1) % this.workers.length;
    // The worker gets its own copy of the bytes (the source may share them, e.g. a held stdin buffer).
    const copy = new Uint8Array(input);
    return new Promise<DecodedLines | FactLines>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.reference();
      w.postMessage({ id, zstd, input: copy, ...(facts ? { facts } : {}) }, [copy.buffer]);
    });
  }

  /** The read is over: answers still outstanding are dropped; healthy workers wait, unreferenced, for the next read. */
  async close(): Promise<void> {
    const error = new Error('reader closed');
    for (const p of this.waiting.values()) p.reject(error);
    this.waiting.clear();
    this.reference();
    if (this.failed || idle.has(this.key)) {
      await Promise.all(this.workers.map((w) => w.terminate()));
      this.workers = [];
      return;
    }
    idle.set(this.key, this);
  }
}

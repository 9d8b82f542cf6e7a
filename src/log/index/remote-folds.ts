/**
 * Folds of the session index built on a thread of their own while the
 * validating pass runs on this one: the pass hands each logical event to
 * {@link FoldThread.observe}, which writes what those folds read of it to
 * the wire (`fold-wire.ts`) and posts it in batches; the worker
 * (`fold-thread.ts`) runs the folds' own builders and answers their saved
 * bytes at the end. Only for folds the view does not read on this pass (their
 * bytes are saved, their results never held here) and only on a log big
 * enough to pay for a worker's start: on the 2-core bench machine the pass
 * leaves most of the second core idle, and the dispatch and replay folds with
 * their garbage were most of what writing the index cost.
 */
import { Worker } from 'node:worker_threads';
import { FoldWireWriter } from './fold-wire.js';
import type { PersistentFold } from './session-index.js';
import type { SessionEvent } from '../types.js';
import { workersAvailable } from '../pool.js';
import { defaultReadJobs } from '../parallel.js';

/** Logs smaller than this (bytes on disk) fold on the pass's thread: a worker's start costs more than it saves. */
export const FOLD_THREAD_MIN_BYTES = 16 << 20;

/**
 * Whether the folds of a log of `bytes` on disk run on a thread of their own: `DSH_FOLD_THREAD=on`
 * (any log; tests), `off` (never), else (`auto`) a log of {@link FOLD_THREAD_MIN_BYTES} or more
 * read with worker threads (`-j` / `DSH_JOBS` above 1; the default on 4 cores or more). On the
 * 2-core bench machine, where `-j` defaults to 1, the worker took ~2 s of main-thread CPU off
 * the 2 GB index-writing pass, but the pass then waited as long for zstd decoding (libuv's pool) and
 * the hash worker sharing the second core, so it measured no faster there.
 */
export function foldThreadFor(bytes: number, env: NodeJS.ProcessEnv = process.env): boolean {
  const mode = (env['DSH_FOLD_THREAD'] ?? '').trim();
  if (mode === 'off' || !workersAvailable(import.meta.url)) return false;
  if (mode === 'on') return true;
  return bytes >= FOLD_THREAD_MIN_BYTES && defaultReadJobs() > 1;
}

/** The folds of one pass running on a worker. */
export class FoldThread {
  private readonly writer = new FoldWireWriter();
  private readonly worker: Worker;
  private readonly result: Promise<Map<number, Buffer | undefined>>;
  private ended = false;

  private constructor(private readonly folds: readonly PersistentFold[]) {
    const wanted = folds.map((f) => ({ tag: f.tag, module: f.offThread!.module, name: f.offThread!.name }));
    this.worker = new Worker(new URL('./fold-thread.js', import.meta.url), { workerData: { folds: wanted } });
    // Never what keeps the process alive: a pass that fails lets it go.
    this.worker.unref();
    const none = () => new Map(folds.map((f) => [f.tag, undefined] as [number, Buffer | undefined]));
    this.result = new Promise((resolve) => {
      this.worker.once('message', (m: { bytes: [number, Uint8Array | null][] }) => {
        const got = new Map(m.bytes.map(([t, b]) => [t, b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength) : undefined]));
        resolve(new Map(folds.map((f) => [f.tag, got.get(f.tag)])));
      });
      // A worker that fails saves none of its folds (the index is then not written).
      this.worker.once('error', () => resolve(none()));
      this.worker.once('exit', () => resolve(none()));
    });
  }

  /** The folds of `folds` that can run on a thread of their own, started there (undefined: none can). */
  static start(folds: readonly PersistentFold[]): FoldThread | undefined {
    const off = folds.filter((f) => f.offThread !== undefined);
    if (off.length === 0) return undefined;
    try {
      return new FoldThread(off);
    } catch {
      return undefined;
    }
  }

  /** The tags of the folds running there. */
  get tags(): number[] {
    return this.folds.map((f) => f.tag);
  }

  /** One logical stored event, in order (a packed row's lean member included). */
  observe(event: SessionEvent): void {
    this.writer.write(event);
    if (this.writer.full) this.post();
  }

  private post(): void {
    const batch = this.writer.flush();
    if (batch) this.worker.postMessage({ batch }, [batch.nums.buffer as ArrayBuffer]);
  }

  /** After an accepted pass: the closers, then each fold's saved bytes (undefined: not kept). */
  async finish(closers: readonly SessionEvent[], storedEventCount: number): Promise<Map<number, Buffer | undefined>> {
    this.post();
    const w = new FoldWireWriter();
    for (const c of closers) w.write(c);
    const batch = w.flush() ?? { nums: new Float64Array(0), length: 0, strs: [] };
    this.ended = true;
    this.worker.ref();
    this.worker.postMessage({ end: { closers: batch, count: storedEventCount } }, [batch.nums.buffer as ArrayBuffer]);
    const bytes = await this.result;
    void this.worker.terminate();
    return bytes;
  }

  /** The pass failed or was refused: stop the worker. */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    void this.worker.terminate();
  }
}

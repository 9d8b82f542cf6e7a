/**
 * A small worker-thread pool for per-file work over many files (`check` and
 * `ls` over a root): tasks go to the next free worker, results keep the
 * tasks' order, and a task a worker could not finish comes back as `failed`
 * so the caller can re-run it in-process (where its real error surfaces).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';

/** The default number of parallel jobs: the parallelism the machine offers. */
export function defaultJobs(): number {
  return Math.max(1, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
}

/** Worker threads need the compiled `.js` build (tests run the TypeScript sources in-process). */
export function workersAvailable(moduleUrl: string): boolean {
  return moduleUrl.endsWith('.js');
}

export interface PoolOptions {
  jobs: number;
  workerData?: unknown;
  onProgress?: (done: number, total: number) => void;
}

/** Run `tasks` on `jobs` workers started from `workerUrl`; a worker answers `{id, result}` or `{id, error}`. */
export async function runPool<T, R>(workerUrl: URL, tasks: readonly T[], options: PoolOptions): Promise<{ results: (R | undefined)[]; failed: number[] }> {
  const results: (R | undefined)[] = new Array(tasks.length);
  const failed: number[] = [];
  let next = 0;
  let done = 0;
  const workers: Worker[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let active = 0;
      const feed = (w: Worker) => {
        if (next >= tasks.length) {
          if (active === 0) resolve();
          return;
        }
        const id = next++;
        active += 1;
        w.postMessage({ id, task: tasks[id] });
      };
      for (let i = 0; i < Math.min(options.jobs, tasks.length); i++) {
        const w = new Worker(workerUrl, { workerData: options.workerData });
        workers.push(w);
        w.on('message', (msg: { id: number; result?: R; error?: string }) => {
          active -= 1;
          if (msg.result !== undefined) results[msg.id] = msg.result;
          else failed.push(msg.id);
          done += 1;
          options.onProgress?.(done, tasks.length);
          feed(w);
          if (next >= tasks.length && active === 0) resolve();
        });
        w.on('error', reject);
        feed(w);
      }
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return { results, failed: failed.sort((a, b) => a - b) };
}

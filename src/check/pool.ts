import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ResolvedTarget } from '../log/target.js';
import type { DecoderName } from '../physical/decoders.js';
import { createDecoder } from '../physical/decoders.js';
import { checkResolved, rootLookup, type SessionReport } from './engine.js';

export interface RunOptions {
  /** Worker threads (default: available parallelism); 1 = in-process. */
  jobs?: number;
  decoder?: DecoderName | 'auto';
  onProgress?: (done: number, total: number) => void;
}

/** Worker threads need the compiled `.js` build (tests run the TypeScript sources in-process). */
function workersAvailable(): boolean {
  return import.meta.url.endsWith('.js');
}

export function defaultJobs(): number {
  return Math.max(1, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
}

async function inProcess(targets: ResolvedTarget[], options: RunOptions): Promise<SessionReport[]> {
  const decoder = createDecoder(options.decoder ?? 'auto');
  const lookup = rootLookup();
  const out: SessionReport[] = [];
  for (const t of targets) {
    out.push(await checkResolved(t, { decoder, lookup }));
    options.onProgress?.(out.length, targets.length);
  }
  return out;
}

/**
 * Check every target, spreading files over a small worker pool when there are
 * enough of them; results keep the targets' order. A target a worker could not
 * check is re-run in-process so its real error surfaces.
 */
export async function checkTargets(targets: ResolvedTarget[], options: RunOptions = {}): Promise<SessionReport[]> {
  const jobs = Math.min(options.jobs ?? defaultJobs(), targets.length);
  const poolable = targets.every((t) => t.path !== '-');
  if (jobs <= 1 || targets.length < 4 || !poolable || !workersAvailable()) return inProcess(targets, options);
  const results: (SessionReport | undefined)[] = new Array(targets.length);
  const failed: number[] = [];
  let next = 0;
  let done = 0;
  const workers: Worker[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let active = 0;
      const feed = (w: Worker) => {
        if (next >= targets.length) {
          if (active === 0) resolve();
          return;
        }
        const id = next++;
        const t = targets[id]!;
        active += 1;
        w.postMessage({ id, path: t.path, ...(t.root !== undefined ? { root: t.root } : {}) });
      };
      for (let i = 0; i < jobs; i++) {
        const w = new Worker(new URL('./worker.js', import.meta.url), { workerData: { decoder: options.decoder ?? 'auto' } });
        workers.push(w);
        w.on('message', (msg: { id: number; report?: SessionReport; error?: string }) => {
          active -= 1;
          if (msg.report) results[msg.id] = msg.report;
          else failed.push(msg.id);
          done += 1;
          options.onProgress?.(done, targets.length);
          feed(w);
          if (next >= targets.length && active === 0) resolve();
        });
        w.on('error', reject);
        feed(w);
      }
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  if (failed.length > 0) {
    const decoder = createDecoder(options.decoder ?? 'auto');
    const lookup = rootLookup();
    for (const id of failed.sort((a, b) => a - b)) results[id] = await checkResolved(targets[id]!, { decoder, lookup });
  }
  return results as SessionReport[];
}

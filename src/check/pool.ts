import { defaultJobs, runPool, workersAvailable } from '../log/pool.js';
import type { ResolvedTarget } from '../log/target.js';
import type { DecoderName } from '../physical/decoders.js';
import { createDecoder } from '../physical/decoders.js';
import { checkResolved, rootLookup, type SessionReport } from './engine.js';
import type { SecretsOptions } from '../views/secrets.js';
import type { BehaviourSettings } from './behaviour.js';

export interface RunOptions {
  /** Worker threads (default: available parallelism); 1 = in-process. */
  jobs?: number;
  decoder?: DecoderName | 'auto';
  onProgress?: (done: number, total: number) => void;
  /** Run the secret rules too (`--secrets`). */
  secrets?: SecretsOptions;
  /** Run these behaviour rules too (`--behaviour`, `--rule`, the config). */
  behaviour?: BehaviourSettings;
}

/** The rule options of a run, as `checkResolved` takes them. */
function ruleOptions(options: RunOptions): { secrets?: SecretsOptions; behaviour?: BehaviourSettings } {
  return { ...(options.secrets ? { secrets: options.secrets } : {}), ...(options.behaviour ? { behaviour: options.behaviour } : {}) };
}

export { defaultJobs };

async function inProcess(targets: ResolvedTarget[], options: RunOptions): Promise<SessionReport[]> {
  const decoder = createDecoder(options.decoder ?? 'auto');
  const lookup = rootLookup();
  const out: SessionReport[] = [];
  for (const t of targets) {
    out.push(await checkResolved(t, { decoder, lookup, ...ruleOptions(options) }));
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
  // Workers re-resolve plain paths: stdin, a forced --encoding and a by-id read stay in-process.
  const poolable = targets.every((t) => t.path !== '-' && t.encoding === undefined && t.storedAt === undefined);
  if (jobs <= 1 || targets.length < 4 || !poolable || !workersAvailable(import.meta.url)) return inProcess(targets, options);
  const { results, failed } = await runPool<{ path: string; root?: string }, SessionReport>(
    new URL('./worker.js', import.meta.url),
    targets.map((t) => ({ path: t.path, ...(t.root !== undefined ? { root: t.root } : {}) })),
    { jobs, workerData: { decoder: options.decoder ?? 'auto', ...ruleOptions(options) }, ...(options.onProgress ? { onProgress: options.onProgress } : {}) },
  );
  if (failed.length > 0) {
    const decoder = createDecoder(options.decoder ?? 'auto');
    const lookup = rootLookup();
    for (const id of failed) results[id] = await checkResolved(targets[id]!, { decoder, lookup, ...ruleOptions(options) });
  }
  return results as SessionReport[];
}

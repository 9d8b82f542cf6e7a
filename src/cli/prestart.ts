/**
 * Before the CLI's modules load (`bin/dsh.js`): a command about to read a big log through the session
 * index will hash it on a worker thread, and a worker takes ~0.1 s to start. Started now, that passes
 * while this thread loads the command (~0.1 s too). Only for the commands that read the index, with
 * the cache on, when no target named is a file too small for the worker.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACT_NAMES, cacheDisabledByEnv, prestartHashWorker, WORKER_MIN_BYTES } from '../api/prestart.js';
import { COMMANDS } from './commands/index.js';

/** The size of the artifact `arg` names when it is a file or a session directory; undefined when it is neither (an id, a seq). */
function artifactBytes(arg: string): number | undefined {
  try {
    const st = statSync(arg);
    if (st.isFile()) return st.size;
    if (!st.isDirectory()) return undefined;
    for (const name of ARTIFACT_NAMES) {
      try {
        return statSync(path.join(arg, name)).size;
      } catch {
        // The other name, or none.
      }
    }
  } catch {
    // Not a path.
  }
  return undefined;
}

/** Whether `dsh <argv>` will want a hash worker soon (see the module comment). */
export function wantsHashWorker(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  const [command, ...rest] = argv;
  if (command === undefined || !COMMANDS.some((c) => c.name === command && c.readsIndex) || cacheDisabledByEnv(env)) return false;
  if (rest.some((a) => a === '--no-cache' || a === '--help' || a === '-h')) return false;
  const sizes = rest.filter((a) => !a.startsWith('-')).map(artifactBytes).filter((n): n is number => n !== undefined);
  return sizes.length === 0 || sizes.some((n) => n >= WORKER_MIN_BYTES);
}

export function prestart(argv: readonly string[], env: NodeJS.ProcessEnv): void {
  if (wantsHashWorker(argv, env)) prestartHashWorker();
}

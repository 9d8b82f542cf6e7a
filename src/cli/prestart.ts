/**
 * Before the CLI's modules load (`bin/dsh.js`): a command about to read a big log through the session
 * index will hash it on a worker thread, and a worker takes ~0.1 s to start. Started now, that passes
 * while this thread loads the command (~0.1 s too); given a big log file, it begins hashing it. Only
 * for the commands that read the index, with the cache on, when no target named is a file too small
 * for the worker.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACT_NAMES, cacheConfig, cacheDisabledByEnv, prestartHash, prestartHashWorker, readPointer, WORKER_MIN_BYTES } from '../api/prestart.js';
import { COMMANDS } from './commands/index.js';

/** The artifact file `arg` names (a file, or a session directory's artifact) and its size; undefined when it is neither (an id, a seq). */
function artifactOf(arg: string): { file: string; size: number } | undefined {
  try {
    const st = statSync(arg);
    if (st.isFile()) return { file: arg, size: st.size };
    if (!st.isDirectory()) return undefined;
    for (const name of ARTIFACT_NAMES) {
      try {
        const file = path.join(arg, name);
        return { file, size: statSync(file).size };
      } catch {
        // The other name, or none.
      }
    }
  } catch {
    // Not a path.
  }
  return undefined;
}

/** Whether the file starts as a log does (a zstd frame, or a JSON line), not as a ZIP export or anything else. */
function looksLikeLog(file: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(4);
    const n = readSync(fd, head, 0, 4, 0);
    return (n === 4 && head.readUInt32LE(0) === 0xfd2fb528) || (n > 0 && head[0] === 0x7b);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The targets `dsh <argv>` names as files, when it will want a hash worker soon (see the module comment); undefined when it will not. */
function hashTargets(argv: readonly string[], env: NodeJS.ProcessEnv): { file: string; size: number }[] | undefined {
  const [command, ...rest] = argv;
  const entry = COMMANDS.find((c) => c.name === command);
  const reads = entry?.readsIndex;
  if (!reads || (typeof reads === 'function' && !reads(rest)) || cacheDisabledByEnv(env)) return undefined;
  if (rest.some((a) => a === '--no-cache' || a === '--help' || a === '-h')) return undefined;
  const files = rest.filter((a) => !a.startsWith('-')).map(artifactOf).filter((f): f is { file: string; size: number } => f !== undefined);
  return files.length === 0 || files.some((f) => f.size >= WORKER_MIN_BYTES) ? files : undefined;
}

/** Whether `dsh <argv>` will want a hash worker soon (see the module comment). */
export function wantsHashWorker(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  return hashTargets(argv, env) !== undefined;
}

/**
 * Start the hash worker; when a big log file is named, it begins hashing that file at once, as the
 * command will ask (the prefix its cache pointer names, when the log has grown since), and the
 * command takes that hash over (`prestartHash`).
 */
export function prestart(argv: readonly string[], env: NodeJS.ProcessEnv): void {
  const targets = hashTargets(argv, env);
  if (!targets) return;
  prestartHashWorker();
  const big = targets.find((t) => t.size >= WORKER_MIN_BYTES);
  if (!big || !looksLikeLog(big.file)) return;
  const file = path.resolve(big.file);
  const pointer = readPointer(cacheConfig(env), file);
  prestartHash(file, pointer && pointer.size < big.size ? pointer.size : undefined);
}

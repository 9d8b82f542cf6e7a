import { lstatSync, openSync, realpathSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { outputRefusal } from '../log/target.js';

/** A new output being written: the final path, and the temporary sibling open for writing. */
export interface NewFile {
  abs: string;
  tmp: string;
  fd: number;
}

/**
 * Check an output path before any log is read (refuse a directory, an input,
 * and an existing file unless forced) and open a temporary sibling with `wx`;
 * the caller writes it, then renames or links it into place, so a failure
 * leaves nothing half-written. No `--force` ever replaces an input.
 */
export function prepareNewFile(output: string, force: boolean, mode = 0o666, inputs: readonly string[] = []): NewFile {
  const abs = path.resolve(output);
  const real = realOrSelf(abs);
  if (inputs.some((i) => i !== '-' && realOrSelf(i) === real)) {
    throw new UsageError(`refusing to write ${abs}: it is an input of this command (dsh never writes to its inputs)`, 'io');
  }
  for (const input of inputs) {
    const why = outputRefusal(abs, input);
    if (why) throw new UsageError(why, 'io');
  }
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    st = undefined;
  }
  if (st?.isDirectory()) throw new UsageError(`cannot write ${abs}: it is a directory`, 'io');
  if (st && !force) throw new UsageError(`refusing to overwrite ${abs}: it already exists (use --force to replace it)`, 'io');
  const dir = path.dirname(abs);
  const tmp = path.join(dir, `.${path.basename(abs)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  try {
    return { abs, tmp, fd: openSync(tmp, 'wx', mode) };
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    const why =
      e.code === 'ENOENT'
        ? `directory ${dir} does not exist`
        : e.code === 'ENOTDIR'
          ? `${dir} is not a directory`
          : e.code === 'EACCES' || e.code === 'EPERM' || e.code === 'EROFS'
            ? `directory ${dir} is not writable (${e.code})`
            : e.message;
    throw new UsageError(`cannot write ${abs}: ${why}`, 'io');
  }
}

/** The real path of `p`, or `p` resolved when it does not exist. */
export function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

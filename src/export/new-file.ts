import { lstatSync, openSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { UsageError } from '../log/errors.js';

/** A new output being written: the final path, and the temporary sibling open for writing. */
export interface NewFile {
  abs: string;
  tmp: string;
  fd: number;
}

/**
 * Check an output path before any log is read (refuse a directory, and an
 * existing file unless forced) and open a temporary sibling with `wx`; the
 * caller writes it, then renames or links it into place, so a failure leaves
 * nothing half-written.
 */
export function prepareNewFile(output: string, force: boolean, mode = 0o666): NewFile {
  const abs = path.resolve(output);
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

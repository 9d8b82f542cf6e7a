import { closeSync, fsyncSync, linkSync, lstatSync, openSync, realpathSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { outputRefusal } from '../log/target.js';

/**
 * A new output being written: the final path, and the temporary sibling open
 * for writing. The one write-safety path for new files: {@link prepareNewFile}
 * opens it, the caller writes `fd` (or {@link writeNewFile} does), then
 * {@link publishNewFile} puts it in place or {@link abandonNewFile} removes it.
 */
export interface NewFile {
  abs: string;
  tmp: string;
  fd: number;
  /** `fd` has been closed (by {@link closeNewFile}, publish or abandon). */
  closed?: boolean;
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
    return { abs, tmp, fd: openSync(tmp, 'wx', mode), closed: false };
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

/** fsync and close the temporary file once (a later call does nothing). */
export function closeNewFile(out: NewFile): void {
  if (out.closed) return;
  out.closed = true;
  try {
    fsyncSync(out.fd);
  } finally {
    closeSync(out.fd);
  }
}

/**
 * Put a fully written temporary file in place: without `force` a hard link
 * (never replaces a file that appeared meanwhile; filesystems without hard
 * links fall back to rename, guarded by the pre-check), with `force` an atomic
 * rename over the old file. On failure the temporary file is removed.
 */
export function publishNewFile(out: NewFile, force: boolean): void {
  try {
    closeNewFile(out);
    if (force) renameSync(out.tmp, out.abs);
    else {
      try {
        linkSync(out.tmp, out.abs);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new UsageError(`refusing to overwrite ${out.abs}: it already exists (use --force to replace it)`, 'io');
        }
        renameSync(out.tmp, out.abs);
      }
      try {
        unlinkSync(out.tmp);
      } catch {
        /* renamed */
      }
    }
  } catch (error) {
    abandonNewFile(out);
    throw ioError(out, error);
  }
}

/** Remove the temporary file (after a failure, or when nothing is to be published). */
export function abandonNewFile(out: NewFile): void {
  if (!out.closed) {
    out.closed = true;
    try {
      closeSync(out.fd);
    } catch {
      /* already closed */
    }
  }
  try {
    unlinkSync(out.tmp);
  } catch {
    /* gone */
  }
}

/** Write every part to the temporary file, then publish it. Returns the bytes written. */
export function writeNewFile(out: NewFile, parts: Iterable<string | Uint8Array>, force: boolean): number {
  let bytes = 0;
  try {
    for (const part of parts) {
      const buf = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
      let off = 0;
      while (off < buf.length) off += writeSync(out.fd, buf, off, buf.length - off);
      bytes += buf.length;
    }
  } catch (error) {
    abandonNewFile(out);
    throw ioError(out, error);
  }
  publishNewFile(out, force);
  return bytes;
}

/** A system error while writing `out` as a classified I/O error; anything else unchanged. */
function ioError(out: NewFile, error: unknown): unknown {
  const e = error as NodeJS.ErrnoException;
  if (!(error instanceof UsageError) && typeof e?.code === 'string') return new UsageError(`cannot write ${out.abs}: ${e.message}`, 'io');
  return error;
}

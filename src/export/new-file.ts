import { closeSync, fsyncSync, linkSync, lstatSync, openSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { ARTIFACT_NAMES, inDshLayout, isInside, realish } from '../log/target.js';

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
 * An input of a command that writes: an artifact or a directory (a root, a project or session
 * directory) by path, optionally with the session root it was found under. `-` (stdin) and
 * `x.zip:entry` have no place on disk and restrict nothing.
 */
export type OutputInput = string | { path: string; root?: string };

export interface OutputRefusalOptions {
  /**
   * The output is a directory dsh creates and fills (salvage, redact, dataset): it must also not lie
   * inside the folder holding any input artifact (whatever its name), nor contain an input.
   */
  directory?: boolean;
}

/**
 * The one write-safety rule for new outputs (files and directories): why `output` must not be
 * written given the command's inputs, or undefined when it may. Refused, whatever `--force` says:
 * the output is an input (same real path); it lies inside the session directory holding an input
 * `session.jsonl[.zstd]`; for an input in DSH's layout (or found under a root), anywhere under that
 * root, where DSH's listing looks (the root itself, its project and session directories); inside an
 * input given as a directory. A directory output is also refused inside the folder holding any input
 * artifact, and when it contains an input. Real paths are compared (symlinks resolved), so an output
 * can never become part of what DSH reads.
 */
export function outputRefusal(output: string, inputs: readonly OutputInput[], options: OutputRefusalOptions = {}): string | undefined {
  const abs = path.resolve(output);
  const out = realish(abs);
  for (const input of inputs) {
    const given = typeof input === 'string' ? input : input.path;
    if (given === '-' || /\.zip:/i.test(given)) continue;
    const real = realish(given);
    if (real === out) return `refusing to write ${abs}: it is an input of this command (dsh never writes to its inputs)`;
    const roots = typeof input !== 'string' && input.root !== undefined ? [realish(input.root)] : [];
    let isDir = false;
    try {
      isDir = statSync(real).isDirectory();
    } catch {
      /* absent: judged by its name */
    }
    if (isDir) {
      if (isInside(out, real)) return `refusing to write ${abs}: it is inside the input directory ${real}; choose a path outside it`;
    } else if (inDshLayout(real)) {
      roots.push(path.dirname(path.dirname(path.dirname(real))));
    }
    const sessionDir = path.dirname(real);
    if (!isDir && ((ARTIFACT_NAMES as readonly string[]).includes(path.basename(real)) || options.directory) && isInside(out, sessionDir)) {
      return `refusing to write ${abs}: it is inside the input's session directory ${sessionDir}; choose a path outside it`;
    }
    for (const root of roots) {
      if (isInside(out, root)) {
        return `refusing to write ${abs}: it is inside the input's session root ${root}, where DSH's listing looks (the root, its project and session directories); choose a path outside it`;
      }
    }
    if (options.directory && isInside(real, out)) return `refusing to write ${abs}: it contains the input ${real}; choose a directory outside the inputs`;
  }
  return undefined;
}

/**
 * Check an output path before any log is read (refuse a directory, an input or a place beside one
 * ({@link outputRefusal}), and an existing file unless forced) and open a temporary sibling with `wx`;
 * the caller writes it, then renames or links it into place, so a failure leaves nothing half-written.
 * No `--force` ever replaces an input.
 */
export function prepareNewFile(output: string, force: boolean, mode = 0o666, inputs: readonly OutputInput[] = []): NewFile {
  const abs = path.resolve(output);
  const why = outputRefusal(abs, inputs);
  if (why) throw new UsageError(why, 'io');
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
    for (const part of parts) bytes += writePart(out, part);
  } catch (error) {
    abandonNewFile(out);
    throw ioError(out, error);
  }
  publishNewFile(out, force);
  return bytes;
}

/** {@link writeNewFile} for parts computed as they are written (a re-read of a log). */
export async function writeNewFileAsync(out: NewFile, parts: AsyncIterable<string | Uint8Array>, force: boolean): Promise<number> {
  let bytes = 0;
  try {
    for await (const part of parts) bytes += writePart(out, part);
  } catch (error) {
    abandonNewFile(out);
    throw ioError(out, error);
  }
  publishNewFile(out, force);
  return bytes;
}

function writePart(out: NewFile, part: string | Uint8Array): number {
  const buf = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
  let off = 0;
  while (off < buf.length) off += writeSync(out.fd, buf, off, buf.length - off);
  return buf.length;
}

/** A system error while writing `out` as a classified I/O error; anything else unchanged. */
function ioError(out: NewFile, error: unknown): unknown {
  const e = error as NodeJS.ErrnoException;
  if (!(error instanceof UsageError) && typeof e?.code === 'string') return new UsageError(`cannot write ${out.abs}: ${e.message}`, 'io');
  return error;
}

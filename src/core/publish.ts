/**
 * The one output publisher: every file dsh writes (export, report, export-otlp, redact, salvage, fork,
 * dataset, the index cache) goes through here. A new file is written to a temporary sibling that
 * cannot collide (hidden name with the process id and random bytes, created exclusively), fsynced,
 * then put in place (a hard link that never replaces a file, or with `replace` an atomic rename),
 * and its directory is fsynced so the new name survives a crash. A failure at any step removes the
 * temporary file, so a reader never sees half a file. The write-safety rule ({@link outputRefusal})
 * lives here too: nothing is written beside or inside an input.
 *
 * Two levels: the raw one ({@link openNewFile}, {@link commitNewFile}, {@link writeFileAtomic},
 * {@link PendingFile}) throws the system's errors for the caller to judge (the cache turns them into a
 * warning); the command one ({@link prepareNewFile}, {@link publishNewFile}, {@link writeNewFile})
 * checks the output first and throws classified I/O errors (exit 2).
 */
import { closeSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, promises as fsp, readdirSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { UsageError } from './errors.js';
import { ARTIFACT_NAMES, inDshLayout, isInside, realish } from './paths.js';

/**
 * A new output being written: the final path, and the temporary sibling open for writing.
 * {@link openNewFile} or {@link prepareNewFile} opens it, the caller writes `fd` (or
 * {@link writeNewFile} does), then {@link commitNewFile} / {@link publishNewFile} puts it in place or
 * {@link abandonNewFile} removes it.
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
 * Check and create a NEW output directory (salvage, redact): refuse when it exists and is not an
 * empty directory, or where {@link outputRefusal} (directory rules) refuses it: the input's
 * directory, inside it, or inside the input's root — output must never land beside or inside the
 * evidence. `input` is the artifact (`-` / `zip:` restrict nothing).
 */
export function prepareOutputDir(out: string, input: OutputInput | undefined): string {
  const abs = path.resolve(out);
  const why = input !== undefined ? outputRefusal(abs, [input], { directory: true }) : undefined;
  if (why) throw new UsageError(why, 'io');
  let st;
  try {
    st = statSync(abs);
  } catch {
    st = undefined;
  }
  if (st) {
    if (!st.isDirectory()) throw new UsageError(`output ${abs} exists and is not a directory`, 'io');
    if (readdirSync(abs).length > 0) throw new UsageError(`output directory ${abs} exists and is not empty; refusing to overwrite`, 'io');
  } else {
    mkdirSync(abs, { recursive: true, mode: 0o700 });
  }
  return abs;
}

/** The temporary sibling of `abs`: hidden, and unique to this process and call (created exclusively besides). */
export function tempPathFor(abs: string): string {
  return path.join(path.dirname(abs), `.${path.basename(abs)}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
}

/** Open a temporary sibling of `file` for writing (`wx`: never an existing file). System errors are thrown as they are. */
export function openNewFile(file: string, mode = 0o666): NewFile {
  const abs = path.resolve(file);
  const tmp = tempPathFor(abs);
  return { abs, tmp, fd: openSync(tmp, 'wx', mode), closed: false };
}

/**
 * Check an output path before any log is read (refuse a directory, an input or a place beside one
 * ({@link outputRefusal}), and an existing file unless forced) and open a temporary sibling with `wx`;
 * the caller writes it, then it is published, so a failure leaves nothing half-written.
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
  try {
    return openNewFile(abs, mode);
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

/** fsync a directory so a name just linked or renamed into it is durable (best effort: not every platform opens directories). */
function syncDir(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // EINVAL/EISDIR where directories cannot be synced: the rename itself is still atomic.
  } finally {
    closeSync(fd);
  }
}

function existsError(abs: string): NodeJS.ErrnoException {
  const e = new Error(`EEXIST: file already exists, link '${abs}'`) as NodeJS.ErrnoException;
  e.code = 'EEXIST';
  return e;
}

/**
 * Put a fully written temporary file in place (fsync, close, then the name, then its directory):
 * without `replace` a hard link, which never replaces a file that appeared meanwhile (an error with
 * code `EEXIST`; filesystems without hard links fall back to a rename, after checking again that
 * nothing is there); with `replace` an atomic rename over the old file. On failure the temporary
 * file is removed and the system's error thrown.
 */
export function commitNewFile(out: NewFile, replace: boolean): void {
  try {
    closeNewFile(out);
    if (replace) renameSync(out.tmp, out.abs);
    else {
      try {
        linkSync(out.tmp, out.abs);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error;
        if (pathExists(out.abs)) throw existsError(out.abs);
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
    throw error;
  }
  syncDir(path.dirname(out.abs));
}

function pathExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * {@link commitNewFile} for a command's output: an output that appeared meanwhile is refused (unless
 * `force`), any other system error is a classified I/O error (exit 2).
 */
export function publishNewFile(out: NewFile, force: boolean): void {
  try {
    commitNewFile(out, force);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST' && !force) {
      throw new UsageError(`refusing to overwrite ${out.abs}: it already exists (use --force to replace it)`, 'io');
    }
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

/**
 * Write `file` whole from `parts` through a temporary sibling (raw level: the system's errors are
 * thrown, nothing is left behind on failure). With `replace` (the default) an existing file is
 * replaced atomically; without, an existing file fails with `EEXIST`.
 */
export function writeFileAtomic(file: string, parts: Iterable<string | Uint8Array>, options: { mode?: number; replace?: boolean } = {}): void {
  const out = openNewFile(file, options.mode);
  try {
    for (const part of parts) writePart(out, part);
  } catch (error) {
    abandonNewFile(out);
    throw error;
  }
  commitNewFile(out, options.replace ?? true);
}

/** Write one part at the temporary file's end; returns its byte length. */
export function writePart(out: NewFile, part: string | Uint8Array): number {
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

/**
 * A new file written asynchronously (a long re-encode of a log: redact, salvage, fork): the same
 * temporary sibling, fsync and publication as {@link NewFile}, with writes that yield to the event
 * loop. Raw level: the system's errors are thrown; `commit(false)` never replaces a file (`EEXIST`).
 */
export class PendingFile {
  private handle: fsp.FileHandle | undefined;
  private constructor(
    private readonly file: NewFile,
    handle: fsp.FileHandle,
  ) {
    this.handle = handle;
  }

  /** Create the parent directories (mode 0700) and open the temporary sibling of `target`. */
  static async open(target: string, mode = 0o600): Promise<PendingFile> {
    const abs = path.resolve(target);
    await fsp.mkdir(path.dirname(abs), { recursive: true, mode: 0o700 });
    const tmp = tempPathFor(abs);
    const handle = await fsp.open(tmp, 'wx', mode);
    return new PendingFile({ abs, tmp, fd: handle.fd, closed: false }, handle);
  }

  get target(): string {
    return this.file.abs;
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (!this.handle) throw new Error('output closed');
    let off = 0;
    while (off < bytes.length) off += (await this.handle.write(bytes, off, bytes.length - off)).bytesWritten;
  }

  /** fsync and close the temporary file, then put it in place ({@link commitNewFile}: the system's errors). */
  commit(replace: boolean): Promise<void> {
    return this.finish(() => commitNewFile(this.file, replace));
  }

  /** fsync and close the temporary file, then publish it as a command's output ({@link publishNewFile}: classified errors). */
  publish(force: boolean): Promise<void> {
    return this.finish(() => publishNewFile(this.file, force));
  }

  private async finish(place: () => void): Promise<void> {
    const handle = this.handle;
    if (!handle) throw new Error('output closed');
    this.handle = undefined;
    try {
      await handle.sync();
    } catch (error) {
      await handle.close().catch(() => undefined);
      this.file.closed = true;
      abandonNewFile(this.file);
      throw error;
    }
    await handle.close();
    this.file.closed = true;
    place();
  }

  /** Remove the temporary file (nothing is published). */
  async abandon(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    if (handle) await handle.close().catch(() => undefined);
    this.file.closed = true;
    abandonNewFile(this.file);
  }
}

import { closeSync, fstatSync, openSync, readSync, constants, type Stats } from 'node:fs';

/**
 * Random-access, read-only bytes of one artifact. Files are opened with
 * O_RDONLY and read with positional reads: nothing is ever written, locked or
 * truncated, and the whole file is never held in memory.
 */
export interface ByteSource {
  readonly size: number;
  /** A human name for messages (the path, `-` for stdin, or `zip:entry`). */
  readonly name: string;
  /** Read `[start, end)`; the returned buffer may be shorter at EOF. */
  read(start: number, end: number): Buffer;
  /** Read into `target` from `start` (no allocation); returns the bytes read. Optional. */
  readInto?(target: Buffer, start: number): number;
  /** The open file's descriptor, for another thread to read the same bytes with positional reads (files only). */
  readonly descriptor?: number;
  close(): void;
  /** The encoding the user asked for (`--encoding`), over the file name and the bytes. */
  encoding?: 'zstd' | 'none';
}

/** What kind of non-regular file a path is (for messages). */
export function fileKind(st: Stats): string {
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'FIFO';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  return 'special file';
}

/**
 * The I/O error for an artifact path that is not a regular file: a directory
 * gets Node's own read error (what DSH reports when it reads one); anything
 * else (FIFO, socket, device) is refused before reading, never waited on.
 */
export function notRegularFile(name: string, st: Stats): NodeJS.ErrnoException {
  if (st.isDirectory()) return Object.assign(new Error('EISDIR: illegal operation on a directory, read'), { code: 'EISDIR', path: name });
  return Object.assign(new Error(`cannot read ${name}: not a regular file (${fileKind(st)})`), { code: 'EFTYPE', path: name });
}

export class FileSource implements ByteSource {
  readonly size: number;
  readonly mtimeMs: number;
  private fd: number | undefined;

  constructor(readonly name: string) {
    // O_NOATIME is only allowed for the file owner; plain O_RDONLY is enough.
    // O_NONBLOCK: opening a FIFO with no writer must not wait forever; a
    // non-regular file is refused before any read.
    this.fd = openSync(name, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = fstatSync(this.fd);
    if (!st.isFile()) {
      closeSync(this.fd);
      this.fd = undefined;
      throw notRegularFile(name, st);
    }
    this.size = st.size;
    this.mtimeMs = st.mtimeMs;
  }

  read(start: number, end: number): Buffer {
    if (this.fd === undefined) throw new Error('source closed');
    const stop = Math.min(end, this.size);
    const length = Math.max(0, stop - start);
    const buffer = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, buffer, done, length - done, start + done);
      if (n === 0) break;
      done += n;
    }
    return done === length ? buffer : buffer.subarray(0, done);
  }

  get descriptor(): number | undefined {
    return this.fd;
  }

  readInto(target: Buffer, start: number): number {
    if (this.fd === undefined) throw new Error('source closed');
    const length = Math.max(0, Math.min(target.length, this.size - start));
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, target, done, length - done, start + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  close(): void {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }
}

export class MemorySource implements ByteSource {
  readonly size: number;
  constructor(readonly name: string, private readonly bytes: Buffer) {
    this.size = bytes.length;
  }
  read(start: number, end: number): Buffer {
    return this.bytes.subarray(start, Math.min(end, this.size));
  }
  close(): void {}
}

/**
 * A sliding window over a source for small sequential reads (frame and block
 * headers) without a syscall per header.
 */
export class WindowReader {
  private winStart = 0;
  private win: Buffer = Buffer.alloc(0);
  private readonly spare: Buffer | undefined;

  /**
   * With `reuse`, one window buffer is refilled in place (no allocation per
   * window): a buffer returned by `get` is then valid only until the next call.
   */
  constructor(private readonly source: ByteSource, private readonly windowSize = 4 << 20, reuse = false) {
    // Never larger than the source: a root of many small files must not allocate a big window per file.
    this.spare = reuse && source.readInto ? Buffer.allocUnsafe(Math.max(16, Math.min(windowSize, source.size))) : undefined;
  }

  get size(): number {
    return this.source.size;
  }

  /** Bytes `[offset, offset+n)`, or a shorter buffer when EOF comes first. */
  get(offset: number, n: number): Buffer {
    const end = offset + n;
    if (offset < this.winStart || end > this.winStart + this.win.length) {
      if (offset >= this.source.size) return Buffer.alloc(0);
      if (this.spare && n <= this.spare.length) {
        const got = this.source.readInto!(this.spare, offset);
        this.win = this.spare.subarray(0, got);
      } else {
        this.win = this.source.read(offset, offset + Math.max(n, this.windowSize));
      }
      this.winStart = offset;
    }
    const rel = offset - this.winStart;
    return this.win.subarray(rel, Math.min(rel + n, this.win.length));
  }

  byte(offset: number): number | undefined {
    const b = this.get(offset, 1);
    return b.length === 1 ? b[0] : undefined;
  }

  /** Little-endian unsigned integer of `n` (1..4) bytes at `offset`, without allocating; undefined past EOF. */
  uint(offset: number, n: number): number | undefined {
    if (offset < this.winStart || offset + n > this.winStart + this.win.length) {
      const b = this.get(offset, n);
      if (b.length < n) return undefined;
    }
    const w = this.win;
    const rel = offset - this.winStart;
    let v = 0;
    for (let i = n - 1; i >= 0; i--) v = v * 256 + (w[rel + i] as number);
    return v;
  }
}

import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSource } from '../physical/source.js';

/**
 * Holds one artifact view between reading (validated first) and compressing:
 * in memory up to `limit` bytes, then in a private temporary file, so export
 * memory stays bounded whatever the log size. Always `dispose()`.
 */
export class Spool {
  bytes = 0;
  private chunks: Buffer[] = [];
  private dir: string | undefined;
  private file: string | undefined;
  private fd: number | undefined;

  constructor(private readonly limit = 32 << 20) {}

  write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.bytes += chunk.length;
    if (this.fd === undefined && this.bytes <= this.limit) {
      // Decoders may reuse their output buffers: keep a copy.
      this.chunks.push(Buffer.from(chunk));
      return;
    }
    if (this.fd === undefined) {
      this.dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-export-'));
      this.file = path.join(this.dir, 'artifact');
      this.fd = openSync(this.file, 'wx', 0o600);
      for (const c of this.chunks) writeAll(this.fd, c);
      this.chunks = [];
    }
    writeAll(this.fd, chunk);
  }

  /** The spooled bytes, in order, in bounded pieces. */
  *read(piece = 1 << 20): Generator<Buffer> {
    if (this.fd === undefined) {
      for (const c of this.chunks) yield c;
      return;
    }
    const source = new FileSource(this.file!);
    try {
      for (let at = 0; at < source.size; at += piece) yield source.read(at, at + piece);
    } finally {
      source.close();
    }
  }

  dispose(): void {
    this.chunks = [];
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {
        /* already closed */
      }
      this.fd = undefined;
    }
    if (this.dir !== undefined) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

function writeAll(fd: number, buf: Buffer): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done);
}

import { Chalk, type ChalkInstance } from 'chalk';
import type { Writable } from 'node:stream';
import type { Speculation } from '../api/log.js';

export type ColorMode = 'auto' | 'always' | 'never';

/** Everything a command needs from the process, injectable for tests. */
export interface Io {
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** Set while a command's output is held back (`speculativeAction`): its warm reads may then speculate. */
  speculation?: Speculation;
}

export function colorFor(mode: ColorMode, stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): ChalkInstance {
  let enabled: boolean;
  if (mode === 'always') enabled = true;
  else if (mode === 'never') enabled = false;
  else if (env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '') enabled = false;
  else if (env['FORCE_COLOR'] !== undefined && env['FORCE_COLOR'] !== '0') enabled = true;
  else enabled = Boolean(stream.isTTY) && env['TERM'] !== 'dumb';
  return new Chalk({ level: enabled ? 1 : 0 });
}

export { escapeControl, preview } from '../api/log.js';
import { textPieces } from '../api/log.js';

export class BrokenPipe extends Error {}

/** Write with backpressure; a closed pipe (`| head`) ends the command quietly. `written`: the write's callback (the stream is done with the chunk). */
export function writeOut(stream: Writable, text: string | Uint8Array, written?: (error?: Error | null) => void): Promise<void> | void {
  if ((stream as { destroyed?: boolean }).destroyed) throw new BrokenPipe();
  const ok = written ? stream.write(text, written) : stream.write(text);
  if (ok) return;
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      cleanup();
      resolve();
    };
    const onError = (error: NodeJS.ErrnoException) => {
      cleanup();
      reject(error.code === 'EPIPE' ? new BrokenPipe() : error);
    };
    const onClose = () => {
      cleanup();
      reject(new BrokenPipe());
    };
    const cleanup = () => {
      stream.off('drain', onDrain);
      stream.off('error', onError);
      stream.off('close', onClose);
    };
    stream.on('drain', onDrain);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}

/** Buffered line writer for large outputs (NDJSON streams). */
export class LineWriter {
  private buf: string[] = [];
  private size = 0;
  constructor(private readonly stream: Writable, private readonly limit = 1 << 16) {}
  async line(text: string): Promise<void> {
    if (text.length >= this.limit) {
      await this.text(text);
      return this.text('\n');
    }
    this.buf.push(text, '\n');
    this.size += text.length + 1;
    if (this.size >= this.limit) await this.flush();
  }
  /** Text without a newline added. A text past the buffer's limit is written in pieces: never joined or encoded whole. */
  async text(text: string): Promise<void> {
    if (text.length === 0) return;
    if (text.length >= this.limit) {
      await this.flush();
      for (const piece of textPieces(text)) await writeOut(this.stream, piece);
      return;
    }
    this.buf.push(text);
    this.size += text.length;
    if (this.size >= this.limit) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.buf.length === 0) return;
    const text = this.buf.join('');
    this.buf = [];
    this.size = 0;
    await writeOut(this.stream, text);
  }
}

/** A byte count in binary units (`812 B`, `4.5 KiB`, `2.0 GiB`). */
export function humanBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

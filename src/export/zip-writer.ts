import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { Readable, type Writable } from 'node:stream';
import { UsageError } from '../log/errors.js';
import { assertSafeEntryName } from './names.js';
import { toJson } from '../core/json.js';

/** The fixed entry time of `--deterministic` (the ZIP epoch; archiver writes UTC DOS times). */
export const DETERMINISTIC_DATE = new Date(Date.UTC(1980, 0, 1, 0, 0, 0));

/** The slice of archiver@7's API dsh uses (archiver ships no types). */
interface Archiver extends Readable {
  append(source: Readable | Buffer, data: { name: string; date?: Date; store?: boolean; mode?: number }): this;
  finalize(): Promise<void>;
  abort(): this;
  pointer(): number;
}
type ArchiverFactory = (format: 'zip', options: { zlib: { level: number }; forceLocalTime?: boolean }) => Archiver;

let factory: ArchiverFactory | undefined;
function loadArchiver(): ArchiverFactory {
  if (factory) return factory;
  try {
    factory = createRequire(import.meta.url)('archiver') as ArchiverFactory;
  } catch (error) {
    throw new UsageError(`dsh export needs the "archiver" package, which cannot be loaded: ${(error as Error).message}`, 'io');
  }
  return factory;
}

export interface EntryFacts {
  name: string;
  bytes: number;
  sha256: string;
}

export interface ZipProgress {
  entries: number;
  bytesIn: number;
  bytesOut: number;
}

/**
 * A streaming ZIP writer over archiver: entries are deflated one at a time
 * (each `add` resolves once archiver has consumed it), with data descriptors,
 * one fixed entry time, and every name checked by `assertSafeEntryName`.
 */
export class ZipWriter {
  private readonly archive: Archiver;
  private readonly names = new Set<string>();
  private failure: Error | undefined;
  private waiters: { name: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  private readonly archiveHash = createHash('sha256');
  private entriesDone = 0;
  private readonly ended: Promise<void>;
  private bytesIn = 0;

  constructor(
    out: Writable,
    private readonly options: { level: number; date: Date; onProgress?: (p: ZipProgress) => void },
  ) {
    this.archive = loadArchiver()('zip', { zlib: { level: options.level } });
    this.archive.on('error', (error: Error) => this.fail(error));
    this.archive.on('warning', (error: Error) => this.fail(error));
    this.archive.on('data', (chunk: Buffer) => this.archiveHash.update(chunk));
    this.ended = new Promise((resolve) => this.archive.once('end', () => resolve()));
    this.archive.on('entry', (entry: { name: string }) => {
      this.entriesDone += 1;
      const w = this.waiters.shift();
      if (w && w.name === entry.name) w.resolve();
      else w?.reject(new Error(`archiver finished entry ${entry.name} out of order`));
      this.progress();
    });
    this.archive.pipe(out);
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.reject(error);
  }

  private progress(): void {
    this.options.onProgress?.({ entries: this.entriesDone, bytesIn: this.bytesIn, bytesOut: this.archive.pointer() });
  }

  /**
   * Add one entry from bytes or an iterable of chunks (pulled lazily, so a
   * slow output applies backpressure all the way to the reader).
   */
  async add(name: string, content: Buffer | Iterable<Buffer>, opts: { store?: boolean } = {}): Promise<EntryFacts> {
    if (this.failure) throw this.failure;
    assertSafeEntryName(name);
    if (this.names.has(name)) throw new Error(`duplicate archive entry ${toJson(name)}`);
    this.names.add(name);
    const hash = createHash('sha256');
    let bytes = 0;
    const self = this;
    const chunks: Iterable<Buffer> = Buffer.isBuffer(content) ? [content] : content;
    function* tapped(): Generator<Buffer> {
      for (const chunk of chunks) {
        if (chunk.length === 0) continue;
        hash.update(chunk);
        bytes += chunk.length;
        self.bytesIn += chunk.length;
        self.progress();
        yield chunk;
      }
    }
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ name, resolve, reject }));
    this.archive.append(Readable.from(tapped(), { objectMode: false }), {
      name,
      date: this.options.date,
      ...(opts.store ? { store: true } : {}),
    });
    await done;
    if (this.failure) throw this.failure;
    return { name, bytes, sha256: hash.digest('hex') };
  }

  /** Write the central directory; resolves when every byte went to the output. */
  async finish(): Promise<{ bytes: number; sha256: string }> {
    if (this.failure) throw this.failure;
    await this.archive.finalize();
    await this.ended;
    if (this.failure) throw this.failure;
    return { bytes: this.archive.pointer(), sha256: this.archiveHash.digest('hex') };
  }

  abort(): void {
    try {
      this.archive.abort();
    } catch {
      /* best effort */
    }
  }
}

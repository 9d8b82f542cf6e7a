import { promises as fsp } from 'node:fs';
import { PendingFile } from '../core/publish.js';
import { compressFrame, type EncoderName } from '../physical/encoder.js';
import { toHeaderLine } from './header.js';
import { eventLine, packBatch } from './rows.js';
import { HUGE_LINE_BYTES } from './scanner.js';
import { releaseMemory } from '../core/memory.js';
import type { Encoding, SessionEvent, SessionHeader } from './types.js';
import { jsonByteLength, jsonText, toJson } from '../core/json.js';

/**
 * The project's own DSH artifact writer (fixtures, tests, bench, `fork --out`).
 * Mirrors DSH's JSONL backend: header line, then one durable append per batch.
 * - raw:  `header\n` then, per batch, its lines each followed by `\n`;
 * - zstd: frame(header line + `\n`), then one checksummed frame per batch
 *   (batch lines joined by `\n` plus a trailing `\n`).
 * Chunk runs are packed per batch exactly as DSH's `packChunkRuns` (default on).
 * It never overwrites an existing file.
 */

export interface WriteOptions {
  header: SessionHeader;
  encoding: Encoding;
  /** DSH's `packChunks` (default true). */
  packChunks?: boolean;
  /** zstd level (default 3, DSH's). */
  level?: number;
  encoder?: EncoderName;
}

export interface ArtifactOptions extends WriteOptions {
  batches: Iterable<SessionEvent[]> | AsyncIterable<SessionEvent[]>;
}

/** Plaintext of one batch (lines + trailing LF each), as DSH appends it. */
export function batchPlaintext(batch: readonly SessionEvent[], packChunks = true): Buffer {
  // Each line encoded into one buffer (no joined text); a huge event's line is not kept as text:
  // it is measured and written from its JSON text's pieces, so the batch holds the event and its bytes only.
  const lines = packBatch(batch, packChunks, (event) => {
    const line = eventLine(event);
    return line.length < HUGE_LINE_BYTES ? line : new HugeLine(event);
  });
  let total = 0;
  let huge = false;
  for (const l of lines) {
    huge ||= typeof l !== 'string';
    total += (typeof l === 'string' ? Buffer.byteLength(l) : jsonByteLength(l.event)) + 1;
  }
  // The text made to find a huge line's length is let go before the batch's bytes are held.
  if (huge) releaseMemory();
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const l of lines) {
    if (typeof l === 'string') at += out.write(l, at);
    else for (const piece of jsonText(l.event)) at += out.write(piece, at);
    out[at++] = 0x0a;
  }
  return out;
}

/** An event whose line is too long to hold as text beside its value (see `batchPlaintext`). */
class HugeLine {
  constructor(readonly event: SessionEvent) {}
}

/**
 * Incremental encoder: `header()` then `batch()` per durable append; each call
 * returns the bytes that append adds to the artifact (one frame in zstd mode).
 * Tracks seq contiguity like DSH's backend (`append seq mismatch`).
 */
export class ArtifactEncoder {
  private nextSeq = 0;
  private headerDone = false;
  /** Plaintext size of the last encoded write. */
  lastPlaintextBytes = 0;
  constructor(private readonly opts: WriteOptions) {}

  get eventCount(): number {
    return this.nextSeq;
  }

  async header(): Promise<Buffer> {
    if (this.headerDone) throw new Error('header already written');
    this.headerDone = true;
    const plaintext = Buffer.from(toHeaderLine(this.opts.header) + '\n', 'utf8');
    return this.encode(plaintext);
  }

  async batch(events: readonly SessionEvent[]): Promise<Buffer> {
    if (!this.headerDone) throw new Error('header must be written first');
    if (events.length === 0) throw new Error('cannot append an empty batch');
    for (let i = 0; i < events.length; i++) {
      const s = events[i]!.seq;
      if (s !== this.nextSeq) {
        throw new Error(`append seq mismatch for "${this.opts.header.id}": expected ${this.nextSeq} at index ${i}, got ${s}`);
      }
      this.nextSeq++;
    }
    return this.encode(batchPlaintext(events, this.opts.packChunks ?? true));
  }

  private encode(plaintext: Buffer): Promise<Buffer> {
    this.lastPlaintextBytes = plaintext.length;
    if (this.opts.encoding === 'none') return Promise.resolve(plaintext);
    return compressFrame(plaintext, this.opts.level ?? 3, this.opts.encoder);
  }
}

/** Build a complete artifact in memory. */
export async function writeArtifact(opts: ArtifactOptions): Promise<Buffer> {
  const enc = new ArtifactEncoder(opts);
  const parts: Buffer[] = [await enc.header()];
  for await (const batch of opts.batches) parts.push(await enc.batch(batch));
  return Buffer.concat(parts);
}

/**
 * Writes an artifact to a NEW path through the one output publisher (src/core/publish.ts): a
 * temporary sibling (`wx`), fsynced, published with `link()` (never overwrites; fails with EEXIST
 * if the target exists), like DSH.
 */
export class ArtifactFileWriter {
  private out: PendingFile | undefined;
  private bytes = 0;
  private readonly encoder: ArtifactEncoder;

  private constructor(readonly target: string, opts: WriteOptions) {
    this.encoder = new ArtifactEncoder(opts);
  }

  static async create(target: string, opts: WriteOptions): Promise<ArtifactFileWriter> {
    const w = new ArtifactFileWriter(target, opts);
    if (await exists(target)) throw existsError(target);
    w.out = await PendingFile.open(target, 0o600);
    try {
      await w.write(await w.encoder.header());
    } catch (error) {
      await w.abort();
      throw error;
    }
    return w;
  }

  get size(): number {
    return this.bytes;
  }

  get eventCount(): number {
    return this.encoder.eventCount;
  }

  /** Append one durable batch (one frame in zstd mode). */
  async append(events: readonly SessionEvent[]): Promise<void> {
    await this.write(await this.encoder.batch(events));
  }

  /** Append raw bytes verbatim (e.g. a deliberately torn tail). */
  async appendBytes(bytes: Buffer): Promise<void> {
    await this.write(bytes);
  }

  private async write(bytes: Buffer): Promise<void> {
    if (!this.out) throw new Error('writer closed');
    await this.out.write(bytes);
    this.bytes += bytes.length;
  }

  /** fsync, publish at the target (never overwriting), remove the temp name. */
  async close(): Promise<string> {
    const out = this.out;
    if (!out) throw new Error('writer closed');
    this.out = undefined;
    try {
      await out.commit(false);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw existsError(this.target);
      throw error;
    }
    return this.target;
  }

  async abort(): Promise<void> {
    const out = this.out;
    this.out = undefined;
    await out?.abandon();
  }
}

/** Write a complete artifact to a new file (parent dirs created; refuses to overwrite). */
export async function writeArtifactFile(target: string, opts: ArtifactOptions): Promise<string> {
  const w = await ArtifactFileWriter.create(target, opts);
  try {
    for await (const batch of opts.batches) await w.append(batch);
  } catch (error) {
    await w.abort();
    throw error;
  }
  return w.close();
}

async function exists(p: string): Promise<boolean> {
  try {
    await fsp.lstat(p);
    return true;
  } catch {
    return false;
  }
}

function existsError(target: string): Error {
  const e = new Error(`refusing to overwrite existing file ${toJson(target)}`) as NodeJS.ErrnoException;
  e.code = 'EEXIST';
  return e;
}

export { sessionPath, encodeSegment, decodeSegment, projectKey } from './layout.js';

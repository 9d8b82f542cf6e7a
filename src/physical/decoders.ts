import zlib from 'node:zlib';
import { Decompress as FzstdDecompress } from 'fzstd';
import { frameBlocks, frameHeaderLayout, frameHeaderValues, ZSTD_BLOCK_MAX, type BlockInfo } from './zstd-frames.js';
import { Xxh64 } from './xxhash64.js';
import { loadMongo } from './mongo.js';
import { UsageError } from '../core/errors.js';

/**
 * Decoder seam. Complete frames are decoded with checksum verification;
 * a torn final frame is decoded with libzstd's prefix semantics (whatever
 * plaintext the bytes present can produce, errors swallowed as "nothing").
 */
export interface FrameDecoder {
  readonly name: DecoderName;
  /** Decode one or more concatenated complete frames; throws a DecodeFailure. */
  decode(frames: Buffer): Promise<Buffer>;
  /** Plaintext recoverable from an incomplete final frame (never throws). */
  decodeTornPrefix(frameBytes: Buffer): Promise<Buffer>;
  /**
   * The same plaintext delivered in chunks, in bounded memory; resolves false
   * when the decoder failed (then the chunks already delivered do not count:
   * DSH recovers nothing from a torn frame its decoder rejects). Decoding
   * waits while a promise `onChunk` returned is pending; its failure rejects.
   */
  streamTornPrefix(frameBytes: Buffer, onChunk: ChunkSink): Promise<boolean>;
  /** Stream-decode one complete (possibly huge) frame in bounded memory. */
  decodeStreaming(frame: Buffer, onChunk: (chunk: Buffer) => void): Promise<void>;
}

export type DecoderName = 'node-zlib' | 'mongodb-js';

/** Where streamed plaintext goes; a returned promise holds the decoder until it settles (backpressure). */
export type ChunkSink = (chunk: Buffer) => void | Promise<void>;

/** A decoder's own failure, as DSH records it in `cause`. */
export class DecodeFailure extends Error {
  constructor(message: string, readonly code?: string) {
    super(message);
    this.name = 'Error';
  }
}

type ZlibWithZstd = typeof zlib & {
  zstdDecompressSync?: (buf: Buffer, opts?: object) => Buffer;
  zstdDecompress?: (buf: Buffer, opts: object, cb: (err: Error | null, out: Buffer) => void) => void;
  createZstdDecompress?: (opts?: object) => import("node:stream").Transform;
  constants: typeof zlib.constants & { ZSTD_e_flush?: number; ZSTD_e_end?: number };
};

const z = zlib as ZlibWithZstd;

export function nodeZstdAvailable(): boolean {
  return typeof z.zstdDecompressSync === 'function' && typeof z.createZstdDecompress === 'function';
}

/** libzstd's error strings and their `ZSTD_error_*` names (Node reports the name as `code`). */
const LIBZSTD_CODES: Record<string, string> = {
  "Restored data doesn't match checksum": 'ZSTD_error_checksum_wrong',
  'Unknown frame descriptor': 'ZSTD_error_prefix_unknown',
  'Unsupported frame parameter': 'ZSTD_error_frameParameter_unsupported',
  'Frame requires too much memory for decoding': 'ZSTD_error_frameParameter_windowTooLarge',
  'Data corruption detected': 'ZSTD_error_corruption_detected',
  'Src size is incorrect': 'ZSTD_error_srcSize_wrong',
  'Destination buffer is too small': 'ZSTD_error_dstSize_tooSmall',
  'Dictionary mismatch': 'ZSTD_error_dictionary_wrong',
};

function toFailure(error: unknown): DecodeFailure {
  if (error instanceof DecodeFailure) return error;
  const e = error as { message?: unknown; code?: unknown };
  let message = typeof e?.message === 'string' ? e.message : String(error);
  // @mongodb-js/zstd prefixes libzstd's text with "zstd: ".
  if (message.startsWith('zstd: ')) message = message.slice(6);
  const code = typeof e?.code === 'string' && e.code.startsWith('ZSTD_') ? e.code : LIBZSTD_CODES[message];
  return new DecodeFailure(message, code);
}

class NodeZlibDecoder implements FrameDecoder {
  readonly name = 'node-zlib' as const;

  async decode(frames: Buffer): Promise<Buffer> {
    try {
      return (z.zstdDecompressSync as NonNullable<ZlibWithZstd['zstdDecompressSync']>)(frames);
    } catch (error) {
      throw toFailure(error);
    }
  }

  decodeTornPrefix(frameBytes: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      try {
        (z.zstdDecompress as NonNullable<ZlibWithZstd['zstdDecompress']>)(
          frameBytes,
          { finishFlush: z.constants.ZSTD_e_flush },
          (err, out) => resolve(err ? Buffer.alloc(0) : out),
        );
      } catch {
        resolve(Buffer.alloc(0));
      }
    });
  }

  streamTornPrefix(frameBytes: Buffer, onChunk: ChunkSink): Promise<boolean> {
    return new Promise((resolve, reject) => {
      let stream: import('node:stream').Transform;
      try {
        stream = (z.createZstdDecompress as NonNullable<ZlibWithZstd['createZstdDecompress']>)({ chunkSize: 1 << 20, finishFlush: z.constants.ZSTD_e_flush });
      } catch {
        resolve(false);
        return;
      }
      let sinkFailed = false;
      const fail = (error: unknown) => {
        sinkFailed = true;
        stream.destroy();
        reject(error);
      };
      stream.on('data', (chunk: Buffer) => {
        if (sinkFailed) return;
        let pending: void | Promise<void>;
        try {
          pending = onChunk(chunk);
        } catch (error) {
          fail(error);
          return;
        }
        // Paused, the stream stops decoding once its buffer is full (zlib honours push() backpressure).
        if (pending) {
          stream.pause();
          pending.then(() => {
            if (!sinkFailed) stream.resume();
          }, fail);
        }
      });
      stream.on('error', () => {
        if (!sinkFailed) resolve(false);
      });
      stream.on('end', () => resolve(true));
      stream.end(frameBytes);
    });
  }

  decodeStreaming(frame: Buffer, onChunk: (chunk: Buffer) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const stream = (z.createZstdDecompress as NonNullable<ZlibWithZstd['createZstdDecompress']>)({ chunkSize: 1 << 20 });
      stream.on('data', (chunk: Buffer) => {
        try {
          onChunk(chunk);
        } catch (error) {
          stream.destroy();
          reject(error);
        }
      });
      stream.on('error', (error: unknown) => reject(toFailure(error)));
      stream.on('end', () => resolve());
      stream.end(frame);
    });
  }
}


/**
 * Node 20 path: `@mongodb-js/zstd` (libzstd, checksum-verifying) for complete
 * frames; for the torn tail, an own block walk plus `fzstd` for the complete
 * blocks and libzstd's partial-raw-block / RLE rules for the cut block.
 */
class MongoDecoder implements FrameDecoder {
  readonly name = 'mongodb-js' as const;

  async decode(frames: Buffer): Promise<Buffer> {
    try {
      return await loadMongo().decompress(frames);
    } catch (error) {
      throw toFailure(error);
    }
  }

  async decodeTornPrefix(frameBytes: Buffer): Promise<Buffer> {
    // libzstd itself judges the complete blocks (fzstd accepts compressed
    // blocks libzstd rejects, e.g. a block whose size was bit-flipped); the
    // cut block follows libzstd's streaming rules.
    try {
      const { blocks, headerComplete, headerBytes } = frameBlocks(frameBytes);
      if (!headerComplete || !blocksAcceptable(frameBytes, blocks, headerBytes)) return Buffer.alloc(0);
      const parts: Buffer[] = [];
      const whole = completeBlocksFrame(frameBytes, blocks, headerBytes);
      if (whole) parts.push(await loadMongo().decompress(whole));
      parts.push(cutRawBytes(frameBytes, blocks));
      const out = Buffer.concat(parts);
      const { contentSize } = frameParams(frameBytes);
      return contentSize !== null && out.length > contentSize ? Buffer.alloc(0) : out;
    } catch {
      return Buffer.alloc(0);
    }
  }

  async streamTornPrefix(frameBytes: Buffer, onChunk: ChunkSink): Promise<boolean> {
    const { blocks, headerComplete, headerBytes } = frameBlocks(frameBytes);
    if (!headerComplete || !blocksAcceptable(frameBytes, blocks, headerBytes)) return false;
    // A prefix that regenerates little is judged by libzstd whole, as above; a
    // big one (a decompression bomb) is pulled through fzstd a few blocks at a time.
    const bound = blocks.reduce((n, b) => n + (!b.complete ? 0 : b.type === 'compressed' ? ZSTD_BLOCK_MAX : b.size), 0);
    if (bound <= TORN_HOLD_BYTES) {
      const whole = await this.decodeTornPrefix(frameBytes);
      if (whole.length > 0) await onChunk(whole);
      return true;
    }
    const { contentSize } = frameParams(frameBytes);
    const whole = completeBlocksFrame(frameBytes, blocks, headerBytes);
    const chunks = whole ? frameChunksJs(whole) : undefined;
    let produced = 0;
    for (;;) {
      let step: IteratorResult<Buffer, void> | undefined;
      try {
        step = chunks?.next();
      } catch {
        return false;
      }
      const chunk = step === undefined || step.done ? cutRawBytes(frameBytes, blocks) : step.value;
      produced += chunk.length;
      if (contentSize !== null && produced > contentSize) return false;
      if (chunk.length > 0) {
        const pending = onChunk(chunk);
        if (pending) await pending;
      }
      if (step === undefined || step.done) return true;
    }
  }

  async decodeStreaming(frame: Buffer, onChunk: (chunk: Buffer) => void): Promise<void> {
    // Bounded memory for frames whose plaintext is huge: fzstd streams block by
    // block; fzstd does not verify the content checksum, so XXH64 is checked here.
    decodeFrameStreamingJs(frame, onChunk);
  }
}

/** Torn-prefix plaintext up to this size is held and delivered at once; beyond it, it streams (twice: verdict, then delivery). */
export const TORN_HOLD_BYTES = 64 * 1024 * 1024;

/**
 * The plaintext a torn final frame yields, delivered to `onChunk` in bounded
 * memory, with DSH's all-or-nothing rule (a decoder failure anywhere yields
 * nothing). A small prefix is decoded once and held; a big one is streamed
 * once to reach the verdict, then again to deliver it.
 */
export async function forEachTornChunk(decoder: FrameDecoder, frameBytes: Buffer, onChunk: ChunkSink): Promise<{ bytes: number; records: number }> {
  let held: Buffer[] | undefined = [];
  let bytes = 0;
  let records = 0;
  const ok = await decoder.streamTornPrefix(frameBytes, (chunk) => {
    bytes += chunk.length;
    for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, at + 1)) records++;
    if (held && bytes <= TORN_HOLD_BYTES) held.push(Buffer.from(chunk));
    else held = undefined;
  });
  if (!ok) return { bytes: 0, records: 0 };
  if (held) {
    for (const chunk of held) {
      const pending = onChunk(chunk);
      if (pending) await pending;
    }
  } else if (!(await decoder.streamTornPrefix(frameBytes, onChunk))) return { bytes: 0, records: 0 };
  return { bytes, records };
}

/** Window size and declared content size from a frame header (RFC 8878 §3.1.1.1). */
export function frameParams(frame: Buffer): { windowSize: number; contentSize: number | null } {
  return frameHeaderValues(frameHeaderLayout(frame[4] ?? 0), (i) => frame[5 + i] ?? 0);
}

/**
 * Stream-decode one complete frame with fzstd, verifying the XXH64 content
 * checksum when the frame carries one (libzstd's error text on mismatch).
 */
export function decodeFrameStreamingJs(frame: Buffer, onChunk: (chunk: Buffer) => void): void {
  for (const chunk of frameChunksJs(frame)) onChunk(chunk);
}

/** Blocks fed to fzstd per step: at most this many (128 KiB of plaintext each) or 1 MiB of input. */
const BLOCKS_PER_PUSH = 64;

/**
 * The plaintext of one complete frame, pulled: fzstd is fed a few blocks per
 * step, so at most BLOCKS_PER_PUSH blocks of plaintext exist before the caller
 * takes them, whatever the frame regenerates. Throws a DecodeFailure with
 * libzstd's text where libzstd rejects the frame (after the plaintext before it).
 */
export function* frameChunksJs(frame: Buffer): Generator<Buffer, void, undefined> {
  const descriptor = frame[4] ?? 0;
  const hasChecksum = (descriptor & 0x04) !== 0;
  // libzstd's defaults, so the Node 20 path fails where DSH's decoder fails.
  const params = frameParams(frame);
  if (params.windowSize > 2 ** 27) {
    throw new DecodeFailure('Frame requires too much memory for decoding', 'ZSTD_error_frameParameter_windowTooLarge');
  }
  const walk = frameBlocks(frame);
  if (!blocksAcceptable(frame, walk.blocks, walk.headerBytes)) {
    throw new DecodeFailure('Data corruption detected', 'ZSTD_error_corruption_detected');
  }
  const corrupt = () => new DecodeFailure('Data corruption detected', 'ZSTD_error_corruption_detected');
  let produced = 0;
  const hash = hasChecksum ? new Xxh64() : undefined;
  const out: Buffer[] = [];
  const d = new FzstdDecompress((chunk: Uint8Array) => {
    out.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  });
  // Step ends: after every BLOCKS_PER_PUSH blocks or 1 MiB of input, and the frame's end.
  const ends: number[] = [];
  let from = 0;
  walk.blocks.forEach((b, i) => {
    const end = b.start + 3 + b.present;
    if ((i + 1) % BLOCKS_PER_PUSH === 0 || end - from >= 1 << 20) {
      ends.push(end);
      from = end;
    }
  });
  ends.push(frame.length);
  let at = 0;
  for (const end of ends) {
    if (end <= at) continue;
    try {
      d.push(new Uint8Array(frame.buffer, frame.byteOffset + at, end - at), end >= frame.length);
    } catch {
      throw corrupt();
    }
    at = end;
    for (const chunk of out.splice(0)) {
      produced += chunk.length;
      hash?.update(chunk);
      yield chunk;
    }
  }
  if (params.contentSize !== null && produced !== params.contentSize) throw corrupt();
  if (hash) {
    const expected = frame.readUInt32LE(frame.length - 4);
    if ((hash.digest().lo >>> 0) !== expected) {
      throw new DecodeFailure("Restored data doesn't match checksum", 'ZSTD_error_checksum_wrong');
    }
  }
}

/**
 * libzstd streaming semantics on a truncated frame: every complete block is
 * emitted; a cut raw block emits the bytes present; an RLE block needs only
 * its one byte. Any decoding error yields no plaintext at all (DSH swallows it).
 */
export function tornPrefixByBlocks(frameBytes: Buffer): Buffer {
  const { blocks, headerComplete, headerBytes } = frameBlocks(frameBytes);
  if (!headerComplete) return Buffer.alloc(0);
  if (!blocksAcceptable(frameBytes, blocks, headerBytes)) return Buffer.alloc(0);
  const parts: Buffer[] = [];
  const complete = blocks.filter((b) => b.complete);
  if (complete.length > 0) {
    const lastComplete = complete[complete.length - 1]!;
    const end = lastComplete.start + 3 + (lastComplete.type === 'rle' ? 1 : lastComplete.size);
    const prefix = frameBytes.subarray(0, end);
    const d = new FzstdDecompress((chunk: Uint8Array) => {
      parts.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    });
    d.push(new Uint8Array(prefix.buffer, prefix.byteOffset, prefix.byteLength), false);
  }
  parts.push(cutRawBytes(frameBytes, blocks));
  return Buffer.concat(parts);
}

/** What libzstd's streaming decoder emits from a cut block: the bytes present of a raw block, else nothing. */
function cutRawBytes(frameBytes: Buffer, blocks: readonly BlockInfo[]): Buffer {
  const cut = blocks.find((b) => !b.complete);
  if (cut && cut.type === 'raw' && cut.present > 0) return Buffer.from(frameBytes.subarray(cut.start + 3, cut.start + 3 + cut.present));
  return Buffer.alloc(0);
}

/**
 * The complete blocks of a torn frame as a frame of their own, for libzstd to
 * decode: same window and dictionary id, no content size, no checksum, and
 * the last-block flag on the final complete block. Undefined when none is complete.
 */
function completeBlocksFrame(frameBytes: Buffer, blocks: readonly BlockInfo[], headerBytes: number): Buffer | undefined {
  const complete = blocks.filter((b) => b.complete);
  const final = complete[complete.length - 1];
  if (final === undefined) return undefined;
  const layout = frameHeaderLayout(frameBytes[4] as number);
  const dictAt = 5 + (layout.singleSegment ? 0 : 1);
  let windowDescriptor = frameBytes[5] as number;
  if (layout.singleSegment) {
    let log = 10;
    while (2 ** log < frameParams(frameBytes).windowSize) log++;
    windowDescriptor = (log - 10) << 3;
  }
  const descriptor = (frameBytes[4] as number) & 0x03;
  const end = final.start + 3 + (final.type === 'rle' ? 1 : final.size);
  const body = Buffer.from(frameBytes.subarray(headerBytes, end));
  body[final.start - headerBytes] = (body[final.start - headerBytes] as number) | 1;
  return Buffer.concat([frameBytes.subarray(0, 4), Buffer.from([descriptor, windowDescriptor]), frameBytes.subarray(dictAt, dictAt + layout.dictBytes), body]);
}

/** libzstd's largest block: the window size, capped at 128 KiB. */
export function blockSizeMax(frameBytes: Buffer): number {
  return Math.min(frameParams(frameBytes).windowSize, ZSTD_BLOCK_MAX);
}

/**
 * libzstd's block-header rules, which fail the whole decode (DSH then
 * recovers nothing from a torn frame): a window over the decoder's limit, a
 * block (raw, compressed, or an RLE block's regenerated size) larger than
 * min(window, 128 KiB) - a cut block's declared size included - and the
 * reserved block type.
 */
export function blocksAcceptable(frameBytes: Buffer, blocks: readonly BlockInfo[], headerBytes: number): boolean {
  if (frameParams(frameBytes).windowSize > 2 ** 27) return false;
  const max = blockSizeMax(frameBytes);
  if (blocks.some((b) => b.size > max)) return false;
  const last = blocks[blocks.length - 1];
  const end = last ? last.start + 3 + last.present : headerBytes;
  // frameBlocks stops before a reserved-type header when 3 header bytes are present.
  if ((last === undefined || (last.complete && !last.last)) && frameBytes.length - end >= 3) return false;
  return true;
}

/** A zstd frame decoder by name (`node-zlib`, `mongodb-js`), or `auto` (the default: node-zlib where this Node has it); a decoder this Node cannot run is a `UsageError`. */
export function createDecoder(preferred: DecoderName | 'auto' = 'auto'): FrameDecoder {
  if (preferred === 'node-zlib') {
    if (!nodeZstdAvailable()) throw new UsageError(`the node-zlib decoder needs Node >= 22.15 (node:zlib zstd); this is Node ${process.versions.node}: use --decoder mongodb-js or auto`);
    return new NodeZlibDecoder();
  }
  if (preferred === 'mongodb-js') return new MongoDecoder();
  return nodeZstdAvailable() ? new NodeZlibDecoder() : new MongoDecoder();
}

import zlib from 'node:zlib';
import { loadMongo } from './mongo.js';
import { ZSTD_MAGIC } from './zstd-frames.js';
import { xxh64 } from './xxhash64.js';
import { UsageError } from '../core/errors.js';

/**
 * Zstandard frame encoder for the project's own writer: ONE standard frame per
 * call, content checksum flag set (DSH writes every frame with
 * `ZSTD_c_checksumFlag = 1`), default level 3, no dictionary.
 *
 * - Node >= 22.15: `zlib.zstdCompress` (async, streaming, like DSH's
 *   `compressZstdFrame`), which reproduces DSH's frame bytes exactly.
 * - Node 20: `@mongodb-js/zstd` `compress()` (no checksum), then the checksum
 *   flag (0x04) is set in the frame-header descriptor and the low 32 bits of
 *   XXH64(plaintext) are appended little-endian.
 */

export type EncoderName = 'node-zlib' | 'mongodb-js';

type ZlibWithZstd = typeof zlib & {
  zstdCompress?: (buf: Buffer, opts: object, cb: (err: Error | null, out: Buffer) => void) => void;
  constants: typeof zlib.constants & { ZSTD_c_checksumFlag?: number; ZSTD_c_compressionLevel?: number };
};
const z = zlib as ZlibWithZstd;

export function nodeZstdEncoderAvailable(): boolean {
  return typeof z.zstdCompress === 'function' && typeof z.constants.ZSTD_c_checksumFlag === 'number';
}


function compressNode(plaintext: Buffer, level: number): Promise<Buffer> {
  const params: Record<number, number> = { [z.constants.ZSTD_c_checksumFlag as number]: 1 };
  if (level !== 3 && typeof z.constants.ZSTD_c_compressionLevel === 'number') {
    params[z.constants.ZSTD_c_compressionLevel] = level;
  }
  return new Promise((resolve, reject) => {
    (z.zstdCompress as NonNullable<ZlibWithZstd['zstdCompress']>)(plaintext, { params }, (err, out) =>
      err ? reject(err) : resolve(out),
    );
  });
}

/** Add a content checksum to a single checksum-less frame. */
export function addContentChecksum(frame: Buffer, plaintext: Uint8Array): Buffer {
  if (frame.length < 6 || frame.readUInt32LE(0) !== ZSTD_MAGIC) throw new Error('not a Zstandard frame');
  const descriptor = frame[4] as number;
  if ((descriptor & 0x04) !== 0) return frame;
  const out = Buffer.allocUnsafe(frame.length + 4);
  frame.copy(out, 0);
  out[4] = descriptor | 0x04;
  out.writeUInt32LE(xxh64(plaintext).lo, frame.length);
  return out;
}

async function compressMongo(plaintext: Buffer, level: number): Promise<Buffer> {
  const frame = await loadMongo().compress(plaintext, level);
  return addContentChecksum(frame, plaintext);
}

function nodeEncoderMissing(): UsageError {
  return new UsageError(`the node-zlib encoder needs Node >= 22.15 (node:zlib zstd); this is Node ${process.versions.node}: use the mongodb-js encoder`);
}

/** The encoder a frame is written with when none is named: node-zlib where this Node has it, else mongodb-js. */
export function defaultEncoderName(): EncoderName {
  return nodeZstdEncoderAvailable() ? 'node-zlib' : 'mongodb-js';
}

/** Compress `plaintext` into exactly one checksummed Zstandard frame. */
export function compressFrame(plaintext: Buffer, level = 3, encoder: EncoderName = defaultEncoderName()): Promise<Buffer> {
  if (encoder === 'node-zlib') {
    if (!nodeZstdEncoderAvailable()) throw nodeEncoderMissing();
    return compressNode(plaintext, level);
  }
  return compressMongo(plaintext, level);
}

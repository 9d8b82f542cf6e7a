import type { ByteSource } from './source.js';
import { WindowReader } from './source.js';
import { corrupt } from '../core/errors.js';

export const ZSTD_MAGIC = 0xfd2fb528;
export const ZSTD_BLOCK_MAX = 128 * 1024;

export type BlockType = 'raw' | 'rle' | 'compressed';

/** One structurally complete frame, found without decompressing it. */
export interface FrameInfo {
  index: number;
  start: number;
  end: number;
  checksumFlag: boolean;
  /** Declared frame content size, when the header carries one. */
  contentSize: number | null;
  /** Byte length of the frame header (magic + descriptor + optional fields). */
  headerBytes: number;
  blocks: number;
  /** Upper bound of the plaintext this frame can produce (content size when declared). */
  maxPlaintext: number;
}

export interface TornFrameInfo {
  start: number;
  /** Bytes present from `start` to EOF. */
  bytes: number;
  /** Why the frame is incomplete, for forensic listings. */
  stoppedIn: 'magic' | 'frame-header' | 'block-header' | 'block-payload' | 'checksum';
  /** Complete blocks present (before the cut). */
  completeBlocks: number;
}

/** The physical frames of a zstd artifact, and the torn frame at its end if any. */
export interface FrameScan {
  frames: FrameInfo[];
  torn: TornFrameInfo | null;
}

/** What a frame header descriptor byte says (RFC 8878 §3.1.1.1.1). */
export interface FrameHeaderLayout {
  singleSegment: boolean;
  checksumFlag: boolean;
  /** Reserved bit set: the frame is invalid. */
  reserved: boolean;
  dictBytes: number;
  fcsBytes: number;
  /** Header bytes after the magic and the descriptor: window descriptor, dictionary id, content size. */
  rest: number;
}

export function frameHeaderLayout(descriptor: number): FrameHeaderLayout {
  const fcsFlag = descriptor >>> 6;
  const singleSegment = (descriptor & 0x20) !== 0;
  const dictFlag = descriptor & 0x03;
  const dictBytes = dictFlag === 3 ? 4 : dictFlag;
  const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
  return {
    singleSegment,
    checksumFlag: (descriptor & 0x04) !== 0,
    reserved: (descriptor & 0x18) !== 0,
    dictBytes,
    fcsBytes,
    rest: (singleSegment ? 0 : 1) + dictBytes + fcsBytes,
  };
}

/**
 * Window and content size from the `rest` header bytes, read through `byteAt`
 * (offset 0 = the byte after the descriptor). The window of a single-segment
 * frame is its content size.
 */
export function frameHeaderValues(layout: FrameHeaderLayout, byteAt: (i: number) => number): { windowSize: number; contentSize: number | null } {
  let windowSize = 0;
  if (!layout.singleSegment) {
    const wd = byteAt(0);
    const base = 2 ** (10 + (wd >>> 3));
    windowSize = base + (base / 8) * (wd & 7);
  }
  let contentSize: number | null = null;
  if (layout.fcsBytes > 0) {
    const at = (layout.singleSegment ? 0 : 1) + layout.dictBytes;
    // Little-endian; an 8-byte size as hi * 2^32 + lo (one rounding past 2^53, like a BigInt conversion).
    const word = (from: number, n: number) => {
      let v = 0;
      for (let i = n - 1; i >= 0; i--) v = v * 256 + byteAt(from + i);
      return v;
    };
    const n = layout.fcsBytes;
    const v = n === 8 ? word(at + 4, 4) * 2 ** 32 + word(at, 4) : word(at, n);
    contentSize = n === 2 ? v + 256 : v;
    if (layout.singleSegment) windowSize = contentSize;
  }
  return { windowSize, contentSize };
}

/**
 * Walk a concatenated Zstandard stream exactly as DSH's structural scan does:
 * bad magic, reserved header bits and reserved block types are corruption
 * (thrown with DSH's text); EOF inside the final frame is a torn tail.
 * Block payloads are skipped, never read.
 */
export function scanFrames(source: ByteSource, onFrame?: (frame: FrameInfo) => void): FrameScan {
  const walker = new FrameWalker(source);
  const frames: FrameInfo[] = [];
  for (let f = walker.next(); f !== null; f = walker.next()) {
    frames.push(f);
    onFrame?.(f);
  }
  return { frames, torn: walker.torn };
}

/**
 * `scanFrames` one frame at a time, so a reader can start decoding the first
 * frames before the walk reaches the end of a multi-GB file.
 */
/** Bytes of the frame walk's read window (reused in place). */
const WALK_WINDOW = 1 << 20;

export class FrameWalker {
  /** Frames walked so far (a caller keeps the ones it needs: a 2 GB log has ~200k). */
  private count = 0;
  /** After `next()` returned null: where EOF cut the final frame, if it did. */
  torn: TornFrameInfo | null = null;
  private readonly reader: WindowReader;
  private readonly size: number;
  private offset = 0;
  private ended = false;

  /** `start`: a frame boundary to walk from (frames before it are known; indexes count from it). */
  constructor(source: ByteSource, start = 0) {
    // The walk reads only headers (a few bytes per block): a 1 MiB window costs one read per MiB
    // like a bigger one would, without holding 8 MiB of resident memory for the whole pass.
    this.reader = new WindowReader(source, WALK_WINDOW, true);
    this.size = source.size;
    this.offset = start;
  }

  /** The next complete frame, or null at the end; throws DSH's corruption errors where the walk meets them. */
  next(): FrameInfo | null {
    if (this.ended) return null;
    const reader = this.reader;
    const size = this.size;
    let offset = this.offset;
    const start = offset;
    const tornAt = (stoppedIn: TornFrameInfo['stoppedIn'], completeBlocks: number): null => {
      this.torn = { start, bytes: size - start, stoppedIn, completeBlocks };
      this.ended = true;
      return null;
    };
    if (offset >= size) {
      this.ended = true;
      return null;
    }
    if (size - offset < 4) return tornAt('magic', 0);
    const magic = reader.uint(offset, 4);
    if (magic !== ZSTD_MAGIC) {
      this.ended = true;
      throw corrupt(`corrupt Zstandard session log: invalid frame magic at byte ${offset}`, { byteOffset: offset, rule: 'DSH-A5' });
    }
    offset += 4;
    if (offset === size) return tornAt('frame-header', 0);
    const descriptor = reader.byte(offset) as number;
    offset += 1;
    const layout = frameHeaderLayout(descriptor);
    if (layout.reserved) {
      this.ended = true;
      throw corrupt(`corrupt Zstandard session log: reserved frame-header bit at byte ${offset - 1}`, {
        byteOffset: offset - 1,
        rule: 'DSH-A5',
      });
    }
    const { checksumFlag, rest } = layout;
    if (size - offset < rest) return tornAt('frame-header', 0);
    const at = offset;
    const { windowSize, contentSize } = frameHeaderValues(layout, (i) => reader.uint(at + i, 1) as number);
    offset += rest;
    const headerBytes = offset - start;
    const blockCap = Math.min(ZSTD_BLOCK_MAX, Math.max(windowSize, 1));
    let blocks = 0;
    let bound = 0;
    for (;;) {
      if (size - offset < 3) return tornAt('block-header', blocks);
      const h = reader.uint(offset, 3) as number;
      offset += 3;
      const last = (h & 1) !== 0;
      const type = (h >>> 1) & 3;
      const blockSize = h >>> 3;
      if (type === 3) {
        this.ended = true;
        throw corrupt(`corrupt Zstandard session log: reserved block type at byte ${offset - 3}`, {
          byteOffset: offset - 3,
          rule: 'DSH-A5',
        });
      }
      const payload = type === 1 ? 1 : blockSize;
      if (size - offset < payload) return tornAt('block-payload', blocks);
      offset += payload;
      blocks += 1;
      bound += type === 2 ? blockCap : blockSize;
      if (last) break;
    }
    if (checksumFlag) {
      if (size - offset < 4) return tornAt('checksum', blocks);
      offset += 4;
    }
    const frame: FrameInfo = {
      index: this.count++,
      start,
      end: offset,
      checksumFlag,
      contentSize,
      headerBytes,
      blocks,
      maxPlaintext: contentSize ?? bound,
    };
    this.offset = offset;
    return frame;
  }
}

export interface BlockInfo {
  type: BlockType;
  /** Offset of the 3-byte block header. */
  start: number;
  /** Declared (regenerated for raw/RLE) size. */
  size: number;
  last: boolean;
  /** Payload bytes present (may be short for the final block of a torn frame). */
  present: number;
  complete: boolean;
}

/**
 * List the blocks of one (possibly torn) frame, for the torn-tail decoder and
 * forensic listings. `frameBytes` begins at the frame's magic.
 */
export function frameBlocks(frameBytes: Buffer): { headerBytes: number; blocks: BlockInfo[]; headerComplete: boolean } {
  const size = frameBytes.length;
  if (size < 5) return { headerBytes: size, blocks: [], headerComplete: false };
  const headerBytes = 5 + frameHeaderLayout(frameBytes[4] as number).rest;
  if (size < headerBytes) return { headerBytes: size, blocks: [], headerComplete: false };
  const blocks: BlockInfo[] = [];
  let offset = headerBytes;
  while (size - offset >= 3) {
    const h = frameBytes.readUIntLE(offset, 3);
    const last = (h & 1) !== 0;
    const typeCode = (h >>> 1) & 3;
    if (typeCode === 3) break;
    const type: BlockType = typeCode === 0 ? 'raw' : typeCode === 1 ? 'rle' : 'compressed';
    const blockSize = h >>> 3;
    const payload = typeCode === 1 ? 1 : blockSize;
    const present = Math.min(payload, size - offset - 3);
    blocks.push({ type, start: offset, size: blockSize, last, present, complete: present === payload });
    offset += 3 + present;
    if (present < payload || last) break;
  }
  return { headerBytes, blocks, headerComplete: true };
}

import type { ByteSource } from '../physical/source.js';
import { frameHeaderLayout, frameHeaderValues, ZSTD_BLOCK_MAX, ZSTD_MAGIC } from '../physical/zstd-frames.js';

/**
 * A tolerant Zstandard frame walker for salvage. Unlike `scanFrames` (DSH's
 * structural scan, which throws at the first bad magic or reserved bit), it
 * never throws: every byte of the file lands in exactly one segment.
 *
 * - `frame`: a structurally complete frame `[start, end)` (not yet decoded);
 * - `garbage`: bytes that do not start with a frame magic, up to the next
 *   magic `28 B5 2F FD` (or EOF);
 * - `bad-structure`: a magic whose frame header/blocks are invalid (reserved
 *   bits, reserved block type), or whose declared structure runs past EOF
 *   while a later magic exists; the segment ends at the next magic found
 *   after `start` (re-synchronisation);
 * - `torn`: an incomplete final frame (structure runs past EOF and no later
 *   magic exists), `[start, EOF)`.
 *
 * The caller decodes `frame` segments; when one fails to decode it can ask
 * `resyncAfter(start)` to look for a later magic inside the frame's declared
 * extent (a damaged block size can make a frame swallow its successors).
 */

export type SegmentKind = 'frame' | 'garbage' | 'bad-structure' | 'torn';

export interface Segment {
  kind: SegmentKind;
  start: number;
  end: number;
  /** `frame`: the most plaintext it can decode to (its declared content size, else its blocks' bound). */
  maxPlaintext?: number;
  /** Why the segment is not a frame (garbage, bad-structure, torn). */
  reason?: string;
}

const MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
const SEARCH_CHUNK = 4 << 20;

/** Offset of the next frame magic at or after `from`, or -1. */
export function findMagic(source: ByteSource, from: number): number {
  let at = Math.max(0, from);
  while (at < source.size) {
    const buf = source.read(at, Math.min(source.size, at + SEARCH_CHUNK + 3));
    const i = buf.indexOf(MAGIC);
    if (i !== -1) return at + i;
    if (buf.length < SEARCH_CHUNK + 3) return -1;
    at += SEARCH_CHUNK;
  }
  return -1;
}

/** Are `[start, end)` all zero bytes (a crash's preallocated or zeroed region)? Checked up to 16 MiB. */
function zeroFilled(source: ByteSource, start: number, end: number): boolean {
  if (end - start > 16 << 20) return false;
  const b = source.read(start, end);
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return b.length > 0;
}

type Parse = { ok: true; end: number; maxPlaintext: number } | { ok: false; torn: boolean; reason: string };

/** Parse the frame structure at `start` (which holds a magic) without decoding. */
export function parseFrameAt(source: ByteSource, start: number): Parse {
  const size = source.size;
  let offset = start + 4;
  const torn = (reason: string): Parse => ({ ok: false, torn: true, reason });
  if (offset >= size) return torn('EOF inside the frame header');
  const layout = frameHeaderLayout(source.read(offset, offset + 1)[0] as number);
  if (layout.reserved) return { ok: false, torn: false, reason: `reserved frame-header bit at byte ${offset}` };
  const checksum = layout.checksumFlag;
  offset += 1 + layout.rest;
  if (offset > size) return torn('EOF inside the frame header');
  const values = source.read(start + 5, offset);
  const { windowSize, contentSize } = frameHeaderValues(layout, (i) => values[i] ?? 0);
  const blockCap = Math.min(ZSTD_BLOCK_MAX, Math.max(windowSize, 1));
  let bound = 0;
  for (;;) {
    if (size - offset < 3) return torn('EOF inside a block header');
    const h = source.read(offset, offset + 3).readUIntLE(0, 3);
    const type = (h >>> 1) & 3;
    if (type === 3) return { ok: false, torn: false, reason: `reserved block type at byte ${offset}` };
    const payload = type === 1 ? 1 : h >>> 3;
    if (type !== 1 && payload > 128 * 1024) return { ok: false, torn: false, reason: `block size ${payload} exceeds the 128 KiB maximum at byte ${offset}` };
    offset += 3;
    if (size - offset < payload) return torn('EOF inside a block payload');
    offset += payload;
    bound += type === 2 ? blockCap : h >>> 3;
    if ((h & 1) !== 0) break;
  }
  if (checksum) {
    if (size - offset < 4) return torn('EOF inside the content checksum');
    offset += 4;
  }
  return { ok: true, end: offset, maxPlaintext: contentSize ?? bound };
}

/** Walk the whole source into segments (see the module comment). */
export function* walkSegments(source: ByteSource): Generator<Segment, void, number | undefined> {
  let offset = 0;
  while (offset < source.size) {
    const head = source.read(offset, offset + 4);
    if (head.length < 4 || head.readUInt32LE(0) !== ZSTD_MAGIC) {
      const next = findMagic(source, offset + 1);
      const end = next === -1 ? source.size : next;
      yield { kind: 'garbage', start: offset, end, reason: head.length < 4 && next === -1 ? 'fewer than 4 bytes left (no frame magic)' : zeroFilled(source, offset, end) ? 'zero-filled bytes (no frame magic)' : 'invalid frame magic' };
      offset = end;
      continue;
    }
    const parsed = parseFrameAt(source, offset);
    if (parsed.ok) {
      // The consumer may answer with an override for the next offset (re-sync).
      const override = yield { kind: 'frame', start: offset, end: parsed.end, maxPlaintext: parsed.maxPlaintext };
      offset = override !== undefined ? override : parsed.end;
      continue;
    }
    const next = findMagic(source, offset + 1);
    if (parsed.torn && next === -1) {
      yield { kind: 'torn', start: offset, end: source.size, reason: parsed.reason };
      return;
    }
    const end = next === -1 ? source.size : next;
    yield { kind: 'bad-structure', start: offset, end, reason: parsed.torn ? `frame structure runs past EOF (${parsed.reason}) but a later frame magic exists` : parsed.reason };
    offset = end;
  }
}

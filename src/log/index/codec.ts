/**
 * The session index's byte encoding: unsigned varints (numbers up to 2^53),
 * arrays of them (delta-coded when ascending), and named sections so a reader
 * decodes only what a view needs. A file is
 * `magic | format version | sections | sha256 of everything before it`.
 */
import { createHash } from 'node:crypto';

export const INDEX_MAGIC = Buffer.from('DSHIDX\n\0', 'latin1');
/**
 * Bumped whenever the layout or the meaning of a stored fact changes (also when a
 * rule that computes a stored fold changes: an index written by the older rule
 * would otherwise answer with it). 3: the dispatch index's attempts follow the one
 * attempt-boundary rule (views/attempts.ts). 4: the dispatch index keeps the state its
 * builder goes on from when the log grows. 5: citations are kept for the citing events
 * only, as runs of consecutive seqs, and entries are keyed by a tree hash of the artifact
 * (content-hash.ts).
 */
export const INDEX_FORMAT_VERSION = 6;
const DIGEST_BYTES = 32;

export class IndexFormatError extends Error {}

/** Encoded bytes: one buffer, or pieces to be read one after another (see `VarWriter.shared`). */
export type Bytes = Buffer | readonly Buffer[];

/** The length of encoded bytes. */
export function bytesLength(b: Bytes): number {
  if (Buffer.isBuffer(b)) return b.length;
  let n = 0;
  for (const p of b) n += p.length;
  return n;
}

/** Encoded bytes as one buffer (pieces are joined: a copy). */
export function joined(b: Bytes): Buffer {
  if (Buffer.isBuffer(b)) return b;
  return b.length === 1 ? (b[0] as Buffer) : Buffer.concat(b as Buffer[]);
}

/** Below this, `shared` copies: a piece of its own costs more than the copy. */
const SHARED_MIN_BYTES = 1 << 12;

export class VarWriter {
  private buf: Buffer;
  private at = 0;
  /** The pieces written before `buf[from]` (only once `shared` was used). */
  private parts: Buffer[] | undefined;
  private from = 0;
  /** `capacity`: the bytes it is expected to hold (it grows past them as needed). */
  constructor(capacity = 1 << 12) {
    this.buf = Buffer.allocUnsafe(Math.max(16, capacity));
  }
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    // What is already a piece stays where it is: only the bytes after it move.
    const held = this.at - this.from;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, held + n));
    this.buf.copy(next, 0, this.from, this.at);
    this.buf = next;
    this.at = held;
    this.from = 0;
  }
  /**
   * Bytes written as they are (no length), by reference: `b` becomes a piece of the output, not a
   * copy (a run carried over from a saved encoding, which must not change while the output is
   * used). Read the output with `pieces()`; `done()` then joins them.
   */
  shared(b: Buffer): this {
    if (b.length < SHARED_MIN_BYTES) return this.raw(b);
    this.parts ??= [];
    if (this.at > this.from) this.parts.push(this.buf.subarray(this.from, this.at));
    this.parts.push(b);
    this.from = this.at;
    return this;
  }
  /** The output as pieces to be read in order (one when nothing was `shared`). */
  pieces(): Buffer[] {
    const out = this.parts ? this.parts.slice() : [];
    if (this.at > this.from || out.length === 0) out.push(this.buf.subarray(this.from, this.at));
    return out;
  }
  uint(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) throw new IndexFormatError(`not an unsigned integer: ${v}`);
    this.room(8);
    while (v >= 0x80) {
      this.buf[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
    return this;
  }
  /** A signed integer (zig-zag). */
  int(v: number): this {
    return this.uint(v < 0 ? -2 * v - 1 : 2 * v);
  }
  bytes(b: Buffer): this {
    this.uint(b.length);
    this.room(b.length);
    b.copy(this.buf, this.at);
    this.at += b.length;
    return this;
  }
  string(s: string): this {
    return this.bytes(Buffer.from(s, 'utf8'));
  }
  /** Bytes written as they are (no length): a run copied from another encoding. */
  raw(b: Buffer): this {
    this.room(b.length);
    b.copy(this.buf, this.at);
    this.at += b.length;
    return this;
  }
  uints(values: ArrayLike<number>): this {
    this.uint(values.length);
    for (let i = 0; i < values.length; i++) this.uint(values[i] as number);
    return this;
  }
  /** An array whose values never decrease, as deltas. */
  ascending(values: ArrayLike<number>): this {
    this.uint(values.length);
    let prev = 0;
    for (let i = 0; i < values.length; i++) {
      const v = values[i] as number;
      this.uint(v - prev);
      prev = v;
    }
    return this;
  }
  done(): Buffer {
    return this.parts ? joined(this.pieces()) : this.buf.subarray(0, this.at);
  }
}

export class VarReader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}
  get offset(): number {
    return this.at;
  }
  get atEnd(): boolean {
    return this.at >= this.buf.length;
  }
  uint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (this.at >= this.buf.length) throw new IndexFormatError('truncated varint');
      const b = this.buf[this.at++] as number;
      v += (b & 0x7f) * scale;
      if (b < 0x80) break;
      scale *= 0x80;
      if (scale > 2 ** 56) throw new IndexFormatError('varint too long');
    }
    return v;
  }
  int(): number {
    const z = this.uint();
    return z % 2 === 1 ? -(z + 1) / 2 : z / 2;
  }
  bytes(): Buffer {
    const n = this.uint();
    if (this.at + n > this.buf.length) throw new IndexFormatError('truncated bytes');
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  string(): string {
    return this.bytes().toString('utf8');
  }
  /** Step over what `bytes` would read. */
  skipBytes(): void {
    const n = this.uint();
    if (this.at + n > this.buf.length) throw new IndexFormatError('truncated bytes');
    this.at += n;
  }
  /** Go to byte `offset` of the buffer. */
  seek(offset: number): this {
    if (offset < 0 || offset > this.buf.length) throw new IndexFormatError('offset outside the section');
    this.at = offset;
    return this;
  }
  /** Step over `n` varints (each ends at its first byte below 0x80). */
  skip(n: number): void {
    const buf = this.buf;
    const end = buf.length;
    let at = this.at;
    while (n > 0) {
      if (at >= end) throw new IndexFormatError('truncated varint');
      if ((buf[at++] as number) < 0x80) n--;
    }
    this.at = at;
  }
  /**
   * Step over an array written by `ascending`, noting where its values below `bound` end (they come
   * first): how many there are, the last of them (0 when none: the value its deltas start from), and
   * the offsets of the first value and of the first one not below `bound`.
   */
  ascendingBelow(bound: number): { length: number; below: number; last: number; start: number; split: number } {
    const length = this.count();
    const start = this.at;
    let last = 0;
    let below = 0;
    let split = start;
    while (below < length) {
      const from = this.at;
      const v = last + this.uint();
      if (!(v < bound)) {
        this.at = from;
        break;
      }
      last = v;
      below++;
      split = this.at;
    }
    this.skip(length - below);
    return { length, below, last, start, split };
  }
  /** Step over an array written by `uints`, noting the offsets of its first value and of value `n`. */
  uintsSplit(n: number): { length: number; start: number; split: number } {
    const length = this.count();
    if (n > length) throw new IndexFormatError('array shorter than asked');
    const start = this.at;
    this.skip(n);
    const split = this.at;
    this.skip(length - n);
    return { length, start, split };
  }
  /** Step over an array written by `uints` or `ascending`. */
  skipArray(): void {
    this.skip(this.count());
  }
  private count(): number {
    const n = this.uint();
    // Every value takes at least one byte: a bigger count is a damaged file, not an allocation request.
    if (n > this.buf.length - this.at) throw new IndexFormatError('array longer than its section');
    return n;
  }
  uints(): number[] {
    const n = this.count();
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = this.uint();
    return out;
  }
  /** What `uints` reads, into a typed array. */
  uintsTyped(): Float64Array<ArrayBuffer> {
    const n = this.count();
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = this.uint();
    return out;
  }
  /** What `ascending` reads, into a typed array. */
  ascendingTyped(): Float64Array<ArrayBuffer> {
    const n = this.count();
    const out = new Float64Array(n);
    let prev = 0;
    for (let i = 0; i < n; i++) {
      prev += this.uint();
      out[i] = prev;
    }
    return out;
  }
  ascending(): number[] {
    const n = this.count();
    const out = new Array<number>(n);
    let prev = 0;
    for (let i = 0; i < n; i++) {
      prev += this.uint();
      out[i] = prev;
    }
    return out;
  }
}

/**
 * Sections by numeric tag, each an opaque byte run: the file as pieces to write in order (a big
 * section's pieces are its own, not copies: an index of a long log is megabytes).
 */
export function encodeIndexFile(sections: ReadonlyMap<number, Bytes>): Buffer[] {
  let small = INDEX_MAGIC.length + 16;
  for (const body of sections.values()) small += 16 + (Buffer.isBuffer(body) && body.length < SHARED_MIN_BYTES ? body.length : 0);
  const w = new VarWriter(small).raw(INDEX_MAGIC);
  w.uint(INDEX_FORMAT_VERSION).uint(sections.size);
  for (const [tag, body] of sections) {
    w.uint(tag).uint(bytesLength(body));
    for (const piece of Buffer.isBuffer(body) ? [body] : body) w.shared(piece);
  }
  const pieces = w.pieces();
  const hash = createHash('sha256');
  for (const p of pieces) hash.update(p);
  pieces.push(hash.digest());
  return pieces;
}

/** Parse and verify an index file; throws `IndexFormatError` saying why it is unusable. */
export function decodeIndexFile(file: Buffer): Map<number, Buffer> {
  if (file.length < INDEX_MAGIC.length + DIGEST_BYTES || !file.subarray(0, INDEX_MAGIC.length).equals(INDEX_MAGIC)) {
    throw new IndexFormatError('not a dsh index file');
  }
  const body = file.subarray(0, file.length - DIGEST_BYTES);
  const digest = createHash('sha256').update(body).digest();
  if (!digest.equals(file.subarray(file.length - DIGEST_BYTES))) throw new IndexFormatError('its checksum does not match (damaged or tampered)');
  const r = new VarReader(body.subarray(INDEX_MAGIC.length));
  const version = r.uint();
  if (version !== INDEX_FORMAT_VERSION) throw new IndexFormatError(`it has format version ${version}, this dsh reads ${INDEX_FORMAT_VERSION}`);
  const n = r.uint();
  const out = new Map<number, Buffer>();
  for (let i = 0; i < n; i++) {
    const tag = r.uint();
    out.set(tag, r.bytes());
  }
  return out;
}

/**
 * The session index's byte encoding: unsigned varints (numbers up to 2^53),
 * arrays of them (delta-coded when ascending), and named sections so a reader
 * decodes only what a view needs. A file is a verified table of its sections (each with its own
 * sha256), then their bytes (`encodeIndexFile`).
 */
import { createHash } from 'node:crypto';
import { MemorySource, type ByteSource } from '../../physical/source.js';

export const INDEX_MAGIC = Buffer.from('DSHIDX\n\0', 'latin1');
/**
 * Bumped whenever the layout or the meaning of a stored fact changes (also when a
 * rule that computes a stored fold changes: an index written by the older rule
 * would otherwise answer with it). 3: the dispatch index's attempts follow the one
 * attempt-boundary rule (views/attempts.ts). 4: the dispatch index keeps the state its
 * builder goes on from when the log grows. 5: citations are kept for the citing events
 * only, as runs of consecutive seqs, and entries are keyed by a tree hash of the artifact
 * (content-hash.ts). 7: each section has a sha256 of its own in the file's table, so a reader
 * reads and verifies only the sections it needs.
 */
export const INDEX_FORMAT_VERSION = 7;
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
 * section's pieces are its own, not copies: an index of a long log is megabytes). The file is a
 * table (magic, format version, and per section its tag, length and sha256), the sha256 of the
 * table, then the sections' bytes in the table's order: a reader verifies the table, and of the
 * sections only those it reads.
 */
export function encodeIndexFile(sections: ReadonlyMap<number, Bytes>): Buffer[] {
  const w = new VarWriter(INDEX_MAGIC.length + 16 + sections.size * (20 + DIGEST_BYTES)).raw(INDEX_MAGIC);
  w.uint(INDEX_FORMAT_VERSION).uint(sections.size);
  const bodies: Buffer[] = [];
  for (const [tag, body] of sections) {
    const pieces = Buffer.isBuffer(body) ? [body] : body;
    const hash = createHash('sha256');
    for (const p of pieces) hash.update(p);
    w.uint(tag).uint(bytesLength(body)).raw(hash.digest());
    for (const p of pieces) if (p.length > 0) bodies.push(p);
  }
  const table = w.done();
  return [table, createHash('sha256').update(table).digest(), ...bodies];
}

/** Where a section of an index file lies, and the sha256 its bytes must have. */
export interface IndexSectionPlace {
  tag: number;
  offset: number;
  length: number;
  sha256: Buffer;
}

/** The most bytes an index file's table is read in: more sections than fit are a damaged file. */
const TABLE_MAX_BYTES = 1 << 16;

/**
 * An index file read by parts from `source`: its table is read and verified at once (a damaged, truncated or foreign file throws `IndexFormatError` saying
 * why it is unusable), each section when asked for, against its own sha256.
 */
export class IndexFileReader {
  private readonly places = new Map<number, IndexSectionPlace>();
  constructor(private readonly source: ByteSource) {
    const size = source.size;
    if (size < INDEX_MAGIC.length + DIGEST_BYTES) throw new IndexFormatError('not a dsh index file');
    const head = source.read(0, Math.min(size, TABLE_MAX_BYTES));
    if (!head.subarray(0, INDEX_MAGIC.length).equals(INDEX_MAGIC)) throw new IndexFormatError('not a dsh index file');
    const r = new VarReader(head).seek(INDEX_MAGIC.length);
    let n: number;
    const entries: [number, number, Buffer][] = [];
    try {
      const version = r.uint();
      if (version !== INDEX_FORMAT_VERSION) throw new IndexFormatError(`it has format version ${version}, this dsh reads ${INDEX_FORMAT_VERSION}`);
      n = r.uint();
      for (let i = 0; i < n; i++) {
        const tag = r.uint();
        const length = r.uint();
        if (r.offset + DIGEST_BYTES > head.length) throw new IndexFormatError('truncated table');
        const sha256 = head.subarray(r.offset, r.offset + DIGEST_BYTES);
        r.seek(r.offset + DIGEST_BYTES);
        entries.push([tag, length, sha256]);
      }
    } catch (error) {
      if (error instanceof IndexFormatError && error.message.startsWith('it has format version')) throw error;
      throw new IndexFormatError('its table is damaged');
    }
    const tableEnd = r.offset;
    if (tableEnd + DIGEST_BYTES > head.length) throw new IndexFormatError('its table is damaged');
    const digest = createHash('sha256').update(head.subarray(0, tableEnd)).digest();
    if (!digest.equals(head.subarray(tableEnd, tableEnd + DIGEST_BYTES))) throw new IndexFormatError('its checksum does not match (damaged or tampered)');
    let offset = tableEnd + DIGEST_BYTES;
    for (const [tag, length, sha256] of entries) {
      if (this.places.has(tag)) throw new IndexFormatError(`section ${tag} is there twice`);
      this.places.set(tag, { tag, offset, length, sha256: Buffer.from(sha256) });
      offset += length;
    }
    if (offset !== size) throw new IndexFormatError(offset > size ? 'it is truncated' : 'it has bytes after its sections');
  }
  /** The sections' tags and places, in file order. */
  get sections(): readonly IndexSectionPlace[] {
    return [...this.places.values()];
  }
  has(tag: number): boolean {
    return this.places.has(tag);
  }
  /** A section's bytes, verified (undefined when the file has none of that tag). */
  section(tag: number): Buffer | undefined {
    const place = this.places.get(tag);
    if (!place) return undefined;
    const bytes = this.source.read(place.offset, place.offset + place.length);
    if (bytes.length !== place.length) throw new IndexFormatError('it is truncated');
    if (!createHash('sha256').update(bytes).digest().equals(place.sha256)) throw new IndexFormatError(`its section ${tag} does not match its checksum (damaged or tampered)`);
    return bytes;
  }
}

/** Parse and verify a whole index file held in memory; throws `IndexFormatError` saying why it is unusable. */
export function decodeIndexFile(file: Buffer): Map<number, Buffer> {
  const reader = new IndexFileReader(new MemorySource('index', file));
  const out = new Map<number, Buffer>();
  for (const { tag } of reader.sections) out.set(tag, reader.section(tag)!);
  return out;
}

import { releaseMemory } from './memory.js';

/** Up to this much, a carried line is held as copies of its pieces. */
const SMALL = 1 << 20;
/** Past `SMALL`, it is held in slabs this big: each its own mapping, returned to the system when let go. */
const SLAB = 64 << 20;

/**
 * The bytes of a line that has not ended yet, carried from chunk to chunk until its LF comes.
 *
 * A long line (a 500 MB message, or a torn tail that never ends) is held in a few big slabs
 * rather than in thousands of chunk-sized copies: the allocator keeps freed chunk-sized blocks
 * for itself, so a process that carried one long line that way stays that much bigger for the
 * rest of its life, and the next read of the log (a verifying pass) adds to it. Slabs are given
 * back when they are let go (`clear` and `take` free them at once).
 */
export class ByteCarry {
  private small: Buffer[] = [];
  private slabs: Buffer[] = [];
  /** Bytes used in the last slab. */
  private used = 0;
  /** Bytes carried. */
  length = 0;

  push(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.slabs.length === 0 && this.length + bytes.length <= SMALL) {
      this.small.push(Buffer.from(bytes));
      this.length += bytes.length;
      return;
    }
    if (this.slabs.length === 0) {
      const held = this.small;
      this.small = [];
      for (const b of held) this.copy(b);
    }
    this.copy(bytes);
    this.length += bytes.length;
  }

  /** The line's bytes, ended by `last` (not carried); the carry is empty after. */
  take(last: Buffer): Buffer {
    if (this.length === 0) return last;
    const total = this.length + last.length;
    const parts = this.slabs.length === 0 ? this.small : this.slabs.map((s, i) => (i === this.slabs.length - 1 ? s.subarray(0, this.used) : s));
    const line = Buffer.concat([...parts, last], total);
    this.clear();
    return line;
  }

  /** Let the carried bytes go (a line past the limit, a torn record dropped). */
  clear(): void {
    const big = this.slabs.length > 0;
    this.small = [];
    this.slabs = [];
    this.used = 0;
    this.length = 0;
    if (big) releaseMemory();
  }

  private copy(bytes: Buffer): void {
    for (let at = 0; at < bytes.length; ) {
      let slab = this.slabs[this.slabs.length - 1];
      if (!slab || this.used === SLAB) {
        slab = Buffer.allocUnsafeSlow(SLAB);
        this.slabs.push(slab);
        this.used = 0;
      }
      const n = bytes.copy(slab, this.used, at, Math.min(bytes.length, at + SLAB - this.used));
      this.used += n;
      at += n;
    }
  }
}

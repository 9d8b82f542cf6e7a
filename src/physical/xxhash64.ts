/**
 * XXH64 (seed 0), the content checksum of Zstandard frames (RFC 8878 §3.1.1:
 * the frame checksum is the low 32 bits of XXH64(content), little-endian).
 *
 * 64-bit lanes are kept as two unsigned 32-bit halves in plain numbers; the
 * 64x64 multiply splits the low halves into 16-bit limbs so every partial
 * product stays exact in a double. No BigInt anywhere.
 */

// Primes as [hi, lo] 32-bit halves.
const P1H = 0x9e3779b1, P1L = 0x85ebca87;
const P2H = 0xc2b2ae3d, P2L = 0x27d4eb4f;
const P3H = 0x165667b1, P3L = 0x9e3779f9;
const P4H = 0x85ebca77, P4L = 0xc2b2ae63;
const P5H = 0x27d4eb2f, P5L = 0x165667c5;

// Results of the 64-bit helpers (module scratch registers).
let RH = 0;
let RL = 0;

/** (ah:al) * (bh:bl) mod 2^64 → RH:RL. */
function mul(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff, a1 = al >>> 16, b0 = bl & 0xffff, b1 = bl >>> 16;
  const p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  RL = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  RH = (p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/** round(acc, input) = rotl(acc + input*P2, 31) * P1 → RH:RL. */
function round(acch: number, accl: number, ih: number, il: number): void {
  mul(ih, il, P2H, P2L);
  const lo = accl + RL;
  const l = lo >>> 0;
  const h = (acch + RH + (lo > 0xffffffff ? 1 : 0)) >>> 0;
  // rotl 31
  const rh = ((h << 31) | (l >>> 1)) >>> 0;
  const rl = ((l << 31) | (h >>> 1)) >>> 0;
  mul(rh, rl, P1H, P1L);
}

const P1L0 = P1L & 0xffff, P1L1 = P1L >>> 16;
const P2L0 = P2L & 0xffff, P2L1 = P2L >>> 16;
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
const SCRATCH_BYTES = 64 * 1024;
const SCRATCH8 = new Uint8Array(SCRATCH_BYTES);
const SCRATCH32 = new Uint32Array(SCRATCH8.buffer);

function readU32(b: Uint8Array, i: number): number {
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
}

export interface Hash64 {
  hi: number;
  lo: number;
}

/** Streaming XXH64 with seed 0. */
export class Xxh64 {
  /** v1..v4 as [hi, lo] pairs. */
  private readonly state = Uint32Array.of(
    (P1H + P2H + (P1L + P2L > 0xffffffff ? 1 : 0)) >>> 0, (P1L + P2L) >>> 0, // seed + P1 + P2
    P2H, P2L, // seed + P2
    0, 0, // seed
    ~P1H >>> 0, -P1L >>> 0, // seed - P1 (P1L != 0, so no borrow into the low half's complement)
  );
  private total = 0;
  private readonly mem = new Uint8Array(32);
  private memSize = 0;

  update(input: Uint8Array): this {
    const len = input.length;
    this.total += len;
    let p = 0;
    if (this.memSize + len < 32) {
      this.mem.set(input, this.memSize);
      this.memSize += len;
      return this;
    }
    if (this.memSize > 0) {
      const fill = 32 - this.memSize;
      this.mem.set(input.subarray(0, fill), this.memSize);
      this.stripes(this.mem, 0, 32);
      p = fill;
      this.memSize = 0;
    }
    const limit = p + ((len - p) & ~31);
    if (limit > p) this.stripes(input, p, limit);
    p = limit;
    if (p < len) {
      this.mem.set(input.subarray(p), 0);
      this.memSize = len - p;
    }
    return this;
  }

  private stripes(b: Uint8Array, start: number, end: number): void {
    const st = this.state;
    let at = start;
    while (at < end) {
      // Little-endian 32-bit words: view the input directly when aligned, else copy to scratch.
      const n = Math.min(end - at, SCRATCH_BYTES);
      let words: Uint32Array;
      let w = 0;
      if (LITTLE_ENDIAN && ((b.byteOffset + at) & 3) === 0) {
        words = new Uint32Array(b.buffer, b.byteOffset + at, n >>> 2);
      } else {
        SCRATCH8.set(b.subarray(at, at + n));
        words = SCRATCH32;
      }
      const wordsEnd = n >>> 2;
      for (; w < wordsEnd; w += 8) {
        for (let lane = 0; lane < 4; lane++) {
          const il = LITTLE_ENDIAN ? words[w + 2 * lane]! : readU32(b, at + 8 * lane + 4 * w);
          const ih = LITTLE_ENDIAN ? words[w + 2 * lane + 1]! : readU32(b, at + 8 * lane + 4 * w + 4);
          // input * P2
          let a0 = il & 0xffff, a1 = il >>> 16;
          let p00 = a0 * P2L0, p01 = a0 * P2L1, p10 = a1 * P2L0;
          let mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
          let ml = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
          let mh = a1 * P2L1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16) + Math.imul(ih, P2L) + Math.imul(il, P2H);
          // acc += product
          const lo = st[2 * lane + 1]! + ml;
          const h = (st[2 * lane]! + mh + (lo > 0xffffffff ? 1 : 0)) >>> 0;
          const l = lo >>> 0;
          // rotl 31
          const rh = ((h << 31) | (l >>> 1)) >>> 0;
          const rl = ((l << 31) | (h >>> 1)) >>> 0;
          // * P1
          a0 = rl & 0xffff;
          a1 = rl >>> 16;
          p00 = a0 * P1L0;
          p01 = a0 * P1L1;
          p10 = a1 * P1L0;
          mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
          ml = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
          mh = a1 * P1L1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16) + Math.imul(rh, P1L) + Math.imul(rl, P1H);
          st[2 * lane] = mh;
          st[2 * lane + 1] = ml;
        }
      }
      at += n;
    }
  }

  digest(): Hash64 {
    let hh: number, hl: number;
    if (this.total >= 32) {
      // rotl(v1,1) + rotl(v2,7) + rotl(v3,12) + rotl(v4,18)
      const acc = { h: 0, l: 0 };
      const add = (h: number, l: number) => {
        const lo = acc.l + l;
        acc.h = (acc.h + h + (lo > 0xffffffff ? 1 : 0)) >>> 0;
        acc.l = lo >>> 0;
      };
      const rotl = (h: number, l: number, r: number) => {
        add(((h << r) | (l >>> (32 - r))) >>> 0, ((l << r) | (h >>> (32 - r))) >>> 0);
      };
      const st = this.state;
      rotl(st[0]!, st[1]!, 1);
      rotl(st[2]!, st[3]!, 7);
      rotl(st[4]!, st[5]!, 12);
      rotl(st[6]!, st[7]!, 18);
      hh = acc.h;
      hl = acc.l;
      for (let lane = 0; lane < 4; lane++) {
        const vh = st[2 * lane]!;
        const vl = st[2 * lane + 1]!;
        // mergeRound: acc ^= round(0, v); acc = acc * P1 + P4
        round(0, 0, vh, vl);
        hh = (hh ^ RH) >>> 0;
        hl = (hl ^ RL) >>> 0;
        mul(hh, hl, P1H, P1L);
        const lo = RL + P4L;
        hh = (RH + P4H + (lo > 0xffffffff ? 1 : 0)) >>> 0;
        hl = lo >>> 0;
      }
    } else {
      hh = P5H;
      hl = P5L;
    }
    // h += total length (as u64)
    {
      const totalLo = this.total % 0x100000000;
      const totalHi = Math.floor(this.total / 0x100000000);
      const lo = hl + totalLo;
      hh = (hh + totalHi + (lo > 0xffffffff ? 1 : 0)) >>> 0;
      hl = lo >>> 0;
    }
    const b = this.mem;
    const n = this.memSize;
    let p = 0;
    for (; p + 8 <= n; p += 8) {
      round(0, 0, readU32(b, p + 4), readU32(b, p));
      hh = (hh ^ RH) >>> 0;
      hl = (hl ^ RL) >>> 0;
      // h = rotl(h,27) * P1 + P4
      const rh = ((hh << 27) | (hl >>> 5)) >>> 0;
      const rl = ((hl << 27) | (hh >>> 5)) >>> 0;
      mul(rh, rl, P1H, P1L);
      const lo = RL + P4L;
      hh = (RH + P4H + (lo > 0xffffffff ? 1 : 0)) >>> 0;
      hl = lo >>> 0;
    }
    if (p + 4 <= n) {
      mul(0, readU32(b, p), P1H, P1L);
      hh = (hh ^ RH) >>> 0;
      hl = (hl ^ RL) >>> 0;
      // h = rotl(h,23) * P2 + P3
      const rh = ((hh << 23) | (hl >>> 9)) >>> 0;
      const rl = ((hl << 23) | (hh >>> 9)) >>> 0;
      mul(rh, rl, P2H, P2L);
      const lo = RL + P3L;
      hh = (RH + P3H + (lo > 0xffffffff ? 1 : 0)) >>> 0;
      hl = lo >>> 0;
      p += 4;
    }
    for (; p < n; p++) {
      mul(0, b[p]!, P5H, P5L);
      hh = (hh ^ RH) >>> 0;
      hl = (hl ^ RL) >>> 0;
      // h = rotl(h,11) * P1
      const rh = ((hh << 11) | (hl >>> 21)) >>> 0;
      const rl = ((hl << 11) | (hh >>> 21)) >>> 0;
      mul(rh, rl, P1H, P1L);
      hh = RH;
      hl = RL;
    }
    // avalanche
    hl = (hl ^ (hh >>> 1)) >>> 0; // h ^= h >> 33
    mul(hh, hl, P2H, P2L);
    hh = RH;
    hl = RL;
    hl = (hl ^ ((hl >>> 29) | (hh << 3))) >>> 0; // h ^= h >> 29
    hh = (hh ^ (hh >>> 29)) >>> 0;
    mul(hh, hl, P3H, P3L);
    hh = RH;
    hl = RL;
    hl = (hl ^ hh) >>> 0; // h ^= h >> 32
    return { hi: hh, lo: hl };
  }
}

/** One-shot XXH64 (seed 0). */
export function xxh64(buf: Uint8Array): Hash64 {
  return new Xxh64().update(buf).digest();
}

/** The hash as 16 lowercase hex digits. */
export function xxh64Hex(h: Hash64): string {
  return h.hi.toString(16).padStart(8, '0') + h.lo.toString(16).padStart(8, '0');
}

/** The Zstandard frame checksum field: low 32 bits of XXH64, little-endian. */
export function zstdContentChecksum(buf: Uint8Array): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32LE(xxh64(buf).lo, 0);
  return out;
}

/**
 * A safe integer's decimal text (as `String(n)` writes it), written into bytes to end at `end`,
 * with integer arithmetic on at most 8 digits at a time (no string is made); returns where it
 * starts. For streams that print millions of seqs and times.
 */
export function decimalBefore(into: Uint8Array, end: number, n: number): number {
  let at = end;
  const negative = n < 0;
  let v = negative ? -n : n;
  if (v >= 1e8) {
    // The low eight digits (zero-padded), then the rest (below 2^53 / 1e8: an int32).
    let low = v % 1e8;
    v = (v - low) / 1e8;
    for (let i = 0; i < 8; i++) {
      const q = (low / 10) | 0;
      into[--at] = 0x30 + low - q * 10;
      low = q;
    }
  }
  let x = v | 0;
  do {
    const q = (x / 10) | 0;
    into[--at] = 0x30 + x - q * 10;
    x = q;
  } while (x > 0);
  if (negative) into[--at] = 0x2d;
  return at;
}

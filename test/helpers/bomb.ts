/**
 * A valid zstd frame made of RLE blocks: 4 bytes of input per 128 KiB of
 * output, so `size` bytes of plaintext come from a few KiB. The plaintext is
 * `header` in its own frame, then one frame of `size` bytes of 'x' (no LF).
 */
export async function zstdBomb(header: Buffer, size: number): Promise<Buffer> {
  const { compressFrame } = await import('../../src/physical/encoder.js');
  const headerFrame = await compressFrame(header);
  const BLOCK = 128 * 1024;
  const parts: Buffer[] = [];
  // magic, descriptor (no FCS, not single segment, no checksum), window log 17.
  parts.push(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, (17 - 10) << 3]));
  let left = size;
  while (left > 0) {
    const n = Math.min(BLOCK, left);
    left -= n;
    const last = left === 0 ? 1 : 0;
    const h = last | (1 << 1) | (n << 3);
    parts.push(Buffer.from([h & 0xff, (h >>> 8) & 0xff, (h >>> 16) & 0xff, 0x78]));
  }
  return Buffer.concat([headerFrame, ...parts]);
}

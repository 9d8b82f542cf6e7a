import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { MemorySource } from '../src/physical/source.js';
import { inspectSource } from '../src/log/inspect.js';
import { createDecoder, nodeZstdAvailable, tornPrefixByBlocks } from '../src/physical/decoders.js';
import { scanFrames } from '../src/physical/zstd-frames.js';

const haveBoth = nodeZstdAvailable();
if (!haveBoth) console.warn(`node:zlib zstd is not available on Node ${process.version}: decoder parity runs under Node >= 22.15 (npm test runs it with a Node 24 when it can)`);
if (!HAVE_CORPUS) console.warn(SKIP_REASON);

describe.skipIf(!haveBoth || !HAVE_CORPUS)('decoder parity: node:zlib vs @mongodb-js/zstd + fzstd', () => {
  it('agree on every corpus artifact and on every truncation of every zstd artifact', async () => {
    const a = createDecoder('node-zlib');
    const b = createDecoder('mongodb-js');
    const diffs: string[] = [];
    let compared = 0;
    for (const c of corpusCases().filter((x) => x.artifact.endsWith('.zstd'))) {
      const bytes = readFileSync(c.artifact);
      const cuts = new Set<number>([bytes.length]);
      // Every frame boundary and a spread of cuts inside frames (torn tails).
      const scan = scanFrames(new MemorySource('x.zstd', bytes));
      for (const f of scan.frames) {
        cuts.add(f.end);
        for (let k = 1; k < 8; k++) cuts.add(f.start + Math.floor(((f.end - f.start) * k) / 8));
      }
      for (const cut of cuts) {
        const src = () => new MemorySource('session.jsonl.zstd', bytes.subarray(0, cut));
        const ra = await inspectSource(src(), { decoder: a });
        const rb = await inspectSource(src(), { decoder: b });
        const view = (r: typeof ra) => JSON.stringify([r.error?.class, r.error?.message, r.events, r.torn, r.tornFrame?.recoveredPlaintextBytes]);
        if (view(ra) !== view(rb)) diffs.push(`${c.name} cut ${cut}`);
        compared++;
      }
    }
    expect(diffs).toEqual([]);
    expect(compared).toBeGreaterThan(1000);
  });

  it('torn-frame prefix recovery emulation equals libzstd on every cut of every frame', async () => {
    const zlib = createDecoder('node-zlib');
    const diffs: string[] = [];
    for (const c of corpusCases().filter((x) => x.artifact.endsWith('.zstd')).slice(0, 40)) {
      const bytes = readFileSync(c.artifact);
      for (const f of scanFrames(new MemorySource('x.zstd', bytes)).frames) {
        const frame = bytes.subarray(f.start, f.end);
        for (let cut = 0; cut < frame.length; cut += Math.max(1, Math.floor(frame.length / 50))) {
          const expected = await zlib.decodeTornPrefix(frame.subarray(0, cut));
          const mine = tornPrefixByBlocks(frame.subarray(0, cut));
          if (!expected.equals(mine)) diffs.push(`${c.name} frame ${f.index} cut ${cut}: ${expected.length} vs ${mine.length}`);
        }
      }
    }
    expect(diffs).toEqual([]);
  });

  it('torn prefixes of raw, RLE and multi-block frames match libzstd (partial raw blocks included)', async () => {
    const zlib = await import('node:zlib');
    const z = zlib as any;
    const node = createDecoder('node-zlib');
    const random = Buffer.alloc(300_000);
    let x = 12345;
    for (let i = 0; i < random.length; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      random[i] = x >>> 24;
    }
    const inputs = [random, Buffer.alloc(400_000, 0x61), Buffer.concat([random.subarray(0, 150_000), Buffer.alloc(200_000, 0x0a)])];
    const diffs: string[] = [];
    for (const [i, input] of inputs.entries()) {
      const frame: Buffer = z.zstdCompressSync(input, { params: { [z.constants.ZSTD_c_checksumFlag]: 1 } });
      for (let cut = 0; cut <= frame.length; cut += Math.max(1, Math.floor(frame.length / 97))) {
        const expected = await node.decodeTornPrefix(frame.subarray(0, cut));
        const mine = tornPrefixByBlocks(frame.subarray(0, cut));
        if (!expected.equals(mine)) diffs.push(`input ${i} cut ${cut}: libzstd ${expected.length} vs ${mine.length}`);
      }
    }
    expect(diffs).toEqual([]);
  });
});

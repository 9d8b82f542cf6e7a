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

describe.skipIf(!haveBoth || !HAVE_CORPUS)('decoder parity on damaged block headers (issue #23)', () => {
  const view = (r: Awaited<ReturnType<typeof inspectSource>>) => JSON.stringify([r.error?.class, r.error?.message, r.events, r.torn, r.tornFrame?.recoveredPlaintextBytes]);

  it('agree on every block-header bit flip (type, last flag, size) of corpus frames, complete and torn', async () => {
    const { blockHeaderOffsets } = await import('./helpers/hostile-gen.js');
    const a = createDecoder('node-zlib');
    const b = createDecoder('mongodb-js');
    const diffs: string[] = [];
    let compared = 0;
    const cases = corpusCases().filter((x) => x.artifact.endsWith('.zstd'));
    for (const [n, c] of cases.entries()) {
      if (n % 2 !== 0 && !/damaged/.test(c.name)) continue;
      const bytes = readFileSync(c.artifact);
      for (const at of blockHeaderOffsets(bytes)) {
        for (const bit of [0, 1, 2, 3, 9, 14, 17, 20, 23]) {
          const flipped = Buffer.from(bytes);
          flipped[at + (bit >> 3)] = (flipped[at + (bit >> 3)] as number) ^ (1 << (bit & 7));
          for (const cut of [flipped.length, Math.min(flipped.length, at + 3 + 40)]) {
            const src = () => new MemorySource('session.jsonl.zstd', flipped.subarray(0, cut));
            const ra = await inspectSource(src(), { decoder: a });
            const rb = await inspectSource(src(), { decoder: b });
            if (view(ra) !== view(rb)) diffs.push(`${c.name} block header at ${at} bit ${bit} cut ${cut}: node-zlib ${ra.error?.message ?? `${ra.events?.length} events`} vs mongodb-js ${rb.error?.message ?? `${rb.events?.length} events`}`);
            compared++;
          }
        }
      }
    }
    expect(diffs).toEqual([]);
    expect(compared).toBeGreaterThan(1000);
  });

  it('a torn final frame whose cut raw block declares 200,000 bytes (over 128 KiB) recovers nothing on both paths', async () => {
    const c = corpusCases().find((x) => x.name.includes('syn.llm-retry') && x.artifact.endsWith('.zstd'))!;
    const bytes = readFileSync(c.artifact);
    const last = scanFrames(new MemorySource('x.zstd', bytes)).frames.at(-1)!;
    // Replace the last frame by a raw-block frame cut inside its (oversized) block.
    const plain = Buffer.from('{"type":"turn/start","seq":999,"time":1,"data":{"turn":9}}\n'.repeat(3));
    const h = 1 | (0 << 1) | (200_000 << 3);
    const torn = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, (17 - 10) << 3, h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff]), plain]);
    const artifact = Buffer.concat([bytes.subarray(0, last.end), torn]);
    const results = [];
    for (const d of [createDecoder('node-zlib'), createDecoder('mongodb-js')]) {
      results.push(await inspectSource(new MemorySource('session.jsonl.zstd', artifact), { decoder: d }));
    }
    expect(view(results[0]!)).toBe(view(results[1]!));
    expect(results[1]!.tornFrame?.recoveredPlaintextBytes ?? 0).toBe(0);
    expect(tornPrefixByBlocks(torn).length).toBe(0);
  });
});

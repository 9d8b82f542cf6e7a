import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { MemorySource } from '../src/physical/source.js';
import { inspectSource } from '../src/log/inspect.js';
import { scanFrames } from '../src/physical/zstd-frames.js';
import { createDecoder } from '../src/physical/decoders.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { rng } from './helpers/hostile-gen.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

type Mutation = { name: string; bytes: Buffer };

function frameBounds(bytes: Buffer): number[] {
  try {
    const scan = scanFrames(new MemorySource('m.zstd', bytes));
    return scan.frames.map((f) => f.end);
  } catch {
    return [];
  }
}

function mutate(original: Buffer, seed: number): Mutation {
  const r = rng(seed);
  const pick = (n: number) => Math.floor(r() * n);
  const b = Buffer.from(original);
  const kind = pick(7);
  switch (kind) {
    case 0: {
      const flips = 1 + pick(4);
      for (let i = 0; i < flips; i++) {
        const at = pick(b.length);
        b[at] = (b[at] as number) ^ (1 << pick(8));
      }
      return { name: `bitflip x${flips}`, bytes: b };
    }
    case 1:
      return { name: 'truncate', bytes: b.subarray(0, pick(b.length + 1)) };
    case 2: {
      const bounds = frameBounds(original);
      if (bounds.length === 0) return { name: 'truncate-line', bytes: b.subarray(0, Math.max(0, b.lastIndexOf(0x0a, pick(b.length)))) };
      const at = bounds[pick(bounds.length)] as number;
      return { name: `truncate at frame boundary ${at}`, bytes: b.subarray(0, at + (pick(2) ? 0 : 1 + pick(8))) };
    }
    case 3: {
      const bounds = [0, ...frameBounds(original)];
      if (bounds.length < 3) return { name: 'duplicate-tail', bytes: Buffer.concat([b, b.subarray(pick(b.length))]) };
      const i = 1 + pick(bounds.length - 2);
      const frame = original.subarray(bounds[i] as number, bounds[i + 1] as number);
      const at = bounds[pick(bounds.length)] as number;
      return { name: `splice duplicate frame ${i} at ${at}`, bytes: Buffer.concat([original.subarray(0, at), frame, original.subarray(at)]) };
    }
    case 4: {
      const junk = Buffer.alloc(1 + pick(64));
      for (let i = 0; i < junk.length; i++) junk[i] = pick(256);
      return { name: 'append garbage', bytes: Buffer.concat([b, junk]) };
    }
    case 5: {
      const bounds = [0, ...frameBounds(original)];
      if (bounds.length < 3) {
        const at = pick(b.length);
        return { name: 'delete range', bytes: Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + pick(40)))]) };
      }
      const i = 1 + pick(bounds.length - 2);
      return { name: `drop frame ${i}`, bytes: Buffer.concat([original.subarray(0, bounds[i] as number), original.subarray(bounds[i + 1] as number)]) };
    }
    default: {
      const at = pick(b.length);
      const text = ['null\n', '{"seq":1}\n', '[]\n', '\n', '{"type":"turn/end","seq":0,"time":0,"data":{}}\n', '\u0000\u0000'][pick(6)] as string;
      return { name: `insert ${JSON.stringify(text)}`, bytes: Buffer.concat([b.subarray(0, at), Buffer.from(text), b.subarray(at)]) };
    }
  }
}

describe.skipIf(!HAVE_CORPUS)('hostile input', () => {
  it('2,000+ seeded mutations of corpus artifacts all get a classified result, fast, in bounded memory', async () => {
    const cases = corpusCases();
    const decoder = createDecoder();
    const originals = cases.map((c) => ({ name: c.name, zstd: c.artifact.endsWith('.zstd'), bytes: readFileSync(c.artifact) }));
    const unclassified: string[] = [];
    let slowest = 0;
    const heapBefore = process.memoryUsage().rss;
    const N = 2400;
    for (let seed = 1; seed <= N; seed++) {
      const o = originals[seed % originals.length]!;
      const m = mutate(o.bytes, seed);
      const t0 = performance.now();
      let r;
      try {
        r = await inspectSource(new MemorySource(o.zstd ? 'session.jsonl.zstd' : 'session.jsonl', m.bytes), { decoder });
      } catch (error) {
        unclassified.push(`seed ${seed} ${o.name} ${m.name}: threw ${(error as Error).stack}`);
        continue;
      }
      slowest = Math.max(slowest, performance.now() - t0);
      if (r.error) {
        if (!['corrupt', 'refused'].includes(r.error.kind) || typeof r.error.message !== 'string' || r.error.message.length === 0) {
          unclassified.push(`seed ${seed} ${o.name} ${m.name}: unclassified ${JSON.stringify(r.error)}`);
        }
      } else if (!r.events || r.events.length !== r.storedEventCount + r.closers.length) {
        unclassified.push(`seed ${seed} ${o.name} ${m.name}: inconsistent success`);
      }
    }
    expect(unclassified).toEqual([]);
    expect(slowest).toBeLessThan(5_000);
    expect(process.memoryUsage().rss - heapBefore).toBeLessThan(512 * 1024 * 1024);
  });

  it('the CLI classifies mutated artifacts with exit 1 (or 0), never a stack trace', async () => {
    const cases = corpusCases().filter((c) => c.name.includes('syn.llm-retry'));
    for (let seed = 1; seed <= 12; seed++) {
      const c = cases[seed % cases.length]!;
      const m = mutate(readFileSync(c.artifact), seed * 7919);
      const r = await runCli(['inspect', '-', '--json'], { input: m.bytes });
      expect([0, 1], `${m.name}: ${r.stderr}`).toContain(r.code);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      JSON.parse(r.stdout);
    }
  });

  it('the streaming views (request, trace: index and re-read; stats, secrets, search: folds) answer mutated artifacts with 0/1/2, never a crash', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-hostile-'));
    const cases = corpusCases().filter((c) => /syn\.(llm-retry|compaction-double|crash-mid-tool)/.test(c.name));
    let answered = 0;
    for (let seed = 1; seed <= 240; seed++) {
      const c = cases[seed % cases.length]!;
      const m = mutate(readFileSync(c.artifact), seed * 104729);
      const file = path.join(dir, `m${seed}${c.artifact.endsWith('.zstd') ? '.jsonl.zstd' : '.jsonl'}`);
      writeFileSync(file, m.bytes);
      const seq = String(seed % 60);
      for (const args of [['request', file, seq, '--json'], ['request', file, '--list'], ['request', file, seq, '--diff'], ['trace', file, seq, '--all', '--json'], ['trace', file, seq], ['stats', file, '--json'], ['secrets', file, '--json'], ['search', 'e', file, '--json']]) {
        const r = await runInProcess(args);
        expect([0, 1, 2], `${m.name}: ${args.join(' ')}: ${r.stderr}`).toContain(r.code);
        expect(r.stderr, `${m.name}: ${args.join(' ')}`).not.toMatch(/internal error|\n\s+at /);
        answered++;
      }
    }
    expect(answered).toBe(1920);
  });

  it('a zstd frame that decompresses to far more than its input is read in bounded memory', async () => {
    const { zstdBomb } = await import('./helpers/bomb.js');
    const header = Buffer.from('{"type":"session","version":0,"id":"b","createdAt":1,"delegationDepth":0}\n');
    const bytes = await zstdBomb(header, 256 << 20);
    expect(bytes.length).toBeLessThan(64 << 10);
    const before = process.memoryUsage().rss;
    const r = await inspectSource(new MemorySource('session.jsonl.zstd', bytes), { maxLineBytes: 16 << 20 } as any);
    expect(r.error?.kind ?? 'ok').toMatch(/corrupt|ok/);
    expect(process.memoryUsage().rss - before).toBeLessThan(400 * 1024 * 1024);
  });
});

describe.skipIf(!HAVE_CORPUS)('the frame walk runs alongside decoding', () => {
  it('a structural error after a damaged frame still decides the outcome, as if the walk came first', async () => {
    const c = corpusCases().find((x) => x.name.includes('checksum-corrupt-middle-frame/root-zstd'))!;
    const damaged = readFileSync(c.artifact);
    const garbage = Buffer.concat([damaged, Buffer.from('not a zstd frame')]);
    const r = await inspectSource(new MemorySource('session.jsonl.zstd', garbage), { collect: false });
    expect(r.error?.message).toBe(`corrupt Zstandard session log: invalid frame magic at byte ${damaged.length}`);
    expect(r.frames).toBeUndefined();
    // Without the trailing garbage the damaged frame is the verdict, with every frame reported.
    const plain = await inspectSource(new MemorySource('session.jsonl.zstd', damaged), { collect: false });
    expect(plain.error?.message).toMatch(/^corrupt Zstandard session log: frame at byte \d+ failed validation$/);
    expect(plain.frames?.length).toBe(c.expected.artifact.frames.length);
  });

  it('frames --decode reports a damaged header frame and every later frame, exit 1, no crash', async () => {
    const c = corpusCases().find((x) => x.name.includes('syn.llm-retry') && x.artifact.endsWith('.zstd'))!;
    const bytes = Buffer.from(readFileSync(c.artifact));
    // Flip a byte inside frame 0's payload: its checksum no longer matches.
    bytes[20] = (bytes[20] as number) ^ 0xff;
    const r = await runCli(['frames', '-', '--decode', '--json'], { input: bytes });
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect([0, 1]).toContain(r.code);
    const doc = JSON.parse(r.stdout);
    expect(doc.frames.length).toBe(c.expected.artifact.frames.length);
    expect(doc.frames[0].error).toBeDefined();
  });
});

import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ArtifactEncoder, writeArtifact, writeArtifactFile, batchPlaintext } from '../src/log/writer.js';
import { collectSession, generateArtifact, generateSession, writeGeneratedArtifact, type GenerateOptions } from '../tools/generate.js';
import { sessionPath } from '../src/log/layout.js';
import { readArtifact } from '../src/log/read.js';
import { inspectSource } from '../src/log/inspect.js';
import { FileSource, MemorySource } from '../src/physical/source.js';
import { createDecoder } from '../src/physical/decoders.js';
import { nodeZstdEncoderAvailable } from '../src/physical/encoder.js';
import type { SessionEvent, SessionHeader } from '../src/log/types.js';
import { decodeStorageRecord } from '../src/log/rows.js';
import { CORPUS, HAVE_CORPUS } from './helpers/corpus.js';

const header: SessionHeader = { version: 0, id: 'w-1', createdAt: 1785000000000, cwd: '/home/dev/p', delegationDepth: 0 };

function chunk(seq: number, time: number, text: string, turn = 1, step = 1): SessionEvent {
  return { type: 'assistant/chunk', seq, time, data: { turn, step, chunk: { type: 'text-delta', index: 0, text } } };
}

function smallLog(): SessionEvent[][] {
  let seq = 0;
  const t = 1785000000000;
  const e = (type: string, data: unknown, extra: Partial<SessionEvent> = {}): SessionEvent => ({ type, seq: seq++, time: t + seq * 7, data, ...extra });
  const b1 = [e('turn/start', { turn: 1 }), e('step/start', { turn: 1, step: 1 }), e('user/message', { content: [{ type: 'text', text: 'hi ☃ 会话' }], source: { kind: 'user' }, role: 'user', id: 'u1' }, { surfaceOp: 'append' })];
  const b2: SessionEvent[] = [];
  for (let i = 0; i < 5; i++) b2.push(chunk(seq++, t + 100 + i * (i % 2 ? 9 : -2), `tok${i} `));
  const b3 = [
    e('assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'tok0 tok1 tok2 tok3 tok4 ' }], source: { kind: 'model', provider: 'p', model: 'm' }, id: 'a1' } }, { sourceEventSeqs: [3, 4, 5, 6, 7], surfaceOp: 'append' }),
    e('step/end', { turn: 1, step: 1 }),
    e('turn/end', { turn: 1, reason: { kind: 'completed' } }),
  ];
  return [b1, b2, b3];
}

describe('ArtifactEncoder / writeArtifact', () => {
  for (const encoding of ['zstd', 'none'] as const) {
    for (const packChunks of [true, false]) {
      it(`round-trips through readArtifact (${encoding}, packChunks=${packChunks})`, async () => {
        const batches = smallLog();
        const buf = await writeArtifact({ header, batches, encoding, packChunks });
        const name = encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl';
        const out = await readArtifact(new MemorySource(name, buf), { collect: true });
        expect(out.error).toBeUndefined();
        expect(out.encoding).toBe(encoding);
        expect(out.stored!.meta).toEqual(header);
        expect(out.stored!.events).toEqual(batches.flat());
        expect(out.stored!.torn).toBeNull();
        const text = buf.toString('utf8');
        if (encoding === 'none') {
          expect(text.split('\n')[0]).toBe(JSON.stringify({ type: 'session', version: 0, id: 'w-1', createdAt: 1785000000000, cwd: '/home/dev/p', delegationDepth: 0 }));
          expect(text.includes('"text-chunks"')).toBe(packChunks);
        } else {
          expect(out.frames).toHaveLength(1 + batches.length);
          expect(out.frames!.every((f) => f.checksumFlag)).toBe(true);
          const decoder = createDecoder('mongodb-js');
          const f0 = out.frames![0]!;
          const headerPlain = await decoder.decode(buf.subarray(f0.start, f0.end));
          expect(headerPlain.indexOf(0x0a)).toBe(headerPlain.length - 1);
          for (let i = 0; i < batches.length; i++) {
            const f = out.frames![i + 1]!;
            expect((await decoder.decode(buf.subarray(f.start, f.end))).toString()).toBe(batchPlaintext(batches[i]!, packChunks).toString());
          }
        }
      });
    }
  }

  it('enforces append contiguity like DSH', async () => {
    const enc = new ArtifactEncoder({ header, encoding: 'none' });
    await enc.header();
    await expect(enc.batch([chunk(1, 0, 'x')])).rejects.toThrow('append seq mismatch for "w-1": expected 0 at index 0, got 1');
  });

  it('writeArtifactFile creates dirs, publishes atomically and never overwrites', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-writer-'));
    try {
      const target = sessionPath(dir, header, 'zstd');
      await writeArtifactFile(target, { header, batches: smallLog(), encoding: 'zstd' });
      expect(target).toBe(path.join(dir, '--home-dev-p--', 'w-1', 'session.jsonl.zstd'));
      const before = readFileSync(target);
      await expect(writeArtifactFile(target, { header, batches: smallLog(), encoding: 'zstd' })).rejects.toThrow(/refusing to overwrite/);
      expect(readFileSync(target)).toEqual(before);
      expect(readdirSync(path.dirname(target))).toEqual(['session.jsonl.zstd']);
      expect(statSync(target).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Cut the stored corpus events into batches the way the corpus README says DSH's harness did. */
function corpusBatches(events: SessionEvent[]): SessionEvent[][] {
  const out: SessionEvent[][] = [];
  let cur: SessionEvent[] = [];
  for (const e of events) {
    cur.push(e);
    if (e.type === 'request/header' || e.type === 'turn/end') {
      out.push(cur);
      cur = [];
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

describe.skipIf(!HAVE_CORPUS)('writer parity with DSH-written corpus artifacts', () => {
  const rawRoot = path.join(CORPUS, 'synthetic', 'root-raw', '--home-dsh-synthetic-project--');
  const zstdRoot = path.join(CORPUS, 'synthetic', 'root-zstd', '--home-dsh-synthetic-project--');
  const names = existsSync(rawRoot) ? readdirSync(rawRoot).filter((n) => existsSync(path.join(zstdRoot, n, 'session.jsonl.zstd'))) : [];

  it('re-writes every synthetic session: raw byte-identical, zstd frame plaintexts identical', async () => {
    expect(names.length).toBeGreaterThan(5);
    const decoder = createDecoder('mongodb-js');
    let identicalZstd = 0;
    for (const name of names) {
      const rawBytes = readFileSync(path.join(rawRoot, name, 'session.jsonl'));
      const read = await readArtifact(new MemorySource('session.jsonl', rawBytes), { collect: true });
      expect(read.error).toBeUndefined();
      const events = read.stored!.events!;
      const meta = read.stored!.meta;
      const batches = corpusBatches(events);
      const mine = await writeArtifact({ header: meta, batches, encoding: 'none' });
      expect(mine.toString(), name).toBe(rawBytes.toString());

      // zstd: take DSH's own batch boundaries from its frames.
      const zBytes = readFileSync(path.join(zstdRoot, name, 'session.jsonl.zstd'));
      const theirs = await readArtifact(new MemorySource('session.jsonl.zstd', zBytes), { frameDetail: true });
      const zBatches: SessionEvent[][] = [];
      let at = 0;
      for (const f of theirs.frames!.slice(1)) {
        const plain = (await decoder.decode(zBytes.subarray(f.start, f.end))).toString();
        const n = plain.split('\n').filter(Boolean).reduce((k, line) => k + decodeStorageRecord(JSON.parse(line)).length, 0);
        zBatches.push(events.slice(at, at + n));
        at += n;
      }
      expect(at).toBe(events.length);
      const myZ = await writeArtifact({ header: meta, batches: zBatches, encoding: 'zstd' });
      const ours = await readArtifact(new MemorySource('session.jsonl.zstd', myZ), { frameDetail: true });
      expect(ours.frames!.map((f) => f.plaintextSha256), name).toEqual(theirs.frames!.map((f) => f.plaintextSha256));
      if (Buffer.compare(myZ, zBytes) === 0) identicalZstd++;
    }
    // node:zlib (Node >= 22.15) reproduces DSH's compressed bytes exactly.
    if (nodeZstdEncoderAvailable()) expect(identicalZstd).toBe(names.length);
  });
});

const genBase: GenerateOptions = { seed: 42, id: 'gen-1', targetBytes: 600_000, toolOutputBytes: [1024, 20_000] };

describe('generator', () => {
  it('is deterministic and yields contiguous seqs from 0', async () => {
    const a = await generateArtifact({ ...genBase, encoding: 'zstd', encoder: 'mongodb-js' });
    const b = await generateArtifact({ ...genBase, encoding: 'zstd', encoder: 'mongodb-js' });
    expect(Buffer.compare(a.bytes, b.bytes)).toBe(0);
    const s = collectSession(genBase);
    s.events.forEach((e, i) => expect(e.seq).toBe(i));
    expect(s.events.length).toBe(a.info.events);
    expect(a.info.logicalBytes).toBeGreaterThan(400_000);
  });

  it('produces logs DSH would inspect cleanly (random features, many frames)', async () => {
    for (const seed of [1, 2, 3]) {
      const { bytes, info } = await generateArtifact({
        ...genBase, seed, targetBytes: 400_000, encoding: 'zstd',
        features: { 2: ['retry', 'header-change', 'todo'], 3: ['prune', 'compaction', 'cjk'], 4: ['resume'], 5: ['compaction', 'prune'] },
      });
      const r = await inspectSource(new MemorySource('session.jsonl.zstd', bytes));
      expect(r.error, JSON.stringify(r.error)).toBeUndefined();
      expect(r.closers).toEqual([]);
      expect(r.torn).toBeNull();
      expect(r.frames!.length).toBe(1 + info.batches);
      const types = new Set(r.events!.map((e) => e.type));
      for (const t of ['compaction/start', 'compaction/summary', 'compaction/end', 'compaction/prune', 'llm/retry', 'llm/retry-started', 'session/end-seed', 'todo/write', 'session/title'])
        expect(types.has(t), `${t} (seed ${seed})`).toBe(true);
      const reasons = r.events!.filter((e) => e.type === 'request/header').map((e) => e.data.reason);
      expect(reasons[0]).toBe('initial');
      expect(reasons).toContain('change');
      expect(reasons).toContain('resume');
      expect(r.surface!.replaceGeneration).toBeGreaterThanOrEqual(2);
    }
  });

  it('mid-tool crash: stored log ends at a tool/call; inspect adds DSH closers', async () => {
    const { bytes } = await generateArtifact({ ...genBase, turns: 3, crash: 'mid-tool', encoding: 'zstd' });
    const r = await inspectSource(new MemorySource('session.jsonl.zstd', bytes));
    expect(r.error).toBeUndefined();
    expect(r.events![r.storedEventCount - 1]!.type).toBe('tool/call');
    const codes = r.closers.filter((c) => c.type === 'tool/result').map((c) => c.data.error.code);
    expect(codes[0]).toBe('TOOL_OUTCOME_UNKNOWN');
    expect(codes.slice(1).every((c: string) => c === 'TOOL_NOT_STARTED')).toBe(true);
    expect(r.closers.at(-1)!.data).toEqual({ turn: 3, reason: { kind: 'interrupted' } });
  });

  it('mid-stream crash: stored log ends inside a chunk stream', async () => {
    const { bytes } = await generateArtifact({ ...genBase, turns: 2, crash: 'mid-stream', encoding: 'none' });
    const r = await inspectSource(new MemorySource('session.jsonl', bytes));
    expect(r.error).toBeUndefined();
    const last = r.events![r.storedEventCount - 1]!;
    expect(last.type).toBe('assistant/chunk');
    expect(['text-delta', 'reasoning-delta']).toContain(last.data.chunk.type);
    expect(r.closers.map((c) => c.type)).toEqual(['step/end', 'turn/end']);
  });

  for (const encoding of ['zstd', 'none'] as const) {
    for (const crash of [null, 'mid-tool', 'mid-stream'] as const) {
      it(`tornTail is reported by readArtifact with the right truncateTo (${encoding}, crash=${crash})`, async () => {
        const { bytes, info } = await generateArtifact({ ...genBase, turns: 3, crash, tornTail: true, encoding });
        expect(info.tornAt).not.toBeNull();
        const name = encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl';
        const out = await readArtifact(new MemorySource(name, bytes), { collect: true });
        expect(out.error).toBeUndefined();
        const torn = out.stored!.torn!;
        expect(torn).not.toBeNull();
        if (encoding === 'zstd') {
          expect(torn.truncateTo).toBe(info.tornAt);
          expect(out.tornFrame!.start).toBe(info.tornAt);
          // the events before the torn write are all there
          expect(out.stored!.eventCount).toBeGreaterThanOrEqual(info.durableEvents);
        } else {
          expect(torn.truncateTo).toBe(bytes.lastIndexOf(0x0a) + 1);
          expect(torn.truncateTo).toBeGreaterThanOrEqual(info.tornAt!);
        }
        expect(out.stored!.eventCount).toBeLessThan(info.events);
      });
    }
  }

  it('fork child: inherited prefix, end-seed at seedLength, turns continue', async () => {
    const parent = collectSession({ ...genBase, turns: 3, toolOutputBytes: [500, 2000] });
    const end2 = parent.events.find((e) => e.type === 'turn/end' && e.data.turn === 2)!;
    const seed = parent.events.slice(0, end2.seq + 1);
    const child = generateSession({ ...genBase, seed: 9, id: 'gen-1-fork', turns: 1, fork: { parentId: 'gen-1', seed } });
    expect(child.header.parentSession).toBe('gen-1');
    expect(child.header.seedLength).toBe(seed.length);
    const { bytes } = await generateArtifact({ ...genBase, seed: 9, id: 'gen-1-fork', turns: 1, fork: { parentId: 'gen-1', seed }, encoding: 'zstd' });
    const r = await inspectSource(new MemorySource('session.jsonl.zstd', bytes));
    expect(r.error).toBeUndefined();
    expect(r.events!.slice(0, seed.length)).toEqual(seed);
    expect(r.events![seed.length]!.type).toBe('session/end-seed');
    expect(r.events!.find((e) => e.type === 'turn/start' && e.seq > seed.length)!.data.turn).toBe(3);
    const hdr = r.events!.find((e) => e.type === 'request/header' && e.seq > seed.length)!;
    expect(hdr.data.reason).toBe('resume');
  });

  it('writeGeneratedArtifact streams the same bytes to a new file', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-gen-'));
    try {
      const opts = { ...genBase, crash: 'mid-tool' as const, tornTail: true, encoding: 'zstd' as const, encoder: 'mongodb-js' as const };
      const file = sessionPath(dir, { id: opts.id, cwd: '/home/dev/project' }, 'zstd');
      const info = await writeGeneratedArtifact(file, opts);
      const mem = await generateArtifact(opts);
      const disk = readFileSync(file);
      expect(Buffer.compare(disk, mem.bytes)).toBe(0);
      expect(info.bytes).toBe(disk.length);
      const src = new FileSource(file);
      try {
        const out = await readArtifact(src, {});
        expect(out.stored!.torn!.truncateTo).toBe(info.tornAt);
      } finally {
        src.close();
      }
      await expect(writeGeneratedArtifact(file, opts)).rejects.toThrow(/refusing to overwrite/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('fixtures written by scripts/make-fixtures.mjs', () => {
  const root = path.resolve(__dirname, '..', 'fixtures');
  const incident = path.join(root, 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
  it.skipIf(!existsSync(incident))('the incident session has the advertised shape', async () => {
    const r = await inspectSource(new MemorySource(incident, readFileSync(incident)));
    expect(r.error).toBeUndefined();
    expect(r.torn).not.toBeNull();
    const types = r.events!.map((e) => e.type);
    for (const t of ['compaction/start', 'compaction/prune', 'llm/retry']) expect(types).toContain(t);
    expect(r.events!.filter((e) => e.type === 'request/header').map((e) => e.data.reason)).toEqual(['initial', 'change']);
    expect(r.events![r.storedEventCount - 1]!.type).toBe('tool/call');
    expect(r.closers[0]!.data.error.code).toBe('TOOL_OUTCOME_UNKNOWN');
    const fork = path.join(path.dirname(path.dirname(incident)), 'session-incident-1-fork-1', 'session.jsonl.zstd');
    const f = await inspectSource(new MemorySource(fork, readFileSync(fork)));
    expect(f.error).toBeUndefined();
    expect(f.meta!.parentSession).toBe('session-incident-1');
    expect(f.events![f.meta!.seedLength!]!.type).toBe('session/end-seed');
  });
});

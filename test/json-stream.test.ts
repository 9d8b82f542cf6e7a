/**
 * Issue #16, JSON streams: `events --json` and `inspect --json` of a large log print nothing before
 * DSH's verdict, yet hold neither their output nor the events until then: the validating pass
 * comes first, then a pass that only decodes the frames and copies each line whose bytes are its
 * event's JSON (src/log/verbatim.ts). The output must be byte-identical to the one-pass path's.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { BIN, runInProcess, runNode } from './helpers/cli.js';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { verbatimHead } from '../src/log/verbatim.js';
import { hostileBases, hostileMutation } from './helpers/hostile-gen.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-json-stream-'));
const file = path.join(dir, 'root', '--home-dev-p--', 'big', 'session.jsonl.zstd');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  await writeGeneratedArtifact(file, { seed: 1616, id: 'big', cwd: '/home/dev/p', targetBytes: 24_000_000, encoding: 'zstd' });
}, 180_000);

const PROBE = path.join(path.dirname(BIN), '..', 'test', 'helpers', 'heap-probe.cjs');
const MAXRSS = path.join(path.dirname(BIN), '..', 'test', 'helpers', 'maxrss.cjs');

/** A command's stdout digest, peak ArrayBuffer total and V8 heap in use (sampled, MiB), and peak RSS (MiB). */
async function measured(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; sha: string; bytes: number; arrayBuffersMiB: number; heapUsedMiB: number; rssMiB: number }> {
  const r = await runNode(['--require', PROBE, '--require', MAXRSS, BIN, ...args], { env: { DSH_NO_CACHE: '1', ...env } });
  const probe = /\nprobe (\{.*\})\n/.exec(r.stderr);
  const rss = /\nmaxrss-kib (\d+)\s*$/.exec(r.stderr);
  if (!probe || !rss) throw new Error(`no probe lines in stderr: ${r.stderr.slice(-2000)}`);
  return {
    code: r.code,
    sha: createHash('sha256').update(r.stdout).digest('hex'),
    bytes: Buffer.byteLength(r.stdout),
    arrayBuffersMiB: JSON.parse(probe[1]!).arrayBuffersMiB,
    heapUsedMiB: JSON.parse(probe[1]!).heapUsedMiB,
    rssMiB: Number(rss[1]) / 1024,
  };
}

describe('issue #16: JSON streams of a large log', () => {
  it('events --json holds neither its output nor the events until the verdict, and prints the one-pass bytes', async () => {
    const streamed = await measured(['events', file, '--json', '-j', '1']);
    const onePass = await measured(['events', file, '--json', '-j', '1'], { DSH_STREAM_PASS_BYTES: String(1 << 30) });
    expect(streamed.code).toBe(0);
    expect(onePass.code).toBe(0);
    expect(streamed.bytes).toBeGreaterThan(40_000_000);
    expect(streamed.sha).toBe(onePass.sha);
    // The one-pass path holds the whole output (> 40 MB) in off-heap buffers until the verdict.
    expect(onePass.arrayBuffersMiB).toBeGreaterThan(40);
    expect(streamed.arrayBuffersMiB).toBeLessThan(16);
    expect(streamed.heapUsedMiB).toBeLessThan(40);
  }, 180_000);

  it('inspect --json does not hold the events, and prints the one-pass bytes', async () => {
    const streamed = await measured(['inspect', file, '--json', '-j', '1']);
    const onePass = await measured(['inspect', file, '--json', '-j', '1'], { DSH_STREAM_PASS_BYTES: String(1 << 30) });
    expect(streamed.code).toBe(0);
    expect(streamed.sha).toBe(onePass.sha);
    // Held events cost a few times their logical bytes (24 MB here) in V8's heap. (RSS on a busy
    // machine varies with when the collector runs; the heap in use is what the path holds.)
    expect(onePass.heapUsedMiB).toBeGreaterThan(60);
    expect(streamed.heapUsedMiB).toBeLessThan(40);
  }, 180_000);

  it('with the cache on, the run that writes the session index and the one that reads it print the same bytes', async () => {
    const cache = path.join(dir, 'cache');
    const env = { DSH_NO_CACHE: '', DSH_CACHE_DIR: cache };
    for (const args of [['events', file, '--json'], ['inspect', file, '--json'], ['events', file, '--json', '--label', 'current', '--type', 'tool/']]) {
      const cold = await runNode([BIN, ...args], { env: { DSH_NO_CACHE: '1' } });
      const writes = await runNode([BIN, ...args], { env });
      expect(readdirSync(path.join(cache, 'index-v1')).length, 'an index entry was written').toBeGreaterThan(0);
      const warm = await runNode([BIN, ...args], { env });
      expect(cold.code, args.join(' ')).toBe(0);
      expect(writes.stdout, args.join(' ')).toBe(cold.stdout);
      expect(warm.stdout, args.join(' ')).toBe(cold.stdout);
    }
  }, 180_000);
});

describe.skipIf(!HAVE_CORPUS)('the streamed path on every corpus artifact', () => {
  it('prints what the one-pass path prints (events --json, filtered, inspect --json)', async () => {
    let compared = 0;
    const lines = (f: string) => [
      ['events', f, '--json'],
      ['events', f, '--json', '--label', 'current', 'shadowed'],
      ['events', f, '--json', '--type', 'tool/', 'user/message'],
      ['inspect', f, '--json'],
    ];
    for (const c of corpusCases()) {
      for (const args of lines(c.artifact)) {
        const one = await runInProcess(args, { DSH_NO_CACHE: '1' });
        const two = await runInProcess(args, { DSH_NO_CACHE: '1', DSH_STREAM_PASS_BYTES: '0' });
        expect(two.code, `${c.name} ${args.join(' ')}`).toBe(one.code);
        expect(two.stdout, `${c.name} ${args.join(' ')}`).toBe(one.stdout);
        compared++;
      }
    }
    expect(compared).toBe(4 * corpusCases().length);
  }, 900_000);
});

describe.skipIf(!HAVE_CORPUS)('the streamed path on hostile mutations', () => {
  it('prints what the one-pass path prints, with the same exit code (events --json, inspect --json, at -j 1 and -j 4)', async () => {
    const bases = await hostileBases();
    const N = Number(process.env['DSH_HOSTILE_N'] ?? 240);
    const root = path.join(dir, 'hostile', '--home-dsh-synthetic-project--', 'mutant');
    mkdirSync(root, { recursive: true });
    let compared = 0;
    for (let seed = 1; seed <= N; seed++) {
      const m = hostileMutation(bases[seed % bases.length]!, seed);
      const file = path.join(root, m.encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
      rmSync(path.join(root, 'session.jsonl.zstd'), { force: true });
      rmSync(path.join(root, 'session.jsonl'), { force: true });
      writeFileSync(file, m.bytes);
      const args = [['events', file, '--json'], ['inspect', file, '--json']][seed % 2]!;
      const jobs = seed % 4 < 2 ? ['-j', '1'] : ['-j', '4'];
      const one = await runInProcess([...args, ...jobs], { DSH_NO_CACHE: '1' });
      const two = await runInProcess([...args, ...jobs], { DSH_NO_CACHE: '1', DSH_STREAM_PASS_BYTES: '0' });
      expect(two.code, `seed ${seed} [${m.name}] ${args[0]}`).toBe(one.code);
      expect(two.stdout, `seed ${seed} [${m.name}] ${args[0]}`).toBe(one.stdout);
      compared++;
    }
    expect(compared).toBe(N);
  }, 900_000);
});

describe('verbatimHead', () => {
  const head = (s: string) => verbatimHead(Buffer.from(s));
  it('reads the head of a plain event line written as DSH writes it', () => {
    expect(head('{"type":"tool/result","seq":7,"time":1785000000000,"data":{"content":[{"type":"text","text":"a\\"b"}]}}')).toEqual({ type: 'tool/result', seq: 7, time: 1785000000000 });
    expect(head('{"type":"x","seq":0,"time":-3}')).toEqual({ type: 'x', seq: 0, time: -3 });
  });
  it('leaves to a parse every line whose parsed head or JSON text could differ', () => {
    const cases = [
      '{"type":"a","seq":1,"time":2,"data":{},"type":"b"}', // JSON.parse keeps the last type
      '{"type":"a","seq":1,"time":2,"data":{},"ti\\u006de":3}', // an escaped duplicate
      '{"type":"a","seq":1,"time":2,"data":{}, "seq":4}',
      '{"type":"a","seq":1,"time":2,"x":"q,","time":5}',
      '{"type":"a\\u0062","seq":1,"time":2}', // an escaped type
      '{"type":"a","seq":1,"time":2.0}', // String(2) is not 2.0
      '{"type":"a","seq":01,"time":2}',
      '{"type":"a","seq":1,"time":-0}',
      '{"type":"a","seq":1,"time":1e3}',
      '{"type":"a","seq":1,"time":12345678901234567}',
      '{"type":"text-chunks","seq":1,"time":2,"data":{}}', // a row tag
      '{"seq":1,"type":"a","time":2}',
      '{"type":"a","seq":1,"time":2} ',
      '{"type":"a","seq":1,"time":2,"data":{}}\r',
    ];
    for (const c of cases) expect(head(c), c).toBeUndefined();
    // Invalid UTF-8 is re-encoded by a decode (U+FFFD): not verbatim.
    expect(verbatimHead(Buffer.concat([Buffer.from('{"type":"a","seq":1,"time":2,"d":"'), Buffer.from([0xff]), Buffer.from('"}')]))).toBeUndefined();
  });
});

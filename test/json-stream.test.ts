/**
 * Issue #16, JSON streams: `events --json` and `inspect --json` of a large log print nothing before
 * DSH's verdict, yet hold neither their output nor the events until then: the validating pass
 * comes first, then a pass that only decodes the frames and copies each line whose bytes are its
 * event's JSON (src/log/verbatim.ts). The output must be byte-identical to the one-pass path's.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { BIN, runInProcess, runNode } from './helpers/cli.js';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { verbatimHead, verbatimRow } from '../src/log/verbatim.js';
import { decodeStorageRecord, rowMemberHead } from '../src/log/rows.js';
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
    const onePass = await measured(['events', file, '--json', '-j', '1', '--stream-pass-bytes', String(1 << 30)]);
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
    const onePass = await measured(['inspect', file, '--json', '-j', '1', '--stream-pass-bytes', String(1 << 30)]);
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
        const two = await runInProcess([...args, '--stream-pass-bytes', '0'], { DSH_NO_CACHE: '1' });
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
      const two = await runInProcess([...args, ...jobs, '--stream-pass-bytes', '0'], { DSH_NO_CACHE: '1' });
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

/** The composed JSON text of each member of a row `verbatimRow` accepts (undefined: it left the row to a parse). */
function rowMembersFromBytes(line: string | Buffer): string[] | undefined {
  const bytes = Buffer.from(line);
  const row = verbatimRow(bytes);
  if (!row) return undefined;
  return row.times.map((time, k) => rowMemberHead(row.seq0 + k, time) + row.mid + bytes.toString('utf8', row.tokens[2 * k], row.tokens[2 * k + 1]) + '}}}');
}

/** What a parse gives: each member event's JSON text. */
function rowMembersParsed(line: string): string[] {
  return decodeStorageRecord(JSON.parse(line)).map((e) => JSON.stringify(e));
}

/** A row line in DSH's writer's member order, its payload strings written by `str` (any JSON string literal). */
function rowLine(tag: string, payload: string[], str: (s: string) => string, extra: { id?: string; name?: string; turn?: string; dt?: number[] } = {}): string {
  const dt = extra.dt ?? payload.slice(1).map((_, i) => (i * 7) % 40);
  const ids = tag === 'tool-call-chunks' ? `,"id":${JSON.stringify(extra.id ?? 'call_1')}${extra.name !== undefined ? `,"name":${JSON.stringify(extra.name)}` : ''}` : '';
  const key = tag === 'tool-call-chunks' ? 'args' : 'texts';
  return `{"type":"${tag}","seq0":41,"time0":1785000000123,"data":{"turn":${extra.turn ?? '2'},"step":3,"index":0,"dt":[${dt.join(',')}]${ids},"${key}":[${payload.map(str).join(',')}]}}`;
}

describe('verbatimRow', () => {
  const tags = ['text-chunks', 'reasoning-chunks', 'tool-call-chunks'];
  it('writes each member of a row as DSH writes it exactly as a parse and re-serialization would', () => {
    for (const tag of tags) {
      for (const extra of [{}, { name: 'bash' }, { dt: [0, -5] }]) {
        const line = rowLine(tag, ['a"b\\c', 'é\n\t\u0001 ✓ 😀', '{"k":"/v"}'], JSON.stringify, extra);
        expect(rowMembersFromBytes(line), line).toEqual(rowMembersParsed(line));
      }
    }
  });

  it('leaves to a parse every row whose bytes are not what a re-serialization writes', () => {
    const text = (s: string) => rowLine('text-chunks', ['ab', s, 'c'], JSON.stringify);
    const cases = [
      text('x').replace('"ab"', '"\\u0061b"'), // an escape JSON.stringify does not write
      text('x').replace('"ab"', '"a\\/b"'),
      text('\u001f').replace('\\u001f', '\\u001F'), // upper-case hex
      text('\n').replace('\\n', '\\u000a'), // a control character with a short escape
      text('😀').replace('😀', '\\ud83d\\ude00'), // an escaped surrogate pair
      JSON.stringify('\ud800').length > 0 ? text('\ud800') : '', // a lone surrogate (written escaped): left to the parse
      text('x').replace('"turn":2', '"turn":2.0'),
      text('x').replace('"turn":2', '"turn":02'),
      text('x').replace('"turn":2', '"turn":-0'),
      text('x').replace('"turn":2', '"turn":"2"'),
      text('x').replace('"step":3', '"step":3e0'),
      text('x').replace('"dt":[0,7]', '"dt":[0]'), // one gap too few (DSH refuses this row)
      text('x').replace('"dt":[0,7]', '"dt":[0, 7]'),
      text('x').replace('{"type"', '{ "type"'),
      text('x').replace('"index":0,', '"index":0,"extra":1,'),
      text('x').replace('"texts":["ab","x","c"]', '"texts":[]'),
      text('x').replace('"texts":["ab","x","c"]', '"texts":["ab",1]'),
      text('x').replace('"texts"', '"text\\u0073"'),
      text('x').replace('"seq0":41,"time0":1785000000123', '"time0":1785000000123,"seq0":41'),
      text('x').replace('"time0":1785000000123', '"time0":9007199254740990').replace('"dt":[0,7]', '"dt":[0,70]'), // times past the safe range
      text('x') + ' ',
      rowLine('tool-call-chunks', ['a', 'b', 'c'], JSON.stringify).replace('"id":"call_1",', ''),
    ];
    for (const c of cases) expect(rowMembersFromBytes(c), c).toBeUndefined();
    // Invalid UTF-8 decodes to U+FFFD: not verbatim.
    const bad = Buffer.from(text('x'));
    bad[bad.indexOf('"x"') + 1] = 0xff;
    expect(verbatimRow(bad)).toBeUndefined();
  });

  it('on 3,000 seeded rows of random text: what it writes is always the parse\'s bytes, and it takes every row JSON.stringify wrote', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const alphabet = ['a', 'Z', ' ', '"', '\\', '/', '\n', '\r', '\t', '\b', '\f', '\u0000', '\u0007', '\u001f', '\u007f', 'é', '✓', '\u2028', '😀', '\ud800', '\udc00', '{', '}', ',', ':', '[', ']'];
    const escapes: ((s: string) => string)[] = [
      JSON.stringify,
      (s) => JSON.stringify(s).replace(/[a-zA-Z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
      (s) => JSON.stringify(s).replace(/\\u00([0-9a-f]{2})/, (_, h: string) => `\\u00${h.toUpperCase()}`),
      (s) => JSON.stringify(s).replace('/', '\\/'),
      (s) => JSON.stringify(s).replace(/\\n/, '\\u000a'),
      (s) => JSON.stringify(s).replace(/😀/u, '\\ud83d\\ude00'),
    ];
    let taken = 0;
    let canonical = 0;
    for (let i = 0; i < 3000; i++) {
      const payload = Array.from({ length: 1 + rand(4) }, () => Array.from({ length: rand(6) }, () => alphabet[rand(alphabet.length)]).join(''));
      const str = escapes[rand(escapes.length)]!;
      const line = rowLine(tags[rand(3)]!, payload, str, rand(2) ? { name: 'n' + alphabet[rand(alphabet.length)] } : {});
      const fromBytes = rowMembersFromBytes(line);
      if (fromBytes) {
        taken++;
        expect(fromBytes, line).toEqual(rowMembersParsed(line));
      }
      const lone = payload.some((p) => /[\ud800-\udfff]/.test(p.replace(/😀/gu, '')));
      if (str === JSON.stringify && !lone) {
        canonical++;
        expect(fromBytes, `JSON.stringify wrote it: ${line}`).toBeDefined();
      }
    }
    expect(canonical).toBeGreaterThan(300);
    expect(taken).toBeGreaterThan(canonical);
  });
});

describe.skipIf(!HAVE_CORPUS)('rows the streamed path copies from their bytes, and rows it must parse', () => {
  it('events --json and inspect --json of corpus logs whose rows are rewritten with other escapes print the one-pass bytes', async () => {
    const raws = corpusCases().filter((c) => c.artifact.endsWith('session.jsonl'));
    const root = path.join(dir, 'rows', '--home-dsh-synthetic-project--', 'rows');
    mkdirSync(root, { recursive: true });
    const file = path.join(root, 'session.jsonl');
    const rewrites: ((s: string) => string)[] = [
      (s) => JSON.stringify(s).replace(/[a-z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
      (s) => JSON.stringify(s + '/').replace('/', '\\/'),
      (s) => JSON.stringify(s + '\u0001').replace('\\u0001', '\\u0001'),
      (s) => JSON.stringify(s + '\u001f').replace('\\u001f', '\\u001F'),
    ];
    let rows = 0;
    for (const [i, c] of raws.entries()) {
      const str = rewrites[i % rewrites.length]!;
      const text = readFileSync(c.artifact, 'utf8')
        .split('\n')
        .map((line) => {
          if (!/^\{"type":"(text|reasoning|tool-call)-chunks"/.test(line)) return line;
          rows++;
          const row = JSON.parse(line);
          const key = row.type === 'tool-call-chunks' ? 'args' : 'texts';
          const i0 = line.indexOf(`"${key}":[`);
          return `${line.slice(0, i0)}"${key}":[${(row.data[key] as string[]).map(str).join(',')}]}}`;
        })
        .join('\n');
      writeFileSync(file, text);
      for (const args of [['events', file, '--json'], ['inspect', file, '--json']]) {
        const one = await runInProcess(args, { DSH_NO_CACHE: '1' });
        const two = await runInProcess([...args, '--stream-pass-bytes', '0'], { DSH_NO_CACHE: '1' });
        expect(two.code, `${c.name} ${args[0]}`).toBe(one.code);
        expect(two.stdout, `${c.name} ${args[0]}`).toBe(one.stdout);
      }
    }
    expect(rows).toBeGreaterThan(50);
  }, 600_000);
});

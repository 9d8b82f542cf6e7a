/**
 * Issue #23, class by class: each input is built from a corpus session by the
 * edit the issue describes, and run through the CLI (in-process and spawned).
 */
import { describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream, readdirSync, cpSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { BIN, runCli, runInProcess } from './helpers/cli.js';
import { deepValue, JSON_VALUES } from './helpers/hostile-gen.js';
import { canonicalIterative, toJson, toJsonIterative, toJsonReplaced } from '../src/core/json.js';
import { seedFingerprint } from '../src/log/seed.js';
import { createHash } from 'node:crypto';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const RAW_ROOT = path.join(CORPUS, 'synthetic', 'root-raw');
const PROJECT = '--home-dsh-synthetic-project--';
const crash = (r: { code: number; stderr: string }) => ![0, 1, 2].includes(r.code) || /internal error|\n\s+at /.test(r.stderr);

function tempRoot(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-'));
  cpSync(RAW_ROOT, path.join(dir, 'root'), { recursive: true });
  return path.join(dir, 'root');
}

function editLines(file: string, edit: (lines: string[]) => void): void {
  const lines = readFileSync(file, 'utf8').replace(/\n$/, '').split('\n');
  edit(lines);
  writeFileSync(file, lines.join('\n') + '\n');
}

describe('toJson serializes any depth exactly as JSON.stringify', () => {
  it('matches JSON.stringify on shallow values, with and without indentation', () => {
    const values: unknown[] = [{ a: [1, { b: undefined, c: () => 1, d: null }], e: 'x\u2028"', f: NaN, g: -0, h: [undefined], i: {} }, [], 'str', 3, null, { toJSON: () => ({ z: 1 }) }, new Date(0)];
    for (const v of values) {
      for (const space of [undefined, 2, '\t']) expect(toJsonIterative(v, space)).toBe(JSON.stringify(v, null, space));
    }
  });
  it('applies a replacer function as JSON.stringify does (holder as this, after toJSON, the root under "")', () => {
    const seen: string[] = [];
    const replacer = function (this: any, key: string, value: unknown) {
      seen.push(`${key}:${Array.isArray(this) ? 'array' : typeof this}`);
      if (key === 'time' || /Id$/.test(key)) return undefined;
      if (key === 'n') return (value as number) * 2;
      return value;
    };
    const values: unknown[] = [{ time: 1, a: [{ callId: 'x', n: 2 }, undefined, { toJSON: () => ({ n: 5, time: 0 }) }], n: 1 }, [1, { time: 2 }], 'x', null];
    for (const v of values) {
      const native: string[] = [];
      seen.length = 0;
      const want = JSON.stringify(v, replacer);
      native.push(...seen);
      seen.length = 0;
      expect(toJsonIterative(v, undefined, replacer)).toBe(want);
      expect(seen).toEqual(native);
    }
    // Past V8's depth the fallback gives what the native serializer gives where it can.
    const deep = JSON.parse(deepValue(200_000, 'object').replace('1', '{"time":5,"n":3}'));
    expect(toJsonReplaced(deep, replacer)).toBe(deepValue(200_000, 'object').replace('1', '{"n":6}'));
  });
  it('serializes 200,000 levels where JSON.stringify overflows', () => {
    for (const kind of ['object', 'array'] as const) {
      const text = deepValue(200_000, kind);
      const value = JSON.parse(text);
      expect(() => JSON.stringify(value)).toThrow(RangeError);
      expect(toJson(value)).toBe(text);
    }
  });
});

describe('seed fingerprints (check L1, the ledger) at any depth', () => {
  /** The canonical text before it went iterative: keys sorted, recursion. */
  const reference = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
    if (v !== null && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${reference((v as any)[k])}`).join(',')}}`;
    return JSON.stringify(v) ?? 'undefined';
  };
  const digest = (text: string) => createHash('sha1').update(text).digest('base64');
  it('equal the recursive definition on shallow events, and fingerprint a payload nested 200,000 levels', () => {
    const shallow = { type: 'x', seq: 3, time: 9, data: { b: [1, { z: null, a: 'é\u2028' }, []], a: {}, '10': 1, '2': [true] } } as any;
    const { time: _t, ...rest } = shallow;
    void _t;
    expect(seedFingerprint(shallow).data).toBe(digest(reference(rest)));
    expect(canonicalIterative(rest)).toBe(reference(rest));
    expect(canonicalIterative([undefined, { u: undefined }, 'x'])).toBe(reference([undefined, { u: undefined }, 'x']));
    for (const kind of ['object', 'array'] as const) {
      const deep = { type: 'x', seq: 1, time: 0, data: JSON.parse(deepValue(200_000, kind)) } as any;
      expect(() => seedFingerprint(deep)).not.toThrow();
      expect(seedFingerprint(deep)).toEqual(seedFingerprint({ ...deep, time: 5 }));
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('issue #23: dsh breaks', () => {
  it('ls and lineage print header fields of every JSON type without an internal error (text and --json)', async () => {
    const root = tempRoot();
    const child = path.join(root, PROJECT, 'syn.fork.child', 'session.jsonl');
    const original = readFileSync(child, 'utf8');
    try {
      for (const field of ['parentSession', 'title', 'agentPreset', 'origin', 'cwd', 'id', 'createdAt', 'delegationDepth']) {
        for (const value of JSON_VALUES) {
          writeFileSync(child, original);
          editLines(child, (ls) => {
            const h = JSON.parse(ls[0]!);
            h[field] = value;
            ls[0] = JSON.stringify(h);
          });
          for (const args of [['ls', root], ['ls', root, '--json'], ['lineage', child], ['lineage', child, '--json']]) {
            const r = await runInProcess(args);
            expect(crash(r), `${field}=${JSON.stringify(value)}: dsh ${args.join(' ')}: ${r.stderr}`).toBe(false);
          }
        }
      }
    } finally {
      rmSync(path.dirname(root), { recursive: true, force: true });
    }
  });

  it('request, history, compactions, report and salvage read payloads nested 5,000 levels deep (objects and arrays)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-deep-'));
    try {
      for (const kind of ['object', 'array'] as const) {
        mkdirSync(path.join(dir, 'in'), { recursive: true });
        const file = path.join(dir, 'in', `deep-${kind}.jsonl`);
        writeFileSync(file, readFileSync(path.join(RAW_ROOT, PROJECT, 'syn.compaction-double', 'session.jsonl')));
        const deep = deepValue(5000, kind);
        editLines(file, (ls) => {
          const at = ls.findIndex((l) => l.includes('"request/header"'));
          const e = JSON.parse(ls[at]!);
          e.data.header.tools = '__deep__';
          ls[at] = JSON.stringify(e).replace('"__deep__"', `[{"name":"deep","parameters":${deep}}]`);
          const seq = Math.max(...ls.slice(1).map((l) => JSON.parse(l).seq));
          ls.push(`{"type":"x-future/thing","seq":${seq + 1},"time":1,"ignorable":true,"data":${deep}}`);
        });
        const headerSeq = JSON.parse(readFileSync(file, 'utf8').split('\n').find((l) => l.includes('"request/header"'))!).seq;
        for (const json of [false, true]) {
          const extra = json ? ['--json'] : [];
          for (const args of [['request', file, String(headerSeq + 2)], ['request', file, '--list'], ['history', file], ['compactions', file], ['report', file, '-o', path.join(dir, `r-${kind}-${json}.html`)], ['salvage', file, '-o', path.join(dir, `s-${kind}-${json}`)]]) {
            const r = await runInProcess([...args, ...extra]);
            expect(r.code, `dsh ${args.join(' ')} ${extra.join(' ')}: ${r.stderr.slice(0, 300)}`).toBe(0);
          }
        }
        // The deep schema comes out whole.
        const r = await runInProcess(['request', file, String(headerSeq + 2), '--json']);
        expect(r.stdout).toContain(deep);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a FIFO in place of a session file is reported and skipped by ls/check --root, and refused (exit 2) as a target, without blocking', async () => {
    const root = tempRoot();
    try {
      const fifoDir = path.join(root, PROJECT, 'syn.llm-retry');
      rmSync(path.join(fifoDir, 'session.jsonl'));
      execFileSync('mkfifo', [path.join(fifoDir, 'session.jsonl')]);
      const ls = await runCli(['ls', root]);
      expect(ls.code).toBe(0);
      expect(ls.stdout + ls.stderr).toMatch(/syn\.llm-retry\/session\.jsonl: not a regular file \(FIFO\): skipped/);
      expect(ls.stdout).toContain('syn.compaction-double');
      const check = await runCli(['check', '--root', root, '--json']);
      expect([0, 1]).toContain(check.code);
      for (const target of [fifoDir, path.join(fifoDir, 'session.jsonl')]) {
        const r = await runCli(['inspect', target]);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/not a regular file \(FIFO\)/);
      }
    } finally {
      rmSync(path.dirname(root), { recursive: true, force: true });
    }
  });

  for (const device of ['/dev/zero', '/dev/urandom']) {
    it.skipIf(!existsSync(device))(`inspect - and frames - decide early on an endless ${device}`, async () => {
      for (const cmd of [['inspect', '-', '--json'], ['frames', '-', '--json'], ['events', '-']]) {
        const fd = openSync(device, 'r');
        const started = Date.now();
        const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, [BIN, ...cmd], { stdio: [fd, 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d) => (stdout += d));
          child.stderr.on('data', (d) => (stderr += d));
          const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
          child.on('close', (code) => {
            clearTimeout(timer);
            resolve({ code: code ?? -1, stdout, stderr });
          });
        });
        closeSync(fd);
        expect(Date.now() - started).toBeLessThan(30_000);
        expect(crash(r), `${cmd.join(' ')}: ${r.stderr}`).toBe(false);
        if (cmd[0] !== 'frames') {
          expect(r.code).toBe(1);
          expect(r.stdout + r.stderr).toMatch(device === '/dev/zero' ? /empty or header-less session log/ : /header line is not valid JSON/);
        } else expect(JSON.parse(r.stdout).encoding).toBe('none');
      }
    });
  }

  it('ZIP entry names are escaped on stderr (no raw ESC/BEL)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-zip-'));
    try {
      const { default: archiver } = await import('archiver');
      const zipFile = path.join(dir, 'x.zip');
      const body = readFileSync(path.join(RAW_ROOT, PROJECT, 'syn.llm-retry', 'session.jsonl'));
      await new Promise<void>((resolve, reject) => {
        const out = createWriteStream(zipFile);
        const a = archiver('zip', { store: true });
        out.on('close', () => resolve());
        a.on('error', reject);
        a.pipe(out);
        a.append(body, { name: 'session.jsonl' });
        a.append(body, { name: 'subagents/\u001b]0;pwned\u0007/session.jsonl' });
        void a.finalize();
      });
      const r = await runCli(['inspect', `${zipFile}:subagents/nope`]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('descendants in this archive');
      expect(r.stderr).not.toMatch(/[\u001b\u0007]/);
      expect(r.stderr).toContain('\\u001b]0;pwned\\u0007');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('issue #23: bombs', () => {
  it('a ZIP entry that honestly declares 2,000,000,000 bytes is refused before inflating, in bounded memory', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-zipbomb-'));
    try {
      const zipFile = path.join(dir, 'bomb.zip');
      // 2e9 zero bytes deflated (about 2 MB), the size declared honestly.
      const { createWriteStream } = await import('node:fs');
      const { default: archiver } = await import('archiver');
      const { Readable } = await import('node:stream');
      const total = 2_000_000_000;
      const chunk = Buffer.alloc(1 << 20);
      let left = total;
      const zeros = new Readable({
        read() {
          if (left <= 0) return void this.push(null);
          const n = Math.min(left, chunk.length);
          left -= n;
          this.push(n === chunk.length ? chunk : chunk.subarray(0, n));
        },
      });
      await new Promise<void>((resolve, reject) => {
        const out = createWriteStream(zipFile);
        const a = archiver('zip', { zlib: { level: 1 } });
        out.on('close', () => resolve());
        a.on('error', reject);
        a.pipe(out);
        a.append(zeros, { name: 'session.jsonl' });
        void a.finalize();
      });
      for (const cmd of ['inspect', 'frames']) {
        const r = await runCli([cmd, zipFile]);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/declares 2000000000 bytes, over dsh's 256 MiB budget/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.skipIf(!HAVE_CORPUS)('issue #23: a torn final frame that regenerates far more than it holds', () => {
  // Spawned against dist/ (built by `npm test`'s pretest / `npx tsc`).
  /** Run the CLI in a child and report its peak RSS (bytes). */
  const peakRun = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string; maxRss: number }>((resolve) => {
      // The arguments travel in the environment: `node -e … inspect` would start node's own debugger.
      const code = `process.on('exit',()=>process.stderr.write('\\nMAXRSS '+process.resourceUsage().maxRSS+'\\n'));process.argv=[process.argv[0],${JSON.stringify(BIN)},...JSON.parse(process.env.DSH_TEST_ARGV)];import(${JSON.stringify(BIN)});`;
      const child = spawn(process.execPath, ['-e', code], { env: { ...process.env, NO_COLOR: '1', DSH_TEST_ARGV: JSON.stringify(args) } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.length < 1e6 && stdout.length < 1e6 ? d.toString() : ''));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (c) => {
        const m = /MAXRSS (\d+)/.exec(stderr);
        resolve({ code: c ?? -1, stdout, stderr: stderr.replace(/\nMAXRSS \d+\n/, ''), maxRss: m ? Number(m[1]) * 1024 : Infinity });
      });
    });
  const size = process.env['DSH_SLOW_TESTS'] === '1' ? 2 * 1024 ** 3 : 1024 ** 3;
  const base = readFileSync(path.join(CORPUS, 'synthetic', 'root-zstd', PROJECT, 'syn.llm-retry', 'session.jsonl.zstd'));
  /** A corpus artifact plus a frame of RLE blocks of 'x' (4 bytes per 128 KiB), cut before its last block: torn, no LF anywhere. */
  const writeBomb = (dir: string): string => {
    const blocks: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, (17 - 10) << 3])];
    for (let left = size; left > 0; left -= 128 * 1024) {
      const h = (1 << 1) | ((128 * 1024) << 3);
      blocks.push(Buffer.from([h & 0xff, (h >>> 8) & 0xff, (h >>> 16) & 0xff, 0x78]));
    }
    const file = path.join(dir, 'x', 'session.jsonl.zstd');
    mkdirSync(path.dirname(file));
    writeFileSync(file, Buffer.concat([base, ...blocks]));
    return file;
  };
  it('inspect, events, check and frames --decode stream it: DSH recovers nothing from the LF-less tail, in bounded memory', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-tornbomb-'));
    try {
      const file = writeBomb(dir);
      const plain = JSON.parse((await runInProcess(['inspect', path.join(CORPUS, 'synthetic', 'root-zstd', PROJECT, 'syn.llm-retry', 'session.jsonl.zstd'), '--json'])).stdout);
      // Both decoder paths: node:zlib (Node 24) and the Node 20 one (libzstd via @mongodb-js/zstd, fzstd streaming).
      for (const args of [['inspect', file, '--json'], ['inspect', file, '--json', '--decoder', 'mongodb-js'], ['events', file, '--json'], ['check', file, '--json'], ['frames', file, '--decode', '--json']]) {
        const r = await peakRun(args);
        expect(r.code, `${args[0]}: ${r.stderr}`).toBeLessThanOrEqual(1);
        expect(r.stderr, args[0]).not.toMatch(/internal error|\n\s+at /);
        // The scanner holds one line up to its 512 MiB line limit, then only counts: the peak is bounded by it, not by the plaintext.
        expect(r.maxRss, `${args[0]} peak RSS`).toBeLessThan(800 * 1024 * 1024);
        if (args[0] === 'inspect') {
          expect(r.code, r.stderr).toBe(0);
          const doc = JSON.parse(r.stdout);
          expect(doc.events).toEqual(plain.events);
          expect(doc.torn).toEqual({ truncateTo: base.length, recoveredEventSeqs: [] });
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it('salvage and redact pull the torn prefix in bounded pieces: every event kept, the LF-less tail dropped, in bounded memory', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-tornbomb-sr-'));
    try {
      const file = writeBomb(dir);
      const plain = JSON.parse((await runInProcess(['inspect', path.join(CORPUS, 'synthetic', 'root-zstd', PROJECT, 'syn.llm-retry', 'session.jsonl.zstd'), '--json'])).stdout);
      const stored = plain.storedEventCount as number;
      const runs: [string, string[], (r: { code: number; stdout: string }) => void][] = [
        ['salvage', ['salvage', file, '-o', path.join(dir, 'salvaged'), '--json'], (r) => {
          const report = JSON.parse(r.stdout);
          expect(report.keptEvents).toBe(stored);
          const torn = report.defects.find((d: { kind: string }) => d.kind === 'torn-frame');
          expect(torn.message).toContain(`${size} plaintext bytes recovered`);
          const line = report.defects.find((d: { kind: string }) => d.kind === 'torn-line');
          expect(line.bytesLost).toBe(size);
        }],
        ['salvage --artifact', ['salvage', file, '-o', path.join(dir, 'salvaged-a'), '--artifact', '--json'], (r) => {
          expect(JSON.parse(r.stdout).keptEvents).toBe(stored);
        }],
        ['redact', ['redact', file, '-o', path.join(dir, 'redacted'), '--json'], (r) => {
          const report = JSON.parse(r.stdout);
          expect(report.tornDropped).toEqual({ frameStart: base.length, fragmentBytes: size });
          expect(report.verify.ok).toBe(true);
          expect(report.verify.redacted.events).toBe(stored);
        }],
        ['redact --dry-run', ['redact', file, '--dry-run', '--json'], (r) => {
          expect(JSON.parse(r.stdout).tornDropped).toEqual({ frameStart: base.length, fragmentBytes: size });
        }],
      ];
      for (const [what, args, check] of runs) {
        const r = await peakRun(args);
        expect(r.code, `${what}: ${r.stderr}`).toBe(0);
        expect(r.stderr, what).not.toMatch(/internal error|\n\s+at /);
        check(r);
        // The line feeders hold one record up to the 512 MiB line limit, then only count (the plaintext was 2-4x the bomb).
        expect(r.maxRss, `${what} peak RSS`).toBeLessThan(800 * 1024 * 1024);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});

describe.skipIf(!HAVE_CORPUS)('issue #23: no writer writes where DSH reads', () => {
  const listing = (dir: string): string[] => {
    const out: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        out.push(p);
        if (e.isDirectory()) walk(p);
      }
    };
    walk(dir);
    return out.sort();
  };

  it('export -o, report -o, salvage -o and redact -o/--report refuse the session directory, project directories and the root itself, --force included', async () => {
    const root = tempRoot();
    try {
      const sessionDir = path.join(root, PROJECT, 'syn.llm-retry');
      const file = path.join(sessionDir, 'session.jsonl');
      const before = listing(root);
      const places = [
        path.join(sessionDir, 'session.jsonl.zstd'),
        path.join(sessionDir, 'anything.bin'),
        path.join(root, PROJECT, 'x.zip'),
        path.join(root, PROJECT, 'syn.compaction-double', 'x.zip'),
        path.join(root, 'x.zip'),
        path.join(root, '--new-project--', 'new-session'),
      ];
      for (const place of places) {
        for (const args of [
          ['export', file, '-o', place, '--force'],
          ['export', 'syn.llm-retry', '--root', root, '--compression', 'none', '-o', place, '--force'],
          ['report', sessionDir, '-o', place, '--force'],
          ['salvage', file, '-o', place],
          ['redact', file, '-o', place],
          ['redact', file, '-o', path.join(os.tmpdir(), `dsh-h23-redact-${process.pid}-${places.indexOf(place)}`), '--report', place],
        ]) {
          const r = await runInProcess(args);
          expect(r.code, `dsh ${args.join(' ')}: ${r.stderr}`).toBe(2);
          expect(r.stderr).toMatch(/refusing to write/);
        }
      }
      expect(listing(root)).toEqual(before);
      // Outside the root, the same commands write.
      const out = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-out-'));
      expect((await runInProcess(['export', file, '-o', path.join(out, 'x.zip')])).code).toBe(0);
      expect((await runInProcess(['report', file, '-o', path.join(out, 'r.html')])).code).toBe(0);
      rmSync(out, { recursive: true, force: true });
    } finally {
      rmSync(path.dirname(root), { recursive: true, force: true });
      for (let i = 0; i < 6; i++) rmSync(path.join(os.tmpdir(), `dsh-h23-redact-${process.pid}-${i}`), { recursive: true, force: true });
    }
  });
});

/** Run bin/dsh.js and report its peak RSS in MiB. */
async function runMeasured(args: string[]): Promise<{ code: number; stdout: string; stderr: string; peakMiB: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--require', path.join(path.dirname(BIN), '..', 'test', 'helpers', 'maxrss.cjs'), BIN, ...args], { env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      const m = /maxrss-kib (\d+)\s*$/.exec(stderr);
      resolve({ code: code ?? -1, stdout, stderr: stderr.replace(/\nmaxrss-kib \d+\s*$/, ''), peakMiB: m ? Number(m[1]) / 1024 : Infinity });
    });
  });
}

describe.skipIf(!HAVE_CORPUS)('issue #23: huge sparse input', () => {
  it('a sparse 3 GB session.jsonl of zeros: ls lists it in bounded memory, salvage stops at the line limit', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-sparse-'));
    try {
      const sdir = path.join(dir, 'root', '--home-x--', 's1');
      mkdirSync(sdir, { recursive: true });
      const file = path.join(sdir, 'session.jsonl');
      execFileSync('truncate', ['-s', '3G', file]);
      const ls = await runMeasured(['ls', path.join(dir, 'root')]);
      expect(ls.code, ls.stderr).toBe(0);
      expect(ls.stdout + ls.stderr).toMatch(/no complete header line/);
      expect(ls.peakMiB).toBeLessThan(400);
      const salvage = await runMeasured(['salvage', file, '-o', path.join(dir, 'out')]);
      expect(crash(salvage), salvage.stderr).toBe(false);
      expect(salvage.code).toBe(1);
      // The line limit (512 MiB) plus the process itself, far below the 3 GB input.
      expect(salvage.peakMiB).toBeLessThan(900);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.skipIf(!HAVE_CORPUS)('issue #23: one huge line', () => {
  it('a single 50 MB user message: events, surface, request, history and report answer within a small multiple of the line', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-bigline-'));
    try {
      mkdirSync(path.join(dir, 'in'));
      const file = path.join(dir, 'in', 'big.jsonl');
      writeFileSync(file, readFileSync(path.join(RAW_ROOT, PROJECT, 'syn.llm-retry', 'session.jsonl')));
      editLines(file, (ls) => {
        const at = ls.findIndex((l) => l.includes('"user/message"'));
        const e = JSON.parse(ls[at]!);
        e.data.content[0].text = '__big__';
        ls[at] = JSON.stringify(e).replace('__big__', 'word '.repeat(10_000_000));
      });
      const lineMiB = 50;
      for (const args of [['events', file], ['surface', file], ['request', file, '5'], ['history', file], ['report', file, '-o', path.join(dir, 'r.html')], ['events', file, '--json']]) {
        const r = await runMeasured(args);
        expect(r.code, `dsh ${args.join(' ')}: ${r.stderr.slice(0, 300)}`).toBe(0);
        expect(r.peakMiB, `dsh ${args.join(' ')}`).toBeLessThan(12 * lineMiB);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.skipIf(!HAVE_CORPUS)("issue #23: DSH's TypeErrors on missing fields", () => {
  it("a request/header without its data object gets DSH's TypeError from the legacy-reason check, before any later check", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-typeerror-'));
    try {
      for (const [edit, what] of [[(e: any) => delete e.data, 'undefined'], [(e: any) => (e.data = null), 'null']] as const) {
        const file = path.join(dir, `rh-${what}.jsonl`);
        writeFileSync(file, readFileSync(path.join(RAW_ROOT, PROJECT, 'syn.fork.child', 'session.jsonl')));
        editLines(file, (ls) => {
          const at = ls.findIndex((l) => l.includes('"request/header"'));
          const e = JSON.parse(ls[at]!);
          edit(e);
          ls[at] = JSON.stringify(e);
        });
        const r = await runInProcess(['inspect', file, '--json']);
        expect(r.code).toBe(1);
        const error = JSON.parse(r.stdout).error;
        expect(error.class).toBe('SessionPersistenceCorruptionError');
        expect(error.message).toBe(`stored session "syn.fork.child" failed validation: TypeError: Cannot read properties of ${what} (reading 'reason')`);
        expect(error.cause.class).toBe('TypeError');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a crash closer for a tool call without a usable id fails DSH's adoption of the closer (session event at seq N), before restore", async () => {
    // DSH adopts every synthesized closer (its message-shape check worded for a
    // session event) before the restore sees them with its seed wording.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-closer-'));
    try {
      const source = path.join(RAW_ROOT, PROJECT, 'syn.crash-mid-tool', 'session.jsonl');
      const lines = readFileSync(source, 'utf8').replace(/\n$/, '').split('\n');
      const lastSeq = JSON.parse(lines[lines.length - 1]!).seq as number;
      const edits: [string, (block: Record<string, unknown>) => void][] = [
        ['deleted', (b) => delete b['id']],
        ['null', (b) => (b['id'] = null)],
        ['a number', (b) => (b['id'] = 7)],
        ['empty', (b) => (b['id'] = '')],
      ];
      for (const [what, edit] of edits) {
        const file = path.join(dir, `closer-${what.replace(' ', '-')}.jsonl`);
        writeFileSync(file, readFileSync(source));
        editLines(file, (ls) => {
          const at = ls.findLastIndex((l) => l.includes('"assistant/message"') && l.includes('"tool-call"'));
          const e = JSON.parse(ls[at]!);
          edit(e.data.message.content.find((b: { type: string }) => b.type === 'tool-call'));
          ls[at] = JSON.stringify(e);
        });
        const r = await runInProcess(['inspect', file, '--json']);
        expect(r.code, what).toBe(1);
        const error = JSON.parse(r.stdout).error;
        expect(error.class, what).toBe('SessionPersistenceCorruptionError');
        expect(error.message, what).toBe(`stored session "syn.crash-mid-tool" failed validation: Error: session event at seq ${lastSeq + 1} message must have tool source`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('issue #23: a file whose name and bytes disagree', () => {
  it("gets DSH's verdict for its name first (exit 1), dsh's observation beside it, and --encoding reads it anyway", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-renamed-'));
    try {
      const raw = readFileSync(path.join(RAW_ROOT, PROJECT, 'syn.llm-retry', 'session.jsonl'));
      const zstd = readFileSync(path.join(CORPUS, 'synthetic', 'root-zstd', PROJECT, 'syn.llm-retry', 'session.jsonl.zstd'));
      const asZstd = path.join(dir, 'session.jsonl.zstd');
      const asRaw = path.join(dir, 'x', 'session.jsonl');
      mkdirSync(path.dirname(asRaw));
      writeFileSync(asZstd, raw);
      writeFileSync(asRaw, zstd);
      const a = await runInProcess(['inspect', asZstd, '--json']);
      expect(a.code).toBe(1);
      expect(JSON.parse(a.stdout).error.message).toBe('corrupt Zstandard session log: invalid frame magic at byte 0');
      const aText = await runInProcess(['inspect', asZstd]);
      expect(aText.stdout + aText.stderr).toMatch(/its bytes are plain JSONL .*--encoding raw reads them anyway/);
      const b = await runInProcess(['inspect', asRaw, '--json']);
      expect(b.code).toBe(1);
      expect(JSON.parse(b.stdout).error.class).toBe('Error');
      const bText = await runInProcess(['inspect', asRaw]);
      expect(bText.stdout + bText.stderr).toMatch(/its bytes are a zstd stream .*--encoding zstd reads them anyway/);
      // --json carries the observation in the {error} object, for every read command that refuses the log.
      for (const cmd of ['inspect', 'events', 'surface', 'history', 'transcript', 'compactions']) {
        for (const [file, note] of [[asZstd, /bytes are plain JSONL.*--encoding raw/], [asRaw, /bytes are a zstd stream.*--encoding zstd/]] as const) {
          const r = await runInProcess([cmd, file, '--json']);
          expect(r.code, `${cmd} ${file}`).toBe(1);
          const error = JSON.parse(r.stdout.trim().split('\n').pop()!).error;
          expect(error.note, `${cmd} ${file}`).toMatch(note);
          expect(r.stderr, `${cmd} ${file}`).toBe('');
        }
      }
      const readA = await runInProcess(['inspect', asZstd, '--json', '--encoding', 'raw']);
      const readB = await runInProcess(['inspect', asRaw, '--json', '--encoding', 'zstd']);
      expect(readA.code).toBe(0);
      expect(readB.code).toBe(0);
      expect(JSON.parse(readA.stdout).events).toEqual(JSON.parse(readB.stdout).events);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('issue #23: header values DSH cannot place on disk', () => {
  /** The header edited as the campaign did, the log otherwise the corpus session. */
  function withHeader(dir: string, name: string, edit: (h: any) => void, tail?: (ls: string[]) => void): string {
    const file = path.join(dir, name, 'session.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, readFileSync(path.join(RAW_ROOT, PROJECT, 'syn.llm-retry', 'session.jsonl')));
    editLines(file, (ls) => {
      const h = JSON.parse(ls[0]!);
      edit(h);
      ls[0] = JSON.stringify(h);
      tail?.(ls);
    });
    return file;
  }
  it("refuses a cwd logPath cannot encode after the physical scan and before every logical check, with DSH's cause; an empty id as DSH's lookup by it does, before any read", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-h23-place-'));
    try {
      const cases: [string, (h: any) => void, string, string][] = [
        ['empty-cwd', (h) => (h.cwd = ''), 'Error', 'cannot encode an empty project path'],
        ['empty-array-cwd', (h) => (h.cwd = []), 'Error', 'cannot encode an empty project path'],
        ['null-cwd', (h) => (h.cwd = null), 'TypeError', "Cannot read properties of null (reading 'length')"],
        ['array-cwd', (h) => (h.cwd = ['a']), 'TypeError', 'cwd.charCodeAt is not a function'],
      ];
      for (const [name, edit, causeClass, cause] of cases) {
        const file = withHeader(dir, name, edit);
        for (const cmd of ['inspect', 'events']) {
          const r = await runInProcess([cmd, file, '--json']);
          expect(r.code, `${cmd} ${name}`).toBe(1);
          const error = JSON.parse(r.stdout.trim().split('\n').pop()!).error;
          expect(error.message, `${cmd} ${name}`).toBe(`corrupt session log "${file}": header id cannot name a storage path`);
          if (cmd === 'inspect') expect(error.cause, name).toMatchObject({ class: causeClass, message: cause });
        }
      }
      // A number/boolean/object cwd names a path (projectKey reads no characters: "--root--"), so DSH reads it.
      const numeric = withHeader(dir, 'num-cwd', (h) => (h.cwd = 5));
      expect(JSON.parse((await runInProcess(['inspect', numeric, '--json'])).stdout).error?.message ?? '').not.toMatch(/storage path/);
      // A file read by path is what DSH's backend would be asked for by its header id: an empty id fails that
      // lookup before anything is read, so neither an empty cwd nor a seq gap before a turn/end decides.
      const gapped = (ls: string[]) => {
        const e = JSON.parse(ls[2]!);
        e.seq += 5;
        ls[2] = JSON.stringify(e);
      };
      const gap = withHeader(dir, 'gap', (h) => (h.cwd = ''), gapped);
      expect(JSON.parse((await runInProcess(['inspect', gap, '--json'])).stdout).error.message).toMatch(/^corrupt session log: seq gap in committed region/);
      for (const [name, edit, tail] of [
        ['empty-id', (h: any) => (h.id = ''), undefined],
        ['both', (h: any) => ((h.cwd = ''), (h.id = '')), undefined],
        ['empty-id-gap', (h: any) => (h.id = ''), gapped],
      ] as const) {
        const file = withHeader(dir, name, edit, tail);
        for (const cmd of ['inspect', 'events']) {
          const r = await runInProcess([cmd, file, '--json']);
          expect(r.code, `${cmd} ${name}`).toBe(1);
          expect(JSON.parse(r.stdout.trim().split('\n').pop()!).error, `${cmd} ${name}`).toMatchObject({ class: 'Error', message: 'cannot encode an empty path segment' });
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

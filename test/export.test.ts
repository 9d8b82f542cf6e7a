import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, SKIP_REASON, CORPUS } from './helpers/corpus.js';
import { runCli } from './helpers/cli.js';
import { exportSession } from '../src/export/export.js';
import { assertSafeEntryName, safeSegment } from '../src/export/names.js';
import { indexRoot, descendantsOf } from '../src/export/descendants.js';
import { listZip, readZipEntry } from '../src/log/zip-target.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { FileSource } from '../src/physical/source.js';
import { encodeSegment } from '../src/log/layout.js';
import { toHeaderLine } from '../src/log/header.js';
import { addContentChecksum, compressFrame } from '../src/physical/encoder.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const HAVE_UNZIP = existsSync('/usr/bin/unzip');
if (!HAVE_UNZIP) console.warn('/usr/bin/unzip not found: archives are checked with dsh\'s own ZIP reader only');

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let tmp: string;

beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dsh-export-test-'));
});
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function zipEntries(file: string): Map<string, Buffer> {
  const source = new FileSource(file);
  try {
    return new Map(listZip(source).map((e) => [e.name, readZipEntry(source, e)]));
  } finally {
    source.close();
  }
}

function unzipOk(file: string): void {
  if (!HAVE_UNZIP) return;
  const r = spawnSync('/usr/bin/unzip', ['-t', file], { encoding: 'utf8' });
  expect(r.status, `${file}: ${r.stdout}${r.stderr}`).toBe(0);
  expect(r.stdout).toContain('No errors detected');
}

/** No output and no temporary file left in a directory. */
function leftovers(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.endsWith('.tmp'));
}

type Tree = { session: { header: { id: string } }; descendants: Tree[] }[];
function flatten(nodes: Tree, seen = new Set<string>(), out: string[] = []): string[] {
  for (const n of nodes) {
    const id = n.session.header.id;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(id);
    flatten(n.descendants, seen, out);
  }
  return out;
}

async function pool<T>(items: T[], width: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

describe('entry-name safety', () => {
  it('accepts DSH names and refuses names that could escape on extraction', () => {
    for (const ok of ['session.jsonl', 'subagents/a_b-c/session.jsonl', `media/sha256:${'a'.repeat(64)}.png`, 'raw/subagents/x/session.jsonl.zstd']) {
      expect(() => assertSafeEntryName(ok)).not.toThrow();
    }
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a\\b', 'C:x', 'a//b', './x', 'media/sha256:zz.png', 'a\u0000b', '']) {
      expect(() => assertSafeEntryName(bad), bad).toThrow(/unsafe archive entry/);
    }
    expect(safeSegment('weird/id:1')).toBe('weird_id_1');
    expect(safeSegment('../..')).toBe('_____');
  });
});

describe.skipIf(!HAVE_CORPUS)('export of every corpus session', () => {
  const cases = corpusCases();
  const byArtifact = new Map(cases.map((c) => [c.artifact, c]));
  const shaOfSession = (root: string, id: string): string | undefined => {
    for (const c of cases) {
      if (path.join(CORPUS, c.expected.artifact.root) === root && c.expected.readRaw?.meta?.id === id) return c.expected.readRaw.contentSha256;
    }
    return undefined;
  };

  it('library: session.jsonl = readRaw byte for byte, descendants in lineage order, failures leave nothing', async () => {
    const dir = path.join(tmp, 'lib');
    mkdirSync(dir);
    let ok = 0;
    let failed = 0;
    let withDescendants = 0;
    for (const [i, c] of cases.entries()) {
      const out = path.join(dir, `${i}.zip`);
      const target = resolveTarget(c.artifact);
      if (c.expected.readRaw.error) {
        await expect(exportSession(target, { output: out })).rejects.toThrow(c.expected.readRaw.error.message);
        expect(existsSync(out)).toBe(false);
        failed++;
        continue;
      }
      const m = await exportSession(target, { output: out, deterministic: true });
      const entries = zipEntries(out);
      const root = entries.get('session.jsonl')!;
      expect(sha(root), c.name).toBe(c.expected.readRaw.contentSha256);
      expect(root.length).toBe(c.expected.readRaw.contentBytes);
      expect(m.entries[0]).toMatchObject({ name: 'session.jsonl', sha256: c.expected.readRaw.contentSha256, bytes: c.expected.readRaw.contentBytes });
      // Descendants: exactly DSH's traceSession pre-order (same root listing).
      const trace = c.expected.sessionQuery?.traceSession;
      if (trace && !trace.error) {
        const ids = flatten(trace.descendants as Tree);
        expect(m.descendants.map((d) => d.id), c.name).toEqual(ids);
        expect([...entries.keys()].filter((n) => n.startsWith('subagents/'))).toEqual(ids.map((id) => `subagents/${safeSegment(id)}/session.jsonl`));
        const rootDir = path.join(CORPUS, c.expected.artifact.root);
        for (const id of ids) {
          const want = shaOfSession(rootDir, id);
          if (want) expect(sha(entries.get(`subagents/${safeSegment(id)}/session.jsonl`)!), id).toBe(want);
        }
        if (ids.length > 0) withDescendants++;
      }
      ok++;
    }
    expect(leftovers(dir)).toEqual([]);
    expect(ok).toBeGreaterThan(250);
    expect(failed).toBeGreaterThanOrEqual(1);
    expect(withDescendants).toBeGreaterThanOrEqual(4);
    void byArtifact;
  });

  it('process: every corpus session exports (exit 0, unzip -t passes, sha256 = readRaw) or fails with exit 1 and DSH\'s text', async () => {
    const dir = path.join(tmp, 'cli');
    mkdirSync(dir);
    const problems: string[] = [];
    await pool(cases, Math.max(2, Math.min(8, os.cpus().length * 2)), async (c, i) => {
      const out = path.join(dir, `${i}.zip`);
      const r = await runCli(['export', c.artifact, '-o', out, '--json']);
      if (c.expected.readRaw.error) {
        // --json: the failure is the {error} object on stdout.
        const message: string = r.stdout ? (JSON.parse(r.stdout).error?.message ?? '') : '';
        if (r.code !== 1 || !message.includes(c.expected.readRaw.error.message) || r.stderr !== '' || existsSync(out)) problems.push(`${c.name}: expected exit 1, got ${r.code} ${r.stdout} ${r.stderr}`);
        return;
      }
      if (r.code !== 0) {
        problems.push(`${c.name}: exit ${r.code}: ${r.stderr}`);
        return;
      }
      const manifest = JSON.parse(r.stdout);
      if (manifest.output !== out) problems.push(`${c.name}: manifest output ${manifest.output}`);
      const root = zipEntries(out).get('session.jsonl');
      if (!root || sha(root) !== c.expected.readRaw.contentSha256) problems.push(`${c.name}: session.jsonl differs from readRaw`);
      if (HAVE_UNZIP) {
        const t = spawnSync('/usr/bin/unzip', ['-t', out], { encoding: 'utf8' });
        if (t.status !== 0) problems.push(`${c.name}: unzip -t: ${t.stdout}`);
      }
    });
    expect(problems).toEqual([]);
    expect(leftovers(dir)).toEqual([]);
  }, 600_000);

  it('synthetic root: syn.fork.parent → syn.fork.child and syn.subagent.parent → syn.subagent.child', async () => {
    const root = path.join(CORPUS, 'synthetic', 'root-zstd');
    const index = await indexRoot(root);
    expect(descendantsOf(index, 'syn.fork.parent').map((d) => d.id)).toEqual(['syn.fork.child']);
    expect(descendantsOf(index, 'syn.subagent.parent').map((d) => d.id)).toEqual(['syn.subagent.child']);
    const out = path.join(tmp, 'fork.zip');
    const r = await runCli(['export', 'syn.fork.parent', '--root', root, '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    expect([...zipEntries(out).keys()]).toEqual(['session.jsonl', 'subagents/syn_fork_child/session.jsonl']);
    unzipOk(out);
    const only = path.join(tmp, 'fork-only.zip');
    expect((await runCli(['export', 'syn.fork.parent', '--root', root, '-o', only, '--no-descendants'])).code).toBe(0);
    expect([...zipEntries(only).keys()]).toEqual(['session.jsonl']);
  });

  it('--deterministic exports are byte-identical across runs (with --raw-artifacts and every level)', async () => {
    const root = path.join(CORPUS, 'synthetic', 'root-zstd');
    for (const level of ['0', '6', '9']) {
      const a = path.join(tmp, `det-a-${level}.zip`);
      const b = path.join(tmp, `det-b-${level}.zip`);
      const args = ['export', 'syn.subagent.parent', '--root', root, '--deterministic', '--raw-artifacts', '--level', level];
      expect((await runCli([...args, '-o', a])).code).toBe(0);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await runCli([...args, '-o', b])).code).toBe(0);
      expect(readFileSync(a).equals(readFileSync(b)), `level ${level}`).toBe(true);
      unzipOk(a);
      const entries = zipEntries(a);
      expect([...entries.keys()]).toEqual([
        'session.jsonl',
        'subagents/syn_subagent_child/session.jsonl',
        'raw/session.jsonl.zstd',
        'raw/subagents/syn_subagent_child/session.jsonl.zstd',
      ]);
      // raw/ holds the original files unmodified.
      expect(entries.get('raw/session.jsonl.zstd')!.equals(readFileSync(path.join(root, '--home-dsh-synthetic-project--', 'syn.subagent.parent', 'session.jsonl.zstd')))).toBe(true);
    }
    // Entry times are 1980-01-01 00:00 (DOS date 0x0021, time 0) in every local header.
    const bytes = readFileSync(path.join(tmp, 'det-a-6.zip'));
    expect(bytes.readUInt16LE(10)).toBe(0);
    expect(bytes.readUInt16LE(12)).toBe(0x21);
    // Streamed entries use data descriptors (general-purpose bit 3), like DSH's fflate export.
    expect(bytes.readUInt16LE(6) & 0x08).toBe(0x08);
  });

  it('reading the export back (dsh inspect export.zip) gives the original logical view', async () => {
    const dir = path.join(tmp, 'readback');
    mkdirSync(dir);
    let compared = 0;
    let recoveredOnly = 0;
    for (const [i, c] of cases.entries()) {
      if (c.expected.readRaw.error) continue;
      const out = path.join(dir, `${i}.zip`);
      await exportSession(resolveTarget(c.artifact), { output: out, descendants: false, media: false });
      const original = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const back = await inspectTarget(resolveTarget(out), { collect: true });
      const recovered = original.torn?.recoveredEventSeqs ?? [];
      if (recovered.length > 0) {
        // DSH's export never includes records recovered from a torn zstd frame.
        const cut = recovered[0]!;
        expect(back.events?.filter((e) => e.seq < cut), c.name).toEqual(original.events?.filter((e) => e.seq < cut));
        recoveredOnly++;
        continue;
      }
      const norm = (m: string | undefined, where: string) => m?.split(where).join('<artifact>');
      expect(norm(back.error?.message, `${out}:session.jsonl`), c.name).toEqual(norm(original.error?.message, c.artifact));
      expect(back.error?.class).toEqual(original.error?.class);
      expect(back.meta, c.name).toEqual(original.meta);
      expect(back.events, c.name).toEqual(original.events);
      compared++;
    }
    expect(compared).toBeGreaterThan(250);
    // And through the CLI, for the synthetic root, the ZIP and the original print the same --json.
    const root = path.join(CORPUS, 'synthetic', 'root-zstd');
    const out = path.join(tmp, 'sub.zip');
    expect((await runCli(['export', 'syn.subagent.parent', '--root', root, '-o', out])).code).toBe(0);
    const a = await runCli(['inspect', out, '--json']);
    const b = await runCli(['inspect', 'syn.subagent.parent', '--root', root, '--json']);
    expect(a.code).toBe(0);
    expect(JSON.parse(a.stdout).events).toEqual(JSON.parse(b.stdout).events);
    const child = await runCli(['inspect', `${out}:subagents/syn.subagent.child`, '--json']);
    const childOrig = await runCli(['inspect', 'syn.subagent.child', '--root', root, '--json']);
    expect(child.code, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout).events).toEqual(JSON.parse(childOrig.stdout).events);
    void recoveredOnly;
  });

  it('a missing attachment is a warning on stderr; the export still succeeds', async () => {
    const c = cases.find((x) => x.name.includes('root-raw') && x.name.includes('acp.read-image.'))!;
    expect(c).toBeDefined();
    const store = path.join(tmp, 'empty-store');
    mkdirSync(path.join(store, 'objects'), { recursive: true });
    const out = path.join(tmp, 'img.zip');
    const r = await runCli(['export', c.artifact, '-o', out, '--attachments', store, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: attachment "sha256:[0-9a-f]{64}" referenced by session ".*" is missing from the attachment store/);
    const m = JSON.parse(r.stdout);
    expect(m.warnings.length).toBeGreaterThanOrEqual(1);
    expect(m.entries.map((e: { name: string }) => e.name)).toEqual(['session.jsonl']);
    const quiet = await runCli(['export', c.artifact, '-o', path.join(tmp, 'img2.zip'), '--attachments', store, '--no-media']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });

  it('refuses an existing output (exit 2, file untouched) unless --force; unwritable output → exit 2, nothing left', async () => {
    const c = cases.find((x) => !x.expected.readRaw.error)!;
    const out = path.join(tmp, 'exists.zip');
    writeFileSync(out, 'keep me');
    const r = await runCli(['export', c.artifact, '-o', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('refusing to overwrite');
    expect(readFileSync(out, 'utf8')).toBe('keep me');
    const f = await runCli(['export', c.artifact, '-o', out, '--force']);
    expect(f.code, f.stderr).toBe(0);
    expect(sha(zipEntries(out).get('session.jsonl')!)).toBe(c.expected.readRaw.contentSha256);
    // Never over an input artifact, even with --force.
    const self = await runCli(['export', c.artifact, '-o', c.artifact, '--force']);
    expect(self.code).toBe(2);
    expect(statSync(c.artifact).size).toBe(c.expected.artifact.bytes);

    const missingDir = await runCli(['export', c.artifact, '-o', path.join(tmp, 'no-such-dir', 'x.zip')]);
    expect(missingDir.code).toBe(2);
    expect(missingDir.stderr).toMatch(/cannot write .*x\.zip: directory .* does not exist/);
    const fileAsDir = path.join(tmp, 'plain-file');
    writeFileSync(fileAsDir, '');
    const notDir = await runCli(['export', c.artifact, '-o', path.join(fileAsDir, 'x.zip')]);
    expect(notDir.code).toBe(2);
    expect(notDir.stderr).toContain('is not a directory');
    if (process.getuid?.() !== 0) {
      const ro = path.join(tmp, 'ro');
      mkdirSync(ro, { mode: 0o555 });
      const r2 = await runCli(['export', c.artifact, '-o', path.join(ro, 'x.zip')]);
      expect(r2.code).toBe(2);
      expect(r2.stderr).toContain('not writable');
    }
    const bad = await runCli(['export', c.artifact, '-o', path.join(tmp, 'lvl.zip'), '--level', '10']);
    expect(bad.code).toBe(2);
    expect(leftovers(tmp)).toEqual([]);
  });

  it('a corrupt source exits 1 with DSH\'s text and leaves no output or temporary file', async () => {
    const c = cases.find((x) => x.expected.readRaw.error)!;
    const dir = path.join(tmp, 'corrupt');
    mkdirSync(dir);
    const out = path.join(dir, 'x.zip');
    const r = await runCli(['export', c.artifact, '-o', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(c.expected.readRaw.error.message);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('ids that need escaping, media, collisions, links (tiny root built with the layout helpers)', () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
  const pngId = `sha256:${sha(png)}`;
  const missingId = `sha256:${'0'.repeat(64)}`;
  let home: string;
  let root: string;

  const write = (id: string, header: Record<string, unknown>, lines: unknown[]) => {
    const dir = path.join(root, '_no-cwd', encodeSegment(id));
    mkdirSync(dir, { recursive: true });
    const text = toHeaderLine({ version: 0, id, createdAt: 1, delegationDepth: 0, ...header } as never) + '\n' + lines.map((l) => JSON.stringify(l) + '\n').join('');
    writeFileSync(path.join(dir, 'session.jsonl'), text);
    return path.join(dir, 'session.jsonl');
  };
  const image = (id: string) => ({ type: 'image', attachment: { attachmentId: id, mediaType: 'image/png', bytes: png.length, width: 1, height: 1 } });

  beforeAll(() => {
    home = mkdtempSync(path.join(os.tmpdir(), 'dsh-export-home-'));
    root = path.join(home, 'sessions');
    write('weird/id:1', { createdAt: 10 }, [
      { type: 'turn/start', seq: 0, time: 11, data: { turn: 0 } },
      { type: 'user/message', seq: 1, time: 12, data: { id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }, image(pngId)], source: { kind: 'user' } } },
    ]);
    write('child/x:2', { createdAt: 20, parentSession: 'weird/id:1', origin: 'subagent', delegationDepth: 1 }, [
      { type: 'tool/result', seq: 0, time: 21, data: { turn: 0, step: 0, message: { id: 'r', role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', isError: false, content: [image(missingId), image(pngId)] }], source: { kind: 'tool', callId: 'c' } } } },
    ]);
    write('child.x:2', { createdAt: 30, parentSession: 'weird/id:1' }, []);
    write('grand', { createdAt: 5, parentSession: 'child/x:2' }, []);
    write('unrelated', { createdAt: 1 }, []);
    // A session reached through a symbolic link pointing out of the root must never be included.
    const outside = path.join(home, 'outside', 'linked');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'session.jsonl'), toHeaderLine({ version: 0, id: 'linked', createdAt: 2, parentSession: 'weird/id:1', delegationDepth: 0 }) + '\n');
    symlinkSync(outside, path.join(root, '_no-cwd', 'linked'));
    const obj = path.join(home, 'attachments', 'v1', 'objects', pngId.slice(7, 9));
    mkdirSync(obj, { recursive: true });
    writeFileSync(path.join(obj, pngId.slice(7)), png);
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('exports weird/id:1 with flat, sanitized, collision-free descendants and media', async () => {
    const out = path.join(home, 'w.zip');
    const dir = path.join(root, '_no-cwd', encodeSegment('weird/id:1'));
    const ok = await runCli(['export', dir, '-o', out, '--json', '--deterministic']);
    expect(ok.code, ok.stderr).toBe(0);
    const m = JSON.parse(ok.stdout);
    expect(m.root.id).toBe('weird/id:1');
    expect(m.descendants.map((d: { id: string }) => d.id)).toEqual(['child/x:2', 'grand', 'child.x:2']);
    expect(m.entries.map((e: { name: string }) => e.name)).toEqual([
      'session.jsonl',
      'subagents/child_x_2/session.jsonl',
      'subagents/grand/session.jsonl',
      'subagents/child_x_2.2/session.jsonl',
      `media/${pngId}.png`,
    ]);
    expect(ok.stderr).toContain('sanitize to the same folder');
    expect(ok.stderr).toContain(`attachment "${missingId}" referenced by session "child/x:2" is missing`);
    expect(ok.stderr).not.toContain('linked');
    unzipOk(out);
    const entries = zipEntries(out);
    expect(entries.get(`media/${pngId}.png`)!.equals(png)).toBe(true);
    expect(entries.get('session.jsonl')!.equals(readFileSync(path.join(dir, 'session.jsonl')))).toBe(true);
    // The ZIP target picks descendants by real id (collisions resolved by header) or folder name.
    const pick = async (spec: string) => (await inspectTarget(resolveTarget(`${out}:${spec}`), { collect: true })).meta?.id;
    expect(await pick('subagents/child/x:2')).toBe('child/x:2');
    expect(await pick('subagents/child.x:2')).toBe('child.x:2');
    expect(await pick('subagents/grand')).toBe('grand');
    expect(await pick('subagents/child_x_2.2')).toBe('child.x:2');
    expect(() => resolveTarget(`${out}:subagents/nope`)).toThrow(/no entry for/);
  });

  it('an id that needs escaping resolves by id under --root', async () => {
    const out = path.join(home, 'byid.zip');
    const r = await runCli(['export', 'child.x:2', '--root', root, '--compression', 'none', '-o', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).root.id).toBe('child.x:2');
    expect([...zipEntries(out).keys()]).toEqual(['session.jsonl']);
  });

  it('a descendant whose artifact view cannot be read fails the export (exit 1) and leaves nothing', async () => {
    const broken = path.join(home, 'broken-root');
    const mk = (id: string) => {
      const d = path.join(broken, '_no-cwd', encodeSegment(id));
      mkdirSync(d, { recursive: true });
      return d;
    };
    writeFileSync(path.join(mk('p'), 'session.jsonl.zstd'), Buffer.concat([
      await compressFrame(Buffer.from(toHeaderLine({ version: 0, id: 'p', createdAt: 1, delegationDepth: 0 }) + '\n')),
    ]));
    const body = Buffer.from(JSON.stringify({ type: 'turn/start', seq: 0, time: 2, data: { turn: 0 } }) + '\n');
    let frame = await compressFrame(body);
    if ((frame[4]! & 0x04) === 0) frame = addContentChecksum(frame, body);
    frame[frame.length - 1] ^= 0xff;
    writeFileSync(path.join(mk('c'), 'session.jsonl.zstd'), Buffer.concat([
      await compressFrame(Buffer.from(toHeaderLine({ version: 0, id: 'c', createdAt: 2, parentSession: 'p', delegationDepth: 0 }) + '\n')),
      frame,
    ]));
    const dir = path.join(home, 'broken-out');
    mkdirSync(dir);
    const r = await runCli(['export', 'p', '--root', broken, '-o', path.join(dir, 'x.zip')]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/descendant session "c" .* cannot be exported: corrupt Zstandard session log: frame at byte \d+ failed validation/);
    expect(readdirSync(dir)).toEqual([]);
    const ok = await runCli(['export', 'p', '--root', broken, '-o', path.join(dir, 'y.zip'), '--no-descendants']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('library: --no-media and --no-descendants; a descendant index never follows links', async () => {
    const index = await indexRoot(root);
    expect([...index.byId.keys()].sort()).toEqual(['child.x:2', 'child/x:2', 'grand', 'unrelated', 'weird/id:1']);
    const dir = path.join(root, '_no-cwd', encodeSegment('weird/id:1'));
    const m = await exportSession(resolveTarget(dir), { output: path.join(home, 'l.zip'), media: false, descendants: false });
    expect(m.entries.map((e) => e.name)).toEqual(['session.jsonl']);
    expect(m.warnings).toEqual([]);
  });
});

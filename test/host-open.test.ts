/**
 * Issue #23: a session given by id under a root gets the verdict of DSH's
 * JSONL backend (Host `inspect(id)`), for a backend configured with either
 * compression. Every layout is built from a corpus session by one edit; the
 * expected message follows DSH's lookup rules (format.md §1.2-1.4), and a
 * target given by path keeps dsh's forensic answer with the finding as a warning.
 */
import { describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const PROJECT = '--home-dsh-synthetic-project--';
type Enc = 'zstd' | 'none';
const FILE: Record<Enc, string> = { zstd: 'session.jsonl.zstd', none: 'session.jsonl' };
const SUFFIX: Record<Enc, string> = { zstd: '.jsonl.zstd', none: '.jsonl' };
const other = (e: Enc): Enc => (e === 'zstd' ? 'none' : 'zstd');
const sourceRoot = (e: Enc) => path.join(CORPUS, 'synthetic', e === 'zstd' ? 'root-zstd' : 'root-raw');
const mismatch = (p: string, configured: Enc) =>
  `session artifact ${JSON.stringify(p)} uses ${SUFFIX[other(configured)]}, but this backend is configured for compression ${JSON.stringify(configured)}; use a separate root or select the matching compression mode`;

interface Layout {
  name: string;
  /** Ask for this id (default: the session's). */
  ask?: string;
  /** --compression (default: the session's own encoding). */
  compression?: Enc;
  /** Exit code and message (undefined: DSH reads it, and dsh's answer equals a by-path read of the source). */
  expect?: { code: number; message: string };
}

function editHeader(file: string, edit: (h: any) => void): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  const h = JSON.parse(lines[0]!);
  edit(h);
  lines[0] = JSON.stringify(h);
  writeFileSync(file, lines.join('\n'));
}

/** Build one layout under `root` for session `id` of encoding `enc`; returns what to expect. */
function build(kind: string, root: string, id: string, enc: Enc, scratch: string): Layout {
  const src = path.join(sourceRoot(enc), PROJECT, id);
  const dir = path.join(root, PROJECT, id);
  const file = path.join(dir, FILE[enc]);
  const put = (to: string) => cpSync(src, to, { recursive: true });
  const identify = (at: string, expected: string) => ({ code: 1, message: `corrupt session log "${at}": header id "${id}" and cwd identify "${expected}"` });
  switch (kind) {
    case 'as-stored':
      put(dir);
      return { name: kind };
    case 'renamed-dir': {
      const to = path.join(root, PROJECT, 'renamed');
      put(to);
      return { name: kind, ask: 'renamed', expect: { code: 1, message: `corrupt session log "${path.join(to, FILE[enc])}": requested id "renamed" does not match header id "${id}"` } };
    }
    case 'wrong-project': {
      const at = path.join(root, '--elsewhere--', id);
      put(at);
      return { name: kind, expect: identify(path.join(at, FILE[enc]), file) };
    }
    case 'cwd-changed':
      put(dir);
      editHeader(file, (h) => (h.cwd = '/tmp/moved'));
      return { name: kind, expect: identify(file, path.join(root, '--tmp-moved--', id, FILE[enc])) };
    case 'cwd-removed':
      put(dir);
      editHeader(file, (h) => delete h.cwd);
      return { name: kind, expect: identify(file, path.join(root, '_no-cwd', id, FILE[enc])) };
    case 'cwd-emptied':
      put(dir);
      editHeader(file, (h) => (h.cwd = ''));
      return { name: kind, expect: { code: 1, message: `corrupt session log "${file}": header id cannot name a storage path` } };
    case 'header-id-changed':
      put(dir);
      editHeader(file, (h) => (h.id = 'someone-else'));
      return { name: kind, expect: { code: 1, message: `corrupt session log "${file}": requested id "${id}" does not match header id "someone-else"` } };
    case 'flat-beside': {
      put(dir);
      const flat = path.join(root, PROJECT, `stray${SUFFIX[enc]}`);
      cpSync(path.join(src, FILE[enc]), flat);
      return { name: kind, expect: { code: 1, message: `session artifact ${JSON.stringify(flat)} uses the unsupported flat-file layout; use a separate root or move it into a project/session directory before loading` } };
    }
    case 'configured-other':
      put(dir);
      return { name: kind, compression: other(enc), expect: { code: 1, message: mismatch(file, other(enc)) } };
    case 'other-session-other-encoding': {
      put(dir);
      const sibling = path.join(root, PROJECT, 'zz-sibling');
      cpSync(path.join(sourceRoot(other(enc)), PROJECT, id), sibling, { recursive: true });
      return { name: kind, expect: { code: 1, message: mismatch(path.join(sibling, FILE[other(enc)]), enc) } };
    }
    case 'both-encodings': {
      put(dir);
      cpSync(path.join(sourceRoot(other(enc)), PROJECT, id, FILE[other(enc)]), path.join(dir, FILE[other(enc)]));
      return { name: kind, expect: { code: 1, message: mismatch(path.join(dir, FILE[other(enc)]), enc) } };
    }
    case 'two-projects':
      put(dir);
      put(path.join(root, '--copy--', id));
      return { name: kind, expect: { code: 1, message: `duplicate JSONL session id "${id}" appears in multiple project directories` } };
    case 'symlinked-file': {
      mkdirSync(dir, { recursive: true });
      const outside = path.join(scratch, `${kind}-${enc}-${id}${SUFFIX[enc]}`);
      cpSync(path.join(src, FILE[enc]), outside);
      symlinkSync(outside, file);
      return { name: kind };
    }
    case 'symlinked-project': {
      const real = path.join(scratch, `proj-${enc}-${id}`);
      put(path.join(real, id));
      symlinkSync(real, path.join(root, PROJECT));
      return { name: kind, expect: { code: 2, message: `session "${id}" not found` } };
    }
    case 'directory-in-place':
      mkdirSync(file, { recursive: true });
      return { name: kind, expect: { code: 2, message: 'EISDIR: illegal operation on a directory, read' } };
    case 'missing-id':
      put(dir);
      return { name: kind, ask: 'nope', expect: { code: 2, message: 'session "nope" not found' } };
    default:
      throw new Error(kind);
  }
}

const KINDS_BOTH = ['as-stored', 'renamed-dir', 'wrong-project', 'flat-beside', 'configured-other', 'other-session-other-encoding', 'both-encodings', 'two-projects', 'symlinked-file', 'symlinked-project', 'directory-in-place', 'missing-id'];
const KINDS_RAW = ['cwd-changed', 'cwd-removed', 'cwd-emptied', 'header-id-changed'];

describe.skipIf(!HAVE_CORPUS)("issue #23: a session given by id gets DSH's backend verdict", () => {
  it('over 300+ root layouts built from corpus sessions, for both compressions, in both output modes', async () => {
    const ids = readdirSync(path.join(sourceRoot('none'), PROJECT)).sort();
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'dsh-host-open-'));
    let layouts = 0;
    const byPathReads = new Map<string, unknown>();
    try {
      for (const enc of ['zstd', 'none'] as const) {
        for (const id of ids) {
          for (const kind of [...KINDS_BOTH, ...(enc === 'none' ? KINDS_RAW : [])]) {
            const root = path.join(scratch, `r${layouts++}`);
            mkdirSync(root);
            const layout = build(kind, root, id, enc, scratch);
            const args = ['inspect', layout.ask ?? id, '--root', root, '--compression', layout.compression ?? enc];
            const label = `${enc} ${id} ${kind}`;
            const j = await runInProcess([...args, '--json']);
            const t = await runInProcess(args);
            if (layout.expect) {
              expect(j.code, label).toBe(layout.expect.code);
              expect(j.stderr, label).toBe('');
              expect(JSON.parse(j.stdout).error?.message, label).toBe(layout.expect.message);
              expect(t.code, label).toBe(layout.expect.code);
              expect(t.stdout + t.stderr, label).toContain(layout.expect.message);
            } else {
              const key = `${enc}/${id}`;
              if (!byPathReads.has(key)) {
                const direct = await runInProcess(['inspect', path.join(sourceRoot(enc), PROJECT, id, FILE[enc]), '--json']);
                byPathReads.set(key, { code: direct.code, doc: JSON.parse(direct.stdout) });
              }
              expect({ code: j.code, doc: JSON.parse(j.stdout) }, label).toEqual(byPathReads.get(key));
            }
            rmSync(root, { recursive: true, force: true });
          }
        }
      }
      expect(layouts).toBeGreaterThanOrEqual(320);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 300_000);

  it('a target given by path keeps its forensic answer, with the identity finding as a warning', async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'dsh-host-path-'));
    try {
      const id = 'syn.llm-retry';
      const root = path.join(scratch, 'root');
      const layout = build('wrong-project', root, id, 'zstd', scratch);
      const file = path.join(root, '--elsewhere--', id, FILE.zstd);
      const r = await runInProcess(['inspect', file, '--json']);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).meta.id).toBe(id);
      const t = await runInProcess(['inspect', file]);
      expect(t.code).toBe(0);
      expect(t.stdout + t.stderr).toContain(layout.expect!.message);
      // events, the same verdict by id (exit 1, {error} on stdout).
      const e = await runInProcess(['events', id, '--root', root, '--json']);
      expect(e.code).toBe(1);
      expect(JSON.parse(e.stdout.trim().split('\n').pop()!).error.message).toBe(layout.expect!.message);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAVE_CORPUS)("issue #23: opened with the other compression, DSH's verdict comes with dsh's hint", () => {
  it('a raw root without --compression none (and a zstd root with --compression none): the verdict, then a note naming the flag', async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'dsh-host-note-'));
    try {
      const id = 'syn.llm-retry';
      for (const enc of ['none', 'zstd'] as const) {
        const root = path.join(scratch, enc);
        cpSync(sourceRoot(enc), root, { recursive: true });
        const configured = other(enc);
        // DSH's default configuration is zstd: a raw root needs no flag to be refused.
        const args = ['inspect', id, '--root', root, ...(configured === 'zstd' ? [] : ['--compression', configured])];
        const firstDir = path.join(root, readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory())[0]!.name);
        const refusedAt = path.join(firstDir, readdirSync(firstDir, { withFileTypes: true }).filter((d) => d.isDirectory())[0]!.name, FILE[enc]);
        const flag = `--compression ${enc}`;
        const j = await runInProcess([...args, '--json']);
        expect(j.code, enc).toBe(1);
        expect(j.stderr, enc).toBe('');
        const error = JSON.parse(j.stdout).error;
        expect(error.message, enc).toBe(mismatch(refusedAt, configured));
        expect(error.note, enc).toBe(`a backend configured for compression "${enc}" finds this session at ${JSON.stringify(path.join(root, PROJECT, id, FILE[enc]))}: ${flag} opens it that way`);
        const t = await runInProcess(args);
        expect(t.code, enc).toBe(1);
        expect(t.stderr.split('\n').filter(Boolean), enc).toEqual([`dsh: ${mismatch(refusedAt, configured)}`, `dsh: note: ${error.note}`]);
        // The flag the note names opens it.
        expect((await runInProcess(['inspect', id, '--root', root, '--compression', enc, '--json'])).code, enc).toBe(0);
      }
      // Both encodings in one root: no configuration finds the session, so no hint.
      const both = path.join(scratch, 'both');
      cpSync(sourceRoot('none'), both, { recursive: true });
      cpSync(path.join(sourceRoot('zstd'), PROJECT, id, FILE.zstd), path.join(both, PROJECT, id, FILE.zstd));
      const j = await runInProcess(['inspect', id, '--root', both, '--json']);
      expect(j.code).toBe(1);
      expect(JSON.parse(j.stdout).error.note).toBeUndefined();
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('the library answer carries the same note', async () => {
    const { openSession } = await import('../src/index.js');
    const r = await openSession({ id: 'syn.llm-retry', root: sourceRoot('none') });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.message).toContain('but this backend is configured for compression "zstd"');
      expect(r.error.note).toContain('--compression none opens it that way');
    }
  });
});

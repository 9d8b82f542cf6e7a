/**
 * What a differential campaign against DSH's own code left over (issue #51), each reproduced from
 * the corpus by one edit: DSH's class and message for a header id DSH cannot locate and for a
 * session its backend does not find, and the writers and `diff` on values nested 5,000 and
 * 200,000 levels deep (which DSH, and `dsh inspect`, accept).
 */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { deepValue } from './helpers/hostile-gen.js';
import { openSession } from '../src/index.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const PROJECT = '--home-dsh-synthetic-project--';
const RAW_ROOT = path.join(CORPUS, 'synthetic', 'root-raw');
const ZSTD_ROOT = path.join(CORPUS, 'synthetic', 'root-zstd');
const SOURCE = path.join(RAW_ROOT, PROJECT, 'syn.llm-retry', 'session.jsonl');
const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'dsh-answers-'));
const lastJson = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!);

/** The corpus session under `root/<PROJECT>/<dir>/session.jsonl` with its header edited. */
function withHeader(root: string, dir: string, edit: (h: any) => void): string {
  const file = path.join(root, PROJECT, dir, 'session.jsonl');
  mkdirSync(path.dirname(file), { recursive: true });
  const ls = readFileSync(SOURCE, 'utf8').split('\n');
  const h = JSON.parse(ls[0]!);
  edit(h);
  ls[0] = JSON.stringify(h);
  writeFileSync(file, ls.join('\n'));
  return file;
}

describe.skipIf(!HAVE_CORPUS)("DSH's class and message where DSH answers first", () => {
  it('a header whose id is empty, opened by path: DSH refuses it while locating the session (Error: cannot encode an empty path segment)', async () => {
    const root = tmp();
    try {
      const file = withHeader(root, 'syn.llm-retry', (h) => (h.id = ''));
      const r = await runInProcess(['inspect', file, '--json']);
      expect(r.code).toBe(1);
      expect(lastJson(r.stdout)).toEqual({ error: { class: 'Error', message: 'cannot encode an empty path segment', rule: 'DSH-A3' } });
      const t = await runInProcess(['events', file]);
      expect(t.code).toBe(1);
      expect(t.stderr).toContain('cannot encode an empty path segment');
      expect(t.stderr).not.toContain('storage path');
      const s = await openSession({ path: file });
      expect(s.ok && (await s.value.verdict()).error).toMatchObject({ class: 'Error', message: 'cannot encode an empty path segment' });
      // Locating comes before any read: an empty cwd beside it, or a seq gap in the events, does not decide.
      const both = withHeader(root, 'both', (h) => ((h.id = ''), (h.cwd = '')));
      expect(lastJson((await runInProcess(['inspect', both, '--json'])).stdout).error.message).toBe('cannot encode an empty path segment');
      // By id under a root, DSH's identity check answers first, and dsh already agreed.
      const byId = withHeader(root, 'r', (h) => (h.id = ''));
      const i = await runInProcess(['inspect', 'r', '--root', root, '--compression', 'none', '--json']);
      expect(i.code).toBe(1);
      expect(lastJson(i.stdout).error).toMatchObject({ class: 'Error', message: `corrupt session log "${byId}": requested id "r" does not match header id ""` });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a session id not in the root: class Error and session "<id>" not found, exit 2, kind io (CLI and library)', async () => {
    const r = await runInProcess(['inspect', 'no-such-session', '--root', RAW_ROOT, '--compression', 'none', '--json']);
    expect(r.code).toBe(2);
    expect(lastJson(r.stdout)).toEqual({ error: { class: 'Error', message: 'session "no-such-session" not found', kind: 'io' } });
    const t = await runInProcess(['inspect', 'no-such-session', '--root', RAW_ROOT, '--compression', 'none']);
    expect(t.code).toBe(2);
    expect(t.stderr).toBe('dsh: session "no-such-session" not found\n');
    const s = await openSession({ id: 'no-such-session', root: ZSTD_ROOT });
    expect(s.ok ? null : s.error).toEqual({ class: 'Error', message: 'session "no-such-session" not found', kind: 'io' });
  });

  it('an id holding "/" that is not in the root: with --root (or as a library id) it is a missing session, in DSH\'s words', async () => {
    for (const id of ['a/b.missing', 'x/session.jsonl']) {
      const r = await runInProcess(['inspect', id, '--root', RAW_ROOT, '--compression', 'none', '--json']);
      expect(r.code, id).toBe(2);
      expect(lastJson(r.stdout), id).toEqual({ error: { class: 'Error', message: `session "${id}" not found`, kind: 'io' } });
      const t = await runInProcess(['stats', id, '--root', RAW_ROOT, '--compression', 'none']);
      expect(t.code, id).toBe(2);
      expect(t.stderr, id).toBe(`dsh: session "${id}" not found\n`);
      const home = process.env['DSH_HOME'];
      process.env['DSH_HOME'] = path.dirname(ZSTD_ROOT);
      try {
        for (const target of [{ id, root: ZSTD_ROOT }, { id }]) {
          const s = await openSession(target);
          expect(s.ok ? null : s.error, id).toEqual({ class: 'Error', message: `session "${id}" not found`, kind: 'io' });
        }
      } finally {
        if (home === undefined) delete process.env['DSH_HOME'];
        else process.env['DSH_HOME'] = home;
      }
    }
    // Without --root a path-like target is first a path: dsh says so.
    const p = await runInProcess(['inspect', 'a/b.missing', '--json'], { DSH_HOME: RAW_ROOT });
    expect(p.code).toBe(2);
    expect(lastJson(p.stdout).error.message).toMatch(/^cannot open a\/b\.missing: no such file or directory/);
  });
});

const SECRET = 'ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s12';
type Place = 'tools' | 'context' | 'ignorable';

/**
 * The corpus session with a value nested `depth` levels deep (a secret at its bottom) in a
 * request/header's tool schema, a request/context's data, or an appended ignorable event.
 */
function deepSession(root: string, depth: number, kind: 'object' | 'array', place: Place): string {
  const file = path.join(root, PROJECT, 'syn.llm-retry', 'session.jsonl');
  mkdirSync(path.dirname(file), { recursive: true });
  const deep = deepValue(depth, kind).replace('1', JSON.stringify(SECRET));
  const ls = readFileSync(SOURCE, 'utf8').trimEnd().split('\n');
  if (place === 'tools') {
    const at = ls.findIndex((l) => l.includes('"request/header"'));
    const e = JSON.parse(ls[at]!);
    e.data.header.tools = '__deep__';
    ls[at] = JSON.stringify(e).replace('"__deep__"', `[{"name":"deep","parameters":${deep}}]`);
  } else if (place === 'context') {
    const at = ls.findIndex((l) => l.includes('"request/context"'));
    const e = JSON.parse(ls[at]!);
    e.data = '__deep__';
    ls[at] = JSON.stringify(e).replace('"__deep__"', `{"payload":${deep}}`);
  } else {
    const last = Math.max(...ls.slice(1).map((l) => JSON.parse(l).seq as number));
    ls.push(`{"type":"x-future/thing","seq":${last + 1},"time":1,"ignorable":true,"data":${deep}}`);
  }
  writeFileSync(file, ls.join('\n') + '\n');
  return file;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

describe.skipIf(!HAVE_CORPUS)('redact, export --redact, dataset --content --redact and diff on values nested 5,000 and 200,000 levels deep', () => {
  const noCrash = (r: { code: number; stderr: string }, what: string) => {
    expect(r.stderr, what).not.toMatch(/internal error|\n\s+at /);
    expect(r.code, `${what}: ${r.stderr.slice(0, 300)}`).toBe(0);
  };

  // 5,000 levels: both kinds in every place, diff in both directions and against itself, text and --json.
  // 200,000 levels (each run serializes megabytes of nesting): one kind per place, diff twice.
  const plans = [
    { depth: 5000, inputs: (['object', 'array'] as const).flatMap((kind) => (['tools', 'context', 'ignorable'] as const).map((place) => ({ kind, place }))), full: true },
    { depth: 200_000, inputs: [{ kind: 'object', place: 'tools' }, { kind: 'array', place: 'context' }, { kind: 'object', place: 'ignorable' }] as const, full: false },
  ];
  for (const { depth, inputs, full } of plans) {
    it(`depth ${depth}: DSH (and dsh inspect) accept the log; every writer answers, redacting the secret at the bottom, and diff compares`, async () => {
      const dir = tmp();
      try {
        for (const { kind, place } of inputs) {
          const what = `${place} ${kind} ${depth}`;
          const root = path.join(dir, `in-${place}-${kind}`);
          const file = deepSession(root, depth, kind, place);
          const i = await runInProcess(['inspect', file, '--json']);
          expect(i.code, what).toBe(0);

          const out = path.join(dir, `redacted-${place}-${kind}`);
          noCrash(await runInProcess(['redact', file, '-o', out, '--json']), `redact ${what}`);
          const [written] = filesUnder(out).filter((f) => f.endsWith('session.jsonl'));
          const text = readFileSync(written!, 'utf8');
          expect(text, what).not.toContain(SECRET);
          expect(text, what).toContain('[REDACTED:');
          // The nesting survives whole around the token.
          const open = kind === 'object' ? '{"a":' : '[';
          expect(text.split(open).length - 1, what).toBeGreaterThanOrEqual(depth);

          const zip = path.join(dir, `export-${place}-${kind}.zip`);
          noCrash(await runInProcess(['export', file, '--redact', '-o', zip, '--json']), `export --redact ${what}`);
          expect(existsSync(zip), what).toBe(true);

          noCrash(await runInProcess(['dataset', root, '--content', '--redact', '-o', path.join(dir, `ds-${place}-${kind}`), '--json', '--no-cache']), `dataset ${what}`);

          const diffs = full
            ? [[file, SOURCE], [SOURCE, file], [file, file]].flatMap((args) => [args, [...args, '--json']])
            : [[file, SOURCE], [file, file, '--json']];
          for (const args of diffs) noCrash(await runInProcess(['diff', ...args, '--no-cache']), `diff ${what} ${args.map((a) => (a === file ? 'deep' : a === SOURCE ? 'corpus' : a)).join(' ')}`);
          rmSync(root, { recursive: true, force: true });
          rmSync(out, { recursive: true, force: true });
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 300_000);
  }
});

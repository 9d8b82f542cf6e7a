// One error document for a log DSH refuses: every read command's `--json` prints the same
// `{error: {class, message, rule?, cause?, note?}}` as `inspect --json`, and the text form names the cause.
// `rule` is the library's rule code for the failure (the one `dsh check` reports).
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { corpusCases, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { runCli } from './helpers/cli.js';
import { Writable } from 'node:stream';
import { errorDocument, openSession, RULE_CODES } from '../src/index.js';
import { LogError, UsageError } from '../src/core/errors.js';
import { handleError } from '../src/cli/fail.js';

const SOURCE = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-errdoc-'));
const outDir = mkdtempSync(path.join(os.tmpdir(), 'dsh-errdoc-out-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(outDir, { recursive: true, force: true });
});

/** The incident sample with one byte of its fourth frame's content checksum changed. */
async function corruptCopy(): Promise<string> {
  const frames = JSON.parse((await runCli(['frames', SOURCE, '--json'])).stdout).frames as { end: number; checksum: boolean }[];
  const frame = frames[3]!;
  expect(frame.checksum).toBe(true);
  const bytes = Buffer.from(readFileSync(SOURCE));
  bytes[frame.end - 1] ^= 0xff;
  const file = path.join(dir, 'session.jsonl.zstd');
  writeFileSync(file, bytes);
  return file;
}

const COMMANDS: string[][] = [
  ['surface'],
  ['events'],
  ['stats'],
  ['transcript', '--format', 'json'],
  ['compactions'],
  ['context'],
  ['history'],
  ['secrets'],
  ['replay'],
  ['trace', '{file}', '1'],
  ['request', '{file}', '1'],
  ['request', '{file}', '--list'],
  // A LogError thrown to the command handler (export) keeps its rule and cause too.
  ['export', '{file}', '-o', '{out}'],
  ['fork'],
];

/** The rule the library reports for a target: `openSession()`'s verdict and `check`'s error finding. */
async function libraryRule(file: string): Promise<{ rule: string | undefined; finding: string | undefined }> {
  const opened = await openSession(file);
  if (!opened.ok) throw new Error(opened.error.message);
  const report = await opened.value.check();
  if (!report.ok) throw new Error(report.error.message);
  return { rule: (await opened.value.verdict()).error?.rule, finding: report.value.findings.find((f) => f.severity === 'error')?.code };
}

describe('the rule code in the error document', () => {
  it('a corrupt checksum: every command names the rule openSession() and check report', async () => {
    const file = await corruptCopy();
    const { rule, finding } = await libraryRule(file);
    expect(rule).toBeDefined();
    expect(RULE_CODES).toContain(rule);
    expect(finding).toBe(rule);
    const doc = JSON.parse((await runCli(['inspect', file, '--json'], { env: { DSH_NO_CACHE: '1' } })).stdout);
    expect(doc.error.rule).toBe(rule);
    // One key order: class, message, rule, then cause (and note).
    expect(Object.keys(doc.error)).toEqual(['class', 'message', 'rule', 'cause']);
    expect(JSON.stringify(doc)).toBe(JSON.stringify(errorDocument(doc.error)));
  }, 60_000);

  it.skipIf(!HAVE_CORPUS)(`every corpus artifact DSH refuses or cannot read: inspect --json carries the library's rule (${HAVE_CORPUS ? 'corpus present' : SKIP_REASON})`, async () => {
    const failing = corpusCases().filter((c) => c.expected.inspection?.error);
    expect(failing.length).toBeGreaterThan(0);
    const seen = new Set<string>();
    for (const c of failing) {
      const { rule, finding } = await libraryRule(c.artifact);
      const r = await runCli(['inspect', c.artifact, '--json'], { env: { DSH_NO_CACHE: '1' } });
      expect(r.code).toBe(1);
      const doc = JSON.parse(r.stdout);
      expect({ name: c.name, rule: doc.error.rule }).toEqual({ name: c.name, rule });
      expect({ name: c.name, finding }).toEqual({ name: c.name, finding: rule });
      expect(RULE_CODES).toContain(doc.error.rule);
      expect(JSON.stringify(doc)).toBe(JSON.stringify(errorDocument(doc.error)));
      seen.add(doc.error.class);
    }
    // Both a corruption and a refusal are among them.
    expect([...seen].sort()).toEqual(expect.arrayContaining(['Error', 'SessionFormatUnsupportedError']));
  }, 180_000);
});

describe('per-session error rows of a root-wide document', () => {
  it('ls, stats and compactions give a failed session the same error object as inspect --json (rule and cause included)', async () => {
    const file = await corruptCopy();
    const root = path.join(dir, 'root');
    const bad = path.join(root, '--home-dev-acme-api--', 'session-bad');
    mkdirSync(bad, { recursive: true });
    copyFileSync(file, path.join(bad, 'session.jsonl.zstd'));
    const good = path.join(root, '--home-dev-acme-api--', 'session-incident-1');
    mkdirSync(good, { recursive: true });
    copyFileSync(SOURCE, path.join(good, 'session.jsonl.zstd'));
    const env = { DSH_NO_CACHE: '1' };
    const expected = JSON.parse((await runCli(['inspect', path.join(bad, 'session.jsonl.zstd'), '--json'], { env })).stdout).error;
    expect(expected.rule).toBeDefined();
    expect(expected.cause).toBeDefined();
    const rowsOf = (doc: unknown): { path?: string; error?: unknown }[] => {
      const found: { path?: string; error?: unknown }[] = [];
      const walk = (v: unknown): void => {
        if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object') {
          const o = v as Record<string, unknown>;
          if (o['error'] && typeof o['error'] === 'object') found.push(o as { error: unknown });
          else Object.values(o).forEach(walk);
        }
      };
      walk(doc);
      return found;
    };
    for (const command of [['ls'], ['stats'], ['compactions']]) {
      const r = await runCli([...command, root, '--json'], { env });
      const text = r.stdout.trim();
      const docs = text.startsWith('[') || !text.includes('\n') ? [JSON.parse(text)] : text.split('\n').map((l) => JSON.parse(l));
      const rows = docs.flatMap(rowsOf);
      expect({ command, rows: rows.length }).toEqual({ command, rows: 1 });
      expect({ command, error: rows[0]!.error }).toEqual({ command, error: expected });
    }
  }, 120_000);
});

describe('handleError: every failure is one errorDocument', () => {
  const capture = () => {
    let out = '';
    const stream = new Writable({ write: (c, _e, cb) => ((out += String(c)), cb()) });
    return { io: { stdout: stream, stderr: new Writable({ write: (_c, _e, cb) => cb() }), env: {} }, text: () => out };
  };
  const cases: [string, unknown, number, object][] = [
    ['a thrown LogError keeps rule and cause', new LogError('frame failed', { rule: 'DSH-A6', cause: { name: 'Error', class: 'Error', message: 'checksum' } }), 1, { class: 'Error', message: 'frame failed', rule: 'DSH-A6', cause: { name: 'Error', class: 'Error', message: 'checksum' } }],
    ['an I/O LogError says its kind', new LogError('gone', { kind: 'io' }), 2, { class: 'Error', message: 'gone', kind: 'io' }],
    ['a usage error says its kind', Object.assign(new UsageError('bad flag'), { note: 'try --x' }), 2, { class: 'UsageError', message: 'bad flag', kind: 'usage', note: 'try --x' }],
    ['a system error says its code', Object.assign(new Error('EACCES: denied'), { code: 'EACCES' }), 2, { class: 'Error', message: 'EACCES: denied', code: 'EACCES' }],
  ];
  for (const [name, error, code, want] of cases) {
    it(name, () => {
      const c = capture();
      expect(handleError(error, c.io, { json: true })).toBe(code);
      // Same keys in the same order as the library's errorDocument.
      expect(c.text()).toBe(JSON.stringify({ error: want }) + '\n');
      expect(c.text()).toBe(JSON.stringify(errorDocument(want as Parameters<typeof errorDocument>[0])) + '\n');
    });
  }
});

describe('the error document of a refused log', () => {
  it('is the same object in every read command as in inspect --json, with its cause', async () => {
    const file = await corruptCopy();
    const inspected = await runCli(['inspect', file, '--json'], { env: { DSH_NO_CACHE: '1' } });
    expect(inspected.code).toBe(1);
    const expected = JSON.parse(inspected.stdout);
    expect(expected.error.cause.message).toMatch(/checksum/i);
    for (const command of COMMANDS) {
      const args = command.includes('{file}') ? command.map((a) => (a === '{file}' ? file : a === '{out}' ? path.join(outDir, 'never.zip') : a)) : [command[0]!, file, ...command.slice(1)];
      const r = await runCli([...args, '--json'], { env: { DSH_NO_CACHE: '1' } });
      expect({ args: command, code: r.code }).toEqual({ args: command, code: 1 });
      expect({ args: command, doc: JSON.parse(r.stdout) }).toEqual({ args: command, doc: expected });
    }
  }, 120_000);

  it('names the cause in text mode', async () => {
    const file = await corruptCopy();
    const cause = JSON.parse((await runCli(['inspect', file, '--json'], { env: { DSH_NO_CACHE: '1' } })).stdout).error.cause.message as string;
    for (const command of [['surface'], ['trace', '{file}', '1'], ['transcript'], ['request', '{file}', '1']]) {
      const args = command.includes('{file}') ? command.map((a) => (a === '{file}' ? file : a)) : [command[0]!, file, ...command.slice(1)];
      const r = await runCli(args, { env: { DSH_NO_CACHE: '1' } });
      expect(r.code).toBe(1);
      expect({ command, stderr: r.stderr }).toEqual({ command, stderr: expect.stringContaining(`failed validation\ndsh:   cause: ${cause}\n`) });
    }
  }, 60_000);
});

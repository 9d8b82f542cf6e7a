/**
 * The one write-safety rule (outputRefusal in src/core/publish.ts) as every writing command
 * applies it, through the spawned CLI: export (zip and otlp), report, salvage, redact (-o and
 * --report) and dataset refuse an output that is an input, lies in an input's session directory,
 * project directory or root, lies inside an input directory, or (directory outputs) sits beside a
 * copied-out artifact or contains an input; `--force` changes none of it. Every refusal happens
 * before anything is written: the bytes, mtimes and listing of the inputs' trees are unchanged.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { PROJECT_ROOT } from './helpers/corpus.js';

const PROJECT = '--home-dev-acme-api--';
let tmp = '';
let root = '';
let projectDir = '';
let sessionDir = '';
let file = '';
let plainDir = '';
let plain = '';

/** Every entry under the given trees with its size, mtime and content hash (directories: their names). */
function snapshot(...dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        out.push(`${p}/ ${st.mtimeMs}`);
        walk(p);
      } else out.push(`${p} ${st.size} ${st.mtimeMs} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`);
    }
  };
  for (const d of dirs) walk(d);
  return out;
}

beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dsh-write-safety-'));
  root = path.join(tmp, 'root');
  cpSync(path.join(PROJECT_ROOT, 'fixtures', 'incident'), root, { recursive: true });
  projectDir = path.join(root, PROJECT);
  sessionDir = path.join(projectDir, 'session-incident-1');
  file = path.join(sessionDir, 'session.jsonl.zstd');
  plainDir = path.join(tmp, 'plain');
  mkdirSync(plainDir);
  plain = path.join(plainDir, 'copy.jsonl.zstd');
  cpSync(file, plain);
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('every writing command refuses outputs at or beside its inputs (spawned CLI)', () => {
  const cases = (): { why: string; args: string[]; made?: string }[] => [
    { why: 'export: output = input, --force', args: ['export', file, '-o', file, '--force'] },
    { why: 'export: inside the session directory', args: ['export', file, '-o', path.join(sessionDir, 'x.zip'), '--force'], made: path.join(sessionDir, 'x.zip') },
    { why: 'export: in the root', args: ['export', file, '-o', path.join(root, 'x.zip')], made: path.join(root, 'x.zip') },
    { why: 'export by id: in a sibling session directory', args: ['export', 'session-incident-1', '--root', root, '-o', path.join(projectDir, 'session-incident-1-fork-1', 'x.zip')] },
    { why: 'export otlp: in a project directory', args: ['export', file, '--format', 'otlp', '-o', path.join(projectDir, 't.json')], made: path.join(projectDir, 't.json') },
    { why: 'report: in the project directory, --force', args: ['report', sessionDir, '-o', path.join(projectDir, 'r.html'), '--force'], made: path.join(projectDir, 'r.html') },
    { why: 'salvage: inside the session directory', args: ['salvage', file, '-o', path.join(sessionDir, 'out')], made: path.join(sessionDir, 'out') },
    { why: 'salvage: a new directory in the root', args: ['salvage', file, '-o', path.join(root, 'new')], made: path.join(root, 'new') },
    { why: 'salvage: beside a copied-out artifact (directory output)', args: ['salvage', plain, '-o', path.join(plainDir, 'out')], made: path.join(plainDir, 'out') },
    { why: 'salvage: a directory holding the input', args: ['salvage', plain, '-o', plainDir] },
    { why: 'redact: inside the session directory', args: ['redact', file, '-o', path.join(sessionDir, 'red')], made: path.join(sessionDir, 'red') },
    { why: 'redact: beside a copied-out artifact', args: ['redact', plain, '-o', path.join(plainDir, 'red')], made: path.join(plainDir, 'red') },
    { why: 'redact --report: in the root', args: ['redact', file, '-o', path.join(tmp, 'red-ok'), '--report', path.join(root, 'r.json')], made: path.join(tmp, 'red-ok') },
    { why: 'dataset: inside an input root', args: ['dataset', root, '-o', path.join(root, 'ds')], made: path.join(root, 'ds') },
    { why: 'dataset: a directory containing the input root', args: ['dataset', root, '-o', tmp] },
    { why: 'dataset: a session directory input, output in its project', args: ['dataset', sessionDir, '-o', path.join(projectDir, 'ds')], made: path.join(projectDir, 'ds') },
    { why: 'dataset by id: inside the root it was found under', args: ['dataset', 'session-incident-1', '--root', root, '-o', path.join(root, 'ds2')], made: path.join(root, 'ds2') },
    { why: 'fork --out: the source root', args: ['fork', file, '--at', '5', '--id', 'w1', '--out', root] },
    { why: 'fork --out: a new directory in the source root', args: ['fork', file, '--at', '5', '--id', 'w2', '--out', path.join(root, 'r2')], made: path.join(root, 'r2') },
    { why: 'fork --out: beside a copied-out artifact (a root dsh creates)', args: ['fork', plain, '--at', '5', '--id', 'w3', '--out', path.join(plainDir, 'r3')], made: path.join(plainDir, 'r3') },
    { why: 'fork --out: a directory holding the input', args: ['fork', plain, '--at', '5', '--id', 'w4', '--out', plainDir] },
  ];

  it('refuses each with exit 2 and "refusing to write", before writing anything', async () => {
    const before = snapshot(root, plainDir);
    for (const c of cases()) {
      const r = await runCli(c.args);
      expect(r.code, `${c.why}: dsh ${c.args.join(' ')}\n${r.stderr}`).toBe(2);
      expect(r.stderr, c.why).toMatch(/^dsh: refusing to write /);
      if (c.made) expect(existsSync(c.made), `${c.why}: ${c.made} was created`).toBe(false);
      expect(snapshot(root, plainDir), `${c.why}: an input tree changed`).toEqual(before);
    }
  }, 240_000);

  it('--json: the refusal is an {error:{class,message}} object on stdout', async () => {
    for (const args of [
      ['salvage', file, '-o', path.join(sessionDir, 'out'), '--json'],
      ['export', file, '-o', file, '--force', '--json'],
      ['dataset', root, '-o', path.join(root, 'ds'), '--json'],
    ]) {
      const r = await runCli(args);
      expect(r.code, r.stderr).toBe(2);
      const { error } = JSON.parse(r.stdout.trim());
      expect(error.class).toBe('UsageError');
      expect(error.message).toMatch(/^refusing to write /);
    }
  }, 120_000);

  it('the same commands write outside the inputs (the refusals are not blanket)', async () => {
    const before = snapshot(root, plainDir);
    const out = path.join(tmp, 'out');
    mkdirSync(out);
    for (const args of [
      ['export', file, '-o', path.join(out, 'x.zip')],
      ['salvage', plain, '-o', path.join(out, 'salvaged')],
      ['fork', plain, '--at', '5', '--id', 'w-ok', '--out', path.join(out, 'forked')],
      ['redact', plain, '-o', path.join(out, 'red'), '--report', path.join(out, 'red', 'report.json')],
    ]) {
      const r = await runCli(args);
      expect(r.code, `dsh ${args.join(' ')}\n${r.stderr}`).toBe(0);
    }
    expect(existsSync(path.join(out, 'x.zip'))).toBe(true);
    expect(existsSync(path.join(out, 'red', 'report.json'))).toBe(true);
    expect(snapshot(root, plainDir)).toEqual(before);
  }, 120_000);
});

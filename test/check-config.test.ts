/**
 * `dsh check`'s rule configuration as a process in a temporary project: `dsh.config.json` and
 * `package.json#dsh` found upward from the working directory, rule levels and thresholds, `failOn` and
 * the exit code, `--rule` winning over the file, `--print-config`, and a bad config as a usage error.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionPath, writeArtifactFile } from '../src/log/writer.js';
import { runCli } from './helpers/cli.js';
import { plantedSession } from './helpers/behaviour-session.js';

let dir: string;
let file: string;

const json = (p: string, doc: unknown) => writeFileSync(p, JSON.stringify(doc, null, 2));

async function check(cwd: string, ...args: string[]): Promise<{ code: number; doc: any; stderr: string }> {
  const r = await runCli(['check', '--format', 'json', ...args, file], { cwd });
  return { code: r.code, doc: r.stdout ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}
const codes = (doc: any): [string, string][] => doc.sessions[0].findings.map((f: any) => [f.code, f.severity]);

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-config-'));
  const p = plantedSession('config-planted');
  file = sessionPath(path.join(dir, 'logs'), p.header, 'zstd');
  await writeArtifactFile(file, { header: p.header, encoding: 'zstd', batches: p.batches });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('dsh.config.json', () => {
  let project: string;
  beforeAll(() => {
    project = path.join(dir, 'a');
    mkdirSync(path.join(project, 'deep', 'er'), { recursive: true });
    json(path.join(project, 'package.json'), { name: 'a', dsh: { rules: { X5: 'error' } } });
    json(path.join(project, 'dsh.config.json'), { behaviour: true, failOn: 'warning', rules: { 'DSH-X1': 'error', X2: 'off', X6: ['warning', { minBytes: 30000 }], X8: 'off', X10: 'off', X11: 'off', X3: 'off', X4: 'off', X7: 'off' } });
  });

  it('is found upward from the working directory (beating package.json beside it): levels, thresholds, failOn', async () => {
    const r = await check(path.join(project, 'deep', 'er'));
    expect(r.stderr).toBe('');
    expect(codes(r.doc)).toEqual([
      ['DSH-X1', 'error'],
      ['DSH-X5', 'warning'],
    ]);
    expect(r.code).toBe(1);
    expect(r.doc.exitCode).toBe(1);
  });

  it('--rule wins over the file; --fail-on over its failOn', async () => {
    const r = await check(project, '--rule', 'X1=off', '--rule', 'DSH-X6:minBytes=1000', '--rule', 'x6:minDispatches=20');
    expect(codes(r.doc)).toEqual([
      ['DSH-X5', 'warning'],
      ['DSH-X6', 'warning'],
    ]);
    expect(r.code).toBe(1);
    expect((await check(project, '--rule', 'X1=off', '--fail-on', 'error')).code).toBe(0);
    expect((await check(project, '--fail-on', 'none')).code).toBe(0);
  });

  it('--print-config prints the config in use', async () => {
    const r = await runCli(['check', '--print-config', '--rule', 'X6:minDispatches=9'], { cwd: path.join(project, 'deep') });
    expect(r.code).toBe(0);
    const c = JSON.parse(r.stdout);
    expect(c.file).toBe(path.join(project, 'dsh.config.json'));
    expect(c.behaviour).toBe(true);
    expect(c.failOn).toBe('warning');
    expect(c.rules['DSH-X1']).toEqual({ level: 'error', options: { min: 3, readOnlyTools: ['read_file', 'grep', 'glob', 'list_dir', 'ls', 'search', 'web_search', 'web_fetch'] } });
    expect(c.rules['DSH-X2'].level).toBe('off');
    expect(c.rules['DSH-X6']).toEqual({ level: 'warning', options: { minBytes: 30000, minDispatches: 9 } });
    expect(c.rules['DSH-X9']).toEqual({ level: 'warning', options: { readOnlyTools: ['read_file', 'grep', 'glob', 'list_dir', 'ls', 'search', 'web_search', 'web_fetch'] } });
    expect(Object.keys(c.rules)).toHaveLength(12);
  });
});

describe('package.json#dsh', () => {
  it('is read when no dsh.config.json is nearer; rule levels turn single behaviour rules on', async () => {
    const project = path.join(dir, 'b');
    mkdirSync(path.join(project, 'src'), { recursive: true });
    json(path.join(project, 'package.json'), { name: 'b', dsh: { failOn: 'warning', rules: { X5: 'warning', 'DSH-X2': ['info', { minBytes: 2000 }], X6: 'info' } } });
    const r = await check(path.join(project, 'src'));
    // X2's copy is 1581 bytes: under minBytes 2000.
    expect(codes(r.doc)).toEqual([
      ['DSH-X5', 'warning'],
      ['DSH-X6', 'info'],
    ]);
    expect(r.code).toBe(1);
    const printed = JSON.parse((await runCli(['check', '--print-config'], { cwd: project })).stdout);
    expect(printed.file).toBe(path.join(project, 'package.json'));
    expect(printed.behaviour).toBe(false);
    expect(printed.rules['DSH-X1'].level).toBe('off');
    expect(printed.rules['DSH-X2']).toEqual({ level: 'info', options: { minBytes: 2000, readOnlyTools: ['read_file', 'grep', 'glob', 'list_dir', 'ls', 'search', 'web_search', 'web_fetch'] } });
  });

  it('without any config nothing changes: behaviour rules off, exit 0', async () => {
    const project = path.join(dir, 'c');
    mkdirSync(project);
    json(path.join(project, 'package.json'), { name: 'c' });
    const r = await check(project);
    expect(r.code).toBe(0);
    expect(codes(r.doc)).toEqual([]);
    const printed = JSON.parse((await runCli(['check', '--print-config'], { cwd: project })).stdout);
    expect(printed).toMatchObject({ file: null, behaviour: false, failOn: 'error' });
  });
});

describe('a bad config is a usage error (exit 2, one line, no stack trace)', () => {
  it.each([
    ['dsh.config.json', '{"rules": {"X1": "loud"}}', /dsh\.config\.json: rules\.X1: level must be one of off, info, warning, error; got "loud"/],
    ['dsh.config.json', '{"behavior": true}', /unknown key "behavior" \(known: behaviour, failOn, rules\)/],
    ['dsh.config.json', '{"rules": {"X6": ["warning", {"minBytes": -1}]}}', /DSH-X6:minBytes must be an integer >= 0; got -1/],
    ['dsh.config.json', '{not json', /dsh\.config\.json: not valid JSON/],
    ['package.json', '{"dsh": {"rules": {"Q1": "error"}}}', /package\.json#dsh: rules\.Q1: unknown rule code "Q1"/],
  ])('%s %s', async (name, text, message) => {
    const project = mkdtempSync(path.join(dir, 'bad-'));
    writeFileSync(path.join(project, name), text);
    const r = await runCli(['check', file], { cwd: project });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
  });

  it('a bad --rule too', async () => {
    for (const [flag, message] of [
      ['X1', /--rule X1: expected CODE=off\|info\|warning\|error or CODE:option=value/],
      ['X10:min=2', /DSH-X10 has no option "min" \(it takes none\)/],
      ['X1:min=1', /DSH-X1:min must be an integer >= 2; got "1"/],
    ] as const) {
      const r = await runCli(['check', '--rule', flag, file], { cwd: dir });
      expect(r.code, flag).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});

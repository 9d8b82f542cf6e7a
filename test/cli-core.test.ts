import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { mkdtempSync, writeFileSync, mkdirSync, copyFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { corpusCases, HAVE_CORPUS, SKIP_REASON, CORPUS } from './helpers/corpus.js';
import { runCli } from './helpers/cli.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

describe('dsh as a process', () => {
  it('prints help and exits 0; unknown commands and options exit 2', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('inspect');
    expect((await runCli(['no-such-command'])).code).toBe(2);
    expect((await runCli(['inspect', '--no-such-flag', 'x'])).code).toBe(2);
  });

  it('prints its version (-V, --version) and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag]);
      expect(r.code, flag).toBe(0);
      expect(r.stdout, flag).toBe(`${version}\n`);
    }
  });

  it('a missing file is an I/O error (exit 2), never a stack trace', async () => {
    const r = await runCli(['inspect', '/nonexistent/session.jsonl.zstd']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^dsh: /);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('reads a log from stdin with -', async () => {
    const text =
      '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}\n' +
      '{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n';
    const r = await runCli(['inspect', '-', '--json'], { input: Buffer.from(text) });
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.closers.map((e: any) => e.type)).toEqual(['turn/end']);
    expect(json.closers[0]).toEqual({ type: 'turn/end', seq: 1, time: 5, data: { turn: 1, reason: { kind: 'interrupted' } } });
  });

  it('escapes control characters from log content in human output', async () => {
    const text =
      '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}\n' +
      JSON.stringify({ type: 'user/message', seq: 0, time: 1, data: { content: [{ type: 'text', text: 'hi\u001b[2J\u0007there' }], source: { kind: 'user' }, role: 'user', id: 'm1' }, surfaceOp: 'append' }) +
      '\n';
    const r = await runCli(['events', '-'], { input: Buffer.from(text) });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\u001b');
    expect(r.stdout).not.toContain('\u0007');
    expect(r.stdout).toContain('\\u001b[2J');
  });
});

describe('memory budget', () => {
  it('no command holds the log: a held-bytes budget far below the log stops none of them (diff, the last that held both logs, included)', async () => {
    const target = 'fixtures/incident/--home-dev-acme-api--/session-incident-1';
    const env = { DSH_MAX_HELD_BYTES: '20000' };
    for (const args of [['diff', target, target], ['inspect', target], ['events', target, '--json'], ['check', target], ['inspect', target, '--json'], ['surface', target, '--json'], ['surface', target, '--at', '300'], ['request', target, '--list'], ['request', target, '300', '--diff'], ['trace', target, '300', '--all'], ['stats', target], ['search', 'the', target], ['transcript', target], ['replay', target], ['history', target, '--all-pages'], ['compactions', target], ['fork', target], ['report', target, '-o', '-']]) {
      const r = await runCli(args, { env });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
  });
});

describe('closed pipes', () => {
  it('a reader that stops early (| head) ends dsh quietly with exit 0', async () => {
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('./helpers/cli.js');
    for (const args of [['events', 'fixtures/incident/--home-dev-acme-api--/session-incident-1', '--json'], ['events', '--help']]) {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.once('data', () => child.stdout.destroy());
      const code: number = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? -1)));
      expect(code, err).toBe(0);
      expect(err).not.toMatch(/\n\s+at /);
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('dsh inspect/events/frames on corpus artifacts (process)', () => {
  const cases = corpusCases();
  const pick = (name: string) => cases.find((c) => c.name.includes(name))!;

  it('exit 1 with DSH class and text for corrupt and refused logs', async () => {
    for (const name of ['checksum-corrupt-middle-frame', 'corrupt-raw-middle-line', 'syn.header-version-1/root-zstd', 'syn.unknown-required/root-raw', 'web.cordis-tool-round']) {
      const c = pick(name);
      const r = await runCli(['inspect', c.artifact, '--json']);
      expect(r.code, name).toBe(1);
      const json = JSON.parse(r.stdout);
      const exp = c.expected.inspection.error;
      expect(json.error.class).toBe(exp.class);
      // DSH rewrote artifact paths as <root>/… in expected messages.
      const root = path.join(CORPUS, c.expected.artifact.root);
      expect(json.error.message.split(root).join('<root>')).toBe(exp.message);
    }
  });

  it('session ids resolve under --root and DSH_HOME, exactly as DSH lays them out', async () => {
    const c = pick('synthetic/root-zstd/--home-dsh-synthetic-project--/syn.compaction-double');
    const root = path.join(CORPUS, 'synthetic', 'root-zstd');
    const byRoot = await runCli(['inspect', 'syn.compaction-double', '--root', root, '--json']);
    expect(byRoot.code).toBe(0);
    expect(JSON.parse(byRoot.stdout).events).toEqual(c.expected.inspection.events);
    const home = mkdtempSync(path.join(os.tmpdir(), 'dsh-home-'));
    const sessions = path.join(home, 'sessions', '--w--', 'abc');
    mkdirSync(sessions, { recursive: true });
    copyFileSync(c.artifact, path.join(sessions, 'session.jsonl.zstd'));
    const missing = await runCli(['inspect', 'nope'], { env: { DSH_HOME: home } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('not found');
  });

  it('events --json streams NDJSON with session-query labels', async () => {
    const c = pick('synthetic/root-raw/--home-dsh-synthetic-project--/syn.compaction-double');
    const r = await runCli(['events', c.artifact, '--json']);
    expect(r.code).toBe(0);
    const records = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(records.map(({ event: _e, ...rest }: any) => rest)).toEqual(c.expected.sessionQuery.listEvents);
    const shadowed = await runCli(['events', c.artifact, '--json', '--label', 'shadowed']);
    expect(shadowed.stdout.trim().split('\n').map((l) => JSON.parse(l).seq)).toEqual(c.expected.derived.surface.shadowedSeqs.slice().sort((a: number, b: number) => a - b));
  });

  it('inspect on a log DSH refuses for a corrupt frame suggests dsh salvage with what it would keep', async () => {
    const c = pick('checksum-corrupt-middle-frame');
    const r = await runCli(['inspect', c.artifact]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('frame at byte 3034 failed validation');
    expect(r.stdout).toMatch(/hint +dsh salvage .* would keep 95 event\(s\) across 1 gap\(s\); DSH reads 0/);
  });

  it('frames lists the physical layout of a torn artifact', async () => {
    const c = pick('torn-final-frame-multiblock');
    const r = await runCli(['frames', c.artifact, '--decode', '--json']);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.frames.map((f: any) => [f.start, f.end, f.plaintextBytes, f.records])).toEqual(c.expected.artifact.frames.map((f: any) => [f.start, f.end, f.plaintextBytes, f.records]));
    expect(json.torn.start).toBe(c.expected.artifact.tornStart);
    expect(json.torn.recoveredPlaintextBytes).toBe(c.expected.artifact.tornFrame.recoveredPlaintextBytes);
  });

  it('a log whose bytes arrive on stdin reads like the file', async () => {
    const c = pick('torn-final-frame-checksum');
    const { readFileSync } = await import('node:fs');
    const r = await runCli(['inspect', '-', '--json'], { input: readFileSync(c.artifact) });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).events).toEqual(c.expected.inspection.events);
  });
});

void writeFileSync;

describe('one process, the heap node was given', () => {
  it('no command re-runs node with a bigger heap: diff holds neither log (a held-bytes budget of 1,000 bytes and a 64 MiB heap do not stop it); stdin and exit codes pass through', async () => {
    const text = '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}\n{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n';
    const r = await runCli(['compactions', '-', '--json'], { input: Buffer.from(text) });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toBeTruthy();
    const f = 'fixtures/incident/--home-dev-acme-api--/session-incident-1';
    const own = await runCli(['diff', f, f, '--json'], { env: { DSH_MAX_HELD_BYTES: '1000', NODE_OPTIONS: '--max-old-space-size=64' } });
    expect(own.code, own.stderr).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({ identical: true, dispatches: { firstDivergent: null } });
    // The launcher only tunes V8's flags: nothing in it starts another process.
    const launcher = readFileSync(path.join(process.cwd(), 'bin', 'dsh.js'), 'utf8');
    expect(launcher).not.toMatch(/child_process|spawn|--max-old-space-size=\$/);
  });
});

describe('report --json', () => {
  it('prints a manifest of the written report', async () => {
    const { mkdtempSync } = await import('node:fs');
    const os = await import('node:os');
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'dsh-rep-')), 'r.html');
    const r = await runCli(['report', 'fixtures/incident/--home-dev-acme-api--/session-incident-1', '-o', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const m = JSON.parse(r.stdout);
    expect(m).toMatchObject({ output: out, sessionId: 'session-incident-1', health: 'readable' });
    expect(m.bytes).toBeGreaterThan(1000);
    expect((await runCli(['report', 'fixtures/incident/--home-dev-acme-api--/session-incident-1', '-o', '-', '--json'])).code).toBe(2);
  });
});

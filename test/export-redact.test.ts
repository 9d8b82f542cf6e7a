import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { runInProcess } from './helpers/cli.js';

const SECRET = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd';
const log = [
  '{"type":"session","version":0,"id":"sec","createdAt":1,"cwd":"/home/alice/proj","delegationDepth":0}',
  '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
  JSON.stringify({ type: 'user/message', seq: 1, time: 2, data: { content: [{ type: 'text', text: `use ${SECRET} please` }], source: { kind: 'user' }, role: 'user', id: 'm1' }, surfaceOp: 'append' }),
  '{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}',
  '',
].join('\n');

describe('dsh export --redact', () => {
  it('writes session.jsonl without the secret, and the archive reads back with the same events', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-exr-'));
    const file = path.join(dir, 'session.jsonl');
    writeFileSync(file, log);
    // Never inside the input's session directory (the folder holding session.jsonl).
    const zip = path.join(mkdtempSync(path.join(os.tmpdir(), 'dsh-exr-out-')), 'out.zip');
    const r = await runInProcess(['export', file, '-o', zip, '--redact', '--no-media']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('1 replacement(s)');
    const text = execFileSync('unzip', ['-p', zip, 'session.jsonl']).toString('utf8');
    expect(text).not.toContain(SECRET);
    expect(text).toMatch(/\[REDACTED:sk-…:≤64#[0-9a-f]{4}\]/);
    const back = await runInProcess(['events', zip, '--json']);
    expect(back.code).toBe(0);
    expect(back.stdout.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual(['turn/start', 'user/message', 'turn/end']);
  });

  it('refuses --raw-artifacts with --redact (the raw copy would leak), leaving nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-exr-'));
    const file = path.join(dir, 'session.jsonl');
    writeFileSync(file, log);
    const zip = path.join(dir, 'out.zip');
    const r = await runInProcess(['export', file, '-o', zip, '--redact', '--raw-artifacts']);
    expect(r.code).toBe(2);
    expect(existsSync(zip)).toBe(false);
  });
});

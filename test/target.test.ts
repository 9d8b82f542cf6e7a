import { describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { inspectSource } from '../src/log/inspect.js';
import { MemorySource } from '../src/physical/source.js';
import { encodeSegment } from '../src/log/layout.js';

const header = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'session', version: 0, id, createdAt: 1, cwd: '/w', delegationDepth: 0, ...extra }) + '\n';
const turn = '{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n{"type":"turn/end","seq":1,"time":6,"data":{"turn":1,"reason":{"kind":"completed"}}}\n';

describe('targets', () => {
  it('a session.jsonl copied out of a root is read without inventing an expected id from its folder', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-copy-'));
    const file = path.join(dir, 'session.jsonl');
    writeFileSync(file, header('real-id') + turn);
    const t = resolveTarget(file);
    expect(t.expectedId).toBeUndefined();
    const r = await inspectTarget(t, {});
    expect(r.error).toBeUndefined();
    expect(r.artifact.error).toBeUndefined();
    expect(r.warnings).toEqual([]);
  });

  it('inside DSH layout the folder names the id, and a mismatch is reported as DSH words it', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'dsh-root-'));
    const dir = path.join(root, '--w--', 'other-id');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'session.jsonl'), header('real-id') + turn);
    const r = await inspectTarget(resolveTarget(dir), {});
    expect(r.warnings.join('\n')).toContain('requested id "other-id" does not match header id "real-id"');
  });

  it('a session id containing a slash resolves under --root', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'dsh-root-'));
    const id = 'weird/id:1';
    const dir = path.join(root, '--w--', encodeSegment(id));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'session.jsonl'), header(id) + turn);
    const t = resolveTarget(id, { root, compression: 'none' });
    expect(t.expectedId).toBe(id);
    const r = await inspectTarget(t, {});
    expect(r.error).toBeUndefined();
    expect(r.warnings).toEqual([]);
  });

  it('a header with retired policy fields is corrupt with DSH text in both views, never a thrown error', async () => {
    const text = header('s', { sandboxMode: 'read-only' }) + turn;
    const r = await inspectSource(new MemorySource('session.jsonl', Buffer.from(text)));
    expect(r.error?.message).toBe('session header uses retired policy baseline fields');
    expect(r.artifact.error?.message).toBe('session header uses retired policy baseline fields');
  });

  it('a surface rule failure names the rule', async () => {
    const text =
      header('s') +
      JSON.stringify({ type: 'user/message', seq: 0, time: 1, data: { content: [], source: { kind: 'user' }, role: 'user', id: 'm' }, surfaceOp: { op: 'replace', start: 9, end: 9 }, sourceEventSeqs: [] }) + '\n';
    const r = await inspectSource(new MemorySource('session.jsonl', Buffer.from(text)));
    expect(r.error?.class).toBe('SessionPersistenceCorruptionError');
    expect(r.error?.rule).toBe('DSH-S5');
    expect(r.error?.seq).toBe(0);
  });
});

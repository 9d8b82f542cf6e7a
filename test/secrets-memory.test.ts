import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, runInProcess } from './helpers/cli.js';
import { logText, type Ev } from './helpers/logtext.js';

/**
 * The secrets fold tells which dispatches sent a secret (their keys, providers and models) from the
 * request headers and contexts around them. It used to fold the log with a full dispatch builder, whose
 * entries each kept their folded request header: on a log of many distinct large headers it held every
 * header of the log. The planted value is split so this file holds no detector match.
 */
const TOKEN = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
const USER = (id: string, text: string): Ev => ({ type: 'user/message', data: { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }, surfaceOp: 'append' });

/** Turns each with a distinct request header of `systemBytes` (every 50th holds the token), one dispatch and its message. */
function headerTurns(turns: number, systemBytes: number): Ev[] {
  const out: Ev[] = [];
  for (let t = 1; t <= turns; t++) {
    const system = `turn ${t}: ${t % 50 === 0 ? `token ${TOKEN} ` : ''}${'x'.repeat(systemBytes)}`;
    out.push({ type: 'turn/start', data: { turn: t } });
    out.push({ type: 'request/header', data: { header: { config: { provider: `p${t % 3}`, model: `m${t % 2}` }, system, tools: [] }, reason: t === 1 ? 'initial' : 'change' } });
    out.push({ type: 'request/context', data: { provider: 'ctx', model: 'ctx-model', contextWindow: 1000 } });
    out.push({ type: 'step/start', data: { turn: t, step: 1 } });
    out.push(USER(`u${t}`, t === 7 ? `my token is ${TOKEN}` : `question ${t}`));
    const chunkSeq = out.length;
    out.push({ type: 'assistant/chunk', data: { turn: t, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } });
    out.push({ type: 'assistant/message', data: { turn: t, step: 1, message: { id: `a${t}`, role: 'assistant', content: [], source: { kind: 'model', provider: 'p', model: 'm' } } }, surfaceOp: 'append', sourceEventSeqs: [chunkSeq] });
    out.push({ type: 'step/end', data: { turn: t, step: 1 } });
    out.push({ type: 'turn/end', data: { turn: t, reason: { kind: 'completed' } } });
  }
  return out;
}

describe('secrets in bounded memory', () => {
  const TURNS = 600;
  const SYSTEM_BYTES = 64 * 1024;
  const HEAP_MIB = 40;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-secrets-headers-'));
  const file = path.join(dir, '--home-dev-p--', 'hdrs', 'session.jsonl');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`secrets --json under a ${HEAP_MIB} MiB heap on a log of ${TURNS} distinct ${SYSTEM_BYTES / 1024} KiB request headers prints what a roomy heap prints`, async () => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, logText(headerTurns(TURNS, SYSTEM_BYTES), { id: 'hdrs', cwd: '/home/dev/p' }));
    const roomy = await runInProcess(['secrets', file, '--json'], { DSH_NO_CACHE: '1' });
    expect(roomy.code, roomy.stderr).toBe(0);
    const doc = JSON.parse(roomy.stdout);
    // Sent from turn 7's user message on (and in every 50th header): dispatches 7..600, each with its header's provider and model.
    const secret = doc.secrets[0];
    expect(secret.dispatchCount).toBe(TURNS - 6);
    expect(secret.sessions[0].dispatches.first).toEqual({ index: 6, key: '7/1#0', firstChunkSeq: 59, provider: 'p1', model: 'm1' });
    expect(secret.sessions[0].dispatches.models).toHaveLength(6);
    const small = await runCli(['secrets', file, '--json', '--no-cache'], { env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}` } });
    expect(small.code, small.stderr.slice(0, 2000)).toBe(0);
    expect(small.stdout === roomy.stdout, 'stdout differs from the roomy run').toBe(true);
  }, 300_000);
});

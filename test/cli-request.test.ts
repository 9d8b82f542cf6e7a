import { describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { deriveDispatches, diffDispatches } from '../src/views/requests.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const SYN = path.join(CORPUS, 'synthetic', 'root-zstd', '--home-dsh-synthetic-project--');
const RETRY = path.join(SYN, 'syn.llm-retry', 'session.jsonl.zstd');
const COMPACTION = path.join(SYN, 'syn.compaction-double', 'session.jsonl.zstd');
const MINIMAL = path.join(CORPUS, 'dsh-snapshots', 'root-raw', '--home-dsh-web-minimal-preset--', 'web.minimal-preset', 'session.jsonl');

describe.skipIf(!HAVE_CORPUS)('dsh request --json reproduces DSH\'s requests[] for every dispatch', () => {
  it('--list --json keys/order, and <firstChunkSeq> --json = {key, firstChunkSeq, header, requestContext, messages}', async () => {
    let compared = 0;
    let logs = 0;
    for (const c of corpusCases()) {
      if (!Array.isArray(c.expected.requests)) continue;
      logs += 1;
      const list = await runInProcess(['request', c.artifact, '--list', '--json']);
      expect(list.code, c.name).toBe(0);
      const doc = JSON.parse(list.stdout);
      expect(doc.requests.map((r: any) => [r.key, r.firstChunkSeq])).toEqual(c.expected.requests.map((r: any) => [r.key, r.firstChunkSeq]));
      for (const [i, row] of (doc.requests as any[]).entries()) {
        const want = c.expected.requests[i];
        expect(row.messageCount).toBe(want.messageIds.length);
        expect(row.finish).toEqual(want.finish);
        expect(row.headerSeq).toBe(want.headerSeq);
      }
      for (const want of c.expected.requests as any[]) {
        const r = await runInProcess(['request', c.artifact, String(want.firstChunkSeq), '--json']);
        expect(r.code, `${c.name} ${want.key}`).toBe(0);
        expect(JSON.parse(r.stdout)).toEqual({
          key: want.key,
          firstChunkSeq: want.firstChunkSeq,
          header: want.header,
          requestContext: want.requestContext,
          messages: want.messages,
        });
        compared += 1;
      }
    }
    console.info(`cli-request.test: ${compared} dispatches in ${logs} logs reproduced by dsh request --json`);
    expect(compared).toBe(644);
  });

  it('reads only what it shows yet equals the whole-log library views: --diff --json and the human view of every dispatch', async () => {
    let compared = 0;
    for (const c of corpusCases()) {
      if (!Array.isArray(c.expected.requests) || c.expected.requests.length === 0) continue;
      const held = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const events = held.events!;
      const index = deriveDispatches(events, { lazy: events });
      for (const entry of index.requests) {
        const prev = entry.index > 0 ? index.requests[entry.index - 1]! : null;
        const diff = await runInProcess(['request', c.artifact, String(entry.firstChunkSeq), '--diff', '--json']);
        expect(diff.code, `${c.name} ${entry.key}`).toBe(0);
        expect(JSON.parse(diff.stdout)).toEqual(JSON.parse(JSON.stringify(diffDispatches(prev, entry, events))));
        const human = await runInProcess(['request', c.artifact, String(entry.lastChunkSeq), '--full', '--color', 'never']);
        expect(human.code, `${c.name} ${entry.key}`).toBe(0);
        expect(human.stdout).toContain(`request   ${entry.key}`);
        const humanDiff = await runInProcess(['request', c.artifact, String(entry.firstChunkSeq), '--diff', '--color', 'never']);
        expect(humanDiff.code, `${c.name} ${entry.key}`).toBe(0);
        compared += 1;
      }
    }
    expect(compared).toBe(644);
  });

  it('every seq inside a dispatch, its assistant/message and its --step key resolve to it', async () => {
    const c = corpusCases().find((x) => x.name.endsWith(path.join('root-zstd', '--home-dsh-synthetic-project--', 'syn.llm-retry')))!;
    for (const want of c.expected.requests as any[]) {
      const seqs = [];
      for (let s = want.firstChunkSeq; s <= want.lastChunkSeq; s++) seqs.push(s);
      if (want.assistantMessageSeq !== null) seqs.push(want.assistantMessageSeq);
      for (const s of seqs) {
        const r = await runInProcess(['request', RETRY, String(s), '--json']);
        expect(JSON.parse(r.stdout).key).toBe(want.key);
      }
      const r = await runInProcess(['request', RETRY, '--step', want.key, '--json']);
      expect(JSON.parse(r.stdout).firstChunkSeq).toBe(want.firstChunkSeq);
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('dsh request human output', () => {
  it('retry scenario: failed attempts are requests with their failure', async () => {
    const list = await runInProcess(['request', RETRY, '--list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/1\/1#0 +5 +deepseek-v4-flash +1 +initial +error TRANSPORT/);
    expect(list.stdout).toMatch(/1\/1#1 +10 .*error EMPTY_RESPONSE/);
    expect(list.stdout).toMatch(/1\/1#2 +14 .*stop .*in 101, out 15/);
    const first = await runInProcess(['request', RETRY, '5']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('error TRANSPORT: upstream connection reset');
    expect(first.stdout).toContain('retried as 1/1#1');
    expect(first.stdout).toContain('llm/retry 8, llm/retry-started 9');
    expect(first.stdout).toContain('You are DSH, a coding agent. Be concise.');
    expect(first.stdout).toMatch(/tools +2: bash, read/);
    expect(first.stdout).toContain('"Say hi."');
  });

  it('after compaction: the checkpoint replaces the span; --diff shows what was shadowed', async () => {
    const r = await runInProcess(['request', COMPACTION, '--step', '4/1']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('replaces surface 46..61');
    const d = await runInProcess(['request', COMPACTION, '--step', '4/1', '--diff']);
    expect(d.stdout).toContain('3/1#0 → 4/1#0');
    expect(d.stdout).toContain('shadowed by seq 69');
    expect(d.stdout).toContain('appended and shadowed by seq 69');
    const j = JSON.parse((await runInProcess(['request', COMPACTION, '--step', '4/1', '--diff', '--json'])).stdout);
    expect(j.from).toBe('3/1#0');
    expect(j.messages.removed.map((x: any) => x.shadowedBy)).toEqual([69, 69]);
    expect(j.header.changed).toBe(false);
  });

  it('header missing: said plainly; --body cannot be built (exit 1)', async () => {
    const r = await runInProcess(['request', MINIMAL, '1']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('header    missing');
    const b = await runInProcess(['request', MINIMAL, '1', '--body', 'deepseek']);
    expect(b.code).toBe(1);
    expect(b.stderr).toContain('no request/header precedes this dispatch');
  });

  it('--body deepseek prints the chat-completions body', async () => {
    const r = await runInProcess(['request', COMPACTION, '--step', '2/2', '--body', 'deepseek', '--json']);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body.model).toBe('deepseek-v4-flash');
    expect(body.stream).toBe(true);
    expect(body.messages[0]).toEqual({ role: 'system', content: 'You are DSH, a coding agent. Be concise.' });
    const assistant = body.messages.find((m: any) => m.tool_calls);
    const tool = body.messages.find((m: any) => m.role === 'tool');
    expect(tool.tool_call_id).toBe(assistant.tool_calls[0].id);
    expect(body.tools[0].type).toBe('function');
    expect(r.stderr).toContain('reasoningEffort');
    const human = await runInProcess(['request', COMPACTION, '--step', '2/2', '--body', 'deepseek']);
    expect(JSON.parse(human.stdout)).toEqual(body);
  });
});

describe.skipIf(!HAVE_CORPUS)('dsh request errors', () => {
  it('a seq in no dispatch names the nearest ones (exit 2)', async () => {
    const r = await runInProcess(['request', RETRY, '8']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('seq 8 (llm/retry) belongs to no model dispatch; nearest dispatches: 1/1#0 (chunks 5..7) before it, 1/1#1 (first chunk 10) after it');
    const far = await runInProcess(['request', RETRY, '9999']);
    expect(far.code).toBe(2);
    expect(far.stderr).toContain('not in the log');
    expect((await runInProcess(['request', RETRY, 'x'])).code).toBe(2);
    expect((await runInProcess(['request', RETRY])).code).toBe(2);
    expect((await runInProcess(['request', RETRY, '5', '--step', '1/1'])).code).toBe(2);
    expect((await runInProcess(['request', RETRY, '--step', '7/1'])).stderr).toContain('steps with dispatches: 1/1');
  });

  it('a log DSH refuses: exit 1 with DSH\'s error text', async () => {
    const refused = corpusCases().filter((c) => !Array.isArray(c.expected.requests));
    expect(refused.length).toBeGreaterThan(0);
    for (const c of refused) {
      const r = await runInProcess(['request', c.artifact, '--list']);
      expect(r.code, c.name).toBe(1);
      const rootAbs = path.join(CORPUS, c.expected.artifact.root);
      const text = r.stderr.split(rootAbs).join('<root>');
      expect(text, c.name).toContain(`${c.expected.inspection.error.class}: ${c.expected.inspection.error.message}`);
    }
  });
});

describe('dsh request on a crafted log', () => {
  it('escapes control characters from the log in human output', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-request-'));
    try {
      const sdir = path.join(dir, '--p--', 'evil');
      mkdirSync(sdir, { recursive: true });
      const lines = [
        { type: 'session', version: 0, id: 'evil', createdAt: 0, delegationDepth: 0 },
        { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } },
        { type: 'step/start', seq: 1, time: 2, data: { turn: 1, step: 1 } },
        { type: 'user/message', seq: 2, time: 3, data: { content: [{ type: 'text', text: 'hi\u001b]0;owned\u0007\u001b[2J' }], source: { kind: 'user' }, role: 'user', id: 'u\u001b[1m' }, surfaceOp: 'append' },
        { type: 'request/header', seq: 3, time: 4, data: { header: { config: { provider: 'deepseek-official', model: 'm\u001b[31m', reasoningEffort: 'off' }, system: 'sys\u009b' }, reason: 'initial' } },
        { type: 'assistant/chunk', seq: 4, time: 5, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x\u001b[0m' } } },
        { type: 'assistant/chunk', seq: 5, time: 6, data: { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } },
        { type: 'assistant/message', seq: 6, time: 7, data: { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'x\u001b[0m' }], source: { kind: 'model', provider: 'deepseek-official', model: 'm' }, id: 'a' } }, surfaceOp: 'append', sourceEventSeqs: [4, 5] },
        { type: 'step/end', seq: 7, time: 8, data: { turn: 1, step: 1 } },
        { type: 'turn/end', seq: 8, time: 9, data: { turn: 1, reason: { kind: 'completed' } } },
      ];
      const file = path.join(sdir, 'session.jsonl');
      writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
      for (const args of [['4'], ['--list'], ['4', '--diff'], ['4', '--body', 'deepseek'], ['4', '--full']]) {
        const r = await runInProcess(['request', file, ...args]);
        expect(r.code, args.join(' ')).toBe(0);
        expect(r.stdout, args.join(' ')).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      }
      const body = JSON.parse((await runInProcess(['request', file, '4', '--body', 'deepseek'])).stdout);
      expect(body.thinking).toEqual({ type: 'disabled' });
      expect(body.messages[1].content).toBe('hi\u001b]0;owned\u0007\u001b[2J');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

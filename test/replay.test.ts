import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, SKIP_REASON, corpusCases, corpusArtifacts } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { sessionPath } from '../src/log/layout.js';
import { writeGeneratedArtifact, generatedHeader } from '../tools/generate.js';
import { REPLAY_PLAN, ReplayPlanner, StreamAssembler, buildReplay, planReplay, replayGapTotal, streamReplay, type ReplayAttempt, type ReplayPlan } from '../src/views/replay.js';
import { toJson } from '../src/core/json.js';
import { ChunkGaps, timedFrames } from '../src/cli/render/replay.js';
import { collectSession } from '../tools/generate.js';
import { inspectText, logText } from './helpers/logtext.js';
import type { SessionEvent } from '../src/log/types.js';


describe('StreamAssembler (BlockAssembler rules)', () => {
  it('orders blocks by first-seen index and concatenates deltas', () => {
    const a = new StreamAssembler();
    a.push({ type: 'reasoning-delta', index: 1, text: 'think ' });
    a.push({ type: 'text-delta', index: 0, text: 'he' });
    a.push({ type: 'reasoning-delta', index: 1, text: 'more' });
    a.push({ type: 'text-delta', index: 0, text: 'llo' });
    expect(a.blocks()).toEqual([
      { type: 'reasoning', text: 'think more' },
      { type: 'text', text: 'hello' },
    ]);
    expect(a.finishReason).toEqual({ kind: 'stop' });
    expect(a.sawFinish).toBe(false);
  });

  it('block-end is authoritative, freezes the index, and the first close wins', () => {
    const a = new StreamAssembler();
    a.push({ type: 'block-start', index: 0, blockType: 'text' });
    a.push({ type: 'text-delta', index: 0, text: 'abc' });
    a.push({ type: 'block-end', index: 0, block: { type: 'text', text: 'ABC' } });
    a.push({ type: 'text-delta', index: 0, text: 'straggler' });
    a.push({ type: 'block-end', index: 0, block: { type: 'text', text: 'second close' } });
    expect(a.blocks()).toEqual([{ type: 'text', text: 'ABC' }]);
  });

  it('tool calls: last id, last non-empty name, concatenated arguments; defaults call-<index> and ""', () => {
    const a = new StreamAssembler();
    a.push({ type: 'tool-call-delta', index: 2, id: 'x1', name: 'bash', argumentsDelta: '{"a"' });
    a.push({ type: 'tool-call-delta', index: 2, id: 'x2', name: '', argumentsDelta: ':1}' });
    expect(a.blocks()).toEqual([{ type: 'tool-call', id: 'x2', name: 'bash', arguments: '{"a":1}' }]);
    const b = new StreamAssembler();
    b.push({ type: 'block-start', index: 3, blockType: 'tool-call' });
    expect(b.blocks()).toEqual([{ type: 'tool-call', id: 'call-3', name: '', arguments: '' }]);
  });

  it('max-tokens drops tool calls and prunes the replay envelope in step; a misaligned envelope is dropped', () => {
    const a = new StreamAssembler();
    a.push({ type: 'text-delta', index: 0, text: 'partial' });
    a.push({ type: 'tool-call-delta', index: 1, id: 'c', name: 'read', argumentsDelta: '{' });
    a.push({ type: 'usage', usage: { inputTokens: 1, outputTokens: 2 } });
    a.push({ type: 'usage', usage: { inputTokens: 3, outputTokens: 4 } });
    a.push({ type: 'finish', reason: { kind: 'max-tokens' }, replayState: { response: 'r', blocks: ['b0', 'b1'] } });
    expect(a.blocks()).toEqual([{ type: 'text', text: 'partial' }]);
    expect(a.replayState).toEqual({ response: 'r', blocks: ['b0'] });
    expect(a.usage).toEqual({ inputTokens: 3, outputTokens: 4 });
    const b = new StreamAssembler();
    b.push({ type: 'text-delta', index: 0, text: 'x' });
    b.push({ type: 'finish', reason: { kind: 'stop' }, replayState: { response: 'r', blocks: ['b0', 'b1'] } });
    expect(b.replayState).toBeUndefined();
  });

  it('interrupted blocks keep only non-whitespace text/reasoning', () => {
    const a = new StreamAssembler();
    a.push({ type: 'text-delta', index: 0, text: '  ' });
    a.push({ type: 'reasoning-delta', index: 1, text: 'why' });
    a.push({ type: 'tool-call-delta', index: 2, id: 'c', argumentsDelta: '{}' });
    a.push({ type: 'text-delta', index: 3, text: 'partial answer' });
    expect(a.interruptedBlocks()).toEqual([
      { type: 'reasoning', text: 'why' },
      { type: 'text', text: 'partial answer' },
    ]);
  });

  it('an unknown block type never closed cannot be assembled (DSH throws)', () => {
    const a = new StreamAssembler();
    a.push({ type: 'block-start', index: 0, blockType: 'image' });
    expect(() => a.blocks()).toThrow('cannot assemble incomplete block of type "image"');
  });

  it('timed frames cap each gap and the total', () => {
    const attempts = [{ index: 0, chunks: [0, 5000, 5100, 9000].map((t, i) => ({ seq: i, time: t, chunk: {} })) }] as unknown as ReplayAttempt[];
    const frames = timedFrames(attempts, 1000, 2000);
    expect(frames.map((f) => f.delayMs).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1000);
    expect(frames[0]!.delayMs).toBe(0);
  });
});

describe('the recorded gaps a timed replay plays, from the plan', () => {
  /** What the timed replay used to sum in a pass of its own: each chunk's gap, over the wanted attempts in order. */
  function counted(events: readonly SessionEvent[], wanted: (a: ReplayAttempt) => boolean): number {
    const gaps = new ChunkGaps();
    let total = 0;
    for (const a of buildReplay('x', events, { keepChunks: true }).attempts) if (wanted(a)) for (const c of a.chunks ?? []) total += gaps.gap(c.time);
    return total;
  }
  it('equal the sum over the replayed chunks, for the whole log and each step, cold and from the saved plan', async () => {
    const { events } = collectSession({ seed: 11, id: 'gaps', turns: 30, features: { 4: ['retry'], 9: ['retry'] }, randomFeatures: true });
    const r = await inspectText(logText(events.map(({ type, data, surfaceOp, sourceEventSeqs, time }) => ({ type, data, time, ...(surfaceOp !== undefined ? { surfaceOp } : {}), ...(sourceEventSeqs !== undefined ? { sourceEventSeqs } : {}) })), { id: 'gaps' }));
    expect(r.error).toBeUndefined();
    const logical = r.events!;
    const planner = new ReplayPlanner();
    for (const e of logical) planner.observe(e);
    const cold = planner.finish();
    const fold = REPLAY_PLAN.create();
    for (const e of logical) fold.observe(e);
    fold.end?.([]);
    const saved = REPLAY_PLAN.decode(fold.encode()!) as ReplayPlan;
    expect(saved).not.toBeNull();
    const all = () => true;
    const total = counted(logical, all);
    expect(total).toBeGreaterThan(0);
    expect(replayGapTotal(cold, all)).toBe(total);
    expect(replayGapTotal(saved, all)).toBe(total);
    const steps = [...new Map(cold.attempts.map((a) => [`${a.turn}/${a.step}`, a])).values()];
    expect(steps.length).toBeGreaterThan(20);
    for (const s of steps) {
      const wanted = (a: { turn: unknown; step: unknown }) => a.turn === s.turn && a.step === s.step;
      const want = counted(logical, wanted);
      expect(replayGapTotal(cold, wanted)).toBe(want);
      expect(replayGapTotal(saved, wanted)).toBe(want);
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('replay over the corpus', () => {
  it.skipIf(!HAVE_CORPUS)(`every successful attempt's reassembled content equals the assistant/message citing it ${HAVE_CORPUS ? '' : SKIP_REASON}`, async () => {
    let sessions = 0;
    let messages = 0;
    let matched = 0;
    const exceptions: string[] = [];
    const notes: Record<string, number> = {};
    for (const file of corpusArtifacts()) {
      const r = await inspectTarget(resolveTarget(file), { collect: true });
      if (r.error) continue;
      sessions++;
      const v = buildReplay(r.meta!.id, r.events!);
      expect(v.summary.orphanMessages, file).toEqual([]);
      expect(v.summary.mismatched, file).toBe(0);
      const cited = r.events!.filter((e) => e.type === 'assistant/message').length;
      messages += cited;
      matched += v.summary.matched;
      for (const a of v.attempts) {
        expect(a.citationMismatch, `${file} ${a.key}`).toBeNull();
        expect(a.assemblyError, `${file} ${a.key}`).toBeNull();
        if (a.messageSeq !== null && a.contentMatches !== true) exceptions.push(`${path.relative(CORPUS, file)} ${a.key}: ${a.note}`);
        if (a.note && a.contentMatches) notes[a.note.split(':')[0]!] = (notes[a.note.split(':')[0]!] ?? 0) + 1;
      }
      // Every assistant/message is linked to exactly one attempt.
      expect(v.attempts.filter((a) => a.messageSeq !== null).length, file).toBe(cited);
    }
    // Reported in the task summary; the only unverifiable messages record no sourceEventSeqs at all.
    console.log(`replay: ${sessions} inspectable artifacts, ${messages} assistant/messages, ${matched} matched their reassembled chunks; legitimate special cases: ${JSON.stringify(notes)}; unverifiable: ${exceptions.join('; ') || 'none'}`);
    expect(matched).toBe(messages - exceptions.length);
    expect(exceptions.every((x) => x.includes('sourceEventSeqs not recorded'))).toBe(true);
    expect(sessions).toBeGreaterThan(250);
  });

  it("segmentation equals the oracle's requests[] (first/last chunk, finish, citing message)", () => {
    let checked = 0;
    for (const c of corpusCases()) {
      if (!Array.isArray(c.expected.requests) || !c.expected.inspection?.events) continue;
      const v = buildReplay(c.expected.sessionId, c.expected.inspection.events);
      const chunked = v.attempts.filter((a) => a.firstChunkSeq !== null);
      expect(chunked.map((a) => [a.key, a.firstChunkSeq, a.lastChunkSeq, a.finish, a.messageSeq]), c.name).toEqual(
        c.expected.requests.map((q: any) => [q.key, q.firstChunkSeq, q.lastChunkSeq, q.finish, q.assistantMessageSeq]),
      );
      checked++;
    }
    expect(checked).toBeGreaterThan(200);
  });

  it('syn.llm-retry: failed attempts are kept, marked retried, with the finish error', async () => {
    const file = path.join(CORPUS, 'synthetic/root-zstd/--home-dsh-synthetic-project--/syn.llm-retry/session.jsonl.zstd');
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    const v = buildReplay('syn.llm-retry', r.events!);
    expect(v.attempts.map((a) => [a.key, a.outcome, a.retried, a.error?.['code'] ?? null])).toEqual([
      ['1/1#0', 'failed', true, 'TRANSPORT'],
      ['1/1#1', 'failed', true, 'EMPTY_RESPONSE'],
      ['1/1#2', 'success', false, null],
    ]);
    expect(v.attempts[0]!.blocks).toEqual([{ type: 'text', text: 'H' }]);
    expect(v.attempts[0]!.retryEventSeqs).toEqual([8]);
    expect(v.attempts[2]!.messageSeq).toBe(19);
    expect(v.attempts[2]!.contentMatches).toBe(true);
    // first token and duration relative to the dispatch anchor (the event before the first chunk)
    expect(v.attempts[0]!.anchorSeq).toBe(4);
    expect(v.attempts[0]!.ttftMs).toBe(r.events![6]!.time - r.events![4]!.time);
    expect(v.attempts[0]!.durationMs).toBe(r.events![7]!.time - r.events![4]!.time);
    expect(v.attempts[1]!.ttftMs).toBeNull();
  });

  it('syn.interrupted-and-maxtokens: interrupted keeps text only; max-tokens yields empty content', async () => {
    const file = path.join(CORPUS, 'synthetic/root-zstd/--home-dsh-synthetic-project--/syn.interrupted-and-maxtokens/session.jsonl.zstd');
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    const v = buildReplay('x', r.events!);
    expect(v.attempts.map((a) => [a.outcome, a.finishKind, a.contentMatches])).toEqual([
      ['interrupted', null, true],
      ['success', 'max-tokens', true],
    ]);
  });

  it('CLI: every corpus artifact exits 0, or 1 exactly where DSH inspection fails', async () => {
    const failing = new Set(corpusCases().filter((c) => c.expected.inspection?.error).map((c) => c.artifact));
    for (const file of corpusArtifacts()) {
      const res = await runInProcess(['replay', file, '--json']);
      const r = await inspectTarget(resolveTarget(file), { collect: false });
      const expectFail = failing.has(file) || Boolean(r.error);
      expect(res.code, `${file}: ${res.stderr}`).toBe(expectFail ? 1 : 0);
      if (expectFail) expect(JSON.parse(res.stdout).error.message).toBe(r.error!.message);
    }
  });

  it('CLI (spawned): replay syn.llm-retry, --step filter, unknown step is a usage error', async () => {
    const root = path.join(CORPUS, 'synthetic/root-zstd');
    const res = await runCli(['replay', 'syn.llm-retry', '--root', root]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('attempt 1/3');
    expect(res.stdout).toContain('TRANSPORT: upstream connection reset');
    expect(res.stdout).toContain('1/1 cited assistant/messages equal their reassembled chunks');
    const step = await runCli(['replay', 'syn.llm-retry', '--root', root, '--step', '1/1', '--json']);
    expect(JSON.parse(step.stdout).attempts).toHaveLength(3);
    const bad = await runCli(['replay', 'syn.llm-retry', '--root', root, '--step', '9/9']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no model attempt in turn 9 step 9');
    const timed = await runCli(['replay', 'syn.llm-retry', '--root', root, '--follow-timing']);
    expect(timed.code).toBe(0);
    expect(timed.stderr).toContain('--follow-timing ignored: stdout is not a terminal');
    expect(timed.stdout).toContain('Hi!');
  });
});

describe('replay on generated logs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-replay-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('retries, compactions and crash tails replay with every cited message matching', async () => {
    for (const [seed, crash] of [
      [11, null],
      [12, 'mid-stream'],
      [13, 'mid-tool'],
    ] as const) {
      const opts = { seed, id: `gen-${seed}`, turns: 6, features: { 2: ['retry'], 3: ['compaction'], 4: ['prune', 'retry'] }, crash } as const;
      const file = sessionPath(dir, generatedHeader(opts as never), 'zstd');
      await writeGeneratedArtifact(file, { ...(opts as never), encoding: 'zstd' });
      const res = await runCli(['replay', file, '--json', '--chunks']);
      expect(res.code, res.stderr).toBe(0);
      const v = JSON.parse(res.stdout);
      expect(v.summary.mismatched).toBe(0);
      expect(v.summary.matched).toBeGreaterThan(0);
      expect(v.attempts.some((a: any) => a.outcome === 'failed' && a.retried)).toBe(true);
      if (crash === 'mid-stream') expect(v.attempts.at(-1).outcome).toBe('unfinished');
    }
  });
});

describe('replay plan and streaming', () => {
  const ev = (seq: number, type: string, data: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({ seq, time: 1000 + seq * 10, type, data, ...extra }) as any;
  const chunk = (seq: number, c: Record<string, unknown>) => ev(seq, 'assistant/chunk', { turn: 1, step: 1, chunk: c });
  const msg = (seq: number, text: string | null, sources: number[]) =>
    ev(seq, 'assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: text === null ? [] : [{ type: 'text', text }] } }, { sourceEventSeqs: sources, surfaceOp: 'append' });
  // Attempt 0's message comes after attempt 1's: attempt 1 is complete first but printed second.
  const events = [
    ev(0, 'turn/start', { turn: 1 }),
    ev(1, 'step/start', { turn: 1, step: 1 }),
    chunk(2, { type: 'text-delta', index: 0, text: 'a' }),
    chunk(3, { type: 'finish', reason: { kind: 'stop' } }),
    chunk(4, { type: 'text-delta', index: 0, text: 'b' }),
    chunk(5, { type: 'finish', reason: { kind: 'stop' } }),
    msg(6, 'b', [4, 5]),
    msg(7, 'a', [2, 3]),
    msg(8, null, []),
    ev(9, 'step/end', { turn: 1, step: 1 }),
  ];

  it('links late messages, places chunk-less attempts, and streams in the replay order', async () => {
    const held = buildReplay('s', events);
    expect(held.attempts.map((a) => [a.key, a.chunkSeqs, a.messageSeq, a.citation, a.contentMatches, a.retried, a.anchorSeq])).toEqual([
      ['1/1#0', [2, 3], 7, 'sources', true, true, 1],
      ['1/1#1', [4, 5], 6, 'sources', true, true, 1],
      ['1/1#2', [], 8, 'empty', true, false, 7],
    ]);
    const plan = await planReplay((async function* () { yield events; })());
    const got: string[] = [];
    const summary = await streamReplay(plan, (async function* () { yield events.slice(0, 5); yield events.slice(5); })(), (a) => void got.push(toJson(a)));
    expect(got).toEqual(held.attempts.map((a) => toJson(a)));
    expect(toJson(summary)).toBe(toJson(held.summary));
  });

  it('the plan the session index keeps decodes to the same replay', async () => {
    const fold = REPLAY_PLAN.create();
    for (const e of events.slice(0, 9)) fold.observe(e);
    fold.end?.([events[9]]);
    const decoded = REPLAY_PLAN.decode(fold.encode()!);
    expect(decoded).not.toBeNull();
    const got: string[] = [];
    await streamReplay(decoded!, (async function* () { yield events; })(), (a) => void got.push(toJson(a)));
    expect(got).toEqual(buildReplay('s', events).attempts.map((a) => toJson(a)));
    // A turn that is not a plain integer: the plan is not kept (replay plans by re-reading).
    const odd = REPLAY_PLAN.create();
    for (const e of [ev(0, 'turn/start', { turn: 1 }), ev(1, 'assistant/chunk', { turn: '1', step: 1, chunk: { type: 'finish', reason: 'stop' } })]) odd.observe(e);
    expect(REPLAY_PLAN.decode(odd.encode()!)).toBeNull();
  });
});

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
import type { SessionEvent } from '../src/log/types.js';
import { cacheHitPercent, sessionStats, zero, type Buckets } from '../src/views/stats.js';


let seq = 0;
const ev = (type: string, data: any, extra: Partial<SessionEvent> = {}, time = 1000 + seq * 10): SessionEvent => ({ type, seq: seq++, time, data, ...extra });
const usage = (turn: number, step: number, inputTokens: number, outputTokens: number, cacheReadTokens?: number) =>
  ev('assistant/chunk', { turn, step, chunk: { type: 'usage', usage: { inputTokens, outputTokens, ...(cacheReadTokens !== undefined ? { cacheReadTokens } : {}) } } });

const sum = (rows: { usage: Buckets }[]) => {
  const t = zero();
  for (const r of rows) {
    t.uncachedInputTokens += r.usage.uncachedInputTokens;
    t.outputTokens += r.usage.outputTokens;
    t.cacheReadTokens += r.usage.cacheReadTokens;
    t.cacheWriteTokens += r.usage.cacheWriteTokens;
  }
  return t;
};

describe("tokenUsage: DSH's replace-the-immediately-previous-sample rule", () => {
  it('a later sample for the same (turn, step) as the previous sample replaces it; non-adjacent repeats add', () => {
    seq = 0;
    const events = [
      ev('turn/start', { turn: 1 }),
      ev('step/start', { turn: 1, step: 1 }),
      usage(1, 1, 100, 10), // added
      usage(1, 1, 120, 12), // replaces → 120/12
      ev('step/end', { turn: 1, step: 1 }),
      ev('step/start', { turn: 1, step: 2 }),
      usage(1, 2, 50, 5), // added
      usage(1, 1, 1, 1), // different from the previous (1/2) → added (a legal log never does this)
      usage(1, 1, 1, 1), // identical to previous → no change
      ev('step/end', { turn: 1, step: 2 }),
      ev('turn/end', { turn: 1, reason: { kind: 'completed' } }),
    ];
    const v = sessionStats('s', events);
    expect(v.tokenUsage).toEqual({ uncachedInputTokens: 171, outputTokens: 18, cacheReadTokens: 0, cacheWriteTokens: 0 });
    expect(v.usageSamples).toBe(5);
    expect(v.replacedSamples).toBe(2);
    expect(sum(v.byStep)).toEqual(v.tokenUsage);
    expect(v.byStep.find((s) => s.step === 1)!.usage.uncachedInputTokens).toBe(121);
    expect(v.sessionStats).toMatchObject({ steps: 2, turns: 1 });
  });

  it('cache hit percent: half-up integer, minimal decimals below 100, exact 100 only without misses', () => {
    const b = (u: number, r: number, w = 0): Buckets => ({ uncachedInputTokens: u, outputTokens: 0, cacheReadTokens: r, cacheWriteTokens: w });
    expect(cacheHitPercent(b(0, 0))).toBeNull();
    expect(cacheHitPercent(b(0, 10))).toBe('100');
    expect(cacheHitPercent(b(1, 1))).toBe('50');
    expect(cacheHitPercent(b(2, 1))).toBe('33');
    expect(cacheHitPercent(b(1, 2))).toBe('67');
    expect(cacheHitPercent(b(1, 199))).toBe('99.5');
    expect(cacheHitPercent(b(1, 999_999))).toBe('99.9999');
    expect(cacheHitPercent(b(0, 3, 1))).toBe('75');
  });

  it('session-stats timings: llmMs, ttft (survives retries), decode, toolMs by callId, pending dropped at turn/end', () => {
    seq = 0;
    const e = [
      ev('turn/start', { turn: 1 }, {}, 0),
      ev('step/start', { turn: 1, step: 1 }, {}, 100),
      ev('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: '' } }, {}, 120),
      ev('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } }, {}, 150),
      ev('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'error', failure: { message: 'boom', code: 'X' } } } }, {}, 160),
      ev('llm/retry', { turn: 1, step: 1 }, {}, 170),
      ev('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'y' } }, {}, 200),
      ev('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'tool-calls' } } }, {}, 210),
      ev('assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }], source: { kind: 'model', provider: 'p', model: 'm' }, id: 'm1' }, usage: { inputTokens: 10, outputTokens: 7 } }, { surfaceOp: 'append', sourceEventSeqs: [6, 7] }, 300),
      ev('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' }, {}, 310),
      ev('tool/call', { turn: 1, step: 1, callId: 'c2', name: 'bash', arguments: '{}' }, {}, 315),
      ev('tool/result', { turn: 1, step: 1, message: { role: 'user', content: [{ type: 'tool-result', toolCallId: 'c1', content: [], isError: true }], source: { kind: 'tool', callId: 'c1' }, id: 'r1' } }, { surfaceOp: 'append', sourceEventSeqs: [9] }, 360),
      ev('step/end', { turn: 1, step: 1 }, {}, 400),
      ev('turn/end', { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } }, {}, 410),
    ];
    const v = sessionStats('s', e);
    expect(v.sessionStats).toEqual({ turns: 1, steps: 1, llmMs: 200, toolMs: 50, ttftMs: 50, ttftSteps: 1, decodeMs: 150, decodeTokens: 7 });
    expect(v.byTool).toEqual([expect.objectContaining({ name: 'bash', calls: 2, results: 1, errors: 1, errorRate: 1, unmatched: 1, totalMs: 50 })]);
    expect(v.retries).toEqual({ llmRetryEvents: 1, failedAttempts: 1 });
    expect(v.byStep[0]).toMatchObject({ attempts: 2, failedAttempts: 1, model: 'm', llmMs: 200, ttftMs: 50 });
    expect(v.turnEndReasons).toEqual({ 'aborted (user)': 1 });
    expect(v.byModel).toEqual([expect.objectContaining({ provider: 'p', model: 'm', steps: 1 })]);
  });
});

describe.skipIf(!HAVE_CORPUS)('stats over the corpus', () => {
  it(`syn.llm-retry: retries replace the failed attempt's usage ${HAVE_CORPUS ? '' : SKIP_REASON}`, async () => {
    const file = path.join(CORPUS, 'synthetic/root-zstd/--home-dsh-synthetic-project--/syn.llm-retry/session.jsonl.zstd');
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    const v = sessionStats('syn.llm-retry', r.events!, { storedEventCount: r.storedEventCount });
    expect(v.tokenUsage).toEqual({ uncachedInputTokens: 101, outputTokens: 15, cacheReadTokens: 0, cacheWriteTokens: 0 });
    expect(v.usageSamples).toBe(3);
    expect(v.replacedSamples).toBe(2);
    expect(v.contextPressure).toEqual({ pressureTokens: 101, contextWindow: 128000, percent: 0.1 });
    expect(v.retries).toEqual({ llmRetryEvents: 2, failedAttempts: 2 });
  });

  it('breakdowns always sum to the totals; toolMs equals the per-tool durations', async () => {
    let n = 0;
    for (const file of corpusArtifacts()) {
      const r = await inspectTarget(resolveTarget(file), { collect: true });
      if (r.error) continue;
      const v = sessionStats(r.meta!.id, r.events!, { storedEventCount: r.storedEventCount });
      expect(sum(v.byStep), file).toEqual(v.tokenUsage);
      expect(sum(v.byTurn), file).toEqual(v.tokenUsage);
      expect(sum(v.byModel), file).toEqual(v.tokenUsage);
      expect(v.byTool.reduce((a, t) => a + t.totalMs, 0), file).toBe(v.sessionStats.toolMs);
      expect(v.sessionStats.steps, file).toBe(r.events!.filter((e) => e.type === 'step/end').length);
      n++;
    }
    expect(n).toBeGreaterThan(250);
  });

  it('CLI: every corpus artifact exits 0, or 1 exactly where inspection fails', async () => {
    const failing = new Set(corpusCases().filter((c) => c.expected.inspection?.error).map((c) => c.artifact));
    for (const file of corpusArtifacts()) {
      const res = await runInProcess(['stats', file, '--json', '--by', 'turn', 'step', 'model', 'tool']);
      const r = await inspectTarget(resolveTarget(file), { collect: false });
      expect(res.code, `${file}: ${res.stderr}`).toBe(failing.has(file) || r.error ? 1 : 0);
    }
  });

  it('CLI (spawned): a root gives totals and a sortable per-session table; --explain states the rule', async () => {
    const root = path.join(CORPUS, 'synthetic/root-zstd');
    const res = await runCli(['stats', root, '--json', '--sort', 'output']);
    expect(res.code).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc.sessions).toHaveLength(13);
    const outs = doc.sessions.map((s: any) => s.stats.tokenUsage.outputTokens);
    expect(outs).toEqual([...outs].sort((a: number, b: number) => b - a));
    expect(doc.totals.tokenUsage.outputTokens).toBe(outs.reduce((a: number, b: number) => a + b, 0));
    const asc = await runCli(['stats', root, '--sort', 'id', '--color', 'never']);
    const ids = asc.stdout.split('\n').slice(1, 14).map((l) => l.split(/\s+/)[0]);
    expect(ids).toEqual([...ids].sort((a, b) => a!.localeCompare(b!)));
    const explain = await runCli(['stats', 'syn.llm-retry', '--root', root, '--explain', '--by', 'step']);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toContain('IMMEDIATELY PREVIOUS');
    expect(explain.stdout).toContain('by step');
    const damaged = await runCli(['stats', path.join(CORPUS, 'synthetic/damaged/seq-gap-raw/root-raw')]);
    expect(damaged.code).toBe(1);
  });
});

describe('stats on generated logs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-stats-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a generated root: per-session sums equal the root totals', async () => {
    for (const seed of [21, 22, 23]) {
      const opts = { seed, id: `gen-${seed}`, turns: 5, features: { 2: ['retry'], 3: ['compaction'] } } as const;
      await writeGeneratedArtifact(sessionPath(dir, generatedHeader(opts as never), 'zstd'), { ...(opts as never), encoding: 'zstd' });
    }
    const res = await runInProcess(['stats', dir, '--json']);
    expect(res.code, res.stderr).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc.sessions).toHaveLength(3);
    const input = doc.sessions.reduce((a: number, s: any) => a + s.stats.tokenUsage.uncachedInputTokens, 0);
    expect(doc.totals.tokenUsage.uncachedInputTokens).toBe(input);
    expect(doc.sessions.every((s: any) => s.stats.retries.failedAttempts >= 1)).toBe(true);
  });
});

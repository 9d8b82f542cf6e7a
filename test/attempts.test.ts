import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/log/types.js';
import { AttemptBoundaries } from '../src/views/attempts.js';
import { DispatchBuilder } from '../src/views/requests.js';
import { buildReplay } from '../src/views/replay.js';
import { sessionStats } from '../src/views/stats.js';
import { dispatchHeader } from '../src/check/relational.js';

/** A log from `[type, data]` pairs (seq = position). */
function log(...specs: [string, Record<string, unknown>][]): SessionEvent[] {
  return specs.map(([type, data], seq) => ({ type, seq, time: 1000 + seq, data, ...(type === 'assistant/message' ? { surfaceOp: 'append' as const, sourceEventSeqs: [] } : {}) }));
}
const chunk = (turn: unknown, step: unknown, c: Record<string, unknown> = { type: 'text-delta', index: 0, text: 'x' }): [string, Record<string, unknown>] => [
  'assistant/chunk',
  { turn, step, chunk: c },
];
const finish = (turn: number, step: number, kind = 'stop') => chunk(turn, step, { type: 'finish', reason: { kind } });
const ev = (type: string, data: Record<string, unknown> = {}): [string, Record<string, unknown>] => [type, data];

/** First-chunk seqs of the attempts each of the four users finds. */
function attemptsOf(events: SessionEvent[]) {
  const b = new DispatchBuilder();
  for (const e of events) b.apply(e);
  const requests = b.finish().requests.map((r) => r.firstChunkSeq);
  const replay = buildReplay('s', events)
    .attempts.filter((a) => a.firstChunkSeq !== null)
    .map((a) => a.firstChunkSeq);
  const stats = sessionStats('s', events).byStep.reduce((n, s) => n + s.attempts, 0);
  // No request/header in these logs: F3 counts every dispatch (first chunk of an attempt).
  const f3 = dispatchHeader(events)[0];
  const f3Count = f3 === undefined ? 0 : Number(/\((\d+) such/.exec(f3.message)?.[1] ?? 1);
  const boundaries = new AttemptBoundaries();
  const starts = events.filter((e) => boundaries.observe(e)?.starts).map((e) => e.seq);
  return { starts, requests, replay, stats, f3: f3Count, f3First: f3?.seq ?? null };
}

function expectAgreement(events: SessionEvent[], starts: number[]) {
  const got = attemptsOf(events);
  expect(got.starts).toEqual(starts);
  expect(got.requests).toEqual(starts);
  expect(got.replay).toEqual(starts);
  expect(got.stats).toBe(starts.length);
  expect(got.f3).toBe(starts.length);
  expect(got.f3First).toBe(starts[0] ?? null);
}

describe('attempt boundaries: one rule for request, replay, stats and check F3', () => {
  const open = [ev('turn/start', { turn: 1 }), ev('step/start', { turn: 1, step: 1 })] as const;

  it('a failed attempt and its retry are two attempts (split at the finish chunk)', () => {
    expectAgreement(log(...open, chunk(1, 1), finish(1, 1, 'error'), ev('llm/retry', { turn: 1, step: 1 }), chunk(1, 1), finish(1, 1)), [2, 5]);
  });

  it('a run without a finish ends at the assistant/message: later chunks of the step are a new attempt', () => {
    const events = log(...open, chunk(1, 1), chunk(1, 1), ev('assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [] } }), chunk(1, 1));
    events[4]!.sourceEventSeqs = [2, 3];
    expectAgreement(events, [2, 5]);
  });

  it('a chunk of another step ends the open attempt, also when the first step comes back', () => {
    expectAgreement(log(...open, chunk(1, 1), chunk(1, 2), chunk(1, 1)), [2, 3, 4]);
  });

  it('step/end and step/start end an unfinished attempt, even when the step number repeats', () => {
    expectAgreement(log(...open, chunk(1, 1), ev('step/end', { turn: 1, step: 1 }), ev('step/start', { turn: 1, step: 1 }), chunk(1, 1), finish(1, 1)), [2, 5]);
  });

  it('turn/end ends an unfinished attempt (a cancelled call)', () => {
    expectAgreement(log(...open, chunk(1, 1), ev('turn/end', { turn: 1, reason: { kind: 'aborted' } }), chunk(1, 1)), [2, 4]);
  });

  it('steps are compared as turn/step keys: 1 and "1" are one step', () => {
    expectAgreement(log(...open, chunk(1, 1), chunk('1', 1), finish(1, 1)), [2]);
  });
});

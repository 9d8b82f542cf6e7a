/**
 * Test-only builders for small DSH logs as raw JSONL text. The base log is
 * valid for every `dsh check` rule; tests mutate copies of it to break one
 * rule at a time. Nothing here is copied from the reference corpus.
 */
import { inspectSource } from '../../src/log/inspect.js';
import { MemorySource } from '../../src/physical/source.js';

export type Ev = { type: string; data: unknown; surfaceOp?: unknown; sourceEventSeqs?: unknown; ignorable?: true; [k: string]: unknown };

export interface Header {
  type?: string;
  version?: number;
  id?: string;
  createdAt?: number;
  cwd?: string;
  delegationDepth?: number;
  [k: string]: unknown;
}

export const HEADER: Header = { type: 'session', version: 0, id: 'x', createdAt: 1, cwd: '/w', delegationDepth: 0 };

export function headerLine(h: Header = {}): string {
  return JSON.stringify({ ...HEADER, ...h });
}

/** Number events 0.. (unless an event carries its own `seq`) and stamp `time`. */
export function sequence(events: readonly Ev[]): Record<string, unknown>[] {
  return events.map((e, i) => ({ type: e.type, seq: 'seq' in e ? e['seq'] : i, time: 1000 + i, ...Object.fromEntries(Object.entries(e).filter(([k]) => k !== 'type' && k !== 'seq')) }));
}

export function logText(events: readonly Ev[], header: Header = {}): string {
  return [headerLine(header), ...sequence(events).map((e) => JSON.stringify(e))].join('\n') + '\n';
}

const user = (id: string, text: string): Ev => ({ type: 'user/message', data: { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }, surfaceOp: 'append' });
const model = { kind: 'model', provider: 'p', model: 'm' };
const chunk = (turn: number, step: number, c: unknown): Ev => ({ type: 'assistant/chunk', data: { turn, step, chunk: c } });
const finish = (kind: string, extra: Record<string, unknown> = {}) => ({ type: 'finish', reason: { kind, ...extra } });
export const toolResultData = (turn: number, step: number, callId: string, id: string, text: string) => ({
  turn,
  step,
  message: { id, role: 'user', content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }], isError: false }], source: { kind: 'tool', callId } },
});

/**
 * The base log (31 events): turn 1 with a retried attempt, a tool round and a
 * second step; a standalone compaction between turns; turn 2.
 *  0 turn/start 1 · 1 step/start · 2 user/message · 3 request/header · 4 request/context
 *  5 chunk finish(error) · 6 llm/retry · 7 llm/retry-started · 8 chunk text · 9 chunk finish
 *  10 assistant/message(tool-call c1) · 11 tool/call c1 · 12 tool/result c1 · 13 todo/write · 14 step/end
 *  15 step/start 2 · 16 chunk finish · 17 assistant/message · 18 step/end · 19 turn/end 1
 *  20 compaction/start · 21 compaction/summary · 22 checkpoint user/message (replace 2..12) · 23 compaction/end
 *  24 turn/start 2 · 25 step/start · 26 user/message · 27 chunk finish · 28 assistant/message · 29 step/end · 30 turn/end 2
 */
export function baseEvents(): Ev[] {
  return [
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'step/start', data: { turn: 1, step: 1 } },
    user('u1', 'hi'),
    { type: 'request/header', data: { header: { config: { provider: 'p', model: 'm' }, system: 'sys' }, reason: 'initial' } },
    { type: 'request/context', data: { provider: 'p', model: 'm' } },
    chunk(1, 1, finish('error', { failure: { message: 'reset', code: 'TRANSPORT' } })),
    {
      type: 'llm/retry',
      data: { retryId: 'r1', turn: 1, step: 1, provider: 'p', mode: 'normal', maxRetries: 3, policyKey: 'k', retry: 1, delayMs: 10, failure: { message: 'reset', code: 'TRANSPORT' } },
    },
    { type: 'llm/retry-started', data: { retryId: 'r1', turn: 1, step: 1, retry: 1 } },
    chunk(1, 1, { type: 'text-delta', index: 0, text: 'ok' }),
    chunk(1, 1, finish('tool-calls')),
    {
      type: 'assistant/message',
      data: { turn: 1, step: 1, message: { id: 'a1', role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'read', arguments: '{}' }], source: model } },
      surfaceOp: 'append',
      sourceEventSeqs: [8, 9],
    },
    { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: '{}' } },
    { type: 'tool/result', data: toolResultData(1, 1, 'c1', 't1', 'data'), surfaceOp: 'append', sourceEventSeqs: [11] },
    { type: 'todo/write', data: { todos: [] } },
    { type: 'step/end', data: { turn: 1, step: 1 } },
    { type: 'step/start', data: { turn: 1, step: 2 } },
    chunk(1, 2, finish('stop')),
    { type: 'assistant/message', data: { turn: 1, step: 2, message: { id: 'a2', role: 'assistant', content: [{ type: 'text', text: 'done' }], source: model } }, surfaceOp: 'append', sourceEventSeqs: [16] },
    { type: 'step/end', data: { turn: 1, step: 2 } },
    { type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } },
    { type: 'compaction/start', data: { compactionId: 'k1', turn: null } },
    {
      type: 'compaction/summary',
      data: { compactionId: 'k1', summary: [{ type: 'text', text: 'sum' }], shadowedRange: { start: 2, end: 12 }, shadowedSeqs: [2, 10, 12], shadowedTokenCount: 10, provider: 'p', model: 'm' },
    },
    {
      type: 'user/message',
      data: { content: [{ type: 'text', text: 'checkpoint' }], source: { kind: 'plugin', plugin: 'compact', compactionId: 'k1' }, role: 'user', id: 'cp1' },
      surfaceOp: { op: 'replace', start: 2, end: 12 },
      sourceEventSeqs: [20, 21, 2, 10, 12],
    },
    { type: 'compaction/end', data: { compactionId: 'k1', turn: null } },
    { type: 'turn/start', data: { turn: 2 } },
    { type: 'step/start', data: { turn: 2, step: 1 } },
    user('u2', 'again'),
    chunk(2, 1, finish('stop')),
    { type: 'assistant/message', data: { turn: 2, step: 1, message: { id: 'a3', role: 'assistant', content: [{ type: 'text', text: 'ok' }], source: model } }, surfaceOp: 'append', sourceEventSeqs: [27] },
    { type: 'step/end', data: { turn: 2, step: 1 } },
    { type: 'turn/end', data: { turn: 2, reason: { kind: 'completed' } } },
  ];
}

/**
 * Turn 3 appended to the base (seqs 31..38): a tool round whose result is
 * tool/result seq 36 (call c9), then turn/end at 38.
 */
export function toolTurn(): Ev[] {
  return [
    { type: 'turn/start', data: { turn: 3 } },
    { type: 'step/start', data: { turn: 3, step: 1 } },
    chunk(3, 1, finish('tool-calls')),
    {
      type: 'assistant/message',
      data: { turn: 3, step: 1, message: { id: 'a9', role: 'assistant', content: [{ type: 'tool-call', id: 'c9', name: 'read', arguments: '{}' }], source: model } },
      surfaceOp: 'append',
      sourceEventSeqs: [33],
    },
    { type: 'tool/call', data: { turn: 3, step: 1, callId: 'c9', name: 'read', arguments: '{}' } },
    { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', 'long output'), surfaceOp: 'append', sourceEventSeqs: [35] },
    { type: 'step/end', data: { turn: 3, step: 1 } },
    { type: 'turn/end', data: { turn: 3, reason: { kind: 'completed' } } },
  ];
}

/** Inspect log text in memory, as a file would be. */
export async function inspectText(text: string | Buffer, name = 'session.jsonl') {
  return inspectSource(new MemorySource(name, Buffer.isBuffer(text) ? text : Buffer.from(text)), { collect: true });
}

/** Deep copy, so mutations never leak between tests. */
export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** Markup and URL text that must stay text wherever dsh renders log content. */
export const HOSTILE = '<script>alert(1)</script> </textarea> </script><!-- <img src=x onerror=alert(2)> https://evil.example/x \u2028 &amp;';

/** The base log with hostile text in a tool output (seq 12), a user message and the title. */
export function hostileLog(): string {
  const events: Ev[] = baseEvents();
  (events[12] as Ev).data = toolResultData(1, 1, 'c1', 't1', HOSTILE);
  const user = events[2] as Ev & { data: any };
  user.data.content[0].text = `hi ${HOSTILE}`;
  events.push({ type: 'session/title', data: { title: `</title>${HOSTILE}` } });
  return logText(events, { id: 'hostile-1' });
}

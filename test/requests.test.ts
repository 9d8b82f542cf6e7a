import { describe, expect, it } from 'vitest';
import { corpusCases, HAVE_CORPUS, SKIP_REASON, CORPUS } from './helpers/corpus.js';
import path from 'node:path';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import type { SessionEvent } from '../src/log/types.js';
import { canonicalHeader, foldRequestHeader, headerEquals, headerChanges } from '../src/views/header.js';
import {
  CORPUS_REQUEST_FIELDS,
  corpusEntry,
  deriveDispatches,
  DispatchBuilder,
  diffDispatches,
  messagesOf,
  resolveSeq,
  resolveStep,
  summarizeDispatch,
  type DispatchIndex,
} from '../src/views/requests.js';
import { checkToolPairing, deepseekBody, serializeMessages, BodyError } from '../src/views/deepseek-body.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const withRequests = () => corpusCases().filter((c) => Array.isArray(c.expected.requests));
const SYN = path.join(CORPUS, 'synthetic', 'root-zstd', '--home-dsh-synthetic-project--');

function compareIndex(idx: DispatchIndex, events: SessionEvent[], expected: any): number {
  const got = idx.requests.map((r) => corpusEntry(r, events));
  expect(got.map((r) => r['key'])).toEqual(expected.requests.map((r: any) => r.key));
  let compared = 0;
  for (const [i, want] of (expected.requests as any[]).entries()) {
    // every field DSH's oracle wrote, none missing, values (and key order) identical
    expect(Object.keys(want).sort()).toEqual([...CORPUS_REQUEST_FIELDS, 'messages'].sort());
    expect(JSON.stringify(got[i])).toBe(JSON.stringify(want));
    compared += 1;
  }
  expect(idx.steps).toEqual(expected.steps);
  expect(idx.requestIndexByFirstChunkSeq).toEqual(expected.requestIndexByFirstChunkSeq);
  expect(idx.requestIndexesByStep).toEqual(expected.requestIndexesByStep);
  return compared;
}

describe('request headers (format §7.1-7.2)', () => {
  const cfg = { provider: 'p', model: 'm' };
  it('canonicalHeader drops empty system/tools, unflagged adapterDefaults and unknown keys', () => {
    expect(canonicalHeader({ config: cfg, system: '', tools: [], adapterDefaults: {}, messagePrefix: 'x' })).toEqual({ config: cfg });
    expect(canonicalHeader({ config: cfg, adapterDefaults: { maxTokens: true }, system: 's', tools: [{ name: 't' }] })).toEqual({
      config: cfg,
      adapterDefaults: { maxTokens: true },
      system: 's',
      tools: [{ name: 't' }],
    });
    expect(Object.keys(canonicalHeader({ tools: [1], system: 's', config: cfg, adapterDefaults: { reasoningEffort: true } }))).toEqual(['config', 'adapterDefaults', 'system', 'tools']);
    // recorded snapshot placeholders are strings; DSH keeps a non-empty one
    expect(canonicalHeader({ config: cfg, tools: '{{tools}}' } as any).tools).toBe('{{tools}}');
  });
  it('headerEquals compares config, adapter flags, system and tools by JSON text', () => {
    const a = canonicalHeader({ config: { ...cfg, stop: ['x'] }, system: 's', tools: [{ name: 't', description: 'd', parameters: {} }] });
    expect(headerEquals(a, canonicalHeader({ config: { ...cfg, stop: ['x'] }, system: 's', tools: [{ name: 't', description: 'd', parameters: {} }] }))).toBe(true);
    expect(headerEquals(a, { ...a, config: { ...cfg, stop: ['y'] } })).toBe(false);
    expect(headerEquals(a, { ...a, config: { ...cfg } })).toBe(false);
    expect(headerEquals({ config: cfg }, { config: cfg, tools: [] })).toBe(true);
    expect(headerEquals({ config: cfg }, { config: cfg, adapterDefaults: { maxTokens: true } })).toBe(false);
    expect(headerEquals(a, { ...a, tools: [{ description: 'd', name: 't', parameters: {} }] })).toBe(false);
    expect(headerChanges(a, { ...a, config: { ...cfg, model: 'n', stop: ['x'] } }).map((c) => c.field)).toEqual(['config.model']);
  });
  it('foldRequestHeader is last-wins, continues from `from`', () => {
    const ev = (seq: number, header: unknown) => ({ type: 'request/header', seq, time: 0, data: { header, reason: 'change' } });
    expect(foldRequestHeader([])).toBeUndefined();
    expect(foldRequestHeader([], { config: cfg })).toEqual({ config: cfg });
    expect(foldRequestHeader([ev(0, { config: cfg, system: 'a' }), ev(1, { config: cfg, system: '' })])).toEqual({ config: cfg });
  });
  it.skipIf(!HAVE_CORPUS)('folded over a whole log equals DSH derived.requestHeader', () => {
    let n = 0;
    for (const c of corpusCases()) {
      if (!c.expected.derived || !c.expected.inspection?.events) continue;
      expect(foldRequestHeader(c.expected.inspection.events) ?? null).toEqual(c.expected.derived.requestHeader ?? null);
      n += 1;
    }
    expect(n).toBeGreaterThan(200);
  });
});

describe.skipIf(!HAVE_CORPUS)('dispatch reconstruction vs the corpus requests[]', () => {
  it('from expected.inspection.events (isolated from the reader)', () => {
    let entries = 0;
    let logs = 0;
    for (const c of withRequests()) {
      const events = c.expected.inspection.events as SessionEvent[];
      entries += compareIndex(deriveDispatches(events), events, c.expected);
      logs += 1;
    }
    console.info(`requests.test: ${entries} requests[] entries in ${logs} logs match (inspection.events)`);
    expect(logs).toBe(271);
    expect(entries).toBe(644);
  });

  it('from dsh\'s own reader over every artifact (end to end)', async () => {
    let entries = 0;
    let logs = 0;
    for (const c of withRequests()) {
      const r = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      expect(r.error, c.name).toBeUndefined();
      const events = r.events as SessionEvent[];
      entries += compareIndex(deriveDispatches(events), events, c.expected);
      logs += 1;
    }
    console.info(`requests.test: ${entries} requests[] entries in ${logs} artifacts match (dsh reader)`);
    expect(entries).toBe(644);
  });

  it('lazy mode (what the CLI uses) materializes the same entries', () => {
    let n = 0;
    for (const c of withRequests()) {
      const events = c.expected.inspection.events as SessionEvent[];
      const lazy = deriveDispatches(events, { lazy: events });
      n += compareIndex(lazy, events, c.expected);
      for (const [i, r] of lazy.requests.entries()) expect(r.messageCount).toBe(c.expected.requests[i].messageIds.length);
    }
    expect(n).toBe(644);
  });

  it('keepMessages keeps exactly what messagesOf re-reads; incremental apply equals batch', () => {
    for (const c of withRequests().slice(0, 60)) {
      const events = c.expected.inspection.events as SessionEvent[];
      const kept = deriveDispatches(events, { keepMessages: true });
      const b = new DispatchBuilder({ keepMessages: (e) => e.index % 2 === 0 });
      for (const e of events) b.apply(e);
      const some = b.finish();
      for (const [i, r] of kept.requests.entries()) {
        expect(r.messages).toEqual(c.expected.requests[i].messages);
        expect(some.requests[i]?.messages === undefined).toBe(i % 2 === 1);
        expect(messagesOf(some.requests[i]!, events)).toEqual(r.messages);
      }
    }
  });

  it('logs DSH refuses have no requests[] (nothing to reconstruct)', () => {
    const refused = corpusCases().filter((c) => !Array.isArray(c.expected.requests));
    expect(refused.length).toBe(9);
    for (const c of refused) expect(c.expected.inspection.error).toBeDefined();
  });
});

describe.skipIf(!HAVE_CORPUS)('seq → dispatch mapping, list, diff', () => {
  const load = async (name: string) => {
    const r = await inspectTarget(resolveTarget(path.join(SYN, name, 'session.jsonl.zstd')), { collect: true });
    const events = r.events as SessionEvent[];
    return { events, idx: deriveDispatches(events) };
  };

  it('retry scenario: failed attempts are dispatches; seqs map by the documented rule', async () => {
    const { events, idx } = await load('syn.llm-retry');
    expect(idx.requests.map((r) => r.key)).toEqual(['1/1#0', '1/1#1', '1/1#2']);
    expect(idx.requests.map((r) => (r.finish as any).kind)).toEqual(['error', 'error', 'stop']);
    expect(resolveSeq(idx, 5, events)).toMatchObject({ ok: true, index: 0, via: 'first-chunk' });
    expect(resolveSeq(idx, 6, events)).toMatchObject({ ok: true, index: 0, via: 'chunk' });
    expect(resolveSeq(idx, 19, events)).toMatchObject({ ok: true, index: 2, via: 'assistant/message' });
    const none = resolveSeq(idx, 8, events);
    expect(none.ok).toBe(false);
    if (!none.ok) {
      expect(none.reason).toContain('llm/retry');
      expect(none.before?.key).toBe('1/1#0');
      expect(none.after?.key).toBe('1/1#1');
    }
    expect(resolveSeq(idx, 500, events)).toMatchObject({ ok: false });
    expect(resolveStep(idx, '1/1')).toMatchObject({ ok: true, index: 2 });
    expect(resolveStep(idx, '1/1#1')).toMatchObject({ ok: true, index: 1 });
    expect(resolveStep(idx, '1/1#7')).toMatchObject({ ok: false });
    expect(resolveStep(idx, 'x')).toMatchObject({ ok: false });
    const rows = idx.requests.map((r, i) => summarizeDispatch(r, i ? idx.requests[i - 1]! : null));
    expect(rows.map((r) => r.headerChanges)).toEqual([['initial'], [], []]);
    expect(rows[2]!.usageFrom).toBe('assistant/message');
    expect(rows[1]!.usageFrom).toBe('usage chunk');
    expect(rows[0]!.durationMs).toBe(events[7]!.time - events[5]!.time);
  });

  it('tool/call and tool/result map to the dispatch that requested the call', async () => {
    const { events, idx } = await load('syn.compaction-double');
    const call = events.find((e) => e.type === 'tool/call')!;
    const result = events.find((e) => e.type === 'tool/result')!;
    const owner = resolveSeq(idx, call.seq, events);
    expect(owner).toMatchObject({ ok: true, via: 'tool/call' });
    expect(resolveSeq(idx, result.seq, events)).toMatchObject({ ok: true, via: 'tool/result', index: (owner as any).index });
    const summary = events.find((e) => e.type === 'compaction/summary')!;
    const r = resolveSeq(idx, summary.seq, events);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('auxiliary');
  });

  it('diff after compaction: shadowed messages, the replacement, transient answers', async () => {
    const { events, idx } = await load('syn.compaction-double');
    const last = idx.requests[idx.requests.length - 1]!;
    const d = diffDispatches(idx.requests[idx.requests.length - 2]!, last, events);
    expect(d.to).toBe(last.key);
    expect(d.header.changed).toBe(false);
    const replacement = d.messages.added.find((a) => a.replace);
    expect(replacement).toBeDefined();
    expect(d.messages.removed.length).toBeGreaterThan(0);
    for (const r of d.messages.removed) expect(r.shadowedBy).toBe(replacement!.seq);
    expect(d.messages.transient.map((t) => t.type)).toContain('assistant/message');
    const first = diffDispatches(null, idx.requests[0]!, events);
    expect(first.from).toBeNull();
    expect(first.header.changes.map((c) => c.field)).toEqual(['header']);
    expect(first.messages.added.length).toBe(idx.requests[0]!.surfaceNodes.length);
  });

  it('header changes across steps are reported field by field', async () => {
    const { idx } = await load('syn.headers-multistep');
    const rows = idx.requests.map((r, i) => summarizeDispatch(r, i ? idx.requests[i - 1]! : null));
    expect(rows.some((r) => r.headerChanges.length > 0 && r.headerChanges[0] !== 'initial')).toBe(true);
  });
});

describe('scale', () => {
  it('one pass over a long synthetic log; lazy mode stores no per-dispatch surface copies', () => {
    const events: SessionEvent[] = [];
    const push = (type: string, data: unknown, extra: Partial<SessionEvent> = {}) => events.push({ type, seq: events.length, time: events.length, data, ...extra } as SessionEvent);
    push('request/header', { header: { config: { provider: 'deepseek-official', model: 'm' } }, reason: 'initial' });
    const steps = 3000;
    for (let t = 1; t <= steps; t++) {
      push('turn/start', { turn: t });
      push('step/start', { turn: t, step: 1 });
      push('user/message', { id: `u${t}`, role: 'user', content: [{ type: 'text', text: 'x'.repeat(200) }], source: { kind: 'user' } }, { surfaceOp: 'append' });
      const first = events.length;
      push('assistant/chunk', { turn: t, step: 1, chunk: { type: 'text-delta', index: 0, text: 'ok' } });
      push('assistant/chunk', { turn: t, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } });
      push('assistant/message', { turn: t, step: 1, message: { id: `a${t}`, role: 'assistant', content: [{ type: 'text', text: 'ok' }], source: { kind: 'model' } } }, { surfaceOp: 'append', sourceEventSeqs: [first, first + 1] });
      push('step/end', { turn: t, step: 1 });
      push('turn/end', { turn: t, reason: { kind: 'completed' } });
    }
    const idx = deriveDispatches(events, { lazy: events });
    expect(idx.requests.length).toBe(steps);
    expect(idx.requests[steps - 1]!.messageCount).toBe(2 * steps - 1);
    // materialized on demand, identical to the eager computation
    const eager = deriveDispatches(events.slice(0, 8 * 50 + 1));
    const lazy = deriveDispatches(events.slice(0, 8 * 50 + 1), { lazy: events });
    expect(JSON.stringify(lazy.requests.map((r) => corpusEntry(r, events)))).toBe(JSON.stringify(eager.requests.map((r) => corpusEntry(r, events))));
    expect(idx.requests[steps - 1]!.surfaceNodes.length).toBe(2 * steps - 1);
  });
});

describe('DeepSeek body (adapter serializeRequest facts)', () => {
  it('maps roles, reasoning, tool calls, tool results, system, images and options', () => {
    const messages = [
      { id: 'u', role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], source: { kind: 'user' } },
      {
        id: 'a',
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'think' },
          { type: 'tool-call', id: 'c1', name: 'bash', arguments: '{"command":"ls"}' },
          { type: 'tool-call', id: 'c2', name: 'read', arguments: '{}' },
        ],
        source: { kind: 'model', provider: 'deepseek-official', model: 'm' },
      },
      { id: 't1', role: 'user', content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'out' }] }], source: { kind: 'tool', callId: 'c1' } },
      { id: 't2', role: 'user', content: [{ type: 'tool-result', toolCallId: 'c2', content: [] }], source: { kind: 'tool', callId: 'c2' } },
      { id: 'a2', role: 'assistant', content: [{ type: 'reasoning', text: 'only thinking' }], source: { kind: 'model' } },
      { id: 's', role: 'system', content: [{ type: 'text', text: 'sys' }], source: { kind: 'plugin' } },
      { id: 'i', role: 'user', content: [{ type: 'image', attachment: { attachmentId: 'sha256:0123456789abcdef', mediaType: 'image/png' } }], source: { kind: 'user' } },
    ];
    const header = {
      config: { provider: 'deepseek-official', model: 'deepseek-v4-pro', reasoningEffort: 'high', maxTokens: 100, temperature: 0.2, stop: ['X'] },
      adapterDefaults: { maxTokens: true as const },
      system: 'S',
      tools: [{ name: 'bash', description: 'Run', parameters: { type: 'object' } }],
    };
    const { body, notes } = deepseekBody(header as any, messages);
    expect(Object.keys(body)).toEqual(['model', 'messages', 'stream', 'stream_options', 'thinking', 'reasoning_effort', 'tools', 'temperature', 'max_tokens', 'stop']);
    expect(body.thinking).toEqual({ type: 'enabled' });
    expect(body.reasoning_effort).toBe('high');
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'bash', description: 'Run', parameters: { type: 'object' } } }]);
    expect(body.messages).toEqual([
      { role: 'system', content: 'S' },
      { role: 'user', content: 'ab' },
      {
        role: 'assistant',
        content: '',
        reasoning_content: 'think',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
          { id: 'c2', type: 'function', function: { name: 'read', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'out' },
      { role: 'tool', tool_call_id: 'c2', content: '(no output)' },
      { role: 'assistant', content: '', reasoning_content: 'only thinking' },
      { role: 'system', content: 'sys' },
      { role: 'user', content: '[image omitted because this model accepts text only; attachment sha256:01234567]' },
    ]);
    expect(notes.some((n) => n.includes('image'))).toBe(true);
    expect(checkToolPairing(body)).toEqual([]);
    expect(deepseekBody({ config: { provider: 'deepseek-official', model: 'm', reasoningEffort: 'off' } }, []).body.thinking).toEqual({ type: 'disabled' });
    expect(() => deepseekBody(null, [])).toThrow(BodyError);
    // a mixed user message: text first, then its tool results
    expect(serializeMessages([{ role: 'user', content: [{ type: 'tool-result', toolCallId: 'x', content: [{ type: 'text', text: 'r' }] }, { type: 'text', text: 'hi' }] }])).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'tool', tool_call_id: 'x', content: 'r' },
    ]);
  });

  it.skipIf(!HAVE_CORPUS)('every corpus dispatch with a header maps: every message, tool_call ids pair', () => {
    let bodies = 0;
    for (const c of withRequests()) {
      const events = c.expected.inspection.events as SessionEvent[];
      for (const r of deriveDispatches(events).requests) {
        const messages = messagesOf(r, events) as any[];
        if (!r.header) {
          expect(() => deepseekBody(r.header, messages)).toThrow(BodyError);
          continue;
        }
        const { body } = deepseekBody(r.header, messages);
        bodies += 1;
        expect(checkToolPairing(body), `${c.name} ${r.key}`).toEqual([]);
        // every DSH message yields at least one wire message, roles are the four DeepSeek roles
        let expectedWire = typeof r.header.system === 'string' || r.header.system !== undefined ? 1 : 0;
        for (const m of messages) {
          const results = (m.content as any[]).filter((b) => b.type === 'tool-result').length;
          const text = (m.content as any[]).some((b) => (b.type === 'text' && b.text.length > 0) || b.type === 'image');
          expectedWire += m.role === 'user' ? results + (text || results === 0 ? 1 : 0) : 1;
        }
        expect(body.messages.length).toBe(expectedWire);
        for (const w of body.messages) expect(['system', 'user', 'assistant', 'tool']).toContain(w['role']);
        expect(body.model).toBe(r.header.config.model);
        expect(body.stream).toBe(true);
      }
    }
    console.info(`requests.test: ${bodies} DeepSeek bodies built and checked`);
    expect(bodies).toBe(638);
  });
});

describe('call id digests (the dispatch index saves tool-call ids only as these)', () => {
  it('are the first 16 bytes of the sha256 of the UTF-8 id, as latin1 (saved indexes stay readable)', async () => {
    const { callIdDigest } = await import('../src/views/requests.js');
    const { createHash } = await import('node:crypto');
    for (const id of ['call_0', 'toolu_01ABCdefGHI', 'çall-ü-✓', '\ud800lone', 'x\udfff', '']) {
      expect(callIdDigest(id)).toBe(createHash('sha256').update(id, 'utf8').digest().toString('latin1', 0, 16));
      expect(callIdDigest(id)).toHaveLength(16);
    }
  });
});

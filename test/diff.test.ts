/**
 * `dsh diff` on generated pairs with known differences, built with the
 * project's own generator and writer: identical copies in both encodings, a
 * rerun with fresh ids and clocks, a rerun with a changed system prompt, a
 * rerun where one tool result differs, a fork that took another tool path, a
 * compaction present on one side only, and a session against its `dsh redact`
 * copy. Each asserts the exact first divergence, the entered/left sets and the
 * header changes, through the library and the CLI.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectSession } from '../tools/generate.js';
import { writeArtifactFile } from '../src/log/writer.js';
import type { Encoding, SessionEvent, SessionHeader } from '../src/log/types.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { errorDocument } from '../src/core/errors.js';
import { loadedFromInspection } from '../src/views/messages.js';
import { deriveDispatches } from '../src/views/requests.js';
import { diffSequences, diffSessions, diffSide, unifiedDiff, type SessionDiff } from '../src/views/diff.js';
import { planFork, childEvents } from '../src/views/fork.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { openSession } from '../src/index.js';
import { formatAtto, loadPriceTable, priceUsage } from '../src/views/prices.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-diff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

function base(id = 'run-a') {
  return collectSession({ seed: 11, id, turns: 4, randomFeatures: false, toolOutputBytes: [300, 900] });
}

/** Batches cut after every turn/end (one zstd frame each). */
function batches(events: readonly SessionEvent[]): SessionEvent[][] {
  const out: SessionEvent[][] = [[]];
  for (const e of events) {
    (out[out.length - 1] as SessionEvent[]).push(e);
    if (e.type === 'turn/end' || e.type === 'request/header') out.push([]);
  }
  return out.filter((b) => b.length > 0);
}

let counter = 0;
async function write(header: SessionHeader, events: readonly SessionEvent[], encoding: Encoding = 'zstd'): Promise<string> {
  const file = path.join(dir, `s${++counter}`, encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl');
  await writeArtifactFile(file, { header, encoding, batches: batches(events) });
  return file;
}

/** A rerun of the same work: fresh message and call ids, clocks an hour later, another session id. */
function rerun(events: readonly SessionEvent[]): SessionEvent[] {
  return events.map((e) => {
    const text = JSON.stringify(e)
      .replace(/call_([0-9a-f]{24})/g, (_m, h: string) => `call_${[...h].reverse().join('')}`)
      .replace(/"([0-9a-f]{8})-([0-9a-f]{4})-4/g, (_m, a: string, b: string) => `"${[...a].reverse().join('')}-${b}-4`);
    const out = JSON.parse(text) as SessionEvent;
    out.time += 3_600_000;
    return out;
  });
}

/** Shift every seq reference at or after `from` by `by` (inserting events). */
function shiftSeqs(e: SessionEvent, from: number, by: number): SessionEvent {
  const s = (x: number) => (x >= from ? x + by : x);
  const out = clone(e);
  out.seq = s(out.seq);
  if (Array.isArray(out.sourceEventSeqs)) out.sourceEventSeqs = out.sourceEventSeqs.map(s);
  if (out.surfaceOp && typeof out.surfaceOp === 'object') out.surfaceOp = { ...out.surfaceOp, start: s(out.surfaceOp.start), end: s(out.surfaceOp.end) };
  if (Array.isArray(out.data?.messageSeqs)) out.data.messageSeqs = out.data.messageSeqs.map(s);
  return out;
}

async function lib(a: string, b: string): Promise<SessionDiff> {
  const load = async (f: string) => {
    const r = await inspectTarget(resolveTarget(f), { collect: true, keepReplacements: true });
    expect(r.error, f).toBeUndefined();
    return diffSide(loadedFromInspection(r));
  };
  return diffSessions(await load(a), await load(b));
}

async function cliJson(a: string, b: string): Promise<SessionDiff> {
  const r = await runInProcess(['diff', a, b, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as SessionDiff;
}

const dispatchesOf = (events: SessionEvent[]) => deriveDispatches(events, { lazy: events }).requests;
const hunkLines = (d: SessionDiff) => [
  ...d.surface.hunks,
  ...d.transcript.hunks,
  ...d.dispatches.divergent.flatMap((p) => [...p.messages.modified.flatMap((m) => m.diff.hunks), ...(p.output?.hunks ?? []), ...(p.header.system?.hunks ?? [])]),
].flatMap((h) => h.lines);

describe('line diff', () => {
  it('edit scripts are minimal (LCS length) and rebuild both sides, on seeded random sequences', () => {
    let s = 7;
    const rnd = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    for (let t = 0; t < 300; t++) {
      const a = Array.from({ length: Math.floor(rnd() * 25) }, () => 'abcd'[Math.floor(rnd() * 4)] as string);
      const b = Array.from({ length: Math.floor(rnd() * 25) }, () => 'abcd'[Math.floor(rnd() * 4)] as string);
      const edits = diffSequences(a, b);
      expect(edits.filter((e) => e.op !== '+').map((e) => a[e.a as number])).toEqual(a);
      expect(edits.filter((e) => e.op !== '-').map((e) => b[e.b as number])).toEqual(b);
      for (const e of edits) if (e.op === '=') expect(a[e.a as number]).toBe(b[e.b as number]);
      const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
      for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
      expect(edits.filter((e) => e.op === '=').length).toBe(lcs[0]![0]);
    }
  });

  it('past the edit budget the script stays valid (delete + insert of the middle), in bounded time', () => {
    const a = Array.from({ length: 60_000 }, (_, i) => `a${i}`);
    const b = Array.from({ length: 60_000 }, (_, i) => (i % 2 ? `a${i}` : `b${i}`));
    const t0 = Date.now();
    const edits = diffSequences(a, b);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(edits.filter((e) => e.op !== '+').map((e) => a[e.a as number])).toEqual(a);
    expect(edits.filter((e) => e.op !== '-').map((e) => b[e.b as number])).toEqual(b);
  });

  it('unified hunks use git numbering and context 3', () => {
    const L = (xs: string[]) => xs.map((text, i) => ({ text, seq: i }));
    const a = L(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    const b = L(['1', '2', '3', '4', '5', 'six', '7', '8', '9', '10', '11']);
    const d = unifiedDiff(a, b);
    expect(d.hunks.map((h) => [h.aStart, h.aCount, h.bStart, h.bCount])).toEqual([[3, 8, 3, 9]]);
    expect(d.hunks[0]!.lines.map((l) => l.op + l.text)).toEqual([' 3', ' 4', ' 5', '-6', '+six', ' 7', ' 8', ' 9', ' 10', '+11']);
    expect(unifiedDiff(a, a).hunks).toEqual([]);
    expect(unifiedDiff([], L(['x'])).hunks.map((h) => [h.aStart, h.aCount, h.bStart, h.bCount])).toEqual([[0, 0, 1, 1]]);
  });
});

describe('dsh diff on generated pairs with known differences', () => {
  it('identical copies in both encodings: no difference, exit 0 with --exit-code', async () => {
    const s = base();
    const z = await write(s.header, s.events, 'zstd');
    const raw = await write(s.header, s.events, 'none');
    for (const [a, b] of [
      [z, raw],
      [raw, z],
      [z, z],
    ] as const) {
      const d = await cliJson(a, b);
      expect(d).toEqual(JSON.parse(JSON.stringify(await lib(a, b))));
      expect(d.relation).toBe('same-session');
      expect(d.identical).toBe(true);
      expect(d.sharedPrefix).toMatchObject({ kind: 'equivalent-run', events: s.events.length, identical: true, stopsAt: { a: null, b: null } });
      expect(d.dispatches.firstDivergent).toBeNull();
      expect(d.dispatches.divergent).toEqual([]);
      expect(d.dispatches.pairs.length).toBe(dispatchesOf(s.events).length);
      expect(d.surface.hunks).toEqual([]);
      expect(d.transcript.hunks).toEqual([]);
      const code = await runCli(['diff', a, b, '--exit-code']);
      expect(code.code, code.stderr).toBe(0);
      expect(code.stdout).toContain('identical events');
    }
  });

  it('a rerun with fresh ids and clocks is equivalent (no difference), though not identical', async () => {
    const s = base();
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b', createdAt: s.header.createdAt + 3_600_000 }, rerun(s.events));
    const d = await cliJson(a, b);
    expect(d.relation).toBe('unrelated');
    expect(d.equivalent).toBe(true);
    expect(d.identical).toBe(false);
    expect(d.sharedPrefix).toMatchObject({ events: s.events.length, identical: false, firstInexactSeq: 0 });
    expect(d.dispatches.firstDivergent).toBeNull();
    expect(d.surface.hunks).toEqual([]);
    expect((await runInProcess(['diff', a, b, '--exit-code'])).code).toBe(0);
  });

  it('a rerun with a changed system prompt: first divergence is the first dispatch, header only', async () => {
    const s = base();
    const events = rerun(s.events);
    for (const e of events) if (e.type === 'request/header') e.data.header.system += '\n- Always answer in French.';
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b' }, events);
    const d = await cliJson(a, b);
    // The public API gives the same document.
    const sa = await openSession(a);
    const sb = await openSession(b);
    if (!sa.ok || !sb.ok) throw new Error('open failed');
    const api = await sa.value.diff(sb.value);
    expect(api.ok && JSON.parse(JSON.stringify(api.value))).toEqual(d);
    const reqs0 = dispatchesOf(s.events);
    const two = await sa.value.diffRequests({ step: reqs0[0]!.key }, reqs0[2]!.firstChunkSeq);
    const twoCli = await runInProcess(['diff', a, reqs0[0]!.key, String(reqs0[2]!.firstChunkSeq), '--json']);
    expect(two.ok && JSON.parse(JSON.stringify(two.value))).toEqual(JSON.parse(twoCli.stdout));
    const back = await sa.value.diffRequests(reqs0[2]!.firstChunkSeq, reqs0[0]!.firstChunkSeq);
    expect(back.ok ? null : back.error.class).toBe('UsageError');
    const firstHeader = s.events.find((e) => e.type === 'request/header')!.seq;
    expect(d.sharedPrefix).toMatchObject({ kind: 'equivalent-run', events: firstHeader, stopsAt: { a: { seq: firstHeader, type: 'request/header' }, b: { seq: firstHeader, type: 'request/header' } } });
    expect(d.dispatches.alignedBy).toBe('structure');
    expect(d.dispatches.firstDivergent).toBe(0);
    const n = dispatchesOf(s.events).length;
    expect(d.dispatches.divergent.length).toBe(n);
    for (const p of d.dispatches.divergent) {
      expect(p.a!.key).toBe(p.b!.key);
      expect(p.differs).toEqual(['header']);
      expect(p.header.changes.map((c) => c.field)).toEqual(['system']);
      expect(p.messages.left).toEqual([]);
      expect(p.messages.entered).toEqual([]);
      expect(p.header.system!.added).toBe(1);
      expect(p.header.system!.removed).toBe(0);
      expect(p.header.system!.hunks[0]!.lines.filter((l) => l.op !== ' ').map((l) => l.op + l.text)).toEqual(['+- Always answer in French.']);
    }
    expect(d.dispatches.divergent[0]!.a!.key).toBe('1/1#0');
    expect(d.surface.hunks).toEqual([]);
    expect(d.transcript.hunks).toEqual([]);
    const text = await runInProcess(['diff', a, b, '--color', 'never']);
    expect(text.stdout).toContain('first divergent: 1/1#0 ↔ 1/1#0 (header)');
    expect(text.stdout).toContain('\n      +- Always answer in French.');
    expect(text.stdout.match(/\+- Always answer in French\./g)!.length).toBe(1);
    expect((await runInProcess(['diff', a, b, '--exit-code'])).code).toBe(1);
  });

  it('a rerun with a tool added, one removed and a config change: tools[...] added/removed and config fields', async () => {
    const s = base();
    const events = rerun(s.events);
    for (const e of events) {
      if (e.type !== 'request/header') continue;
      const h = e.data.header;
      h.tools = h.tools.filter((t: any) => t.name !== 'grep');
      h.tools.push({ name: 'web_search', description: 'Search the web.', parameters: { type: 'object', properties: {} } });
      h.config.temperature = 0.2;
    }
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b' }, events);
    const d = await cliJson(a, b);
    expect(d.dispatches.firstDivergent).toBe(0);
    const p = d.dispatches.divergent[0]!;
    expect(p.differs).toEqual(['header']);
    expect(p.header.changes).toEqual([
      { field: 'config.temperature', after: 0.2 },
      { field: 'tools[web_search]', after: 'added' },
      { field: 'tools[grep]', before: 'present', after: 'removed' },
    ]);
    expect(p.header.system).toBeNull();
    const text = await runInProcess(['diff', a, b, '--color', 'never']);
    expect(text.stdout).toMatch(/tools\[web_search\] +added/);
    expect(text.stdout).toMatch(/tools\[grep\] +removed/);
  });

  it('a rerun where one tool result differs: the dispatch that made the call diverges, the next one sees the changed result', async () => {
    const s = base();
    const events = clone(s.events);
    const result = events.find((e) => e.type === 'tool/result')!;
    const block = result.data.message.content[0];
    const original = block.content[0].text as string;
    const lines = original.split('\n');
    const oldLine = lines[1]!;
    lines[1] = '2\tDIFFERENT OUTPUT';
    block.content[0].text = lines.join('\n');
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b' }, events);
    const d = await cliJson(a, b);
    expect(d.sharedPrefix.events).toBe(result.seq);
    const reqs = dispatchesOf(s.events);
    const caller = reqs.find((r) => {
      const m = s.events[r.assistantMessageSeq ?? -1];
      return m?.data.message.content.some((x: any) => x.type === 'tool-call' && x.id === block.toolCallId);
    })!;
    const first = d.dispatches.divergent[0]!;
    expect(d.dispatches.pairs[d.dispatches.firstDivergent!]!.a).toBe(caller.key);
    expect(first.a!.key).toBe(caller.key);
    expect(first.differs).toEqual(['tool-outcomes']);
    expect(first.messages.left).toEqual([]);
    expect(first.messages.entered).toEqual([]);
    const next = d.dispatches.divergent[1]!;
    expect(next.a!.key).toBe(reqs[caller.index + 1]!.key);
    expect(next.differs).toEqual(['messages']);
    expect(next.messages.left.map((m) => m.seq)).toEqual([result.seq]);
    expect(next.messages.entered.map((m) => m.seq)).toEqual([result.seq]);
    expect(next.messages.modified[0]!.diff.hunks.flatMap((h) => h.lines).filter((l) => l.op !== ' ').map((l) => l.op + l.text)).toEqual([`-  ${oldLine}`, '+  2\tDIFFERENT OUTPUT']);
    expect(next.header.changes).toEqual([]);
  });

  it('a fork that took another tool path: seed identical, first divergence at the first tool choice after it', async () => {
    const s = base('parent');
    const parentFile = await write(s.header, s.events);
    const turn1End = s.events.find((e) => e.type === 'turn/end')!.seq;
    const plan = planFork(s.header, s.events, { atSeq: turn1End, childId: 'child', createdAt: s.header.createdAt + 10 });
    const seed = plan.seedLength;
    const tail = s.events.slice(seed).map((e) => shiftSeqs(e, seed, 1));
    const child = [...childEvents(plan, s.events), ...tail];
    // The first assistant message after the seed that calls a tool: call another tool with other arguments.
    const msg = child.find((e) => e.seq > seed && e.type === 'assistant/message' && e.data.message.content.some((b: any) => b.type === 'tool-call'))!;
    const call = msg.data.message.content.find((b: any) => b.type === 'tool-call');
    const name = call.name === 'list_dir' ? 'grep' : 'list_dir';
    const args = JSON.stringify({ path: 'elsewhere' });
    call.name = name;
    call.arguments = args;
    let firstDelta = true;
    for (const e of child) {
      const c = e.data?.chunk;
      if (e.type === 'assistant/chunk' && c?.type === 'tool-call-delta' && c.id === call.id) {
        if (firstDelta) Object.assign(c, { name, argumentsDelta: args });
        else c.argumentsDelta = '';
        firstDelta = false;
      }
      if (e.type === 'assistant/chunk' && c?.type === 'block-end' && c.block?.id === call.id) Object.assign(c.block, { name, arguments: args });
      if (e.type === 'tool/call' && e.data.callId === call.id) Object.assign(e.data, { name, arguments: args });
    }
    const childFile = await write(plan.child, child);
    const d = await cliJson(parentFile, childFile);
    expect(d.relation).toBe('fork');
    expect(d.sharedPrefix).toEqual({
      kind: 'fork-seed',
      events: seed,
      stopsAt: { a: { seq: seed, type: s.events[seed]!.type }, b: { seq: seed, type: 'session/end-seed' } },
      identical: true,
      firstInexactSeq: null,
      seedMismatches: [],
      seedBeyondParent: false,
    });
    const parentReqs = dispatchesOf(s.events);
    const chooser = parentReqs.find((r) => r.assistantMessageSeq === msg.seq - 1)!;
    const fd = d.dispatches.firstDivergent!;
    expect(d.dispatches.pairs.slice(0, fd).every((p) => p.differs.length === 0 && p.a === p.b)).toBe(true);
    const first = d.dispatches.divergent[0]!;
    expect([first.a!.key, first.b!.key]).toEqual([chooser.key, chooser.key]);
    expect(first.differs).toEqual(['output', 'tool-calls']);
    expect(first.messages.left).toEqual([]);
    expect(first.messages.entered).toEqual([]);
    expect(first.toolCalls.b.find((t) => t.id === call.id)).toMatchObject({ name, arguments: args });
    const next = d.dispatches.divergent[1]!;
    expect(next.differs).toContain('messages');
    expect(next.messages.left.map((m) => m.seq)).toEqual([msg.seq - 1]);
    expect(next.messages.entered.map((m) => m.seq)).toEqual([msg.seq]);
    const text = await runInProcess(['diff', parentFile, childFile, '--color', 'never']);
    expect(text.stdout).toContain(`relation   b is a fork of a (seedLength ${seed})`);
    expect(text.stdout).toContain(`fork seed: ${seed} events (seqs 0..${seed - 1}) identical to the parent`);
    expect(text.stdout).toContain(`+ b: ${name}({"path":"elsewhere"})`);
  });

  it('a compaction on one side only: left = the shadowed history, entered = the checkpoint', async () => {
    const s = base();
    const turn3 = s.events.find((e) => e.type === 'turn/start' && e.data.turn === 3)!;
    const at = turn3.seq + 1;
    // The surface nodes before turn 3 (what the compaction replaces).
    const nodes: number[] = [];
    for (const e of s.events.slice(0, at)) if (e.surfaceOp === 'append') nodes.push(e.seq);
    const first = nodes[0]!;
    const last = nodes[nodes.length - 1]!;
    const t = turn3.time;
    const summary = [{ type: 'text', text: 'Summary 1: the first two turns.' }];
    const inserted: SessionEvent[] = [
      { type: 'compaction/start', seq: at, time: t + 1, data: { compactionId: 'compaction-1', turn: 3 } },
      {
        type: 'compaction/summary',
        seq: at + 1,
        time: t + 2,
        data: { compactionId: 'compaction-1', summary, rawOutput: summary, llmStreamCall: true, shadowedRange: { start: first, end: last }, shadowedSeqs: nodes, shadowedTokenCount: 1000, provider: 'deepseek-official', model: 'deepseek-v4-flash', maxTokens: 8192, usage: { inputTokens: 1000, outputTokens: 50 } },
      },
      {
        type: 'user/message',
        seq: at + 2,
        time: t + 3,
        data: { content: [{ type: 'text', text: '<compacted-summary>' }, ...summary, { type: 'text', text: '</compacted-summary>' }], source: { kind: 'plugin', plugin: 'compact', compactionId: 'compaction-1' }, role: 'user', id: '00000000-0000-4000-8000-0000000000cc' },
        sourceEventSeqs: [at, at + 1, ...nodes],
        surfaceOp: { op: 'replace', start: first, end: last },
      },
      { type: 'compaction/end', seq: at + 3, time: t + 4, data: { compactionId: 'compaction-1', turn: 3 } },
    ];
    const events = [...s.events.slice(0, at), ...inserted, ...s.events.slice(at).map((e) => shiftSeqs(e, at, 4))];
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b' }, events);
    const d = await cliJson(a, b);
    expect(d.sharedPrefix).toMatchObject({ events: at, stopsAt: { a: { seq: at, type: 'step/start' }, b: { seq: at, type: 'compaction/start' } } });
    const reqs = dispatchesOf(s.events);
    const firstOfTurn3 = reqs.find((r) => r.turn === 3)!;
    const p = d.dispatches.divergent[0]!;
    expect(d.dispatches.pairs.slice(0, d.dispatches.firstDivergent!).every((x) => x.differs.length === 0)).toBe(true);
    expect([p.a!.key, p.b!.key]).toEqual([firstOfTurn3.key, firstOfTurn3.key]);
    expect(p.differs).toEqual(['messages']);
    const messageNodes = nodes.filter((seq) => !(s.events[seq]!.type === 'assistant/message' && s.events[seq]!.data.message.content.length === 0));
    expect(p.messages.left.map((m) => m.seq)).toEqual(messageNodes);
    expect(p.messages.entered.map((m) => m.seq)).toEqual([at + 2]);
    expect(p.messages.kept).toBe(firstOfTurn3.messageCount - messageNodes.length);
    expect(d.transcript.hunks.flatMap((h) => h.lines).filter((l) => l.op !== ' ')[0]).toMatchObject({ op: '+', text: "--- compaction: the model's history before this point was replaced by a summary", seq: at + 2 });
  });

  it('a session and its dsh redact copy differ only in redacted spans', async () => {
    const s = base('secretive');
    const events = clone(s.events);
    const SECRET = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z';
    const user = events.find((e) => e.type === 'user/message')!;
    user.data.content[0].text += ` my key is ${SECRET}`;
    const result = events.filter((e) => e.type === 'tool/result')[1]!;
    result.data.message.content[0].content[0].text += `\nOPENAI_API_KEY=${SECRET}\n`;
    const a = await write(s.header, events);
    const out = path.join(dir, 'redacted');
    const red = await runCli(['redact', a, '-o', out]);
    expect(red.code, red.stderr).toBe(0);
    const find = (d: string): string => {
      for (const n of readdirSync(d)) {
        const p = path.join(d, n);
        if (statSync(p).isDirectory()) {
          const f = find(p);
          if (f) return f;
        } else if (n.startsWith('session.jsonl')) return p;
      }
      return '';
    };
    const b = find(out);
    const d = await cliJson(a, b);
    expect(d.relation).toBe('same-session');
    expect(d.sharedPrefix.events).toBe(user.seq);
    const changed = hunkLines(d).filter((l) => l.op !== ' ');
    expect(changed.length).toBeGreaterThan(0);
    const minus = changed.filter((l) => l.op === '-');
    const plus = changed.filter((l) => l.op === '+');
    expect(minus.length).toBe(plus.length);
    for (const l of minus) expect(l.text).toContain(SECRET);
    for (const l of plus) expect(l.text).toMatch(/\[REDACTED:[^\]]+\]/);
    // Pairwise: each + line is its - line with the secret replaced by a redaction token.
    const norm = (t: string) => t.split(SECRET).join('§').replace(/\[REDACTED:[^\]]+\]/g, '§');
    expect(plus.map((l) => norm(l.text)).sort()).toEqual(minus.map((l) => norm(l.text)).sort());
    for (const p of d.dispatches.divergent) {
      expect(p.header.changes).toEqual([]);
      for (const m of p.messages.modified) expect(m.a.seq).toBe(m.b.seq);
      expect(p.messages.left.map((m) => m.seq)).toEqual(p.messages.entered.map((m) => m.seq));
    }
  });

  it('an unreadable side gets DSH\'s error for that side with the usual exit code', async () => {
    const s = base();
    const a = await write(s.header, s.events);
    const missing = await runCli(['diff', a, path.join(dir, 'nope', 'session.jsonl')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^dsh: side b \(/);
    const refused = path.join(dir, 'refused', 'session.jsonl');
    mkdirSync(path.dirname(refused), { recursive: true });
    writeFileSync(refused, JSON.stringify({ ...s.header, version: 99 }) + '\n');
    const inspect = await runCli(['inspect', refused, '--json']);
    const r = await runCli(['diff', refused, a]);
    expect(r.code).toBe(inspect.code);
    expect(r.code).toBe(1);
    const want = JSON.parse(inspect.stdout).error;
    expect(r.stderr).toContain(`dsh: side a (${refused}): ${want.class}: ${want.message}`);
    const j = await runCli(['diff', a, refused, '--json']);
    expect(j.code).toBe(1);
    // inspect's own error document (rule included), then which side and target.
    expect(JSON.stringify(JSON.parse(j.stdout).error)).toBe(JSON.stringify({ ...errorDocument(want).error, side: 'b', target: refused }));
    expect(want.rule).toBe('DSH-A2');
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
  });

  it('text output: colour only when asked or on a TTY, --stat summary, unpriced costs, folding and --full', async () => {
    const s = base();
    const events = clone(s.events);
    const result = events.find((e) => e.type === 'tool/result')!;
    result.data.message.content[0].content[0].text = Array.from({ length: 40 }, (_, i) => `new line ${i}`).join('\n');
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b' }, events);
    const plain = await runCli(['diff', a, b]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).not.toMatch(/\u001b\[/);
    expect(plain.stdout).toMatch(/\+… \d+ more added lines hidden \(--full shows them\)/);
    const full = await runCli(['diff', a, b, '--full']);
    expect(full.stdout).not.toContain('more added lines hidden');
    expect(full.stdout).toContain('+    new line 39');
    const colour = await runCli(['diff', a, b, '--color', 'always']);
    expect(colour.stdout).toMatch(/\u001b\[3[12]m/);
    const stat = await runCli(['diff', a, b, '--stat']);
    expect(stat.stdout.split('\n').filter(Boolean).length).toBe(10);
    // Same usage on both sides: the same cost, a zero delta.
    expect(stat.stdout, stat.stdout).toMatch(/cost +(\d+\.\d+) → \1 \(\+0\.00\)/);
    const d = await cliJson(a, b);
    expect(d.cost?.delta?.exact).toBe('0.00');
    expect(d.cost?.a.unpriced).toBe(0);
    expect(d.usageTotals.delta).toEqual(Object.fromEntries(Object.keys(d.usageTotals.a).map((k) => [k, 0])));
    const bad = await runCli(['diff', a]);
    expect(bad.code).toBe(2);
    expect((await runCli(['diff', a, b, '--stat', '--json'])).code).toBe(2);
  });

  it('cost: dispatches priced with the ledger table; 1,000 more output tokens in one dispatch cost exactly 1,000 output tokens more', async () => {
    const T0 = 1785000000000; // 2026-07-25, inside the shipped price window
    const s = collectSession({ seed: 11, id: 'run-a', turns: 4, randomFeatures: false, toolOutputBytes: [300, 900], createdAt: T0 });
    const events = clone(s.events);
    // The first dispatch's usage, as its usage chunk and its assistant/message report it.
    const chunk = events.find((e) => e.type === 'assistant/chunk' && e.data.chunk?.type === 'usage')!;
    chunk.data.chunk.usage.outputTokens += 1000;
    events.find((e) => e.type === 'assistant/message' && e.data.usage)!.data.usage.outputTokens += 1000;
    const a = await write(s.header, s.events);
    const b = await write({ ...s.header, id: 'run-b' }, events);
    const d = await cliJson(a, b);
    expect(d.cost).not.toBeNull();
    expect(d.cost!.a.unpriced).toBe(0);
    expect(d.cost!.b.unpriced).toBe(0);
    expect(d.cost!.a.priced).toBeGreaterThan(0);
    const table = loadPriceTable();
    const first = dispatchesOf(s.events)[0]!;
    const model = first.header?.config?.model ?? first.requestContext?.model;
    const provider = first.header?.config?.provider ?? first.requestContext?.provider;
    const extra = priceUsage({ uncachedInputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 1000 }, model, provider, table, { at: chunk.time });
    expect(extra.priced).toBe(true);
    if (extra.priced) expect(d.cost!.delta!.exact).toBe(formatAtto(extra.atto));
    // A clock outside every price window: unpriced, so no delta (never a zero cost).
    const old = await write({ ...s.header, id: 'run-c' }, events.map((e) => ({ ...e, time: 1000 + e.seq })));
    const u = await cliJson(a, old);
    expect(u.cost!.b.unpriced).toBeGreaterThan(0);
    expect(u.cost!.delta).toBeNull();
    const text = await runCli(['diff', a, b]);
    expect(text.stdout).toContain(`(+${d.cost!.delta!.exact})`);
  });
});

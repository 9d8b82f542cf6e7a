/**
 * `dsh context` (issue #49) on a generated session with known contents: a tool result pruned in turn 2,
 * the system prompt changed at turn 3, the tool list changed at turn 4, a compaction at turn 5. Asserts
 * each dispatch's byte split against the request `dsh request --json` rebuilds, the exact cache-break
 * list with causes and seqs, that every shared prefix equals a byte comparison of the two
 * `--body deepseek` requests (and is the longest over the earlier dispatches), and that the CLI prints
 * what `openSession` answers; `check --behaviour`'s DSH-X12 finding for each header break. A tool result
 * rewritten without a prune record (cause rewrite) and a fork child (the generator's and `dsh fork`'s)
 * have their exact break lists and byte splits checked the same way. Then every corpus artifact: no
 * crash, bytes add up, library = CLI.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectSession } from '../tools/generate.js';
import { writeArtifactFile } from '../src/log/writer.js';
import type { SessionEvent, SessionHeader } from '../src/log/types.js';
import { openSession, errorDocument, headerCacheBreaks, CONTEXT_CATEGORIES, type ContextView } from '../src/index.js';
import { deepseekBody } from '../src/views/deepseek-body.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-context-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const noCache = { cache: false } as const;
const plain = (v: unknown) => JSON.parse(JSON.stringify(v));
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

const NEW_TOOL = { name: 'list_dir', description: 'List the entries of a directory.', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };

/**
 * Seed 5, six turns: the generator prunes in turn 2, changes the header at turns 3 and 4 (model switches,
 * rewritten here into a system prompt change and a tool added, on the same model) and compacts at turn 5.
 */
function planted(): { header: SessionHeader; events: SessionEvent[]; seqs: { prune: number; pruneReplacement: number; system: number; tools: number; compaction: number } } {
  const s = collectSession({ seed: 5, id: 'ctx-planted', turns: 6, randomFeatures: false, toolOutputBytes: [300, 900], features: { 2: ['prune'], 3: ['header-change'], 4: ['header-change'], 5: ['compaction'] } });
  const events = clone(s.events);
  const headers = events.filter((e) => e.type === 'request/header');
  expect(headers.length).toBe(3);
  const first = (headers[0]!.data as any).header;
  const system = clone(first);
  system.system = `${first.system}\n- Prefer small, reviewed changes.`;
  (headers[1]!.data as any).header = system;
  const tools = clone(system);
  tools.tools = [...tools.tools, NEW_TOOL];
  (headers[2]!.data as any).header = tools;
  // The request context follows the model, which no longer changes.
  for (const e of events) if (e.type === 'request/context') (e.data as any).model = first.config.model;
  for (const e of events) if (e.type === 'request/context') (e.data as any).contextWindow = 128000;
  const prune = events.find((e) => e.type === 'compaction/prune')!.seq;
  const compaction = events.find((e) => e.type === 'user/message' && typeof e.surfaceOp === 'object')!.seq;
  return { header: s.header, events, seqs: { prune, pruneReplacement: prune + 1, system: headers[1]!.seq, tools: headers[2]!.seq, compaction } };
}

async function write(name: string, header: SessionHeader, events: readonly SessionEvent[]): Promise<string> {
  const file = path.join(dir, name, 'session.jsonl.zstd');
  const batches: SessionEvent[][] = [[]];
  for (const e of events) {
    batches[batches.length - 1]!.push(e);
    if (e.type === 'turn/end') batches.push([]);
  }
  await writeArtifactFile(file, { header, encoding: 'zstd', batches: batches.filter((b) => b.length > 0) });
  return file;
}

/** The prompt elements of a DeepSeek body in chat-template order: system message, tool list, the other messages. */
function promptText(body: ReturnType<typeof deepseekBody>['body']): string {
  const [head, ...rest] = body.messages;
  const parts: string[] = [];
  const system = head && head['role'] === 'system' ? head : null;
  if (system) parts.push(JSON.stringify(system));
  if (body.tools) parts.push(JSON.stringify(body.tools));
  for (const m of system ? rest : body.messages) parts.push(JSON.stringify(m));
  return parts.join('');
}

function commonBytes(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  return i;
}

function sumsUp(v: ContextView, name: string): void {
  for (const r of v.dispatches) {
    const total = CONTEXT_CATEGORIES.reduce((a, c) => a + r.byCategory[c], 0);
    expect(total, `${name} ${r.key}`).toBe(r.bytes);
    for (const c of CONTEXT_CATEGORIES) expect(r.byCategory[c], `${name} ${r.key} ${c}`).toBeGreaterThanOrEqual(0);
    if (r.tokensByCategory) expect(CONTEXT_CATEGORIES.reduce((a, c) => a + r.tokensByCategory![c], 0), `${name} ${r.key} tokens`).toBe(r.promptTokens);
  }
}

async function contextOfFile(file: string): Promise<ContextView> {
  const opened = await openSession(file, noCache);
  if (!opened.ok) throw new Error(opened.error.message);
  try {
    const v = await opened.value.context();
    if (!v.ok) throw new Error(v.error.message);
    sumsUp(v.value, file);
    return v.value;
  } finally {
    opened.value.close();
  }
}

/** Every dispatch's bytes are the size of the request `dsh request --json` rebuilds; system and tools are the header's JSON. */
async function splitsMatchRequests(file: string, v: ContextView): Promise<void> {
  for (const r of v.dispatches) {
    const req = await runInProcess(['request', file, String(r.firstChunkSeq), '--json', '--no-cache']);
    expect(req.code, req.stderr).toBe(0);
    expect(Buffer.byteLength(req.stdout) - 1, r.key).toBe(r.bytes);
    const doc = JSON.parse(req.stdout);
    expect(r.byCategory.system, r.key).toBe(Buffer.byteLength(JSON.stringify(doc.header.system)));
    expect(r.byCategory.tools, r.key).toBe(Buffer.byteLength(JSON.stringify(doc.header.tools)));
  }
}

describe('dsh context on a generated session with planted changes', () => {
  it('splits every request exactly, finds each cache break with its cause, and the CLI prints the library view', async () => {
    const p = planted();
    const file = await write('planted', p.header, p.events);
    const opened = await openSession(file, noCache);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    const s = opened.value;
    const got = await s.context();
    expect(got.ok).toBe(true);
    if (!got.ok) return;
    const v = got.value;
    expect(v.tokens).toBe('proportional');
    expect(v.dispatches.length).toBeGreaterThan(6);
    sumsUp(v, 'planted');

    // Bytes = the request `dsh request --json` prints; system and tools = the header's JSON.
    for (const r of v.dispatches) {
      const req = await runInProcess(['request', file, String(r.firstChunkSeq), '--json', '--no-cache']);
      expect(req.code, req.stderr).toBe(0);
      expect(Buffer.byteLength(req.stdout) - 1, r.key).toBe(r.bytes);
      const doc = JSON.parse(req.stdout);
      expect(r.byCategory.system).toBe(Buffer.byteLength(JSON.stringify(doc.header.system)));
      expect(r.byCategory.tools).toBe(Buffer.byteLength(JSON.stringify(doc.header.tools)));
      const results = doc.messages.flatMap((m: any) => m.content.filter((b: any) => b.type === 'tool-result'));
      expect(r.byCategory.toolResults).toBeGreaterThanOrEqual(results.reduce((a: number, b: any) => a + Buffer.byteLength(JSON.stringify(b)), 0));
    }

    // The exact break list: prune, system prompt, tool list, compaction, each at the first dispatch after it.
    const after = (seq: number) => v.dispatches.find((r) => r.firstChunkSeq > seq)!.key;
    expect(v.breaks.map((b) => [b.key, b.cause, b.causeSeq, b.fields ?? null])).toEqual([
      [after(p.seqs.prune), 'prune', p.seqs.prune, null],
      [after(p.seqs.system), 'system', p.seqs.system, ['system']],
      [after(p.seqs.tools), 'tools', p.seqs.tools, ['tools[list_dir]']],
      [after(p.seqs.compaction), 'compaction', p.seqs.compaction, null],
    ]);
    const [prune, system, tools, compaction] = v.breaks;
    expect(prune!.at).toMatchObject({ element: 'message', role: 'tool' });
    expect(system!.at).toEqual({ position: 0, element: 'system', seq: null, role: 'system' });
    expect(tools!.at).toEqual({ position: 1, element: 'tools', seq: null, role: null });
    expect(compaction!.at.element).toBe('message');
    for (const b of v.breaks) expect(b.cost).toMatchObject({ priced: true, currency: 'USD' });
    // The pruned result was the last message the dispatch before was sent: nothing after it is sent again.
    expect(prune!.resentBytes).toBe(0);
    for (const b of [system, tools, compaction]) {
      expect(b!.resentBytes, JSON.stringify(b)).toBeGreaterThan(0);
      expect(b!.resentTokens).toBeGreaterThan(0);
    }
    // A system prompt break re-sends everything after it that the prompt before held: the tools and every earlier message.
    expect(system!.resentBytes).toBeGreaterThan(v.dispatches[system!.index - 1]!.cache.promptBytes - v.dispatches[system!.index]!.cache.sharedBytes - 200);
    expect(headerCacheBreaks(v).map((b) => b.cause)).toEqual(['system', 'tools']);

    // Changes since the dispatch before: the prune, the header, the compaction.
    const rowAfter = (seq: number) => v.dispatches.find((r) => r.firstChunkSeq > seq)!;
    expect(rowAfter(p.seqs.prune).changes.find((c) => c.kind === 'prune')).toMatchObject({ seq: p.seqs.pruneReplacement, pruneSeq: p.seqs.prune, type: 'tool/result' });
    const pr = rowAfter(p.seqs.prune).changes.find((c) => c.kind === 'prune')!;
    expect(pr.removedBytes).toBeGreaterThan(pr.addedBytes);
    expect(rowAfter(p.seqs.tools).changes.find((c) => c.kind === 'header')).toMatchObject({ seq: p.seqs.tools, fields: ['tools[list_dir]'] });
    const cp = rowAfter(p.seqs.compaction).changes.find((c) => c.kind === 'compaction')!;
    expect(cp.seq).toBe(p.seqs.compaction);
    expect(cp.replaced!.length).toBeGreaterThan(1);
    expect(rowAfter(p.seqs.compaction).byCategory.compaction).toBe(cp.addedBytes);
    expect(v.dispatches[0]!.changes.every((c) => c.kind === 'entered')).toBe(true);
    expect(v.dispatches[0]!.cache.extendsPrevious).toBeNull();
    for (const r of v.dispatches) {
      expect(r.contextWindow).toBe(128000);
      if (r.promptTokens !== null) expect(r.fillPercent).toBe(Math.round((r.promptTokens / 128000) * 1000) / 10);
    }

    // Every shared prefix is a byte comparison of two --body deepseek requests, and the longest of them.
    const prompts: string[] = [];
    for (const r of v.dispatches) {
      const req = await s.request(r.firstChunkSeq);
      if (!req.ok) throw new Error(req.error.message);
      prompts.push(promptText(deepseekBody(req.value.header, req.value.messages).body));
      expect(Buffer.byteLength(prompts[r.index]!)).toBe(r.cache.promptBytes);
      let best = 0;
      for (let j = 0; j < r.index; j++) best = Math.max(best, commonBytes(prompts[j]!, prompts[r.index]!));
      expect(r.cache.sharedBytes, r.key).toBe(best);
      if (r.cache.sharedWith !== null) {
        const j = v.dispatches.find((x) => x.key === r.cache.sharedWith)!.index;
        expect(commonBytes(prompts[j]!, prompts[r.index]!)).toBe(r.cache.sharedBytes);
      }
      if (r.index > 0) expect(r.cache.extendsPrevious, r.key).toBe(prompts[r.index]!.startsWith(prompts[r.index - 1]!) && r.break === null);
    }

    // The CLI prints the library's view.
    const cli = await runInProcess(['context', file, '--json', '--no-cache']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual(plain(v));
    const breaks = await runInProcess(['context', file, '--breaks', '--json', '--no-cache']);
    expect(JSON.parse(breaks.stdout)).toEqual(plain({ sessionId: v.sessionId, tokens: 'proportional', breaks: v.breaks, totals: v.totals }));
    const turns = JSON.parse((await runInProcess(['context', file, '--by', 'turn', '--json', '--no-cache'])).stdout);
    expect(turns.turns.map((t: any) => t.turn)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(turns.turns.reduce((a: number, t: any) => a + t.breaks, 0)).toBe(4);
    const text = await runInProcess(['context', file, '--no-cache']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('cache break tools @' + p.seqs.tools);
    expect(text.stdout).toContain(`pruned at seq ${p.seqs.prune}`);
    expect(text.stdout.match(/BREAK/g)?.length).toBe(4);
    const listed = await runInProcess(['context', file, '--breaks', '--no-cache']);
    expect(listed.stdout).toContain(`compaction checkpoint seq ${p.seqs.compaction} replaced`);
    // As a process, and over a root: one row per session.
    const proc = await runCli(['context', file, '--json', '--no-cache']);
    expect(proc.code, proc.stderr).toBe(0);
    expect(JSON.parse(proc.stdout)).toEqual(plain(v));
    s.close();
  });

  it('check --behaviour: one DSH-X12 info finding per header cache break (system prompt, tool list), none for the first header, none without --behaviour', async () => {
    const p = planted();
    const file = await write('x12', p.header, p.events);
    const opened = await openSession(file, noCache);
    if (!opened.ok) throw new Error(opened.error.message);
    const s = opened.value;
    const v = await s.context();
    if (!v.ok) throw new Error(v.error.message);
    const breaks = headerCacheBreaks(v.value);
    const checked = await s.check({ behaviour: true });
    if (!checked.ok) throw new Error(checked.error.message);
    const x12 = checked.value.findings.filter((f) => f.code === 'DSH-X12');
    expect(x12.map((f) => [f.seq, f.severity, f.evidence!.details!['fields'], f.evidence!.details!['dispatch']])).toEqual([
      [p.seqs.system, 'info', 'system', breaks[0]!.key],
      [p.seqs.tools, 'info', 'tools[list_dir]', breaks[1]!.key],
    ]);
    const first = p.events.find((e) => e.type === 'request/header')!.seq;
    expect(x12.map((f) => f.seq)).not.toContain(first);
    for (const [i, f] of x12.entries()) {
      const b = breaks[i]!;
      expect(b.cost).toMatchObject({ priced: true });
      if (!b.cost?.priced) continue;
      expect(f.evidence).toEqual({
        seqs: [b.causeSeq, b.firstChunkSeq],
        details: { dispatch: b.key, previous: b.previous, cause: b.cause, fields: b.fields!.join(','), resentBytes: b.resentBytes, resentTokens: b.resentTokens, currency: 'USD', costUncached: b.cost.uncached, costExtra: b.cost.extra },
      });
      expect(f.message).toContain(`request/header seq ${b.causeSeq}`);
      expect(f.message).toContain(`re-sent ${b.resentTokens} tokens (${b.resentBytes} bytes), ${b.cost.uncached} USD uncached`);
    }
    // Off by default; the CLI gives the same findings with --behaviour.
    const plainCheck = await s.check();
    expect(plainCheck.ok && plainCheck.value.findings.filter((f) => f.code.startsWith('DSH-X'))).toEqual([]);
    const off = await runInProcess(['check', file, '--json']);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).not.toContain('DSH-X12');
    const cli = await runInProcess(['check', file, '--json', '--behaviour']);
    expect(cli.code, cli.stderr).toBe(0);
    const cliFindings = JSON.stringify(JSON.parse(cli.stdout));
    for (const f of x12) expect(cliFindings).toContain(JSON.stringify(f.message));
    // Over the held events (the report's path when DSH refuses streaming) the same findings.
    const { headerBreaksOfEvents } = await import('../src/check/engine.js');
    const { inspectTarget } = await import('../src/log/session.js');
    const { resolveTarget } = await import('../src/log/target.js');
    const held = await inspectTarget(resolveTarget(file), { collect: true });
    expect((await headerBreaksOfEvents(held.events!, 'ctx-planted')).map((f) => [f.seq, f.message])).toEqual(x12.map((f) => [f.seq, f.message]));
    s.close();
  });

  it('a tool result rewritten (no prune record before it): one break, cause rewrite, at the replacing tool/result', async () => {
    const g = collectSession({ seed: 5, id: 'ctx-rewrite', turns: 4, randomFeatures: false, toolOutputBytes: [300, 900], features: { 2: ['prune'] } });
    const events = clone(g.events);
    const at = events.findIndex((e) => e.type === 'compaction/prune');
    const pruneSeq = events[at]!.seq;
    // The same replacement without its compaction/prune record is a rewrite: the record becomes a title event.
    const firstUser = events.find((e) => e.type === 'user/message')!.seq;
    events[at] = { ...events[at]!, type: 'session/title', data: { title: 'rewritten result', messageSeqs: [firstUser], source: { kind: 'fallback' } } } as SessionEvent;
    const rewrite = events[at + 1]!;
    expect(rewrite.type).toBe('tool/result');
    expect(rewrite.surfaceOp).toMatchObject({ op: 'replace' });
    const file = await write('rewrite', g.header, events);
    const v = await contextOfFile(file);
    const after = v.dispatches.find((r) => r.firstChunkSeq > rewrite.seq)!;
    expect(v.breaks.map((b) => [b.key, b.cause, b.causeSeq, b.fields ?? null, b.at.element, b.at.role])).toEqual([[after.key, 'rewrite', rewrite.seq, null, 'message', 'tool']]);
    expect(v.breaks[0]!.detail).toBe(`seq ${rewrite.seq} (tool/result) rewrote seq ${(rewrite.surfaceOp as { start: number }).start}`);
    expect(after.changes.find((c) => c.kind === 'rewrite')).toMatchObject({ seq: rewrite.seq, type: 'tool/result', replaced: [(rewrite.surfaceOp as { start: number }).start] });
    expect(after.changes.some((c) => c.kind === 'prune' || c.pruneSeq === pruneSeq)).toBe(false);
    expect(headerCacheBreaks(v)).toEqual([]);
    await splitsMatchRequests(file, v);
  });

  it('a fork child: the seed keeps the parent\'s breaks at the same seqs, its own header change adds one; splits equal dsh request', async () => {
    const parent = collectSession({ seed: 11, id: 'ctx-parent', turns: 3, randomFeatures: false, toolOutputBytes: [300, 900], features: { 2: ['prune'] } });
    const parentFile = await write('fork-parent', parent.header, parent.events);
    const pv = await contextOfFile(parentFile);
    const end2 = parent.events.find((e) => e.type === 'turn/end' && (e.data as { turn?: number }).turn === 2)!.seq;
    const seed = parent.events.filter((e) => e.seq <= end2);
    const child = collectSession({ seed: 12, id: 'ctx-child', turns: 2, randomFeatures: false, toolOutputBytes: [300, 900], fork: { parentId: 'ctx-parent', seed }, features: { 4: ['header-change'] } });
    expect(child.header).toMatchObject({ parentSession: 'ctx-parent', seedLength: seed.length });
    const childFile = await write('fork-child', child.header, child.events);
    const v = await contextOfFile(childFile);
    // The seed's dispatches are the parent's (same keys and sizes), and so are its breaks.
    const seeded = pv.dispatches.filter((r) => r.firstChunkSeq <= end2);
    expect(v.dispatches.slice(0, seeded.length).map((r) => [r.key, r.firstChunkSeq, r.bytes])).toEqual(seeded.map((r) => [r.key, r.firstChunkSeq, r.bytes]));
    const parentBreaks = pv.breaks.filter((b) => b.firstChunkSeq <= end2).map((b) => [b.key, b.cause, b.causeSeq]);
    const pruneSeq = parent.events.find((e) => e.type === 'compaction/prune')!.seq;
    expect(parentBreaks).toEqual([[pv.dispatches.find((r) => r.firstChunkSeq > pruneSeq)!.key, 'prune', pruneSeq]]);
    // The child's own turn 4 switches the model (the generator's header change): a break of cause model.
    const headers = child.events.filter((e) => e.type === 'request/header' && e.seq > end2);
    const model = (e: SessionEvent) => (e.data as any).header.config.model;
    const switched = child.events.find((e) => e.type === 'request/header' && e.seq > end2 && model(e) !== model(headers[0]!))!;
    expect(switched).toBeDefined();
    expect(v.breaks.map((b) => [b.key, b.cause, b.causeSeq])).toEqual([...parentBreaks, [v.dispatches.find((r) => r.firstChunkSeq > switched.seq)!.key, 'model', switched.seq]]);
    await splitsMatchRequests(childFile, v);
    // `dsh fork` at the same turn writes a child whose context is the seed's: the parent's dispatches and breaks.
    const forked = await runCli(['fork', parentFile, '--at', String(end2), '--id', 'ctx-cli-child', '--created-at', '1', '--out', path.join(dir, 'fork-out'), '--json']);
    expect(forked.code, forked.stderr).toBe(0);
    const cv = await contextOfFile(JSON.parse(forked.stdout).path);
    expect(cv.dispatches.map((r) => [r.key, r.firstChunkSeq, r.bytes])).toEqual(seeded.map((r) => [r.key, r.firstChunkSeq, r.bytes]));
    expect(cv.breaks.map((b) => [b.key, b.cause, b.causeSeq])).toEqual(parentBreaks);
    await splitsMatchRequests(JSON.parse(forked.stdout).path, cv);
  });

  it('over a root: one summary row per session; exit codes 1 (refused) and 2 (usage)', async () => {
    const root = path.join(dir, 'root');
    const s = collectSession({ seed: 3, id: 'ctx-root', turns: 2, randomFeatures: false, toolOutputBytes: [300, 600] });
    const file = path.join(root, '--home-dev-project--', 'ctx-root', 'session.jsonl.zstd');
    await writeArtifactFile(file, { header: s.header, encoding: 'zstd', batches: [s.events] });
    const r = await runInProcess(['context', root, '--json', '--no-cache']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions.map((x: any) => x.sessionId)).toEqual(['ctx-root']);
    const one = await openSession(file, noCache);
    const v = one.ok ? await one.value.context() : null;
    expect(v?.ok).toBe(true);
    if (v?.ok) expect(doc.sessions[0]).toMatchObject({ dispatches: v.value.totals.dispatches, breaks: v.value.totals.breaks, maxBytes: v.value.totals.maxBytes });
    expect((await runInProcess(['context', root, '--no-cache'])).stdout).toContain('ctx-root');

    // A log DSH refuses: its verdict, exit 1 ({error} under --json).
    const bad = path.join(dir, 'bad', 'session.jsonl');
    mkdirSync(path.dirname(bad), { recursive: true });
    writeFileSync(bad, '{"type":"session","version":99,"id":"x","createdAt":1,"cwd":"/w"}\n');
    const refused = await runInProcess(['context', bad, '--json', '--no-cache']);
    expect(refused.code).toBe(1);
    const opened = await openSession(bad, noCache);
    const lib = opened.ok ? await opened.value.context() : opened;
    expect(lib.ok).toBe(false);
    if (!lib.ok) expect(JSON.parse(refused.stdout)).toEqual(plain(errorDocument(lib.error)));
    const text = await runInProcess(['context', bad, '--no-cache']);
    expect(text.code).toBe(1);
    expect(text.stderr).toContain('DSH refuses this log');
    // Usage and I/O: exit 2.
    expect((await runInProcess(['context', path.join(dir, 'missing.jsonl')])).code).toBe(2);
    expect((await runInProcess(['context', file, '--by', 'turn', '--breaks'])).code).toBe(2);
    expect((await runInProcess(['context', file, '--currency', 'dollars'])).code).toBe(2);
  });
});

describe.skipIf(!HAVE_CORPUS)(`dsh context on every corpus artifact ${HAVE_CORPUS ? '' : SKIP_REASON}`, () => {
  it('never crashes, its bytes add up to each request dsh request --json rebuilds, and the library equals the CLI', async () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'dsh-context-cache-'));
    let artifacts = 0;
    let dispatches = 0;
    try {
      for (const c of corpusCases()) {
        artifacts += 1;
        const cli = await runInProcess(['context', c.artifact, '--json'], { DSH_CACHE_DIR: cache });
        expect([0, 1, 2], `${c.name}: ${cli.stderr}`).toContain(cli.code);
        const opened = await openSession(c.artifact, noCache);
        if (!opened.ok) {
          expect(JSON.parse(cli.stdout), c.name).toEqual(plain(errorDocument(opened.error)));
          continue;
        }
        const s = opened.value;
        try {
          const v = await s.context();
          if (!v.ok) {
            expect(JSON.parse(cli.stdout), c.name).toEqual(plain(errorDocument(v.error)));
            continue;
          }
          expect(JSON.parse(cli.stdout), c.name).toEqual(plain(v.value));
          sumsUp(v.value, c.name);
          for (const r of v.value.dispatches) {
            const req = await s.request(r.firstChunkSeq);
            expect(req.ok, `${c.name} ${r.key}`).toBe(true);
            if (req.ok) expect(Buffer.byteLength(JSON.stringify(req.value)), `${c.name} ${r.key}`).toBe(r.bytes);
            dispatches += 1;
          }
        } finally {
          s.close();
        }
      }
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
    console.log(`dsh context: ${artifacts} corpus artifacts, ${dispatches} dispatches checked`);
    expect(artifacts).toBeGreaterThan(0);
  });
});

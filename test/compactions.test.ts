import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, SKIP_REASON, corpusRoots, corpusArtifacts } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { baseEvents, clone, inspectText, logText, toolResultData, toolTurn, type Ev } from './helpers/logtext.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { collectSession, writeGeneratedArtifact } from '../tools/generate.js';
import { checkResolved } from '../src/check/engine.js';
import { compactionInvariant, orphanCompactionLock, relationalFindings } from '../src/check/relational.js';
import { RULES } from '../src/check/rules.js';
import { MemorySource } from '../src/physical/source.js';
import type { ResolvedTarget } from '../src/log/target.js';
import type { SessionEvent } from '../src/log/types.js';
import { auditCompactions, classifyCompactionError, CompactionAudit, estimateMessage, type CompactionsReport } from '../src/views/compactions.js';
import { deriveDispatches } from '../src/views/requests.js';
import { toJson } from '../src/core/json.js';

const SYN = 'synthetic/root-raw/--home-dsh-synthetic-project--';
const SYN_ZSTD = 'synthetic/root-zstd/--home-dsh-synthetic-project--';


async function auditText(events: Ev[]): Promise<{ report: CompactionsReport; events: SessionEvent[] }> {
  const r = await inspectText(logText(events));
  if (r.error) throw new Error(`fixture refused: ${r.error.message}`);
  return { report: auditCompactions(r.events!, { sessionId: 'x' }), events: r.events! };
}

const verdict = (r: CompactionsReport, item: string) => r.verdicts.find((v) => v.item === item)!;

// ---------------------------------------------------------------- fixtures (project logtext helper)

const USER = (id: string, text: string): Ev => ({ type: 'user/message', data: { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }, surfaceOp: 'append' });
const MODEL = { kind: 'model', provider: 'p', model: 'm' };
const summaryEv = (id: string, shadowed: number[], extra: Record<string, unknown> = {}): Ev => ({
  type: 'compaction/summary',
  data: {
    compactionId: id,
    ...extra,
    summary: [{ type: 'text', text: 's' }],
    shadowedRange: { start: shadowed[0], end: shadowed[shadowed.length - 1] },
    shadowedSeqs: shadowed,
    shadowedTokenCount: 50,
    provider: 'p',
    model: 'm',
    maxTokens: 2048,
    usage: { inputTokens: 90, outputTokens: 9 },
  },
});
const checkpoint = (id: string, startSeq: number, summarySeq: number, shadowed: number[], extra: Record<string, unknown> = {}): Ev => ({
  type: 'user/message',
  data: { content: [{ type: 'text', text: 'cp' }], source: { kind: 'plugin', plugin: 'compact', compactionId: id, ...extra }, role: 'user', id: `cp-${id}` },
  surfaceOp: { op: 'replace', start: shadowed[0], end: shadowed[shadowed.length - 1] },
  sourceEventSeqs: [startSeq, summarySeq, ...shadowed],
});

/** Base (31 events; surface after it: [22, 17, 26, 28]) + a standalone bracket k2 at seq 31 that fails with `error`. */
function failingBracket(error: string, withSummary: boolean): Ev[] {
  return [
    ...baseEvents(),
    { type: 'compaction/start', data: { compactionId: 'k2', turn: null } },
    ...(withSummary ? [summaryEv('k2', [26, 28])] : []),
    { type: 'compaction/end', data: { compactionId: 'k2', turn: null, error } },
  ];
}

/** Base + turn 3 whose first attempt fails with `code`, recovered by an in-step compaction, then retried. */
function overflowTurn(code: string): Ev[] {
  return [
    ...baseEvents(),
    { type: 'turn/start', data: { turn: 3 } }, // 31
    { type: 'step/start', data: { turn: 3, step: 1 } }, // 32
    USER('u3', 'big input'), // 33
    { type: 'assistant/chunk', data: { turn: 3, step: 1, chunk: { type: 'finish', reason: { kind: 'error', failure: { message: 'context too long', code } } } } }, // 34
    { type: 'compaction/start', data: { compactionId: 'k3', turn: 3 } }, // 35
    summaryEv('k3', [22, 17, 26, 28]), // 36
    checkpoint('k3', 35, 36, [22, 17, 26, 28]), // 37
    { type: 'compaction/end', data: { compactionId: 'k3', turn: 3 } }, // 38
    { type: 'assistant/chunk', data: { turn: 3, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } }, // 39
    { type: 'assistant/message', data: { turn: 3, step: 1, message: { id: 'a4', role: 'assistant', content: [{ type: 'text', text: 'ok' }], source: MODEL } }, surfaceOp: 'append', sourceEventSeqs: [39] }, // 40
    { type: 'step/end', data: { turn: 3, step: 1 } },
    { type: 'turn/end', data: { turn: 3, reason: { kind: 'completed' } } },
  ];
}

/**
 * Base + toolTurn (31..38; surface [22, 17, 26, 28, 34, 36]) + turn 4: a pre-step prune of tool/result 36 and a
 * pre-step compaction of 22..28 in the same pass, then step 1.
 */
function pressureTurn(): Ev[] {
  return [
    ...baseEvents(),
    ...toolTurn(),
    { type: 'turn/start', data: { turn: 4 } }, // 39
    { type: 'compaction/prune', data: { shadowedRange: { start: 36, end: 36 }, shadowedSeqs: [36], shadowedTokenCount: 9 } }, // 40
    { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', '[pruned]'), surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] }, // 41
    { type: 'compaction/start', data: { compactionId: 'k4', turn: 4 } }, // 42
    summaryEv('k4', [22, 17, 26, 28]), // 43
    checkpoint('k4', 42, 43, [22, 17, 26, 28]), // 44
    { type: 'compaction/end', data: { compactionId: 'k4', turn: 4 } }, // 45
    { type: 'step/start', data: { turn: 4, step: 1 } }, // 46
    USER('u4', 'go on'), // 47
    { type: 'assistant/chunk', data: { turn: 4, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } }, // 48
    { type: 'assistant/message', data: { turn: 4, step: 1, message: { id: 'a5', role: 'assistant', content: [{ type: 'text', text: 'ok' }], source: MODEL } }, surfaceOp: 'append', sourceEventSeqs: [48] },
    { type: 'step/end', data: { turn: 4, step: 1 } },
    { type: 'turn/end', data: { turn: 4, reason: { kind: 'completed' } } },
  ];
}

/** The base log with its checkpoint narrowed to 2..10: the tool result 12 survives while its call (10) is shadowed. */
function splitPair(): Ev[] {
  const events = clone(baseEvents());
  const s = events[21] as any;
  s.data.shadowedRange = { start: 2, end: 10 };
  s.data.shadowedSeqs = [2, 10];
  const cp = events[22] as any;
  cp.surfaceOp = { op: 'replace', start: 2, end: 10 };
  cp.sourceEventSeqs = [20, 21, 2, 10];
  return events;
}

async function checkFindings(text: string) {
  const target: ResolvedTarget = { path: 'session.jsonl', rawPath: 'session.jsonl', open: () => new MemorySource('session.jsonl', Buffer.from(text)), layoutWarnings: [] };
  return (await checkResolved(target)).findings;
}

// ---------------------------------------------------------------- corpus

describe('dsh compactions over the reference corpus', () => {
  it.skipIf(!HAVE_CORPUS)('audits every corpus session without throwing; sessions without activity are all n/a', async () => {
    const all = corpusArtifacts();
    expect(all.length).toBeGreaterThan(20);
    let audited = 0;
    for (const p of all) {
      const r = await inspectTarget(resolveTarget(p), { collect: true });
      if (r.error || !r.events) continue;
      const report = auditCompactions(r.events, { sessionId: r.meta?.id ?? null });
      audited++;
      expect(report.verdicts.map((v) => v.item)).toEqual(['raw-facts', 'surface', 'request', 'failure', 'budget']);
      expect(report.foldError).toBeNull();
      if (report.attempts.length === 0) expect(report.verdicts.every((v) => v.state === 'n/a')).toBe(true);
      // The audit's replacements are exactly the fold's.
      const replaced = report.attempts.filter((a) => a.range).map((a) => ({ seq: a.seqs.replacement, start: a.range!.start, end: a.range!.end, shadowedSeqs: a.range!.shadowedSeqs }));
      expect(replaced).toEqual(r.surface?.replacements ?? []);
      for (const a of report.attempts) expect(a.failure?.class).not.toBe('other');
    }
    expect(audited).toBeGreaterThan(20);
  });

  it.skipIf(!HAVE_CORPUS)('root-wide over every corpus root: exit 0, or 1 only where a session is unreadable; --json parses', async () => {
    for (const root of corpusRoots()) {
      const res = await runInProcess(['compactions', root, '--json']);
      const doc = JSON.parse(res.stdout);
      expect(doc.totals.sessions).toBe(doc.sessions.length);
      expect(res.code).toBe(doc.totals.unreadable > 0 ? 1 : 0);
      for (const s of doc.sessions) if (s.error) expect(typeof s.error.message).toBe('string');
    }
  });

  for (const [label, dir] of [
    ['raw', SYN],
    ['zstd', SYN_ZSTD],
  ] as const) {
    it.skipIf(!HAVE_CORPUS)(`syn.compaction-double (${label}): ranges, shadowed seqs and coverage equal expected.json`, async () => {
      const expected = JSON.parse(readFileSync(path.join(CORPUS, SYN, 'syn.compaction-double', 'expected.json'), 'utf8'));
      const r = await inspectTarget(resolveTarget(path.join(CORPUS, dir, 'syn.compaction-double')), { collect: true });
      const report = auditCompactions(r.events!, { sessionId: r.meta!.id });
      const reps = expected.derived.surface.replacements as { seq: number; start: number; end: number; shadowedSeqs: number[] }[];
      expect(report.attempts.map((a) => ({ seq: a.seqs.replacement, start: a.range?.start, end: a.range?.end, shadowedSeqs: a.range?.shadowedSeqs }))).toEqual(reps);
      for (const [i, a] of report.attempts.entries()) {
        const rep = reps[i]!;
        expect(a.coverage).toMatchObject({ covered: true, missing: [], citesStart: true, citesSummary: true, declaredMatches: true });
        // sourceEventSeqs cover every shadowed node, exactly as the log's replacement event says.
        const src = r.events![rep.seq]!.sourceEventSeqs!;
        for (const s of rep.shadowedSeqs) expect(src).toContain(s);
        expect(a.outcome).toBe('succeeded');
        expect(a.nextRequest.status).toBe('ok');
      }
      const [c1, c2] = report.attempts;
      expect(c1!.trigger.kind).toBe('manual');
      expect(c1!.trigger.command).toMatchObject({ commandId: 'cmd-compact-1', runSeq: 43, doneSeq: 48, doneKind: 'success' });
      expect(c1!.owner).toBeNull();
      expect(c1!.range).toMatchObject({ startPosition: 0, endPosition: 5, surfaceLengthBefore: 6 });
      expect(c2!.owner).toBe(4);
      expect(c2!.trigger.kind).toBe('automatic');
      expect(c2!.range).toMatchObject({ start: 46, end: 61, startPosition: 0, endPosition: 2, surfaceLengthBefore: 4 });
      expect(c2!.summaryCall).toMatchObject({ provider: 'deepseek-official', model: 'deepseek-v4-flash', maxTokens: 2048 });
      expect(report.verdicts.every((v) => v.state === 'pass')).toBe(true);
      expect(report.surfaceNodes).toBe(expected.derived.surface.nodes.length);
      expect(report.replaceGeneration).toBe(expected.derived.surface.replaceGeneration);
    });

    it.skipIf(!HAVE_CORPUS)(`syn.tool-result-replacement (${label}): the prune's range, shadowed seq and coverage equal expected.json`, async () => {
      const expected = JSON.parse(readFileSync(path.join(CORPUS, SYN, 'syn.tool-result-replacement', 'expected.json'), 'utf8'));
      const r = await inspectTarget(resolveTarget(path.join(CORPUS, dir, 'syn.tool-result-replacement')), { collect: true });
      const report = auditCompactions(r.events!, { sessionId: r.meta!.id });
      expect(report.attempts.map((a) => ({ seq: a.seqs.replacement, start: a.range?.start, end: a.range?.end, shadowedSeqs: a.range?.shadowedSeqs }))).toEqual(expected.derived.surface.replacements);
      const [p] = report.attempts;
      expect(p!.kind).toBe('prune');
      expect(p!.seqs.prune).toBe(33);
      expect(p!.coverage).toMatchObject({ covered: true, missing: [], declaredMatches: true, declaredTokenCount: 812 });
      expect(p!.pairing).toMatchObject({ ok: true, balancedBefore: null });
      expect(p!.trigger.kind).toBe('unknown'); // written between turns by the scenario: no DSH trigger does that
      expect(p!.budget!.savedMessageTokens).toBeGreaterThan(0);
      expect(p!.budget!.messagesBefore).toBe(p!.budget!.messagesAfter);
    });
  }

  it.skipIf(!HAVE_CORPUS)('CLI: human table and --json for syn.compaction-double; --verdicts', async () => {
    const target = path.join(CORPUS, SYN, 'syn.compaction-double');
    const human = await runInProcess(['compactions', target]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('#1 compaction compaction-1');
    expect(human.stdout).toMatch(/Raw fact integrity\s+PASS/);
    const json = await runInProcess(['compactions', target, '--json']);
    expect(JSON.parse(json.stdout).attempts).toHaveLength(2);
    const v = await runInProcess(['compactions', target, '--verdicts']);
    expect(v.stdout).not.toContain('#1 compaction');
    expect(v.stdout).toMatch(/Budget gain\s+PASS/);
    const one = await runInProcess(['compactions', target, '--id', 'compaction-2']);
    expect(one.stdout).toContain('#2 compaction compaction-2');
    expect(one.stdout).not.toContain('#1 compaction');
    expect(one.stdout).toContain('re-compacts replacement(s) 46; stands for append-origin 2, 13, 18, 27, 29, 40, 51, 61');
    expect(JSON.parse((await runInProcess(['compactions', target, '--id', '#1', '--json'])).stdout).attempts.map((a: any) => a.compactionId)).toEqual(['compaction-1']);
    const missing = await runInProcess(['compactions', target, '--id', 'nope']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('#1 (compaction-1), #2 (compaction-2)');
  });

  it.skipIf(!HAVE_CORPUS)('syn.compaction-double: the first checkpoint is re-compacted; its facts stay traceable to the current surface', async () => {
    const r = await inspectTarget(resolveTarget(path.join(CORPUS, SYN, 'syn.compaction-double')), { collect: true });
    const [c1, c2] = auditCompactions(r.events!).attempts;
    expect(c1!.integrity).toMatchObject({ ok: true, shadowedReplacements: [], originSeqs: [2, 13, 18, 27, 29, 40], currentHolder: 69 });
    expect(c2!.integrity).toMatchObject({ ok: true, shadowedReplacements: [46], originSeqs: [2, 13, 18, 27, 29, 40, 51, 61], currentHolder: 69 });
  });
});

if (!HAVE_CORPUS) describe('corpus', () => it.skip(SKIP_REASON, () => {}));

// ---------------------------------------------------------------- failure kinds

describe('failure classification', () => {
  const cases: [string, boolean, string, string][] = [
    ['summary is not smaller than the shadowed content (40 estimated framed tokens >= 30)', false, 'summary', 'not-smaller'],
    ['summarization truncated at the token cap (incomplete checkpoint)', false, 'summary', 'truncated'],
    ['summarization produced no text summary content', false, 'summary', 'no-text'],
    ['compaction summary cannot contain image output', false, 'summary', 'image-output'],
    ['no provider/model available for summarization: set both BasicCompactionConfig summarization fields', false, 'summary', 'no-provider'],
    ['compaction: selected surface changed before summarization began', false, 'changed', 'surface-changed-before'],
    ['compaction: session surface changed during summarization', false, 'changed', 'surface-changed-during'],
    ['compaction: the selected span is no longer a valid replacement target: compactRegion: end seq 28 not found in surface', false, 'changed', 'span-invalid'],
    ['compaction: the selected span changed during summarization', false, 'changed', 'span-changed'],
    ['compaction: the selected span was rewritten during summarization', false, 'changed', 'span-rewritten'],
    ['This operation was aborted', false, 'cancelled', 'cancelled'],
    ['disk full: ENOSPC', true, 'commit', 'body-append-failed'],
    ['provider said no', false, 'other', 'unrecognized'],
  ];
  for (const [text, withSummary, cls, reason] of cases) {
    it(`${cls}/${reason}: ${text.slice(0, 50)}`, async () => {
      const { report, events } = await auditText(failingBracket(text, withSummary));
      expect(compactionInvariant(events)).toEqual([]); // a DSH-valid bracket
      const a = report.attempts.at(-1)!;
      expect(a.outcome).toBe('failed');
      expect(a.failure).toMatchObject({ class: cls, reason, text });
      expect(a.nextRequest.status).toBe('pending');
      expect(verdict(report, 'failure').state).toBe(cls === 'other' ? 'warn' : 'pass');
    });
  }

  it('busy: a /compact that never opened a bracket, classified from command/done', async () => {
    const { report } = await auditText([
      ...baseEvents(),
      { type: 'command/run', data: { commandId: 'c1', name: 'compact', args: '', source: { kind: 'user' } } },
      { type: 'command/done', data: { commandId: 'c1', kind: 'error', text: 'Compaction is unavailable because this process has an active compaction, or the agent is not idle.' } },
    ]);
    const a = report.attempts.at(-1)!;
    expect(a.outcome).toBe('not-started');
    expect(a.failure).toMatchObject({ class: 'busy', basis: 'command/done' });
    expect(report.counts.notStarted).toBe(1);
  });

  it('nothing to compact is not a failure', async () => {
    const { report } = await auditText([
      ...baseEvents(),
      { type: 'command/run', data: { commandId: 'c1', name: 'compact', args: '', source: { kind: 'user' } } },
      { type: 'command/done', data: { commandId: 'c1', kind: 'success', text: 'No compactable history yet.' } },
    ]);
    expect(report.attempts.at(-1)).toMatchObject({ outcome: 'nothing-to-compact', failure: null });
  });

  it('persistence: the bracket closed but /compact reported the flush failure', async () => {
    const { report, events } = await auditText([
      ...baseEvents(),
      { type: 'command/run', data: { commandId: 'c2', name: 'compact', args: '', source: { kind: 'user' } } }, // 31
      { type: 'compaction/start', data: { compactionId: 'k2', sourceCommandId: 'c2', turn: null } }, // 32
      summaryEv('k2', [26, 28], { sourceCommandId: 'c2' }), // 33
      checkpoint('k2', 32, 33, [26, 28], { sourceCommandId: 'c2' }), // 34
      { type: 'compaction/end', data: { compactionId: 'k2', sourceCommandId: 'c2', turn: null } }, // 35
      { type: 'command/done', data: { commandId: 'c2', kind: 'error', text: 'Compaction finished, but the session could not be saved.' } },
    ]);
    expect(compactionInvariant(events)).toEqual([]);
    const a = report.attempts.at(-1)!;
    expect(a.outcome).toBe('succeeded');
    expect(a.trigger).toMatchObject({ kind: 'manual', command: { commandId: 'c2', runSeq: 31, doneSeq: 36 } });
    expect(a.failure).toMatchObject({ class: 'persistence', basis: 'command/done' });
    expect(a.range).toMatchObject({ start: 26, end: 28, startPosition: 2, endPosition: 3, surfaceLengthBefore: 4, shadowedSeqs: [26, 28] });
    expect(a.coverage).toMatchObject({ covered: true, citesStart: true, citesSummary: true, declaredMatches: true });
  });

  it('cancelled: /compact says so, and the logged abort text agrees', async () => {
    const { report } = await auditText([
      ...baseEvents(),
      { type: 'command/run', data: { commandId: 'c3', name: 'compact', args: '', source: { kind: 'user' } } },
      { type: 'compaction/start', data: { compactionId: 'k2', sourceCommandId: 'c3', turn: null } },
      { type: 'compaction/end', data: { compactionId: 'k2', sourceCommandId: 'c3', turn: null, error: 'This operation was aborted' } },
      { type: 'command/done', data: { commandId: 'c3', kind: 'error', text: 'Compaction cancelled.' } },
    ]);
    const a = report.attempts.at(-1)!;
    expect(a.failure).toMatchObject({ class: 'cancelled', basis: 'command/done', text: 'This operation was aborted' });
    expect(a.notes.filter((n) => n.includes("reads as"))).toEqual([]);
  });

  it('classifyCompactionError is the same rule for library users', () => {
    expect(classifyCompactionError('anything', true).class).toBe('commit');
    expect(classifyCompactionError('AbortError', false).class).toBe('cancelled');
  });
});

// ---------------------------------------------------------------- orphan locks (§9.4)

describe('orphan locks', () => {
  it('active: a start with no end and no later session/end-seed (agrees with DSH-F4)', async () => {
    const { report, events } = await auditText([...baseEvents(), { type: 'compaction/start', data: { compactionId: 'k2', turn: null } }]);
    const a = report.attempts.at(-1)!;
    expect(a.outcome).toBe('unclosed');
    expect(a.lock).toMatchObject({ state: 'active', endSeedSeq: null });
    expect(orphanCompactionLock(events).map((f) => f.seq)).toEqual([31]);
    expect(report.counts.activeLocks).toBe(1);
    expect(verdict(report, 'failure').state).toBe('fail');
  });

  it('stale: a later session/end-seed ends that lifecycle (agrees with DSH-F4 and DSH-F1)', async () => {
    const { report, events } = await auditText([
      ...baseEvents(),
      { type: 'compaction/start', data: { compactionId: 'k2', turn: null } },
      { type: 'session/end-seed', data: {} },
      { type: 'turn/start', data: { turn: 3 } },
      { type: 'turn/end', data: { turn: 3, reason: { kind: 'completed' } } },
    ]);
    const a = report.attempts.at(-1)!;
    expect(a.lock).toMatchObject({ state: 'stale', endSeedSeq: 32 });
    expect(orphanCompactionLock(events)).toEqual([]);
    expect(compactionInvariant(events)).toEqual([]);
    expect(report.counts).toMatchObject({ activeLocks: 0, staleLocks: 1 });
    expect(verdict(report, 'failure').state).toBe('pass');
  });

  it('unclosed after its body landed: commit class by shape', async () => {
    const { report } = await auditText([
      ...baseEvents(),
      { type: 'compaction/start', data: { compactionId: 'k2', turn: null } }, // 31
      summaryEv('k2', [26, 28]), // 32
      checkpoint('k2', 31, 32, [26, 28]), // 33
    ]);
    const a = report.attempts.at(-1)!;
    expect(a).toMatchObject({ outcome: 'unclosed', failure: { class: 'commit', reason: 'unclosed-after-body' }, lock: { state: 'active' } });
    expect(a.range?.shadowedSeqs).toEqual([26, 28]);
  });
});

// ---------------------------------------------------------------- triggers, pairing, budget, requests

describe('triggers', () => {
  it('context-overflow: inside the failed step after a CONTEXT_WINDOW_EXCEEDED finish; the retry is the next request', async () => {
    const { report, events } = await auditText(overflowTurn('CONTEXT_WINDOW_EXCEEDED'));
    expect(relationalFindings(events)).toEqual([]);
    const a = report.attempts.at(-1)!;
    expect(a.trigger).toMatchObject({ kind: 'context-overflow', turn: 3, step: 1, failedDispatch: { key: '3/1#0', finishSeq: 34, code: 'CONTEXT_WINDOW_EXCEEDED' } });
    expect(a.nextRequest).toMatchObject({ status: 'ok', key: '3/1#1', firstChunkSeq: 39, retryOfFailedStep: true, messageCount: 2 });
    expect(a.range).toMatchObject({ start: 22, end: 28, shadowedSeqs: [22, 17, 26, 28], surfaceLengthBefore: 5 });
  });

  it('request-error: the same position after another failure code', async () => {
    const { report } = await auditText(overflowTurn('RATE_LIMIT'));
    expect(report.attempts.at(-1)!.trigger).toMatchObject({ kind: 'request-error', failedDispatch: { code: 'RATE_LIMIT' } });
  });

  it('pressure: a pre-step prune and compaction in one pass (before step/start)', async () => {
    const { report, events } = await auditText(pressureTurn());
    expect(relationalFindings(events)).toEqual([]);
    const [, prune, comp] = report.attempts;
    expect(prune).toMatchObject({ kind: 'prune', seqs: { prune: 40, replacement: 41 }, precedesCompaction: 'k4', outcome: 'applied' });
    expect(prune!.trigger).toMatchObject({ kind: 'pressure', turn: 4, step: 1 });
    expect(prune!.range).toMatchObject({ start: 36, end: 36, shadowedSeqs: [36] });
    expect(comp!.trigger).toMatchObject({ kind: 'pressure', turn: 4, step: 1 });
    expect(comp!.nextRequest).toMatchObject({ status: 'ok', key: '4/1#0' });
    expect(report.verdicts.map((v) => v.state)).toEqual(['pass', 'pass', 'pass', 'pass', 'pass']);
  });
});

describe('surface legality: tool pairing across the boundary', () => {
  it('a span that shadows a tool call but leaves its result is reported (audit and DSH-F5)', async () => {
    const { report, events } = await auditText(splitPair());
    const a = report.attempts[0]!;
    expect(a.pairing).toMatchObject({ ok: false, balancedBefore: true, balancedAfter: false, orphanCalls: [], orphanResults: [{ callId: 'c1', survivingSeq: 12, shadowedSeq: 10 }] });
    expect(verdict(report, 'surface').state).toBe('fail');
    expect(relationalFindings(events).map((f) => f.code)).toEqual(['DSH-F5']);
  });

  it('DSH-F5 mutation: dsh check fires exactly F5 on the split, nothing on the valid base', async () => {
    expect(RULES.find((r) => r.code === 'DSH-F5')?.severity).toBe('warning');
    const findings = await checkFindings(logText(splitPair()));
    expect(findings.map((f) => f.code)).toEqual(['DSH-F5']);
    expect(findings[0]!.seq).toBe(22);
    expect(findings[0]!.message).toMatch(/leaves the result of "c1" \(seq 12\) without its call \(shadowed seq 10\)/);
    expect(await checkFindings(logText(baseEvents()))).toEqual([]);
  });
});

describe('budget', () => {
  it('uses the token-meter heuristic', () => {
    // text "abcde": ceil(5/4)=2 +4 block +4 role
    expect(estimateMessage({ role: 'user', content: [{ type: 'text', text: 'abcde' }] }).tokens).toBe(10);
    // tool-call: ceil(4/4)+ceil(2/4)+4 = 6, +4 role
    expect(estimateMessage({ role: 'assistant', content: [{ type: 'tool-call', id: 'x', name: 'read', arguments: '{}' }] }).tokens).toBe(10);
  });

  it('a compaction whose savings are eaten by a bigger header on the next request fails the budget verdict', async () => {
    const events = overflowTurn('CONTEXT_WINDOW_EXCEEDED');
    // A header change right after the compaction with a long system prompt.
    events.splice(39, 0, { type: 'request/header', data: { header: { config: { provider: 'p', model: 'm' }, system: 'x'.repeat(4000) }, reason: 'change' } });
    // The assistant/message now cites the retry's finish chunk at its new seq.
    (events[41] as any).sourceEventSeqs = [40];
    const { report } = await auditText(events);
    const a = report.attempts.at(-1)!;
    expect(a.budget!.savedMessageTokens).toBeGreaterThan(0);
    expect(a.budget!.headerTokensNext).toBeGreaterThan(a.budget!.headerTokensBefore);
    expect(a.budget).toMatchObject({ eatenByHeader: true });
    expect(a.budget!.netGain).toBeLessThanOrEqual(0);
    expect(verdict(report, 'budget').state).toBe('fail');
    const cli = await cliOn(events, ['--strict']);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain('savings eaten by the header');
  });
});

describe('hostile payloads', () => {
  it('malformed compaction payloads and control characters neither throw nor reach the terminal raw', async () => {
    const events: Ev[] = [
      ...baseEvents(),
      { type: 'command/run', data: { commandId: 7, name: ['compact'] } },
      { type: 'compaction/start', data: { compactionId: '\u001b[31mevil\u0007', sourceCommandId: 'nope', turn: 'x' } },
      { type: 'compaction/summary', data: { compactionId: '\u001b[31mevil\u0007', summary: 'not blocks', shadowedSeqs: 'bogus', usage: 'x', provider: { a: 1 } } },
      { type: 'compaction/end', data: { compactionId: '\u001b[31mevil\u0007', error: { not: 'a string' } } },
      { type: 'compaction/prune', data: null },
      { type: 'command/done', data: { commandId: 'nope', kind: 'error', text: '\u001b]0;pwned\u0007' } },
      { type: 'compaction/end', data: {} },
    ];
    const { report } = await auditText(events);
    expect(report.attempts.length).toBeGreaterThan(0);
    const out = await cliOn(events);
    expect(out.code).toBe(0);
    expect(out.stdout).not.toMatch(/[\u0000-\u0008\u001b\u007f]/);
    expect(JSON.parse((await cliOn(events, ['--json'])).stdout).attempts.length).toBe(report.attempts.length);
  });
});

// ---------------------------------------------------------------- CLI and generator

const tmp = mkdtempSync(path.join(os.tmpdir(), 'dsh-compactions-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

async function cliOn(events: Ev[], args: string[] = []) {
  const dir = path.join(tmp, `s${n++}`);
  mkdirSync(dir);
  const file = path.join(dir, 'session.jsonl');
  writeFileSync(file, logText(events));
  return runInProcess(['compactions', file, ...args]);
}

describe('CLI exit codes', () => {
  it('0 normally, 1 with --strict on a failing verdict, 1 on an unreadable log, 2 on usage', async () => {
    const lock = [...baseEvents(), { type: 'compaction/start', data: { compactionId: 'k2', turn: null } }];
    expect((await cliOn(lock)).code).toBe(0);
    const strict = await cliOn(lock, ['--strict']);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/Failure recovery\s+FAIL/);
    const broken = clone(baseEvents());
    (broken[22] as any).sourceEventSeqs = [20, 21, 2, 12];
    const refused = await cliOn(broken);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('surface replace: sourceEventSeqs must include every shadowed surface node; missing 10');
    const refusedJson = await cliOn(broken, ['--json']);
    expect(JSON.parse(refusedJson.stdout).error.message).toContain('missing 10');
    expect((await runInProcess(['compactions'])).code).toBe(2);
    expect((await runInProcess(['compactions', 'x', '--bogus'])).code).toBe(2);
  });
});

describe('generated sessions (project generator)', () => {
  it('every generated compaction and prune audits clean', async () => {
    const { events, stats } = collectSession({ seed: 9, id: 'gen', turns: 12, features: { 3: ['prune'], 5: ['compaction'], 8: ['prune', 'compaction'] }, randomFeatures: false });
    const r = await inspectText(logText(events.map(({ type, data, surfaceOp, sourceEventSeqs }) => ({ type, data, ...(surfaceOp !== undefined ? { surfaceOp } : {}), ...(sourceEventSeqs !== undefined ? { sourceEventSeqs } : {}) })), { id: 'gen' }));
    expect(r.error).toBeUndefined();
    const report = auditCompactions(r.events!, { sessionId: 'gen' });
    expect(report.counts.compactions).toBe(stats.compactions);
    expect(report.counts.prunes).toBe(stats.prunes);
    expect(stats.compactions + stats.prunes).toBeGreaterThan(0);
    for (const a of report.attempts) {
      expect(a.coverage?.covered).toBe(true);
      expect(a.coverage?.declaredMatches).toBe(true);
      expect(a.pairing?.ok).toBe(true);
      expect(a.integrity?.ok).toBe(true);
    }
    expect(verdict(report, 'raw-facts').state).toBe('pass');
    expect(verdict(report, 'surface').state).not.toBe('fail');
    expect(verdict(report, 'request').state).toBe('pass');
  });
});

/**
 * A chain of turns, each with its own large request header (a distinct system prompt of `systemBytes`), one
 * dispatch, and a compaction of the whole surface (so each checkpoint re-compacts the previous one).
 */
function headerChain(turns: number, systemBytes: number): Ev[] {
  const out: Ev[] = [];
  let surface: number[] = [];
  for (let t = 1; t <= turns; t++) {
    const at = () => out.length;
    out.push({ type: 'turn/start', data: { turn: t } });
    out.push({ type: 'request/header', data: { header: { config: { provider: 'p', model: 'm' }, system: `turn ${t}: ${'x'.repeat(systemBytes)}`, tools: [{ name: `tool-${t}`, description: 'd', inputSchema: { type: 'object' } }] }, reason: t === 1 ? 'initial' : 'change' } });
    out.push({ type: 'step/start', data: { turn: t, step: 1 } });
    surface.push(at());
    out.push(USER(`u${t}`, `question ${t}`));
    const chunkSeq = at();
    out.push({ type: 'assistant/chunk', data: { turn: t, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } });
    surface.push(at());
    out.push({ type: 'assistant/message', data: { turn: t, step: 1, message: { id: `a${t}`, role: 'assistant', content: [], source: MODEL } }, surfaceOp: 'append', sourceEventSeqs: [chunkSeq] });
    out.push({ type: 'step/end', data: { turn: t, step: 1 } });
    const startSeq = at();
    out.push({ type: 'compaction/start', data: { compactionId: `k${t}`, turn: t } });
    const summarySeq = at();
    out.push(summaryEv(`k${t}`, surface));
    const cp = at();
    out.push(checkpoint(`k${t}`, startSeq, summarySeq, surface));
    out.push({ type: 'compaction/end', data: { compactionId: `k${t}`, turn: t } });
    out.push({ type: 'turn/end', data: { turn: t, reason: { kind: 'completed' } } });
    surface = [cp];
  }
  return out;
}

describe('bounded memory with the session index (project writer)', () => {
  // Each attempt's budget prices the request headers around it: the audit used to keep each attempt's
  // folded header and to hydrate every dispatch it prices at once, so it held every header of the log.
  const TURNS = 600;
  const SYSTEM_BYTES = 64 * 1024;
  const HEAP_MIB = 40;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-compactions-headers-'));
  const cache = path.join(dir, 'cache');
  const file = path.join(dir, '--home-dev-p--', 'hdrs', 'session.jsonl');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`compactions --json and text, warm, under a ${HEAP_MIB} MiB heap on a log of ${TURNS} distinct ${SYSTEM_BYTES / 1024} KiB request headers print what the holding audit computes`, async () => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, logText(headerChain(TURNS, SYSTEM_BYTES), { id: 'hdrs', cwd: '/home/dev/p' }));
    // The first (cold) read writes the index; the audited reads below load it.
    const first = await runCli(['trace', file, '0'], { env: { DSH_CACHE_DIR: cache } });
    expect(first.code, first.stderr).toBe(0);
    expect(readdirSync(cache).length).toBeGreaterThan(0);
    const small = (args: string[]) => runCli(args, { env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}`, DSH_NO_REEXEC: '1', DSH_CACHE_DIR: cache } });
    const got = await small(['compactions', file, '--json']);
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    if (r.error || !r.events) throw new Error(`log refused: ${r.error?.message}`);
    const report = auditCompactions(r.events, { sessionId: r.meta?.id ?? null });
    expect(report.counts.compactions).toBe(TURNS);
    // Every attempt is priced against the headers around it.
    expect(report.attempts.every((a) => a.budget !== null && a.budget.headerTokensNext > SYSTEM_BYTES / 4)).toBe(true);
    const want = toJson(report) + '\n';
    expect(got.stdout === want, 'stdout differs from the holding audit').toBe(true);
    const text = await small(['compactions', file]);
    expect(text.code, text.stderr.slice(0, 2000)).toBe(0);
    const held = await runInProcess(['compactions', file], { DSH_NO_CACHE: '1' });
    expect(text.stdout === held.stdout, 'text differs from the cold run').toBe(true);
  }, 300_000);
});

describe('bounded memory (project generator)', () => {
  // Every turn compacts all before it, so each checkpoint re-compacts the previous one: what it stands for
  // (integrity.originSeqs) lists everything the previous one lists and more, and the audit grows with the
  // log squared. The audit used to hold it all and print one document; it now keeps what each list is
  // made of and prints one attempt at a time.
  const TURNS = 900;
  const HEAP_MIB = 48;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-compactions-chain-'));
  const file = path.join(dir, '--home-dev-p--', 'chain', 'session.jsonl');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const small = (args: string[]) => runCli(args, { env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}`, DSH_NO_CACHE: '1' } });

  it(`re-compacting checkpoints: compactions --json under a ${HEAP_MIB} MiB heap prints what the holding audit computes`, async () => {
    const features: Record<number, ['compaction']> = {};
    for (let t = 1; t <= TURNS; t++) features[t] = ['compaction'];
    await writeGeneratedArtifact(file, { seed: 5, id: 'chain', cwd: '/home/dev/p', turns: TURNS, encoding: 'none', features, randomFeatures: false, toolOutputBytes: [64, 256], verbosity: 0.2 });
    const got = await small(['compactions', file, '--json']);
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    if (r.error || !r.events) throw new Error(`generated log refused: ${r.error?.message}`);
    const report = auditCompactions(r.events, { sessionId: r.meta?.id ?? null });
    expect(report.counts.compactions).toBe(TURNS - 1);
    // The lists: millions of seqs together (the old audit ran out of this heap holding them).
    expect(report.attempts.reduce((n, a) => n + (a.integrity?.originSeqs.length ?? 0), 0)).toBeGreaterThan(2_000_000);
    const want = toJson(report) + '\n';
    expect(got.stdout.length).toBe(want.length);
    expect(got.stdout === want, 'stdout differs from the holding audit').toBe(true);
  }, 120_000);
});

describe('what a finished audit keeps', () => {
  it('its printers do not keep the audit (its fold, its dispatch lookup and, through it, the dispatch index) alive', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const { events } = collectSession({ seed: 9, id: 'gen', turns: 12, features: { 3: ['prune'], 5: ['compaction'], 8: ['prune', 'compaction'] }, randomFeatures: false });
    const make = () => {
      const audit = new CompactionAudit(deriveDispatches(events, { lazy: events }).requests);
      for (const e of events) audit.push(e);
      audit.price(audit.end());
      return { audited: audit.finish('gen'), audit: new WeakRef(audit) };
    };
    const { audited, audit } = make();
    // Full collections between macrotasks (deref keeps its target until the task ends) until it is gone:
    // one or two suffice alone; CI, beside other suites, once needed more than three.
    for (let i = 0; i < 20 && audit.deref() !== undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
    }
    expect(audit.deref()).toBeUndefined();
    // The printers still print every attempt.
    expect(audited.report.attempts.length).toBeGreaterThan(1);
    for (const a of audited.report.attempts) expect([...audited.json(a)].join('')).toBe(toJson(audited.full(a)));
  });
});

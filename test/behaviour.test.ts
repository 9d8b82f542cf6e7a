/**
 * The behaviour rules (dsh check's family X) on sessions made by the project's own generator, each
 * pattern planted in a known turn beside a near-miss that must not fire (test/helpers/behaviour-session.ts).
 * Findings, their evidence and their cost figures are asserted exactly; the dispatch sets are checked
 * against `deriveDispatches` (the dispatches `dsh request` rebuilds), the prices against data/prices.json.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSession, type Session } from '../src/index.js';
import { sessionPath, writeArtifactFile } from '../src/log/writer.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { deriveDispatches } from '../src/views/requests.js';
import { estimateMessage } from '../src/views/compactions.js';
import { formatAtto, loadPriceTable, priceUsage } from '../src/views/prices.js';
import { zero } from '../src/views/stats.js';
import { deriveEventMessage } from '../src/log/surface.js';
import type { Finding } from '../src/check/engine.js';
import type { SessionEvent, SessionHeader } from '../src/log/types.js';
import { runCli } from './helpers/cli.js';
import { crashedSession, plantedSession, type Planted } from './helpers/behaviour-session.js';

let dir: string;
let file: string;
let planted: Planted;
let session: Session;
let findings: Finding[];

async function write(header: SessionHeader, batches: SessionEvent[][]): Promise<string> {
  const f = sessionPath(dir, header, 'zstd');
  await writeArtifactFile(f, { header, encoding: 'zstd', batches });
  return f;
}

async function check(f: string, options: Parameters<Session['check']>[0]): Promise<Finding[]> {
  const s = await openSession(f, { cache: false });
  if (!s.ok) throw new Error(s.error.message);
  const r = await s.value.check(options);
  if (!r.ok) throw new Error(r.error.message);
  return r.value.findings;
}

const of = (code: string, list: Finding[] = findings) => list.filter((f) => f.code === code);

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-behaviour-'));
  planted = plantedSession();
  file = await write(planted.header, planted.batches);
  const s = await openSession(file, { cache: false });
  if (!s.ok) throw new Error(s.error.message);
  session = s.value;
  const r = await session.check({ behaviour: true });
  if (!r.ok) throw new Error(r.error.message);
  findings = r.value.findings;
});

afterAll(() => {
  session?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('behaviour rules on a planted session', () => {
  it('are off by default: the findings are those of the log rules alone (none here)', async () => {
    const r = await session.check();
    expect(r.ok && r.value.findings).toEqual([]);
  });

  it('find each planted pattern at its seqs, and nothing at the near-misses', () => {
    const at = planted.at;
    expect(findings.map((f) => [f.code, f.seq])).toEqual([
      ['DSH-X1', at.loopCalls[2]],
      ['DSH-X2', at.redundant.result],
      ['DSH-X3', at.streak[0]],
      ['DSH-X4', at.repeatedFailure[1]],
      ['DSH-X5', at.retries[0]],
      ['DSH-X6', at.big.result],
      ['DSH-X7', at.compactionStarts[1]],
      ['DSH-X8', at.lowYield],
      ['DSH-X10', at.unoffered],
      ['DSH-X11', at.invalidArgs],
    ]);
    for (const f of findings) {
      expect(f.hint.length).toBeGreaterThan(0);
      expect(f.evidence?.seqs).toContain(f.seq);
    }
  });

  it('X1: the same call (keys in any order) three times, with grep calls of other arguments between', () => {
    const [x1] = of('DSH-X1');
    expect(x1!.severity).toBe('warning');
    expect(x1!.evidence).toEqual({ seqs: planted.at.loopCalls, turn: 1, tool: 'list_dir', call: 'list_dir {"depth":"1","path":"src"}', count: 3, details: { min: 3 } });
    expect(x1!.message).toBe(`list_dir called 3 times in turn 1 with the same arguments and no change in between (tool/call seq ${planted.at.loopCalls.join(', ')})`);
  });

  it('X2: the identical re-read of a.ts fires; the re-read of b.ts after an edit of c.ts does not', () => {
    const [x2] = of('DSH-X2');
    const { earlier, call, result } = planted.at.redundant;
    expect(x2!.evidence!.seqs).toEqual([earlier, call, result]);
    expect(x2!.evidence!.bytes).toBe(1581);
    expect(x2!.evidence!.carried).toEqual({
      count: 17,
      first: '2/3#0',
      last: '7/1#0',
      tokensEach: 408,
      tokensResent: 6936,
      costResent: { currency: 'USD', cacheMiss: '0.00097104', cacheHit: '0.0000194208' },
      unpriced: 0,
    });
    expect(x2!.severity).toBe('info');
  });

  it('X3 and X4: three errors in a row, and the same build failing again; errors between successes do not fire', () => {
    const [x3] = of('DSH-X3');
    expect(x3!.evidence).toEqual({ seqs: planted.at.streak, turn: 3, count: 3, details: { tools: 'bash,grep', min: 3 } });
    const [x4] = of('DSH-X4');
    expect(x4!.evidence).toEqual({ seqs: planted.at.repeatedFailure, turn: 3, tool: 'bash', call: 'bash {"command":"npm run build"}', count: 2, details: { min: 2 } });
    expect(findings.filter((f) => f.evidence?.turn === 4)).toEqual([]);
  });

  it('X5: three llm/retry events in turn 5; turn 6 has one', () => {
    const [x5] = of('DSH-X5');
    expect(x5!.evidence).toEqual({ seqs: planted.at.retries, turn: 5, count: 3, details: { min: 3 } });
    expect(planted.events.filter((e) => e.type === 'llm/retry' && e.data.turn === 6)).toHaveLength(1);
  });

  it('X6: the 24 KB grep result re-sent until the compaction shadowed it; the exact dispatch set, tokens and price', async () => {
    const [x6] = of('DSH-X6');
    const seq = planted.at.big.result;
    const ev = x6!.evidence!;
    expect(ev.seqs).toEqual([planted.at.big.call, seq]);
    expect(ev.bytes).toBe(24422);
    expect(ev.details).toEqual({ bytesResent: 24422 * 21, shadowedAt: planted.at.compactionStarts[0]! + 2, minBytes: 16384, minDispatches: 5 });
    expect(ev.carried).toEqual({
      count: 22,
      first: '1/2#0',
      last: '7/1#0',
      tokensEach: 6118,
      tokensResent: 6118 * 21,
      costResent: { currency: 'USD', cacheMiss: '0.01798692', cacheHit: '0.0003597384' },
      unpriced: 0,
    });
    // The same figures from the dispatches `dsh request` rebuilds: those whose input held the result.
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    const events = r.events!;
    const sent = deriveDispatches(events).requests.filter((d) => d.surfaceNodes.includes(seq));
    expect(sent.map((d) => d.key)).toHaveLength(22);
    expect([sent[0]!.key, sent[sent.length - 1]!.key]).toEqual(['1/2#0', '7/1#0']);
    const tokens = estimateMessage(deriveEventMessage(events[seq]!)).tokens;
    expect(tokens).toBe(6118);
    const table = loadPriceTable();
    let miss = 0n;
    for (const d of sent.slice(1)) {
      const p = priceUsage({ ...zero(), uncachedInputTokens: tokens }, d.header!.config.model, d.header!.config.provider, table, { currency: 'USD', at: d.firstChunkTime });
      expect(p.priced).toBe(true);
      if (p.priced) miss += p.atto;
    }
    expect(formatAtto(miss)).toBe('0.01798692');
    // The 30 KB read pruned at the start of turn 7 was sent twice: below minDispatches.
    expect(findings.filter((f) => f.code === 'DSH-X6')).toHaveLength(1);
  });

  it('X7 and X8: compactions one step apart, the second freeing nothing; the first and third do not fire', () => {
    const [a, b, c] = planted.at.compactionStarts;
    const [x7] = of('DSH-X7');
    expect(x7!.evidence).toEqual({ seqs: [a, b], turn: 9, count: 1, details: { previous: 'compaction-1', compaction: 'compaction-2', stepsBetween: 1, minSteps: 2 } });
    expect(of('DSH-X7').some((f) => f.evidence!.seqs.includes(c!))).toBe(false);
    const [x8] = of('DSH-X8');
    expect(x8!.evidence!.details).toEqual({ compaction: 'compaction-2', contextTokens: 160, shadowedTokens: 139, summaryTokens: 1485, freedTokens: -1346, freedPercent: '-841.3', minFreedPercent: 20 });
    expect(x8!.message).toBe(`compaction compaction-2 (seq ${planted.at.lowYield}) freed no context: 3 node(s) of 139 tokens became a summary of 1485 (context 160 estimated tokens before it)`);
  });

  it('X10 and X11: a tool the header did not offer, arguments that are not JSON', () => {
    expect(of('DSH-X10')[0]!.evidence).toEqual({ seqs: [planted.at.unoffered], turn: 10, tool: 'delete_repo' });
    expect(of('DSH-X11')[0]!.evidence).toEqual({ seqs: [planted.at.invalidArgs], turn: 10, tool: 'read_file', details: { argumentsLength: 20 } });
  });

  it('thresholds and levels: options move the line, a level changes the severity, off drops the rule', async () => {
    const tuned = await check(file, {
      behaviour: true,
      rules: { 'DSH-X1': ['error', { min: 4 }], X2: 'off', X3: ['warning', { min: 2 }], X6: ['warning', { minDispatches: 23 }], X8: ['info', { minFreedPercent: 0 }], 'DSH-X10': 'error' },
    });
    expect(of('DSH-X1', tuned)).toEqual([]);
    expect(of('DSH-X2', tuned)).toEqual([]);
    expect(of('DSH-X6', tuned)).toEqual([]);
    // min 2: turn 3's streak is still the only run of two errors or more (turn 4 interleaves them with successes).
    expect(of('DSH-X3', tuned).map((f) => f.seq)).toEqual([planted.at.streak[0]]);
    expect(of('DSH-X8', tuned)).toHaveLength(1);
    expect(of('DSH-X10', tuned)[0]!.severity).toBe('error');
    // Without `behaviour`, only the rules given a level run.
    const one = await check(file, { rules: { X5: 'error' } });
    expect(one.map((f) => [f.code, f.severity])).toEqual([['DSH-X5', 'error']]);
  });

  it('a bad rule config is a usage error', async () => {
    const r = await session.check({ rules: { X1: ['warning', { nope: 1 }] } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toBe('check options: rules.X1: DSH-X1 has no option "nope" (options: min, readOnlyTools)');
  });
});

describe('X9: a turn interrupted after a tool started', () => {
  it('fires for a tool that may write, not for one that only reads', async () => {
    const edit = crashedSession('crash-edit', ['edit_file', 'read_file']);
    const fe = await write(edit.header, edit.batches);
    const x9 = (await check(fe, { behaviour: true })).filter((f) => f.code === 'DSH-X9');
    const call = edit.events.filter((e) => e.type === 'tool/call').at(-1)!;
    expect(x9.map((f) => f.evidence)).toEqual([{ seqs: [call.seq, call.seq + 1], turn: 2, tool: 'edit_file', call: 'edit_file {"new":"b","old":"a","path":"src/a.ts"}' }]);
    expect(x9[0]!.message).toBe(`turn 2 ended interrupted after edit_file started (tool/call seq ${call.seq}): its outcome is unknown (closer seq ${call.seq + 1}, TOOL_OUTCOME_UNKNOWN)`);
    const read = crashedSession('crash-read', ['read_file', 'edit_file']);
    const fr = await write(read.header, read.batches);
    expect((await check(fr, { behaviour: true })).filter((f) => f.code === 'DSH-X9')).toEqual([]);
    // The list of read-only tools is an option.
    expect((await check(fr, { rules: { X9: ['warning', { readOnlyTools: [] }] } })).map((f) => f.code)).toEqual(['DSH-R1', 'DSH-X9']);
  });
});

describe('the CLI carries behaviour findings in every reporter', () => {
  it('--format json holds the library findings, evidence included', async () => {
    const r = await runCli(['check', '--behaviour', '--format', 'json', file]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions[0].findings).toEqual(findings);
    expect(doc.summary.byCode['DSH-X6']).toBe(1);
  });

  it('text, github, sarif and junit', async () => {
    const text = await runCli(['check', '--behaviour', '--no-hints', file]);
    expect(text.stdout).toContain(`DSH-X6   [seq ${planted.at.big.result}] grep result at seq ${planted.at.big.result} (24422 bytes, 6118 tokens) was sent in 22 dispatches`);
    const gh = await runCli(['check', '--behaviour', '--rule', 'X6=warning', '--fail-on', 'warning', '--format', 'github', file]);
    expect(gh.code).toBe(1);
    const line = gh.stdout.split('\n').find((l) => l.startsWith('::warning') && l.includes('DSH-X6'))!;
    expect(line).toMatch(/^::warning file=.*session\.jsonl\.zstd,title=DSH-X6 carried-result::session behaviour-planted, seq \d+: grep result at seq \d+ \(24422 bytes, 6118 tokens\) was sent in 22 dispatches \(1\/2#0 to 7\/1#0\)/);
    const sarif = JSON.parse((await runCli(['check', '--behaviour', '--format', 'sarif', file])).stdout);
    const rules = sarif.runs[0].tool.driver.rules as { id: string; help: { text: string }; defaultConfiguration: { level: string } }[];
    const x6 = rules.find((x) => x.id === 'DSH-X6')!;
    expect(x6.defaultConfiguration.level).toBe('note');
    expect(x6.help.text).toContain('minBytes (default 16384)');
    const result = sarif.runs[0].results.find((x: { ruleId: string }) => x.ruleId === 'DSH-X6');
    expect(result.properties.evidence.carried.count).toBe(22);
    expect(rules.map((x) => x.id)).toContain('DSH-X11');
    const plain = JSON.parse((await runCli(['check', '--format', 'sarif', file])).stdout);
    expect(plain.runs[0].tool.driver.rules.map((x: { id: string }) => x.id).filter((id: string) => id.startsWith('DSH-X'))).toEqual([]);
    const junit = (await runCli(['check', '--behaviour', '--format', 'junit', file])).stdout;
    expect(junit).toContain('name="DSH-X6 carried-result"');
    expect(junit).toContain('evidence: {&quot;seqs&quot;');
  });
});

describe('dsh report --behaviour', () => {
  it('lists the behaviour findings with their evidence in the page data; without the flag the page has none', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'dsh-behaviour-report-'));
    const withFlag = path.join(out, 'with.html');
    const without = path.join(out, 'without.html');
    const a = await runCli(['report', file, '-o', withFlag, '--behaviour']);
    expect(a.code, a.stderr).toBe(0);
    const b = await runCli(['report', file, '-o', without]);
    expect(b.code, b.stderr).toBe(0);
    const evidence = (html: string) => [...html.matchAll(/"evidence":\{"seqs":\[([\d,]+)\]/g)].map((m) => m[1]!.split(',').map(Number));
    expect(evidence(readFileSync(withFlag, 'utf8'))).toEqual(findings.map((f) => f.evidence!.seqs));
    expect(evidence(readFileSync(without, 'utf8'))).toEqual([]);
    rmSync(out, { recursive: true, force: true });
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, SKIP_REASON, corpusArtifacts } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { collectSession, type GenerateOptions } from '../tools/generate.js';
import { sessionPath, writeArtifactFile } from '../src/log/writer.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import type { SessionEvent, SessionHeader } from '../src/log/types.js';
import { billedUsage, sessionStats, zero, type Buckets } from '../src/views/stats.js';
import { renderExplain } from '../src/cli/render/stats.js';
import { Chalk } from 'chalk';
import { buildLedger, type LedgerSession, CATEGORIES, loadPriceTable, parsePriceTable, priceUsage, formatAtto, readRootUsage, type Ledger, type Usage } from '../src/views/ledger.js';

const add = (a: Buckets, b: Buckets, sign = 1): Buckets => ({
  uncachedInputTokens: a.uncachedInputTokens + sign * b.uncachedInputTokens,
  outputTokens: a.outputTokens + sign * b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + sign * b.cacheReadTokens,
  cacheWriteTokens: a.cacheWriteTokens + sign * b.cacheWriteTokens,
});
const KEYS = [...CATEGORIES, 'billed'] as const;
const plus = (a: Usage, b: Usage): Usage => Object.fromEntries(KEYS.map((k) => [k, add(a[k], b[k])])) as unknown as Usage;
const minus = (a: Usage, b: Usage): Usage => Object.fromEntries(KEYS.map((k) => [k, add(a[k], b[k], -1)])) as unknown as Usage;
const strip = (u: Usage): Usage => Object.fromEntries(KEYS.map((k) => [k, u[k]])) as unknown as Usage;
const tokens = (b: Buckets) => b.uncachedInputTokens + b.outputTokens + b.cacheReadTokens + b.cacheWriteTokens;

/** The events up to and including the `k`-th turn/end. */
function throughTurn(events: readonly SessionEvent[], k: number): SessionEvent[] {
  let seen = 0;
  const i = events.findIndex((e) => e.type === 'turn/end' && ++seen === k);
  if (i < 0) throw new Error(`no turn/end #${k}`);
  return events.slice(0, i + 1);
}

async function write(root: string, opts: GenerateOptions, header?: (h: SessionHeader) => SessionHeader, mutate?: (events: SessionEvent[]) => void): Promise<{ header: SessionHeader; events: SessionEvent[] }> {
  const s = collectSession(opts);
  const h = header ? header(s.header) : s.header;
  if (mutate) for (const b of s.batches) mutate(b);
  await writeArtifactFile(sessionPath(root, h, 'zstd'), { header: h, encoding: 'zstd', batches: s.batches });
  return { header: h, events: s.batches.flat() };
}

/** Give each failed attempt a usage report (the provider billed it), in place of its last text delta: seqs stay put. */
function billFailedAttempts(batch: SessionEvent[]): void {
  for (let i = 1; i < batch.length; i++) {
    const e = batch[i]!;
    const prev = batch[i - 1]!;
    if (e.type === 'assistant/chunk' && e.data.chunk?.type === 'finish' && e.data.chunk.reason?.kind === 'error' && prev.type === 'assistant/chunk' && prev.data.chunk?.type === 'text-delta') {
      prev.data = { ...prev.data, chunk: { type: 'usage', usage: { inputTokens: 500 + i, outputTokens: 3, cacheReadTokens: 100 } } };
    }
  }
}

const T0 = 1785000000000; // 2026-07-25: inside the shipped price window
const base = { toolOutputBytes: [200, 800] as [number, number], randomFeatures: false };

/**
 * A root with: P (root); F1 fork of P; F2 fork of F1 reaching past F1's seed
 * (fork of a fork); S a subagent spawned inside F1; O an orphan fork whose
 * parent is not in the root; M a fork of P whose seed was altered (L1).
 */
async function lineageRoot(root: string) {
  const P = await write(root, { ...base, seed: 1, id: 'P', turns: 4, createdAt: T0, features: { 2: ['retry'], 3: ['compaction'] } }, undefined, billFailedAttempts);
  const F1 = await write(root, { ...base, seed: 2, id: 'F1', turns: 2, createdAt: T0 + 1000, features: { 1: ['retry'] }, fork: { parentId: 'P', seed: throughTurn(P.events, 3) } });
  const F2 = await write(root, { ...base, seed: 3, id: 'F2', turns: 1, createdAt: T0 + 2000, fork: { parentId: 'F1', seed: throughTurn(F1.events, 4) } });
  const S = await write(root, { ...base, seed: 4, id: 'S', turns: 2, createdAt: T0 + 3000, origin: 'subagent', delegationDepth: 1, features: { 1: ['retry'] } }, (h) => ({ ...h, parentSession: 'F1' }), billFailedAttempts);
  const ghost = collectSession({ ...base, seed: 5, id: 'ghost', turns: 2, createdAt: T0 - 1000 });
  const O = await write(root, { ...base, seed: 6, id: 'O', turns: 1, createdAt: T0 + 4000, fork: { parentId: 'ghost', seed: throughTurn(ghost.events, 2) } });
  // M: a fork of P whose seed differs from P at the first user message.
  const mSeed = throughTurn(P.events, 2);
  const altered = mSeed.find((e) => e.type === 'user/message')!.seq;
  const M = await write(root, { ...base, seed: 7, id: 'M', turns: 1, createdAt: T0 + 5000, fork: { parentId: 'P', seed: mSeed } }, undefined, (batch) => {
    for (const e of batch) if (e.seq === altered) e.data = { ...e.data, content: [{ type: 'text', text: 'altered prompt' }] };
  });
  return { P, F1, F2, S, O, M, altered, ghost };
}

describe('usage ledger on generated lineages', () => {
  let root: string;
  let built: Awaited<ReturnType<typeof lineageRoot>>;
  let ledger: Ledger;
  let read: Awaited<ReturnType<typeof readRootUsage>>;
  beforeAll(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'dsh-ledger-'));
    built = await lineageRoot(root);
    read = await readRootUsage(root);
    ledger = buildLedger(read.inputs, { prices: loadPriceTable() });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const row = (id: string) => ledger.sessions.find((s) => s.sessionId === id)!;

  it('every session reads, and its DSH tokenUsage equals the stats fold over its events', async () => {
    expect(ledger.sessions.map((s) => s.sessionId).sort()).toEqual(['F1', 'F2', 'M', 'O', 'P', 'S']);
    for (const s of ledger.sessions) {
      expect(s.error).toBeUndefined();
      const r = await inspectTarget(resolveTarget(s.path), { collect: true });
      const v = sessionStats(s.sessionId, r.events!, { storedEventCount: r.storedEventCount });
      expect(s.tokenUsage, s.sessionId).toEqual(v.tokenUsage);
      expect(s.naive.tokenUsage, s.sessionId).toEqual(v.tokenUsage);
      expect(v.billed.tokenUsage, s.sessionId).toEqual(v.tokenUsage);
      expect(tokens(v.tokenUsage), s.sessionId).toBeGreaterThan(0);
    }
    // The features that make billed differ from tokenUsage are present.
    expect(tokens(row('P').naive.summaryCalls)).toBeGreaterThan(0);
    expect(tokens(row('P').owned.failedAttempts)).toBeGreaterThan(0);
    expect(tokens(row('S').owned.failedAttempts)).toBeGreaterThan(0);
    expect(tokens(row('F1').inherited.failedAttempts)).toBeGreaterThan(0);
  });

  it('per session: naive = owned + inherited + unattributed, in every category', () => {
    for (const s of ledger.sessions) expect(strip(s.naive), s.sessionId).toEqual(plus(plus(strip(s.owned), strip(s.inherited)), strip(s.unattributed)));
  });

  it('root: naive - counted equals the inherited usage exactly, and counted = owned + unattributed', () => {
    const t = ledger.totals;
    expect(minus(strip(t.naive), strip(t.counted))).toEqual(strip(t.inherited));
    expect(tokens(t.inherited.billed)).toBeGreaterThan(0);
    let owned = strip(t.unattributed);
    for (const s of ledger.sessions) owned = plus(owned, strip(s.owned));
    expect(strip(t.counted)).toEqual(owned);
  });

  it('each billed item is counted once: every inherited item is the same item counted by its holder', () => {
    const counted = new Map<string, { category: string; usage: Buckets }>();
    for (const s of ledger.sessions) {
      for (const it of s.items) {
        if (it.holder !== s.sessionId) continue;
        const key = `${s.sessionId}#${it.seq}`;
        expect(counted.has(key)).toBe(false);
        counted.set(key, { category: it.category, usage: it.usage });
      }
    }
    let inheritedItems = 0;
    for (const s of ledger.sessions) {
      for (const it of s.items) {
        if (it.holder === s.sessionId) continue;
        inheritedItems++;
        expect(counted.get(`${it.holder}#${it.seq}`), `${s.sessionId} seq ${it.seq}`).toEqual({ category: it.category, usage: it.usage });
      }
    }
    expect(inheritedItems).toBeGreaterThan(0);
  });

  it('counted equals an independent derivation: each log from its own seed boundary (the first differing seq for M, all of O)', async () => {
    const boundary: Record<string, number> = { P: 0, F1: built.F1.header.seedLength!, F2: built.F2.header.seedLength!, S: 0, O: 0, M: built.altered };
    let expected = zero();
    for (const x of read.inputs) {
      const from = boundary[x.id]!;
      const b = billedUsage({ samples: x.records!.samples.filter((s) => s.seq >= from), summaries: x.records!.summaries.filter((s) => s.seq >= from) });
      expected = add(expected, b.total);
    }
    expect(ledger.totals.counted.billed).toEqual(expected);
  });

  it('fork of a fork: F2 inherits from F1 and from P (past F1 seed), each attributed to its recorder', () => {
    const f2 = row('F2');
    const from = new Map(f2.inherited.from.map((f) => [f.sessionId, f.usage]));
    expect([...from.keys()].sort()).toEqual(['F1', 'P']);
    for (const it of f2.items) {
      const holder = it.seq < built.F1.header.seedLength! ? 'P' : it.seq < built.F2.header.seedLength! ? 'F1' : 'F2';
      expect(it.holder, `seq ${it.seq}`).toBe(holder);
    }
    expect(f2.seed).toMatchObject({ verified: true, firstDifferingSeq: null, parentMissing: false });
  });

  it('subagent inside a fork: S owns its dispatches; F1 and P roll it up once; trees count each item once', () => {
    const s = row('S');
    expect(strip(s.inherited)).toEqual(strip({ ...zeroUsage() }));
    expect(strip(s.owned)).toEqual(strip(s.naive));
    expect(strip(row('F1').rolledUp.subagents)).toEqual(strip(s.owned));
    expect(strip(row('F1').rolledUp.descendants)).toEqual(plus(strip(s.owned), strip(row('F2').owned)));
    expect(strip(row('P').rolledUp.subagents)).toEqual(strip(zeroUsage()));
    const tree = ['P', 'F1', 'F2', 'S', 'M'].map((id) => strip(row(id).owned)).reduce(plus);
    expect(strip(row('P').tree)).toEqual(tree);
    // Root total = P's tree + the orphan's tree: nothing twice.
    expect(strip(ledger.totals.counted)).toEqual(plus(tree, plus(strip(row('O').owned), strip(row('O').unattributed))));
  });

  it('orphan fork: the seed usage is unattributed (not dropped), counted once in the root total', () => {
    const o = row('O');
    expect(o.seed).toMatchObject({ parentMissing: true, verified: null });
    const seedLength = o.seedLength!;
    const seedItems = o.items.filter((i) => i.seq < seedLength);
    expect(seedItems.length).toBeGreaterThan(0);
    expect(seedItems.every((i) => i.owner === null && i.holder === 'O')).toBe(true);
    expect(tokens(o.unattributed.billed)).toBeGreaterThan(0);
    expect(strip(ledger.totals.unattributed)).toEqual(strip(o.unattributed));
    expect(strip(o.inherited)).toEqual(strip(zeroUsage()));
  });

  it('altered seed: M inherits only up to the first differing seq; from there it counts its own, flagged', () => {
    const m = row('M');
    expect(m.seed).toMatchObject({ verified: false, firstDifferingSeq: built.altered });
    for (const it of m.items) expect(it.holder, `seq ${it.seq}`).toBe(it.seq < built.altered ? 'P' : 'M');
    expect(m.explain.some((r) => /differs from parent "P" from seq/.test(r.why))).toBe(true);
  });

  it('CLI --json carries owned, inherited, rolledUp, naive and cost; text names what a naive sum adds', async () => {
    const res = await runCli(['stats', root, '--json']);
    expect(res.code, res.stderr).toBe(0);
    const doc = JSON.parse(res.stdout);
    for (const k of ['counted', 'naive', 'inherited', 'unattributed', 'cost']) expect(doc.totals).toHaveProperty(k);
    for (const s of doc.sessions) for (const k of ['owned', 'inherited', 'rolledUp', 'naive', 'cost', 'unattributed']) expect(s, `${s.sessionId}.${k}`).toHaveProperty(k);
    expect(doc.totals.counted).toEqual(JSON.parse(JSON.stringify(strip(ledger.totals.counted))));
    expect(doc.totals.cost.counted.complete).toBe(true);
    expect(doc.totals.cost.counted.amount).toBeGreaterThan(0);
    const text = await runCli(['stats', root, '--color', 'never']);
    expect(text.stdout).toMatch(/counted once/);
    expect(text.stdout).toMatch(/would add input [\d,]+/);
    const one = await runCli(['stats', 'F2', '--root', root, '--json', '--tree']);
    expect(one.code, one.stderr).toBe(0);
    const d = JSON.parse(one.stdout);
    expect(d.inherited.billed).toEqual(row('F2').inherited.billed);
    expect(d.tokenUsage).toEqual(row('F2').tokenUsage);
    // Without --tree only the ancestors are read: roll-ups are null (not computed), never zero.
    const plain = JSON.parse((await runInProcess(['stats', 'F1', '--root', root, '--json'])).stdout);
    expect(plain.rolledUp).toBeNull();
    expect(plain.cost.tree).toBeNull();
    expect(plain.inherited).toEqual(JSON.parse(JSON.stringify(row('F1').inherited)));
    expect((await runInProcess(['stats', 'F1', '--root', root, '--color', 'never'])).stdout).toMatch(/subagents \(rolled up\) +not read: --tree/);
    const f1 = JSON.parse((await runCli(['stats', 'F1', '--root', root, '--json', '--tree'])).stdout);
    expect(f1.rolledUp.subagents).toEqual(JSON.parse(JSON.stringify(strip(row('S').owned))));
    expect(f1.descendants.map((x: any) => x.sessionId).sort()).toEqual(['F2', 'S']);
    expect(f1.tree).toEqual(JSON.parse(JSON.stringify(strip(row('F1').tree))));
  });

  it('--explain names, for each sample, whether and where it was counted; --figure filters', async () => {
    const res = await runInProcess(['stats', 'F2', '--root', root, '--explain', '--figure', 'inherited', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const rows = JSON.parse(res.stdout).explainRows;
    expect(rows.length).toBe(row('F2').items.filter((i) => i.holder !== 'F2').length);
    expect(rows.every((r: any) => r.standing === 'inherited' && /inherited: .*recorded first by "(P|F1)"/.test(r.why))).toBe(true);
    const text = await runInProcess(['stats', 'P', '--root', root, '--explain', '--color', 'never']);
    expect(text.stdout).toMatch(/summary call: billed, outside DSH tokenUsage/);
    expect(text.stdout).toMatch(/replaced by seq \d+, a later sample of the same attempt/);
    const bad = await runInProcess(['stats', 'P', '--root', root, '--explain', '--figure', 'nonsense']);
    expect(bad.code).toBe(2);
  });

  it('dsh check flags the altered fork with DSH-L1 and --json names the first differing seq', async () => {
    const res = await runCli(['check', root, '--json']);
    const doc = JSON.parse(res.stdout);
    const all = doc.sessions.flatMap((s: any) => s.findings.map((f: any) => ({ ...f, sessionId: s.sessionId ?? f.sessionId })));
    const l1 = all.filter((f: any) => f.code === 'DSH-L1');
    expect(l1.map((f: any) => f.sessionId)).toEqual(['M']);
    expect(l1[0].seq).toBe(built.altered);
    expect(l1[0].message).toContain(`seed event seq ${built.altered}`);
  });

  it('prices: --prices FILE, --currency, unknown models unpriced (never zero), bad tables exit 2', async () => {
    const onlyFlash = path.join(root, '..', `prices-${path.basename(root)}.json`);
    // Flash priced only until the middle of P's log: the rest is unpriced, named, and never costed at zero.
    const mid = built.P.events[Math.floor(built.P.events.length / 2)]!.time;
    const entries = loadPriceTable().entries.filter((e) => e.currency === 'USD').map((e) => ({ ...e, effectiveUntil: new Date(mid).toISOString() }));
    writeFileSync(onlyFlash, JSON.stringify({ prices: entries }));
    try {
      const res = await runInProcess(['stats', root, '--json', '--prices', onlyFlash]);
      expect(res.code, res.stderr).toBe(0);
      const doc = JSON.parse(res.stdout);
      const c = doc.totals.cost.counted;
      expect(c.complete).toBe(false);
      expect(c.amount).toBeGreaterThan(0);
      expect(c.unpriced.length).toBeGreaterThan(0);
      expect(c.unpriced.every((u: any) => /in effect at/.test(u.reason) && u.items > 0)).toBe(true);
      const full = JSON.parse((await runInProcess(['stats', root, '--json'])).stdout).totals.cost.counted;
      expect(full.complete).toBe(true);
      expect(c.amount).toBeLessThan(full.amount);
      const text = await runInProcess(['stats', root, '--prices', onlyFlash, '--color', 'never']);
      expect(text.stdout).toMatch(/\+ unpriced: deepseek-official\/deepseek-v4-flash: [\d,]+ in, [\d,]+ out \(no USD price for deepseek-official\/deepseek-v4-flash in effect at /);
      const cny = JSON.parse((await runInProcess(['stats', root, '--json', '--currency', 'CNY'])).stdout);
      expect(cny.totals.cost.counted.currency).toBe('CNY');
      expect(cny.totals.cost.counted.complete).toBe(true);
      const eur = await runInProcess(['stats', root, '--json', '--currency', 'EUR']);
      const e = JSON.parse(eur.stdout);
      expect(e.totals.cost.counted.amount).toBeNull();
      expect(e.totals.cost.counted.complete).toBe(false);
      writeFileSync(onlyFlash, '{"prices":[{"provider":"x"}]}');
      const bad = await runInProcess(['stats', root, '--prices', onlyFlash]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/must be a non-empty string/);
      const missing = await runInProcess(['stats', root, '--prices', path.join(root, 'nope.json')]);
      expect(missing.code).toBe(2);
    } finally {
      rmSync(onlyFlash, { force: true });
    }
  });
});

function zeroUsage(): Usage {
  return { tokenUsage: zero(), failedAttempts: zero(), summaryCalls: zero(), billed: zero() };
}

describe('priceUsage', () => {
  const table = parsePriceTable(
    JSON.stringify({
      prices: [
        { provider: 'p', model: 'm', currency: 'USD', effectiveFrom: '2026-01-01T00:00:00Z', effectiveUntil: '2026-06-01T00:00:00Z', inputCacheHit: '0.01', inputCacheMiss: '0.5', output: '2', source: 's', retrieved: '2026-01-01' },
        { provider: 'p', model: 'm', currency: 'USD', effectiveFrom: '2026-06-01T00:00:00Z', inputCacheHit: '0.0028', inputCacheMiss: '0.14', output: '0.28', source: 's', retrieved: '2026-06-01' },
      ],
    }),
    'test',
  );
  const u = { uncachedInputTokens: 1_000_000, cacheReadTokens: 2_000_000, cacheWriteTokens: 1, outputTokens: 3 };
  it('exact arithmetic per bucket, with the window in effect at the call', () => {
    const a = priceUsage(u, 'm', 'p', table, { at: Date.parse('2026-07-01') });
    expect(a.priced && formatAtto(a.atto)).toBe('0.14560098');
    const b = priceUsage(u, 'm', 'p', table, { at: Date.parse('2026-03-01') });
    expect(b.priced && formatAtto(b.atto)).toBe('0.5200065');
  });
  it('unknown model, provider, currency, or a time before every window: unpriced with a reason', () => {
    expect(priceUsage(u, 'other', 'p', table)).toMatchObject({ priced: false, reason: 'no price for p/other' });
    expect(priceUsage(u, 'm', null, table)).toMatchObject({ priced: false });
    expect(priceUsage(u, 'm', 'p', table, { currency: 'CNY' })).toMatchObject({ priced: false, reason: 'no CNY price for p/m' });
    expect(priceUsage(u, 'm', 'p', table, { at: Date.parse('2025-01-01') })).toMatchObject({ priced: false });
  });
  it('the shipped table prices the DSH models with a source and a retrieval date each', () => {
    const t = loadPriceTable();
    for (const model of ['deepseek-v4-flash', 'deepseek-v4-pro']) {
      const e = t.entries.filter((x) => x.provider === 'deepseek-official' && x.model === model);
      expect(e.map((x) => x.currency).sort()).toEqual(['CNY', 'USD']);
      for (const x of e) expect(x.source).toMatch(/^https:\/\/api-docs\.deepseek\.com\//);
    }
    const flash = priceUsage({ uncachedInputTokens: 1_000_000, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 0 }, 'deepseek-v4-flash', 'deepseek-official', t, { at: T0 });
    expect(flash.priced && formatAtto(flash.atto)).toBe('0.14');
    expect(priceUsage(u, 'deepseek-v4-flash-vision-exp', 'deepseek-official', t, { at: T0 }).priced).toBe(false);
  });
});

describe.skipIf(!HAVE_CORPUS)('ledger over the corpus', () => {
  it(`every session: DSH tokenUsage unchanged, billed tokenUsage equals it, naive = owned + inherited + unattributed ${HAVE_CORPUS ? '' : SKIP_REASON}`, async () => {
    let n = 0;
    for (const file of corpusArtifacts()) {
      const r = await inspectTarget(resolveTarget(file), { collect: true });
      if (r.error) continue;
      const v = sessionStats(r.meta!.id, r.events!, { storedEventCount: r.storedEventCount });
      expect(v.billed.tokenUsage, file).toEqual(v.tokenUsage);
      expect(v.billed.summaryCalls, file).toEqual(v.compaction.auxiliaryUsage);
      n++;
    }
    expect(n).toBeGreaterThan(250);
    for (const rootDir of ['synthetic/root-zstd', 'dsh-snapshots/root-raw']) {
      const read = await readRootUsage(path.join(CORPUS, rootDir));
      const l = buildLedger(read.inputs, { prices: loadPriceTable() });
      for (const s of l.sessions) {
        if (s.error) continue;
        expect(s.naive.tokenUsage, s.sessionId).toEqual(s.tokenUsage);
        expect(strip(s.naive), s.sessionId).toEqual(plus(plus(strip(s.owned), strip(s.inherited)), strip(s.unattributed)));
      }
      expect(minus(strip(l.totals.naive), strip(l.totals.counted)), rootDir).toEqual(strip(l.totals.inherited));
    }
  });

  it('syn.fork.child: its seed is verified and inherited from syn.fork.parent', async () => {
    const res = await runInProcess(['stats', 'syn.fork.child', '--root', path.join(CORPUS, 'synthetic/root-zstd'), '--json']);
    expect(res.code, res.stderr).toBe(0);
    const d = JSON.parse(res.stdout);
    expect(d.seed).toEqual({ verified: true, firstDifferingSeq: null, parentMissing: false });
    expect(d.inherited.from.map((f: any) => f.sessionId)).toEqual(['syn.fork.parent']);
    expect(tokens(d.inherited.tokenUsage)).toBeGreaterThan(0);
  });
});

describe('--explain text: where a record sits', () => {
  const row = { seq: 7, event: 'usage chunk' as const, provider: 'p', model: 'm', usage: zero(), category: null, standing: null, holder: null, why: 'w' };
  const where = (turn: number | null, step: number | null, attempt: number | null) =>
    renderExplain({ sessionId: 's' } as LedgerSession, [{ ...row, turn, step, attempt }], new Chalk({ level: 0 })).split('\n')[1]!;
  it('turn/step#attempt, turn/step without an attempt, turn alone; never the word null', () => {
    expect(where(1, 2, 3)).toContain(' 1/2#3  p/m');
    expect(where(1, 2, null)).toContain('usage chunk 1/2  p/m');
    expect(where(1, null, null)).toContain('usage chunk turn 1  p/m');
    expect(where(null, null, null)).toContain('usage chunk  p/m');
    for (const line of [where(1, 2, null), where(1, null, null), where(null, null, null)]) expect(line).not.toContain('null');
  });
});

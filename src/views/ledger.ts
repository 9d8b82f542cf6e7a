/**
 * The usage ledger: every billed call counted once across forks and
 * subagents, with its cost.
 *
 * - A session's log yields billed items: each usage sample standing in DSH's
 *   `tokenUsage` fold (category `tokenUsage`), each sample of an earlier
 *   attempt that DSH's rule replaced with a retry's sample (`failedAttempts`),
 *   each compaction summary call (`summaryCalls`). Samples replaced by a later
 *   sample of the SAME attempt are the same call re-reported: no item.
 * - Ownership: an item belongs to the session whose log first recorded it. A
 *   fork's seed (`seq < seedLength`) is its parent's prefix once verified equal
 *   (`compareForkSeed`, as check rule L1), so an item there is walked up to the
 *   ancestor that recorded it. From the first differing seq the child's seed
 *   is its own (flagged). A missing or unreadable parent leaves the item
 *   `unattributed` in the orphan (counted there, once), never dropped.
 * - A session's `inherited` is what its log holds that another session owns;
 *   `naive` (its whole log) = owned + inherited + unattributed, and over any
 *   set of sessions `naive - counted` = the inherited sum exactly.
 * - Subagents own their dispatches; a parent shows them as `rolledUp`.
 */
import path from 'node:path';
import { inspectTarget, type SessionInspection } from '../log/session.js';
import { resolveTarget, scanRoot, type ResolvedTarget } from '../log/target.js';
import { compareForkSeed, seedFingerprint, type SeedComparison } from '../log/seed.js';
import type { SessionEvent, SessionHeader } from '../log/types.js';
import type { FrameDecoder } from '../physical/decoders.js';
import { readHeaderCheap, sessionKind, type SessionKind } from './listing.js';
import { addInto, statsFold, zero, type Buckets, type StatsView, type UsageRecords } from './stats.js';
import { formatAtto, priceUsage, type PriceTable } from './prices.js';
import { failureObject, UsageError, type ErrorObject } from '../core/errors.js';
import { toJson } from '../core/json.js';

export { priceUsage, loadPriceTable, parsePriceTable, formatAtto, DEFAULT_PRICES_FILE, PriceTableError, type PriceTable, type PriceEntry, type Priced } from './prices.js';

export type Category = 'tokenUsage' | 'failedAttempts' | 'summaryCalls';
export const CATEGORIES: readonly Category[] = ['tokenUsage', 'failedAttempts', 'summaryCalls'];

/** Usage by billed category, and their sum. */
export interface Usage {
  tokenUsage: Buckets;
  failedAttempts: Buckets;
  summaryCalls: Buckets;
  billed: Buckets;
}

export const emptyUsage = (): Usage => ({ tokenUsage: zero(), failedAttempts: zero(), summaryCalls: zero(), billed: zero() });

function addUsage(into: Usage, u: Usage, sign = 1): void {
  for (const k of [...CATEGORIES, 'billed'] as const) addInto(into[k], u[k], sign);
}

function addItem(into: Usage, category: Category, b: Buckets): void {
  addInto(into[category], b);
  addInto(into.billed, b);
}

/** A money figure. `amount` covers the priced items only; any unpriced item is listed, never costed at zero. */
export interface Cost {
  currency: string;
  /** null when nothing was priced but something was unpriced. */
  amount: number | null;
  /** The same amount as an exact decimal string. */
  exact: string | null;
  /** true when every item was priced. */
  complete: boolean;
  unpriced: { provider: string | null; model: string | null; reason: string; items: number; usage: Buckets }[];
}

class CostSum {
  private atto = 0n;
  private pricedItems = 0;
  private readonly unpriced = new Map<string, Cost['unpriced'][number]>();
  constructor(private readonly currency: string) {}
  add(item: LedgerItem, sign = 1): void {
    const p = item.price;
    if (p.priced) {
      this.atto += sign < 0 ? -p.atto : p.atto;
      this.pricedItems++;
      return;
    }
    const key = `${item.provider}\u0000${item.model}\u0000${p.reason}`;
    let u = this.unpriced.get(key);
    if (!u) this.unpriced.set(key, (u = { provider: item.provider, model: item.model, reason: p.reason, items: 0, usage: zero() }));
    u.items++;
    addInto(u.usage, item.usage, sign);
  }
  figure(): Cost {
    const unpriced = [...this.unpriced.values()];
    const none = this.pricedItems === 0 && unpriced.length > 0;
    return { currency: this.currency, amount: none ? null : Number(formatAtto(this.atto)), exact: none ? null : formatAtto(this.atto), complete: unpriced.length === 0, unpriced };
  }
}

/** Where a usage record sits in its log, and what it reports. */
export interface UsageAt {
  seq: number;
  turn: number | null;
  step: number | null;
  attempt: number | null;
  provider: string | null;
  model: string | null;
  usage: Buckets;
}

/** One billed item of a session's log. */
export interface LedgerItem extends UsageAt {
  time: number;
  category: Category;
  /** The session that first recorded it (after walking verified seeds), or null when its recorder's log is missing. */
  owner: string | null;
  /** The session of the walk's end: the owner, or the orphan holding it unattributed. */
  holder: string;
  price: ReturnType<typeof priceUsage>;
}

/** Why a sample or summary was or was not counted (for `--explain`). */
export interface ExplainRow extends UsageAt {
  event: 'usage chunk' | 'assistant/message usage' | 'compaction/summary';
  /** The billed category it enters, or null (the same call re-reported). */
  category: Category | null;
  /** owned | inherited | unattributed | null (not an item). */
  standing: 'owned' | 'inherited' | 'unattributed' | null;
  holder: string | null;
  why: string;
}

export interface SessionInput {
  id: string;
  path: string;
  header: SessionHeader | null;
  view?: StatsView;
  records?: UsageRecords;
  /** Fingerprints of the first events (seq order), as many as lineage needs. */
  prefix?: SessionEvent[];
  error?: ErrorObject;
}

export interface LedgerSession {
  sessionId: string;
  path: string;
  kind: SessionKind | null;
  parentSession: string | null;
  seedLength: number | null;
  error?: ErrorObject;
  /** DSH's tokenUsage of the whole log, exactly as DSH computes it. */
  tokenUsage: Buckets | null;
  /** Everything the log holds (what a per-session sum adds). */
  naive: Usage;
  owned: Usage;
  inherited: Usage & { from: { sessionId: string; usage: Usage }[] };
  unattributed: Usage;
  /** Owned usage of descendants: subagents (reached through subagent links) and all descendants. */
  rolledUp: { subagents: Usage; descendants: Usage };
  /** This session with all its descendants, each item once: owned + unattributed, own and descendants'. */
  tree: Usage;
  seed: {
    verified: boolean | null;
    firstDifferingSeq: number | null;
    parentMissing: boolean;
    comparison: SeedComparison | null;
  } | null;
  cost: { owned: Cost; inherited: Cost; unattributed: Cost; naive: Cost; rolledUp: Cost; tree: Cost };
  byModel: { provider: string | null; model: string | null; owned: Usage; cost: Cost }[];
  byTurn: { turn: number | null; holder: string; standing: 'owned' | 'inherited' | 'unattributed'; usage: Usage; cost: Cost }[];
  items: LedgerItem[];
  explain: ExplainRow[];
}

export interface Ledger {
  currency: string;
  prices: string | null;
  sessions: LedgerSession[];
  totals: {
    sessions: number;
    failed: number;
    /** Each billed item once: Σ owned + Σ unattributed. */
    counted: Usage;
    /** Σ of every session's whole log. */
    naive: Usage;
    /** Σ inherited = naive - counted. */
    inherited: Usage;
    unattributed: Usage;
    cost: { counted: Cost; naive: Cost; inherited: Cost };
    byModel: { provider: string | null; model: string | null; counted: Usage; cost: Cost }[];
  };
}

export interface LedgerOptions {
  prices: PriceTable | null;
  currency?: string;
}

function itemsOf(records: UsageRecords): Omit<LedgerItem, 'owner' | 'holder' | 'price'>[] {
  const out: Omit<LedgerItem, 'owner' | 'holder' | 'price'>[] = [];
  for (const s of records.samples) {
    const category: Category | null = s.replacedBy === null ? 'tokenUsage' : s.replacedBy.sameAttempt ? null : 'failedAttempts';
    if (category) out.push({ seq: s.seq, time: s.time, category, turn: s.turn, step: s.step, attempt: s.attempt, provider: s.provider, model: s.model, usage: s.usage });
  }
  for (const c of records.summaries) out.push({ seq: c.seq, time: c.time, category: 'summaryCalls', turn: c.turn, step: null, attempt: null, provider: c.provider, model: c.model, usage: c.usage });
  return out.sort((a, b) => a.seq - b.seq);
}

/** Build the ledger over a set of sessions (a root, or one lineage). Pure. */
export function buildLedger(inputs: readonly SessionInput[], options: LedgerOptions): Ledger {
  const currency = options.currency ?? 'USD';
  const byId = new Map<string, SessionInput>();
  for (const s of inputs) if (s.header && !s.error) byId.set(s.header.id, s);
  const comparisons = new Map<string, SeedComparison>();
  for (const s of byId.values()) {
    const h = s.header!;
    if (h.parentSession === undefined || h.seedLength === undefined) continue;
    const parent = byId.get(h.parentSession);
    comparisons.set(h.id, compareForkSeed(s.prefix ?? [], h.seedLength, parent?.prefix));
  }
  /** Walk a seq up verified seeds: the holder, and whether its recorder is known. */
  const walk = (id: string, seq: number): { holder: string; owner: string | null; note: string } => {
    let cur = id;
    const seen = new Set<string>();
    let note = '';
    for (;;) {
      seen.add(cur);
      const h = byId.get(cur)!.header!;
      if (h.parentSession === undefined || h.seedLength === undefined || seq >= h.seedLength) return { holder: cur, owner: cur, note };
      const c = comparisons.get(cur)!;
      const parent = byId.get(h.parentSession);
      if (!parent) return { holder: cur, owner: null, note: `${note}seq ${seq} < seedLength ${h.seedLength} of "${cur}", whose parent "${h.parentSession}" is missing or unreadable` };
      if (seq >= c.verifiedThrough) {
        const why = c.firstDifferingSeq !== null ? `the seed differs from parent "${h.parentSession}" from seq ${c.firstDifferingSeq} (check L1)` : `the seed of "${cur}" could not be verified against parent "${h.parentSession}" (check L1)`;
        return { holder: cur, owner: cur, note: `${note}${why}; counted where it was recorded` };
      }
      if (seen.has(h.parentSession)) return { holder: cur, owner: cur, note: `${note}lineage cycle at "${h.parentSession}"` };
      note += `seq ${seq} < seedLength ${h.seedLength} of "${cur}" (verified equal to "${h.parentSession}"); `;
      cur = h.parentSession;
    }
  };
  const price = (it: { usage: Buckets; provider: string | null; model: string | null; time: number }): LedgerItem['price'] =>
    options.prices ? priceUsage(it.usage, it.model, it.provider, options.prices, { currency, at: it.time }) : { priced: false, currency, reason: 'no price table' };

  const sessions: LedgerSession[] = [];
  const ownedById = new Map<string, Usage>();
  const unattributedById = new Map<string, Usage>();
  const ownedItems = new Map<string, LedgerItem[]>();
  for (const s of inputs) {
    const h = s.header;
    const base = {
      sessionId: h?.id ?? s.id,
      path: s.path,
      kind: h ? sessionKind(h) : null,
      parentSession: h?.parentSession ?? null,
      seedLength: h?.seedLength ?? null,
    };
    const row: LedgerSession = {
      ...base,
      ...(s.error ? { error: s.error } : {}),
      tokenUsage: s.view?.tokenUsage ?? null,
      naive: emptyUsage(),
      owned: emptyUsage(),
      inherited: { ...emptyUsage(), from: [] },
      unattributed: emptyUsage(),
      rolledUp: { subagents: emptyUsage(), descendants: emptyUsage() },
      tree: emptyUsage(),
      seed: null,
      cost: undefined as unknown as LedgerSession['cost'],
      byModel: [],
      byTurn: [],
      items: [],
      explain: [],
    };
    sessions.push(row);
    if (s.error || !h || !s.records || !byId.has(h.id)) continue;
    const c = comparisons.get(h.id);
    if (c) row.seed = { verified: c.parentMissing ? null : c.verifiedThrough === c.seedLength && !c.childTooShort, firstDifferingSeq: c.firstDifferingSeq, parentMissing: c.parentMissing, comparison: c };
    const from = new Map<string, Usage>();
    const notes = new Map<number, string>();
    for (const it of itemsOf(s.records)) {
      const w = walk(h.id, it.seq);
      notes.set(it.seq, w.note);
      const item: LedgerItem = { ...it, owner: w.owner, holder: w.holder, price: price(it) };
      row.items.push(item);
      addItem(row.naive, item.category, item.usage);
      if (w.holder !== h.id) {
        addItem(row.inherited, item.category, item.usage);
        let f = from.get(w.holder);
        if (!f) from.set(w.holder, (f = emptyUsage()));
        addItem(f, item.category, item.usage);
      } else if (w.owner === null) addItem(row.unattributed, item.category, item.usage);
      else addItem(row.owned, item.category, item.usage);
    }
    row.inherited.from = [...from].map(([sessionId, usage]) => ({ sessionId, usage }));
    ownedById.set(h.id, row.owned);
    unattributedById.set(h.id, row.unattributed);
    ownedItems.set(h.id, row.items.filter((i) => i.holder === h.id));
    row.explain = explainRows(h.id, s.records, row.items, notes);
  }

  // Descendants: every parentSession link (forks and subagents alike), cycle-guarded.
  const children = new Map<string, string[]>();
  for (const s of byId.values()) {
    const p = s.header!.parentSession;
    if (p === undefined) continue;
    const list = children.get(p);
    if (list) list.push(s.header!.id);
    else children.set(p, [s.header!.id]);
  }
  const descendants = (id: string, subagentsOnly: boolean): string[] => {
    const out: string[] = [];
    const seen = new Set<string>([id]);
    const stack = [id];
    while (stack.length) {
      for (const c of children.get(stack.pop()!) ?? []) {
        if (seen.has(c)) continue;
        if (subagentsOnly && byId.get(c)!.header!.origin !== 'subagent') continue;
        seen.add(c);
        out.push(c);
        stack.push(c);
      }
    }
    return out;
  };
  const totals: Ledger['totals'] = { sessions: sessions.length, failed: 0, counted: emptyUsage(), naive: emptyUsage(), inherited: emptyUsage(), unattributed: emptyUsage(), cost: undefined as unknown as Ledger['totals']['cost'], byModel: [] };
  const rootCost = { counted: new CostSum(currency), naive: new CostSum(currency), inherited: new CostSum(currency) };
  const rootModels = new Map<string, { provider: string | null; model: string | null; counted: Usage; sum: CostSum }>();
  for (const row of sessions) {
    if (row.error || !byId.has(row.sessionId)) {
      totals.failed++;
      row.cost = { owned: new CostSum(currency).figure(), inherited: new CostSum(currency).figure(), unattributed: new CostSum(currency).figure(), naive: new CostSum(currency).figure(), rolledUp: new CostSum(currency).figure(), tree: new CostSum(currency).figure() };
      continue;
    }
    const id = row.sessionId;
    const held = ownedItems.get(id) ?? [];
    const sums = { owned: new CostSum(currency), inherited: new CostSum(currency), unattributed: new CostSum(currency), naive: new CostSum(currency), rolledUp: new CostSum(currency), tree: new CostSum(currency) };
    for (const it of row.items) {
      sums.naive.add(it);
      rootCost.naive.add(it);
      if (it.holder !== id) {
        sums.inherited.add(it);
        rootCost.inherited.add(it);
      } else {
        (it.owner === null ? sums.unattributed : sums.owned).add(it);
        sums.tree.add(it);
        rootCost.counted.add(it);
        const key = `${it.provider}\u0000${it.model}`;
        let m = rootModels.get(key);
        if (!m) rootModels.set(key, (m = { provider: it.provider, model: it.model, counted: emptyUsage(), sum: new CostSum(currency) }));
        addItem(m.counted, it.category, it.usage);
        m.sum.add(it);
      }
    }
    addUsage(row.tree, row.owned);
    addUsage(row.tree, row.unattributed);
    for (const d of descendants(id, true)) addUsage(row.rolledUp.subagents, ownedById.get(d)!);
    for (const d of descendants(id, false)) {
      addUsage(row.rolledUp.descendants, ownedById.get(d)!);
      addUsage(row.tree, ownedById.get(d)!);
      addUsage(row.tree, unattributedById.get(d)!);
      for (const it of ownedItems.get(d) ?? []) {
        sums.tree.add(it);
        if (it.owner !== null) sums.rolledUp.add(it);
      }
    }
    row.cost = { owned: sums.owned.figure(), inherited: sums.inherited.figure(), unattributed: sums.unattributed.figure(), naive: sums.naive.figure(), rolledUp: sums.rolledUp.figure(), tree: sums.tree.figure() };
    const models = new Map<string, LedgerSession['byModel'][number] & { sum: CostSum }>();
    for (const it of held.filter((i) => i.owner !== null)) {
      const key = `${it.provider}\u0000${it.model}`;
      let m = models.get(key);
      if (!m) models.set(key, (m = { provider: it.provider, model: it.model, owned: emptyUsage(), cost: undefined as unknown as Cost, sum: new CostSum(currency) }));
      addItem(m.owned, it.category, it.usage);
      m.sum.add(it);
    }
    row.byModel = [...models.values()].map(({ sum, ...m }) => ({ ...m, cost: sum.figure() }));
    const turns = new Map<string, LedgerSession['byTurn'][number] & { sum: CostSum }>();
    for (const it of row.items) {
      const standing = it.holder !== id ? 'inherited' : it.owner === null ? 'unattributed' : 'owned';
      const key = `${it.turn}\u0000${it.holder}\u0000${standing}`;
      let t = turns.get(key);
      if (!t) turns.set(key, (t = { turn: it.turn, holder: it.holder, standing, usage: emptyUsage(), cost: undefined as unknown as Cost, sum: new CostSum(currency) }));
      addItem(t.usage, it.category, it.usage);
      t.sum.add(it);
    }
    row.byTurn = [...turns.values()].map(({ sum, ...t }) => ({ ...t, cost: sum.figure() }));
    addUsage(totals.counted, row.owned);
    addUsage(totals.counted, row.unattributed);
    addUsage(totals.unattributed, row.unattributed);
    addUsage(totals.naive, row.naive);
    addUsage(totals.inherited, row.inherited);
  }
  totals.cost = { counted: rootCost.counted.figure(), naive: rootCost.naive.figure(), inherited: rootCost.inherited.figure() };
  totals.byModel = [...rootModels.values()].map(({ sum, ...m }) => ({ ...m, cost: sum.figure() }));
  return { currency, prices: options.prices?.file ?? null, sessions, totals };
}

function explainRows(id: string, records: UsageRecords, items: readonly LedgerItem[], notes: Map<number, string>): ExplainRow[] {
  const bySeq = new Map(items.map((i) => [i.seq, i]));
  const rows: ExplainRow[] = [];
  const standingOf = (it: LedgerItem | undefined): ExplainRow['standing'] => (!it ? null : it.holder !== id ? 'inherited' : it.owner === null ? 'unattributed' : 'owned');
  const whereOf = (it: LedgerItem): string => {
    const n = notes.get(it.seq) ?? '';
    if (it.holder !== id) return `inherited: ${n}${it.owner === null ? `held unattributed by "${it.holder}"` : `recorded first by "${it.holder}"`}`;
    if (it.owner === null) return `unattributed: ${n}; counted once, here`;
    return n ? `owned: ${n}` : 'owned: recorded first by this log';
  };
  for (const s of records.samples) {
    const it = bySeq.get(s.seq);
    let why: string;
    if (s.replacedBy === null) why = `counted in DSH tokenUsage: the last sample of turn ${s.turn} step ${s.step} in its run`;
    else if (s.replacedBy.sameAttempt) why = `not counted: replaced by seq ${s.replacedBy.seq}, a later sample of the same attempt (one call re-reported${s.replacedBy.identical ? ', identical buckets' : ''})`;
    else why = `billed as a failed attempt: DSH's rule replaced it with seq ${s.replacedBy.seq} of a later attempt of the same step, but the provider billed this call`;
    rows.push({
      seq: s.seq,
      event: s.source === 'chunk' ? 'usage chunk' : 'assistant/message usage',
      turn: s.turn,
      step: s.step,
      attempt: s.attempt,
      provider: s.provider,
      model: s.model,
      usage: s.usage,
      category: it?.category ?? null,
      standing: standingOf(it),
      holder: it?.holder ?? null,
      why: it ? `${why}; ${whereOf(it)}` : why,
    });
  }
  for (const c of records.summaries) {
    const it = bySeq.get(c.seq)!;
    rows.push({ seq: c.seq, event: 'compaction/summary', turn: c.turn, step: null, attempt: null, provider: c.provider, model: c.model, usage: c.usage, category: 'summaryCalls', standing: standingOf(it), holder: it.holder, why: `summary call: billed, outside DSH tokenUsage; ${whereOf(it)}` });
  }
  return rows.sort((a, b) => a.seq - b.seq);
}

// ------------------------------------------------------------------ reading

/** One session's stats fold, usage records and seed fingerprints, in one streaming pass. */
export async function readSessionUsage(
  target: ResolvedTarget,
  options: { decoder?: FrameDecoder; prefixLength?: number } = {},
): Promise<{ r: SessionInspection; view?: StatsView; records?: UsageRecords; prefix?: SessionEvent[] }> {
  let fold: ReturnType<typeof statsFold> | undefined;
  let failure: { error: unknown } | undefined;
  const prefix: SessionEvent[] = [];
  let want = options.prefixLength ?? 0;
  const observe = (e: SessionEvent) => {
    if (failure || !fold) return;
    try {
      fold.observe(e);
      if (e.seq < want) prefix.push(seedFingerprint(e));
    } catch (error) {
      failure = { error };
    }
  };
  const r = await inspectTarget(target, {
    ...(options.decoder ? { decoder: options.decoder } : {}),
    collect: false,
    skipArtifact: true,
    onMeta: (meta) => {
      fold = statsFold(meta.id, { createdAt: meta.createdAt });
      if (meta.seedLength !== undefined && meta.parentSession !== undefined) want = Math.max(want, meta.seedLength + 1);
    },
    onLogical: observe,
  });
  if (r.error || !r.meta || !fold) return { r };
  if (failure) throw failure.error;
  fold.storedEventCount(r.storedEventCount);
  for (const c of r.closers) observe(c);
  if (failure) throw (failure as { error: unknown }).error;
  return { r, view: fold.finish(r.storedEventCount + r.closers.length), records: fold.records(), prefix };
}

/** Fingerprint lengths each session must keep: its own seed (+ end-seed) and the longest seed of its children. */
export function prefixNeeds(headers: Iterable<SessionHeader>): Map<string, number> {
  const need = new Map<string, number>();
  const bump = (id: string, n: number) => need.set(id, Math.max(need.get(id) ?? 0, n));
  for (const h of headers) {
    if (h.parentSession === undefined || h.seedLength === undefined) continue;
    bump(h.id, h.seedLength + 1);
    bump(h.parentSession, h.seedLength);
  }
  return need;
}

export interface RootUsage {
  root: string;
  inputs: SessionInput[];
  /** Per-session reads, for callers that also show per-session stats and warnings. */
  reads: { id: string; path: string; r: SessionInspection; view?: StatsView }[];
  problems: { path: string; message: string }[];
}

/**
 * Read the sessions of a root for the ledger: a header pass (lineage and how
 * much of each seed to fingerprint), then one streaming pass per session.
 * `only`: restrict the full reads to these ids (one lineage).
 */
export async function readRootUsage(
  root: string,
  options: {
    decoder?: FrameDecoder;
    only?: (headers: Map<string, SessionHeader>, byPath: Map<string, SessionHeader>) => Set<string>;
    /** Read only the headers of this artifact and its ancestors (found by id in the layout), not of the whole root. */
    ancestorsOf?: string;
  } = {},
): Promise<RootUsage> {
  const scan = scanRoot(root);
  const headers = new Map<string, SessionHeader>();
  const byPath = new Map<string, SessionHeader>();
  const readHeader = async (s: (typeof scan.sessions)[number]): Promise<SessionHeader | undefined> => {
    try {
      const read = await readHeaderCheap(s.path, s.encoding, options.decoder);
      if (!read.header) return undefined;
      byPath.set(path.resolve(s.path), read.header);
      if (!headers.has(read.header.id)) headers.set(read.header.id, read.header);
      return read.header;
    } catch {
      return undefined; // The full read below classifies the failure.
    }
  };
  if (options.ancestorsOf !== undefined) {
    const want = path.resolve(options.ancestorsOf);
    let at = scan.sessions.find((s) => path.resolve(s.path) === want);
    const seen = new Set<string>();
    while (at && !seen.has(at.path)) {
      seen.add(at.path);
      const parent = (await readHeader(at))?.parentSession;
      at = parent === undefined ? undefined : scan.sessions.find((s) => s.id === parent);
    }
  } else {
    for (const s of scan.sessions) await readHeader(s);
  }
  const only = options.only?.(headers, byPath);
  const need = prefixNeeds(headers.values());
  const inputs: SessionInput[] = [];
  const reads: RootUsage['reads'] = [];
  for (const s of scan.sessions) {
    const h = byPath.get(path.resolve(s.path));
    if (options.ancestorsOf !== undefined ? !h : only && !(h && only.has(h.id))) continue;
    const t = resolveTarget(s.path);
    t.root = scan.root;
    const got = await readSessionUsage(t, { ...(options.decoder ? { decoder: options.decoder } : {}), prefixLength: h ? need.get(h.id) ?? 0 : 0 });
    const id = got.r.meta?.id ?? got.r.artifact.meta?.id ?? h?.id ?? s.id;
    reads.push({ id, path: s.path, r: got.r, ...(got.view ? { view: got.view } : {}) });
    if (!got.view || !got.r.meta) {
      inputs.push({ id, path: s.path, header: got.r.artifact.meta ?? h ?? null, error: failureObject(got.r.error) });
      continue;
    }
    inputs.push({ id, path: s.path, header: got.r.meta, view: got.view, records: got.records!, prefix: got.prefix! });
  }
  return { root: scan.root, inputs, reads, problems: scan.problems };
}

/** The ids one session's ledger needs: its ancestors (seed ownership), itself, its descendants (roll-ups). */
export function lineageIds(headers: Map<string, SessionHeader>, id: string): Set<string> {
  const out = new Set<string>([id]);
  let p = headers.get(id)?.parentSession;
  while (p !== undefined && !out.has(p)) {
    out.add(p);
    p = headers.get(p)?.parentSession;
  }
  const children = new Map<string, string[]>();
  for (const h of headers.values()) if (h.parentSession !== undefined) children.set(h.parentSession, [...(children.get(h.parentSession) ?? []), h.id]);
  const stack = [id];
  const seen = new Set<string>([id]);
  while (stack.length) {
    for (const c of children.get(stack.pop()!) ?? []) {
      if (seen.has(c)) continue;
      seen.add(c);
      out.add(c);
      stack.push(c);
    }
  }
  return out;
}

/** The ledger rows of a session's descendants (forks and subagents), depth-first in input order. */
export function descendantRows(ledger: Ledger, id: string): LedgerSession[] {
  const out: LedgerSession[] = [];
  const seen = new Set<string>([id]);
  const stack = [id];
  while (stack.length) {
    const p = stack.pop()!;
    for (const s of ledger.sessions) {
      if (s.parentSession !== p || seen.has(s.sessionId)) continue;
      seen.add(s.sessionId);
      out.push(s);
      stack.push(s.sessionId);
    }
  }
  return out;
}

/**
 * The explain rows behind one figure: a billed category (`tokenUsage`,
 * `failedAttempts`, `summaryCalls`), a standing (`owned`, `inherited`,
 * `unattributed`), `turn:N`, `model:NAME` or `seq:N`; every row without one.
 */
export function filterExplain(rows: readonly ExplainRow[], figure: string | undefined): ExplainRow[] {
  if (figure === undefined) return [...rows];
  if ((CATEGORIES as readonly string[]).includes(figure)) return rows.filter((r) => r.category === figure);
  if (figure === 'owned' || figure === 'inherited' || figure === 'unattributed') return rows.filter((r) => r.standing === figure);
  const m = /^(turn|model|seq):(.+)$/.exec(figure);
  if (m && m[1] === 'turn' && /^\d+$/.test(m[2]!)) return rows.filter((r) => r.turn === Number(m[2]));
  if (m && m[1] === 'seq' && /^\d+$/.test(m[2]!)) return rows.filter((r) => r.seq === Number(m[2]));
  if (m && m[1] === 'model') return rows.filter((r) => r.model === m[2] || `${r.provider}/${r.model}` === m[2]);
  throw new UsageError(`--figure must be one of tokenUsage, failedAttempts, summaryCalls, owned, inherited, unattributed, turn:N, model:NAME, seq:N; got ${toJson(figure)}`);
}

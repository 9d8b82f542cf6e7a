/**
 * Usage and timing figures derivable from a log (query-export.md §7,
 * format.md §11.4). DSH's own folds reproduced: token-meter `tokenUsage`
 * (a usage sample is a `usage` chunk or an `assistant/message.usage`; a sample
 * whose (turn, step) equals the IMMEDIATELY PREVIOUS sample's replaces it,
 * otherwise it adds), `contextPressure` (latest sample's prompt side vs the
 * latest `request/context.contextWindow`), and session-stats (`steps`,
 * `turns`, `llmMs`, `ttftMs`, `decodeMs`, `toolMs`). Breakdowns DSH does not
 * compute (per turn/step/model/tool, retries, compactions) are attributed
 * with the same rule: each sample's contribution (after replacement) is
 * booked to its step and to the model in force.
 */
import type { BlockView, KindView, MessageView, SessionEvent, StreamChunkView, UsageView } from '../log/types.js';
import { read } from '../log/payloads.js';
import { assistantCalls, resultCallId } from './tool-pairs.js';
import { finishKind, isTokenDelta } from './replay.js';
import { AttemptBoundaries } from './attempts.js';
import { stepKey } from '../core/keys.js';
import { reasonText } from './summary.js';

export interface Buckets {
  uncachedInputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** Empty token buckets. */
export const zero = (): Buckets => ({ uncachedInputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

export function bucketsOf(usage: unknown): Buckets {
  const u = usage as UsageView;
  return {
    uncachedInputTokens: num(u?.inputTokens),
    outputTokens: num(u?.outputTokens),
    cacheReadTokens: num(u?.cacheReadTokens),
    cacheWriteTokens: num(u?.cacheWriteTokens),
  };
}

export function addInto(into: Buckets, b: Buckets, sign = 1): void {
  into.uncachedInputTokens += sign * b.uncachedInputTokens;
  into.outputTokens += sign * b.outputTokens;
  into.cacheReadTokens += sign * b.cacheReadTokens;
  into.cacheWriteTokens += sign * b.cacheWriteTokens;
}

function sameBuckets(a: Buckets, b: Buckets): boolean {
  return a.uncachedInputTokens === b.uncachedInputTokens && a.outputTokens === b.outputTokens && a.cacheReadTokens === b.cacheReadTokens && a.cacheWriteTokens === b.cacheWriteTokens;
}

/** Billed prompt-side input: uncached + cache read + cache write. */
export function billedInput(b: Buckets): number {
  return b.uncachedInputTokens + b.cacheReadTokens + b.cacheWriteTokens;
}

/**
 * Cache-read share of billed input as the web stats line shows it: integer
 * percent rounded half up; when that rounds to 100 while some input missed the
 * cache, the fewest decimals that keep it below 100; exactly "100" only when
 * nothing missed; null with no billed input. Exact (BigInt) arithmetic.
 */
export function cacheHitPercent(b: Buckets): string | null {
  const denom = BigInt(billedInput(b));
  if (denom === 0n) return null;
  const missed = b.uncachedInputTokens + b.cacheWriteTokens;
  if (missed === 0) return '100';
  const read = BigInt(b.cacheReadTokens);
  for (let places = 0; places < 30; places++) {
    const scale = 10n ** BigInt(places);
    // round half up of read * 100 * scale / denom
    const scaled = (2n * read * 100n * scale + denom) / (2n * denom);
    if (scaled < 100n * scale) {
      if (places === 0) return scaled.toString();
      const s = scaled.toString().padStart(places + 1, '0');
      return `${s.slice(0, -places)}.${s.slice(-places)}`;
    }
  }
  return '99.9';
}

export interface StepStats {
  turn: number;
  step: number;
  startSeq: number | null;
  endSeq: number | null;
  provider: string | null;
  model: string | null;
  usage: Buckets;
  /** Usage samples seen for this step (before replacement). */
  samples: number;
  attempts: number;
  failedAttempts: number;
  llmMs: number | null;
  ttftMs: number | null;
  /** Prompt-side tokens of the step's last sample (input + cache read + cache write). */
  pressureTokens: number | null;
  contextWindow: number | null;
  toolCalls: number;
}

export interface TurnStats {
  turn: number;
  startSeq: number | null;
  endSeq: number | null;
  endReason: string | null;
  steps: number;
  usage: Buckets;
  llmMs: number;
  toolCalls: number;
}

export interface ModelStats {
  provider: string | null;
  model: string | null;
  usage: Buckets;
  steps: number;
  cacheHitPercent: string | null;
}

export interface ToolStats {
  name: string;
  calls: number;
  results: number;
  errors: number;
  /** errors / results (null with no results). */
  errorRate: number | null;
  /** Calls whose result never landed in their turn. */
  unmatched: number;
  /** Matched call→result durations. */
  timed: number;
  totalMs: number;
  meanMs: number | null;
  maxMs: number | null;
  /** Synthetic crash-closer results (logical view only). */
  synthetic: number;
}

export interface SessionStatsFigures {
  turns: number;
  steps: number;
  llmMs: number;
  toolMs: number;
  ttftMs: number;
  ttftSteps: number;
  decodeMs: number;
  decodeTokens: number;
}

export interface StatsView {
  sessionId: string;
  createdAt: number | null;
  events: number;
  syntheticEvents: number;
  /** DSH's token-meter `tokenUsage` totals. */
  tokenUsage: Buckets;
  cacheHitPercent: string | null;
  /** DSH's `contextPressure` (without the heuristic `projectedTokens`). */
  contextPressure: { pressureTokens: number | null; contextWindow: number | null; percent: number | null };
  /** DSH's session-stats `sessionStats`. */
  sessionStats: SessionStatsFigures;
  usageSamples: number;
  /** Samples that replaced the previous sample of the same step. */
  replacedSamples: number;
  byTurn: TurnStats[];
  byStep: StepStats[];
  byModel: ModelStats[];
  byTool: ToolStats[];
  turnEndReasons: Record<string, number>;
  retries: { llmRetryEvents: number; failedAttempts: number };
  compaction: { summaries: number; prunes: number; auxiliaryUsage: Buckets };
  /**
   * Every billed call, each category apart: `tokenUsage` is DSH's figure
   * (above, unchanged); `failedAttempts` is the usage of earlier attempts of a
   * step that DSH's rule replaced with a retry's sample (billed by the
   * provider, dropped by the fold); `summaryCalls` is compaction summary usage;
   * `total` is their sum.
   */
  billed: BilledUsage;
}

export interface BilledUsage {
  tokenUsage: Buckets;
  failedAttempts: Buckets;
  summaryCalls: Buckets;
  total: Buckets;
}

/** One usage sample as DSH's fold saw it, and what became of it. */
export interface UsageSample {
  seq: number;
  time: number;
  /** `chunk`: an assistant/chunk {type:'usage'}; `message`: assistant/message.usage. */
  source: 'chunk' | 'message';
  turn: number;
  step: number;
  /** 1-based attempt of the step the sample reports (attempts as views/attempts.ts segments them). */
  attempt: number;
  provider: string | null;
  model: string | null;
  usage: Buckets;
  /** The next sample of the same (turn, step) that replaced this one under DSH's rule; null: it stands in tokenUsage. */
  replacedBy: { seq: number; sameAttempt: boolean; identical: boolean } | null;
}

/** A compaction summary call (auxiliary; outside DSH's tokenUsage). */
export interface SummaryCall {
  seq: number;
  time: number;
  turn: number | null;
  provider: string | null;
  model: string | null;
  usage: Buckets;
}

export interface UsageRecords {
  samples: UsageSample[];
  summaries: SummaryCall[];
}

/** The billed categories of a set of records (the one place they are derived). */
export function billedUsage(records: UsageRecords): BilledUsage {
  const b: BilledUsage = { tokenUsage: zero(), failedAttempts: zero(), summaryCalls: zero(), total: zero() };
  for (const s of records.samples) {
    if (s.replacedBy === null) addInto(b.tokenUsage, s.usage);
    else if (!s.replacedBy.sameAttempt) addInto(b.failedAttempts, s.usage);
  }
  for (const c of records.summaries) addInto(b.summaryCalls, c.usage);
  for (const part of [b.tokenUsage, b.failedAttempts, b.summaryCalls]) addInto(b.total, part);
  return b;
}

/** A tool/result that reports failure: an `error` field or an `isError` result block. */
export function isErrorResult(e: SessionEvent): boolean {
  if (e.data?.['error']) return true;
  const c = read(read(e.data, 'message'), 'content');
  return Array.isArray(c) && (c as BlockView[]).some((b) => b && b.type === 'tool-result' && b.isError === true);
}

/** One forward pass over the logical events. */
/**
 * The payload fields the fold reads. Unchecked: `turn`, `step` and `callId` are keyed and copied
 * into the rows as logged (typed as DSH writes them); everything else is read through its view.
 */
interface StatsReads {
  turn: number;
  step: number;
  callId: string;
  name?: unknown;
  reason?: KindView & { reason?: KindView; error?: KindView };
  header?: { config?: { provider?: string | null; model?: string | null } };
  provider?: string | null;
  model?: string | null;
  contextWindow?: unknown;
  chunk?: StreamChunkView;
  message?: MessageView;
  usage?: UsageView;
}

/** The stats fold, one event at a time (streams over a log of any size). */
export function statsFold(
  sessionId: string,
  options: { storedEventCount?: number; createdAt?: number },
): { observe(e: SessionEvent): void; storedEventCount(n: number): void; finish(eventCount: number): StatsView; records(): UsageRecords } {
  // Events at or past this seq are synthetic closers (a streaming caller sets it once the stored events are read).
  let stored = options.storedEventCount ?? Number.POSITIVE_INFINITY;
  const totals = zero();
  let last: { key: string; buckets: Buckets; modelKey: string; record: UsageSample } | null = null;
  const records: UsageRecords = { samples: [], summaries: [] };
  let openTurn: number | null = null;
  let samples = 0;
  let replaced = 0;
  let pressureTokens: number | null = null;
  let contextWindow: number | null = null;
  let current: { provider: string | null; model: string | null } = { provider: null, model: null };
  let headerModel: { provider: string | null; model: string | null } = { provider: null, model: null };
  const steps = new Map<string, StepStats>();
  const turns = new Map<number, TurnStats>();
  const models = new Map<string, ModelStats & { stepKeys: Set<string> }>();
  const tools = new Map<string, ToolStats>();
  const turnEndReasons: Record<string, number> = {};
  const ss: SessionStatsFigures = { turns: 0, steps: 0, llmMs: 0, toolMs: 0, ttftMs: 0, ttftSteps: 0, decodeMs: 0, decodeTokens: 0 };
  let lastCountedTurn: number | null = null;
  let openStep: { turn: number; step: number; startTime: number; firstTokenTime: number | null } | null = null;
  let pending: Record<string, number> = {};
  const pendingTools = new Map<string, { name: string; time: number }>();
  let llmRetryEvents = 0;
  let failedAttempts = 0;
  const aux = zero();
  let summaries = 0;
  let prunes = 0;
  const attempts = new AttemptBoundaries();
  /** Tool-call block names by call id, from assistant messages (names results that have no tool/call). */
  const blockNames = new Map<string, string>();

  const stepRow = (turn: number, step: number): StepStats => {
    const key = stepKey(turn, step);
    let r = steps.get(key);
    if (!r) {
      r = { turn, step, startSeq: null, endSeq: null, provider: null, model: null, usage: zero(), samples: 0, attempts: 0, failedAttempts: 0, llmMs: null, ttftMs: null, pressureTokens: null, contextWindow: null, toolCalls: 0 };
      steps.set(key, r);
    }
    return r;
  };
  const turnRow = (turn: number): TurnStats => {
    let r = turns.get(turn);
    if (!r) {
      r = { turn, startSeq: null, endSeq: null, endReason: null, steps: 0, usage: zero(), llmMs: 0, toolCalls: 0 };
      turns.set(turn, r);
    }
    return r;
  };
  const modelRow = (provider: string | null, model: string | null) => {
    const key = `${provider ?? ''}\u0000${model ?? ''}`;
    let r = models.get(key);
    if (!r) {
      r = { provider, model, usage: zero(), steps: 0, cacheHitPercent: null, stepKeys: new Set() };
      models.set(key, r);
    }
    return { key, row: r };
  };
  const toolRow = (name: string): ToolStats => {
    let r = tools.get(name);
    if (!r) {
      r = { name, calls: 0, results: 0, errors: 0, errorRate: null, unmatched: 0, timed: 0, totalMs: 0, meanMs: null, maxMs: null, synthetic: 0 };
      tools.set(name, r);
    }
    return r;
  };

  const sample = (e: SessionEvent, source: UsageSample['source'], turn: number, step: number, usage: unknown, who: { provider: string | null; model: string | null }) => {
    samples++;
    const key = stepKey(turn, step);
    const b = bucketsOf(usage);
    const row = stepRow(turn, step);
    row.samples++;
    const record: UsageSample = { seq: e.seq, time: e.time, source, turn, step, attempt: row.attempts, provider: who.provider, model: who.model, usage: b, replacedBy: null };
    records.samples.push(record);
    const prev = last !== null && last.key === key ? last : null;
    if (prev) prev.record.replacedBy = { seq: e.seq, sameAttempt: prev.record.attempt === record.attempt, identical: sameBuckets(prev.buckets, b) };
    if (prev && sameBuckets(prev.buckets, b)) {
      // Identical replacement: no change (DSH returns the same state).
      prev.record = record;
      pressureTokens = billedInput(b);
      row.pressureTokens = pressureTokens;
      row.contextWindow = contextWindow;
      replaced++;
      return;
    }
    const { key: mk, row: mrow } = modelRow(who.provider, who.model);
    if (prev) {
      replaced++;
      addInto(totals, prev.buckets, -1);
      addInto(row.usage, prev.buckets, -1);
      addInto(turnRow(turn).usage, prev.buckets, -1);
      const pm = models.get(prev.modelKey);
      if (pm) addInto(pm.usage, prev.buckets, -1);
    }
    addInto(totals, b);
    addInto(row.usage, b);
    addInto(turnRow(turn).usage, b);
    addInto(mrow.usage, b);
    mrow.stepKeys.add(key);
    last = { key, buckets: b, modelKey: mk, record };
    pressureTokens = billedInput(b);
    row.pressureTokens = pressureTokens;
    row.contextWindow = contextWindow;
  };

  const observe = (e: SessionEvent): void => {
    const d = (e.data ?? {}) as unknown as StatsReads;
    const place = attempts.observe(e);
    switch (e.type) {
      case 'turn/start': {
        openTurn = typeof d.turn === 'number' ? d.turn : null;
        const t = turnRow(d.turn);
        t.startSeq = e.seq;
        break;
      }
      case 'turn/end': {
        openTurn = null;
        const t = turnRow(d.turn);
        t.endSeq = e.seq;
        t.endReason = reasonText(d.reason);
        const kind = typeof d.reason?.kind === 'string' ? d.reason.kind : String(d.reason);
        const sub = kind === 'aborted' && d.reason?.reason?.kind ? `aborted (${d.reason.reason.kind})` : kind === 'error' && d.reason?.error?.code ? `error (${d.reason.error.code})` : kind;
        turnEndReasons[sub] = (turnEndReasons[sub] ?? 0) + 1;
        if (Object.keys(pending).length) pending = {};
        for (const [, p] of pendingTools) toolRow(p.name).unmatched++;
        pendingTools.clear();
        break;
      }
      case 'step/start': {
        openStep = { turn: d.turn, step: d.step, startTime: e.time, firstTokenTime: null };
        const r = stepRow(d.turn, d.step);
        r.startSeq = e.seq;
        break;
      }
      case 'step/end': {
        ss.turns += lastCountedTurn === d.turn ? 0 : 1;
        ss.steps++;
        lastCountedTurn = d.turn;
        openStep = null;
        stepRow(d.turn, d.step).endSeq = e.seq;
        turnRow(d.turn).steps++;
        break;
      }
      case 'request/header': {
        const cfg = d.header?.config;
        if (cfg) headerModel = { provider: cfg.provider ?? null, model: cfg.model ?? null };
        if (current.model === null) current = headerModel;
        break;
      }
      case 'request/context': {
        current = { provider: d.provider ?? null, model: d.model ?? null };
        contextWindow = typeof d.contextWindow === 'number' ? d.contextWindow : null;
        break;
      }
      case 'assistant/chunk': {
        const chunk = d.chunk;
        if (place?.starts) stepRow(d.turn, d.step).attempts++;
        if (place?.ends) {
          const k = finishKind(chunk!.reason);
          if (k === 'error' || k === 'aborted') {
            failedAttempts++;
            stepRow(d.turn, d.step).failedAttempts++;
          }
        }
        if (openStep && openStep.turn === d.turn && openStep.step === d.step && openStep.firstTokenTime === null && isTokenDelta(chunk)) {
          openStep.firstTokenTime = e.time;
        }
        if (chunk?.type === 'usage') sample(e, 'chunk', d.turn, d.step, chunk.usage, current.model !== null ? current : headerModel);
        break;
      }
      case 'assistant/message': {
        const src = d.message?.source ?? {};
        const who = { provider: typeof src.provider === 'string' ? src.provider : current.provider, model: typeof src.model === 'string' ? src.model : current.model };
        const row = stepRow(d.turn, d.step);
        row.provider = who.provider;
        row.model = who.model;
        if (Array.isArray(e.sourceEventSeqs) && e.sourceEventSeqs.length === 0) row.attempts++;
        for (const { id, block } of assistantCalls(e)) if (typeof block.name === 'string') blockNames.set(id, block.name);
        if (d.usage !== undefined) sample(e, 'message', d.turn, d.step, d.usage, who);
        if (openStep && openStep.turn === d.turn && openStep.step === d.step) {
          const llm = Math.max(0, e.time - openStep.startTime);
          ss.llmMs += llm;
          row.llmMs = llm;
          turnRow(d.turn).llmMs += llm;
          if (openStep.firstTokenTime !== null) {
            const ttft = Math.max(0, openStep.firstTokenTime - openStep.startTime);
            ss.ttftMs += ttft;
            ss.ttftSteps++;
            row.ttftMs = ttft;
            const out = d.usage?.outputTokens;
            if (typeof out === 'number' && Number.isFinite(out) && out >= 0) {
              ss.decodeMs += Math.max(0, e.time - openStep.firstTokenTime);
              ss.decodeTokens += out;
            }
          }
          openStep = null;
        }
        break;
      }
      case 'tool/call': {
        pending[d.callId] = e.time;
        const name = typeof d.name === 'string' ? d.name : '(unnamed)';
        toolRow(name).calls++;
        pendingTools.set(String(d.callId), { name, time: e.time });
        if (typeof d.turn === 'number' && typeof d.step === 'number') stepRow(d.turn, d.step).toolCalls++;
        if (typeof d.turn === 'number') turnRow(d.turn).toolCalls++;
        break;
      }
      case 'tool/result': {
        if (e.surfaceOp !== 'append') break;
        const callId = resultCallId(e);
        if (typeof callId === 'string' && Object.hasOwn(pending, callId)) {
          ss.toolMs += Math.max(0, e.time - (pending[callId] as number));
          delete pending[callId];
        }
        const p = typeof callId === 'string' ? pendingTools.get(callId) : undefined;
        const r = toolRow(p ? p.name : typeof callId === 'string' && blockNames.has(callId) ? (blockNames.get(callId) as string) : '(no tool/call)');
        r.results++;
        if (isErrorResult(e)) r.errors++;
        if (e.seq >= stored) r.synthetic++;
        if (p) {
          const ms = Math.max(0, e.time - p.time);
          r.timed++;
          r.totalMs += ms;
          r.maxMs = r.maxMs === null ? ms : Math.max(r.maxMs, ms);
          pendingTools.delete(callId as string);
        }
        break;
      }
      case 'llm/retry':
        llmRetryEvents++;
        break;
      case 'compaction/summary':
        summaries++;
        if (d.usage) {
          const u = bucketsOf(d.usage);
          addInto(aux, u);
          records.summaries.push({ seq: e.seq, time: e.time, turn: openTurn, provider: typeof d.provider === 'string' ? d.provider : null, model: typeof d.model === 'string' ? d.model : null, usage: u });
        }
        break;
      case 'compaction/prune':
        prunes++;
        break;
      default:
        break;
    }
  };
  const finish = (eventCount: number): StatsView => {
    for (const [, p] of pendingTools) toolRow(p.name).unmatched++;
    for (const t of tools.values()) {
      t.errorRate = t.results > 0 ? t.errors / t.results : null;
      t.meanMs = t.timed > 0 ? t.totalMs / t.timed : null;
    }
    const byModel: ModelStats[] = [...models.values()].map(({ stepKeys, ...m }) => ({ ...m, steps: stepKeys.size, cacheHitPercent: cacheHitPercent(m.usage) }));
    return {
      sessionId,
      createdAt: options.createdAt ?? null,
      events: eventCount,
      syntheticEvents: Math.max(0, eventCount - stored),
      tokenUsage: totals,
      cacheHitPercent: cacheHitPercent(totals),
      contextPressure: {
        pressureTokens,
        contextWindow,
        percent: pressureTokens !== null && contextWindow ? Math.round((pressureTokens / contextWindow) * 1000) / 10 : null,
      },
      sessionStats: ss,
      usageSamples: samples,
      replacedSamples: replaced,
      byTurn: [...turns.values()].sort((a, b) => a.turn - b.turn),
      byStep: [...steps.values()].sort((a, b) => a.turn - b.turn || a.step - b.step),
      byModel,
      byTool: [...tools.values()].sort((a, b) => b.calls - a.calls || a.name.localeCompare(b.name)),
      turnEndReasons,
      retries: { llmRetryEvents, failedAttempts },
      compaction: { summaries, prunes, auxiliaryUsage: aux },
      billed: billedUsage(records),
    };
  };
  return {
    observe,
    storedEventCount: (n: number) => {
      stored = n;
    },
    finish,
    records: () => records,
  };
}

/** One forward pass over the logical events. */
export function sessionStats(sessionId: string, events: readonly SessionEvent[], options: { storedEventCount?: number; createdAt?: number } = {}): StatsView {
  const fold = statsFold(sessionId, { ...options, storedEventCount: options.storedEventCount ?? events.length });
  for (const e of events) fold.observe(e);
  return fold.finish(events.length);
}

/** How `dsh stats` counts, in words (`--explain`, also in its JSON). */
export const STATS_EXPLAIN = `How dsh counts (DSH's own folds, reproduced offline over the logical view):

tokens     A usage sample is an assistant/chunk whose chunk is {type:'usage'}, or an
           assistant/message that carries usage. Samples are folded in log order. If the
           IMMEDIATELY PREVIOUS sample has the same (turn, step), the new sample REPLACES it
           (its buckets are subtracted, the new ones added); otherwise it is ADDED. So the
           final message's usage replaces its own usage chunk, and a retry's usage replaces
           the failed attempt's usage for the same step (failed attempts count only until a
           later sample of that step arrives). Buckets: uncached input = inputTokens, output,
           cache read, cache write (absent = 0); reasoning is part of output. Compaction
           summary usage is auxiliary and NOT in these totals (shown separately).
billed     Every billed call, each category on its own line: tokenUsage (DSH's figure
           above, unchanged); failed attempts = samples DSH's rule replaced with a sample
           of a LATER attempt of the same step (the provider billed them; a sample
           replaced by a later sample of the SAME attempt is one call re-reported and
           is not billed twice); summary calls = compaction/summary usage. Attempts
           split at every finish chunk. Title and web-search LLM requests log no usage.
ownership  Each billed item belongs to the session whose log first recorded it. A
           fork's first seedLength events are its parent's prefix once verified equal
           (everything but time, as check rule DSH-L1): items there are INHERITED, owned
           by the ancestor that recorded them (walked up through forks of forks). From
           the first differing seq the seed counts as the child's own (flagged). With
           the parent missing or unreadable the seed's items are UNATTRIBUTED: counted
           once, in the orphan. Subagents own their dispatches; a parent shows them
           ROLLED UP (rolledUp.subagents), never added to its own figures.
root       counted = sum of owned + unattributed (each item once); naive = sum of each
           session's whole log; naive - counted = the inherited sum, exactly.
cost       Each item priced at its provider/model and event time from the price table
           (data/prices.json or --prices): cache-miss rate for uncached input and cache
           writes, cache-hit rate for cache reads, output rate for output (reasoning
           included). No price for a model, currency or date: UNPRICED, listed, never 0.
cache hit  cacheRead / (uncached input + cacheRead + cacheWrite), as the web stats line:
           integer percent rounded half up; if that rounds to 100 while some input missed
           the cache, the fewest decimals that stay below 100.
pressure   Prompt side of the LATEST sample (input + cacheRead + cacheWrite) against the
           latest request/context.contextWindow (a request/context without one clears it).
           DSH's heuristic projectedTokens is not computed.
steps      count of step/end (every entered step, including failed and cancelled ones);
turns      distinct turns having at least one step/end.
llmMs      per step: assistant/message.time - step/start.time (steps whose message assembled).
ttftMs     first chunk with a non-empty token delta minus step/start (survives in-step
           retries); ttftSteps = steps that had one.
decodeMs   message time - first token time, on steps whose message reports outputTokens.
toolMs     tool/result.time - tool/call.time matched by callId; calls still pending at
           turn/end are dropped (counted as 'unmatched' in the per-tool table).
breakdowns Per turn/step/model: each sample's net contribution is booked to its (turn, step)
           and to the model in force (the assistant/message's source model; for usage chunks
           the latest request/context, else request/header, model). DSH computes none of
           these breakdowns; they always sum to the totals.
tools      calls = tool/call events by name; results/errors = append tool/results (error:
           data.error present or the tool-result block isError); durations by callId.
Figures cover the whole log (compaction does not reduce them) and include DSH's synthetic
crash closers when the log needs repair.
`;

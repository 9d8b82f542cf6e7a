/**
 * The data model of `dsh report`: one plain-JSON document computed from the
 * library views (inspection, dispatches, transcript, surface, trace facts,
 * check findings, lineage). The HTML page only lays it out; every number and
 * list in the report comes from here, i.e. from the same code as the other
 * commands. Events are kept separately (they are embedded as their own blob).
 */
import { healthOf } from '../views/listing.js';
import type { SessionInspection } from '../log/session.js';
import type { SessionEvent, SessionHeader } from '../log/types.js';
import type { Finding } from '../check/engine.js';
import { summarize, type SessionSummary } from '../views/summary.js';
import { deriveDispatches, diffDispatches, summarizeDispatch, type DispatchDiff, type DispatchEntry, type StepEntry } from '../views/requests.js';
import { buildTranscript, type TranscriptEntry } from '../views/transcript.js';
import { loadedFromInspection, surfaceView, blocksText, type SurfaceView } from '../views/messages.js';
import { floorIndexBy } from '../log/reread.js';
import type { LineageView } from '../views/lineage.js';
import type { EpochHeader } from '../views/header.js';
import { auditCompactions, type CompactionsReport } from '../views/compactions.js';
import type { SecretReport } from '../views/secrets.js';
import { toJson } from '../core/json.js';
import { stepKey } from '../core/keys.js';
import { codePointLength, headCodePoints, ownString } from '../core/text.js';
import { CONTEXT_CATEGORIES, type ContextView } from '../views/context.js';
import type { PageCompaction, PageContext, PageData, PageDispatch, PageError, PageLineage, PageStep, PageSurfaceEntry, PageTurn } from './page/model.js';

/** Long texts in the reading columns are cut here; the full text is in the event's raw JSON. */
export const TEXT_LIMIT = 4000;

export type ReportError = PageError;

export type ReportLineage = PageLineage;

export type ReportStep = PageStep;

export type ReportTurn = PageTurn;

/** A dispatch as the page reads it, plus the raw facts it does not (kept for readers of the data). */
export interface ReportDispatch extends PageDispatch {
  chunks: number;
  finishRaw: unknown;
  startTime: number;
  usageFrom: string | null;
  provider: string | null;
  diff: DispatchDiff;
}

export type ReportSurfaceEntry = PageSurfaceEntry;

export type ReportCompaction = PageCompaction;

/**
 * The report document: the page's {@link PageData} (so the writer cannot drift
 * from what the page reads: each field below must stay assignable to the
 * page's), with the library's own, more precise types.
 */
export interface ReportData extends PageData {
  v: 1;
  tool: { name: 'dsh'; version: string };
  session: PageData['session'] & { header: SessionHeader | null };
  health: PageData['health'] & { torn: SessionInspection['torn'] };
  dispatches: ReportDispatch[];
  headers: Record<string, EpochHeader | null>;
  transcript: TranscriptEntry[];
  /** The compaction audit (dsh compactions), or null when the log did not load or the audit failed. */
  audit: Pick<CompactionsReport, 'counts' | 'attempts' | 'verdicts' | 'foldError'> | null;
  findings: Finding[];
  /** Which secrets reached the model (dsh secrets, masked), or null when the log did not load. */
  secrets: SecretReport[] | null;
  textLimit: number;
}

export interface ReportInput {
  inspection: SessionInspection;
  findings: Finding[];
  lineage: ReportLineage;
  version: string;
  /** `dsh secrets` over the same inspection (masked tokens only). */
  secrets?: SecretReport[] | null;
}

function cut(text: string): string {
  if (text.length <= TEXT_LIMIT) return text;
  const length = codePointLength(text);
  // A string of its own: a slice would keep the whole text alive as long as the document holds the cut.
  return length <= TEXT_LIMIT ? text : ownString(headCodePoints(text, TEXT_LIMIT) + `… [${length - TEXT_LIMIT} more characters: open the event for its raw JSON]`);
}

function finishText(finish: unknown): string | null {
  if (finish === null || finish === undefined) return null;
  if (typeof finish === 'string') return finish;
  const f = finish as { kind?: unknown; failure?: { code?: unknown; message?: unknown } };
  if (f.kind === 'error' && f.failure) return `error ${String(f.failure.code ?? f.failure.message ?? '')}`.trim();
  return String(f.kind ?? toJson(finish));
}

function errorOf(r: SessionInspection): ReportError | null {
  const e = r.error;
  if (!e) return null;
  return {
    class: e.class,
    message: e.message,
    ...(e.cause ? { cause: e.cause.message } : {}),
    stage: e.stage,
    kind: e.kind,
    ...(e.seq !== undefined ? { seq: e.seq } : {}),
    ...(e.byteOffset !== undefined ? { byteOffset: e.byteOffset } : {}),
    ...(e.rule !== undefined ? { rule: e.rule } : {}),
  };
}

/** Lineage facts from `lineageInRoot` (or just the header when the target is outside a root). */
export function reportLineage(header: { parentSession?: string; seedLength?: number } | null, view: LineageView | null, note: string | null): ReportLineage {
  const out: ReportLineage = {
    root: view?.root ?? null,
    parent: header?.parentSession ?? null,
    ancestors: [],
    descendants: [],
    seedLength: header?.seedLength ?? null,
    unresolvedParent: null,
    note,
  };
  if (!view) return out;
  const kind = (h: { parentSession?: string; origin?: string }) => (h.origin === 'subagent' ? 'subagent' : h.parentSession !== undefined ? 'fork' : 'root');
  out.ancestors = view.trace.ancestors.map((a) => ({ id: a.header.id, createdAt: a.header.createdAt, kind: kind(a.header) }));
  const stack = [...view.trace.descendants].reverse().map((n) => ({ n, depth: 1 }));
  while (stack.length > 0) {
    const { n, depth } = stack.pop()!;
    out.descendants.push({ id: n.session.header.id, createdAt: n.session.header.createdAt, kind: kind(n.session.header), depth, seedLength: n.session.header.seedLength ?? null });
    for (let i = n.descendants.length - 1; i >= 0; i--) stack.push({ n: n.descendants[i]!, depth: depth + 1 });
  }
  if (!view.trace.complete) out.unresolvedParent = view.trace.unresolvedParentId;
  return out;
}

/** The report's health is `dsh ls`'s (one rule: views/listing.ts `healthOf`). */
const healthStatus: (r: SessionInspection) => ReportData['health']['status'] = healthOf;

/** Is `e` one of the compaction/* events {@link deriveCompactions} reads? */
export function isCompactionRecord(e: SessionEvent): boolean {
  return e.type.startsWith('compaction/');
}

/**
 * Derive the compaction list from the fold's replacements and the compaction/* events (in log
 * order); `at(seq)` must give at least those events and the replacement events.
 */
export function deriveCompactions(
  records: readonly SessionEvent[],
  at: (seq: number) => SessionEvent | undefined,
  replacements: readonly { seq: number; start: number; end: number; shadowedSeqs: number[] }[],
  storedEventCount: number,
): ReportCompaction[] {
  const byId = new Map<string, { start?: number; end?: number; summary?: number; turn?: number | null; tokens?: number }>();
  const prunes: SessionEvent[] = [];
  for (const e of records) {
    if (!isCompactionRecord(e)) continue;
    if (e.type === 'compaction/prune') {
      prunes.push(e);
      continue;
    }
    const id = e.data?.compactionId;
    if (typeof id !== 'string') continue;
    const rec = byId.get(id) ?? {};
    if (e.type === 'compaction/start') {
      rec.start ??= e.seq;
      rec.turn = (e.data?.turn ?? null) as number | null;
    } else if (e.type === 'compaction/end') rec.end ??= e.seq;
    else if (e.type === 'compaction/summary') {
      rec.summary ??= e.seq;
      if (typeof e.data?.shadowedTokenCount === 'number') rec.tokens = e.data.shadowedTokenCount;
    }
    byId.set(id, rec);
  }
  const used = new Set<string>();
  const usedPrunes = new Set<number>();
  const out: ReportCompaction[] = [];
  for (const r of replacements) {
    const e = at(r.seq) as SessionEvent;
    const src = e.data?.source;
    const sources = Array.isArray(e.sourceEventSeqs) ? [...e.sourceEventSeqs] : [];
    const base = { seq: r.seq, type: e.type, start: r.start, end: r.end, shadowedSeqs: [...r.shadowedSeqs], sourceEventSeqs: sources, synthetic: r.seq >= storedEventCount };
    if (e.type === 'user/message' && src?.kind === 'plugin' && src?.plugin === 'compact') {
      const id = src.compactionId !== undefined ? String(src.compactionId) : null;
      const rec = id !== null ? byId.get(id) : undefined;
      if (id !== null) used.add(id);
      const summarySeq = rec?.summary ?? sources.find((s) => at(s)?.type === 'compaction/summary') ?? null;
      out.push({ ...base, kind: 'compaction', compactionId: id, startSeq: rec?.start ?? null, endSeq: rec?.end ?? null, summarySeq, pruneSeq: null, tokens: rec?.tokens ?? null, turn: rec?.turn ?? null });
    } else if (e.type === 'tool/result') {
      // The prune record logged just before the rewrite that names the same shadowed node.
      let prune: SessionEvent | undefined;
      for (let i = prunes.length - 1; i >= 0; i--) {
        const p = prunes[i]!;
        if (p.seq < r.seq && !usedPrunes.has(p.seq) && Array.isArray(p.data?.shadowedSeqs) && p.data.shadowedSeqs.includes(r.shadowedSeqs[0])) {
          prune = p;
          break;
        }
      }
      if (prune) usedPrunes.add(prune.seq);
      out.push({
        ...base,
        kind: 'prune',
        compactionId: null,
        startSeq: null,
        endSeq: null,
        summarySeq: null,
        pruneSeq: prune?.seq ?? null,
        tokens: typeof prune?.data?.shadowedTokenCount === 'number' ? prune.data.shadowedTokenCount : null,
        turn: null,
      });
    } else {
      out.push({ ...base, kind: 'replacement', compactionId: null, startSeq: null, endSeq: null, summarySeq: null, pruneSeq: null, tokens: null, turn: null });
    }
  }
  // Compactions that started (or summarized) but never replaced the surface: a crash or an abort.
  for (const [id, rec] of byId) {
    if (used.has(id)) continue;
    out.push({
      seq: null,
      kind: 'unfinished',
      type: null,
      compactionId: id,
      start: null,
      end: null,
      shadowedSeqs: [],
      sourceEventSeqs: [],
      startSeq: rec.start ?? null,
      endSeq: rec.end ?? null,
      summarySeq: rec.summary ?? null,
      pruneSeq: null,
      tokens: rec.tokens ?? null,
      turn: rec.turn ?? null,
      synthetic: false,
    });
  }
  return out;
}

/** The title a log set last (`session/title`), or null. */
export class TitleOf {
  title: string | null = null;
  observe(e: SessionEvent): void {
    if (e.type === 'session/title') this.title = typeof e.data?.title === 'string' ? e.data.title : null;
  }
}

/**
 * The report document up to what needs the events walked (turns, dispatches, transcript, surface,
 * compactions, audit stay empty): session, health, lineage, findings, secrets.
 */
export function reportBase(input: ReportInput, summary: SessionSummary, title: string | null, eventCount: number): ReportData {
  const r = input.inspection;
  return {
    v: 1,
    tool: { name: 'dsh', version: input.version },
    session: {
      id: r.meta?.id ?? r.artifact.meta?.id ?? r.target.expectedId ?? null,
      file: r.target.path,
      encoding: r.encoding,
      bytes: r.bytes,
      decoder: r.decoder ?? null,
      header: r.meta ?? r.artifact.meta ?? null,
      storedEventCount: r.storedEventCount,
      eventCount,
      title,
      firstTime: summary.firstTime,
      lastTime: summary.lastTime,
      countsByType: summary.countsByType,
    },
    health: {
      status: healthStatus(r),
      error: errorOf(r),
      torn: r.torn,
      closers: r.closerReasons.map((c) => ({ seq: c.seq, type: c.type, why: c.why })),
      repair: r.repairPlan
        ? { writes: r.repairPlan.writes, truncateTo: r.repairPlan.truncateTo, truncatedBytes: r.repairPlan.truncatedBytes, reappendSeqs: r.repairPlan.reappendSeqs, closerSeqs: r.repairPlan.closerSeqs, appendAs: r.repairPlan.appendAs }
        : null,
      warnings: r.warnings,
      migratedEvents: r.migratedEvents,
      ignorableUnknown: r.ignorableUnknown,
      defect: r.defect ?? null,
    },
    lineage: input.lineage,
    turns: [],
    dispatches: [],
    headers: {},
    contexts: {},
    transcript: [],
    surface: { nodes: [], replacements: [], entries: [] },
    compactions: [],
    context: null,
    audit: null,
    auditError: null,
    findings: input.findings,
    secrets: input.secrets ?? null,
    textLimit: TEXT_LIMIT,
  };
}

/** The page's dispatches, one entry after the other (each is diffed against the one before). */
export class DispatchRows {
  private prevNodes: number[] = [];
  private prev: DispatchEntry | null = null;
  constructor(
    private readonly headers: ReportData['headers'],
    private readonly contexts: ReportData['contexts'],
  ) {}
  /** The entry added last (the next one's diff is taken from it). */
  get previous(): DispatchEntry | null {
    return this.prev;
  }
  /** `diff`: `diffDispatches(previous, entry, events)`. */
  add(entry: DispatchEntry, diff: DispatchDiff): ReportDispatch {
    const s = summarizeDispatch(entry, this.prev);
    const nodes = entry.surfaceNodes;
    const prevNodes = this.prevNodes;
    let k = 0;
    while (k < nodes.length && k < prevNodes.length && nodes[k] === prevNodes[k]) k++;
    if (entry.headerSeq !== null && !(String(entry.headerSeq) in this.headers)) this.headers[String(entry.headerSeq)] = entry.header;
    if (entry.requestContextSeq !== null && !(String(entry.requestContextSeq) in this.contexts)) this.contexts[String(entry.requestContextSeq)] = entry.requestContext;
    this.prevNodes = nodes;
    this.prev = entry;
    return {
      i: entry.index,
      key: entry.key,
      turn: entry.turn,
      step: entry.step,
      attempt: entry.attemptInStep,
      first: entry.firstChunkSeq,
      last: entry.lastChunkSeq,
      chunks: entry.chunkCount,
      finish: finishText(entry.finish),
      finishRaw: entry.finish,
      durationMs: s.durationMs,
      startTime: s.startTime,
      usage: s.usage,
      usageFrom: s.usageFrom,
      provider: s.provider,
      model: s.model,
      msgCount: entry.messageCount,
      assistantSeq: entry.assistantMessageSeq,
      headerSeq: entry.headerSeq,
      headerChanges: s.headerChanges,
      ctxSeq: entry.requestContextSeq,
      nodes: [k, ...nodes.slice(k)],
      diff,
    };
  }
}

/** Retries per step (`llm/retry`), keyed by `stepKey`. */
export class RetryCounts {
  readonly byStep = new Map<string, number>();
  observe(e: SessionEvent): void {
    if (e.type !== 'llm/retry') return;
    const key = stepKey(e.data?.turn, e.data?.step);
    this.byStep.set(key, (this.byStep.get(key) ?? 0) + 1);
  }
}

/**
 * The page's turns with their steps. `finishOf(i)`: dispatch i's finish text; `timeOf(seq)`: that
 * event's time (null when it has none).
 */
export function reportTurns(summary: SessionSummary, steps: readonly StepEntry[], finishOf: (i: number) => string | null, retries: RetryCounts, timeOf: (seq: number | null) => number | null): ReportTurn[] {
  const stepsByTurnStart = new Map<number, ReportStep[]>();
  const turnStarts = summary.turns.map((t) => t.startSeq);
  for (const st of steps) {
    // The turn owning the step: the last turn/start before it.
    const at = floorIndexBy(turnStarts.length, (i) => turnStarts[i] as number, st.startSeq);
    if (at < 0) continue;
    const last = st.requestIndexes.length > 0 ? (st.requestIndexes[st.requestIndexes.length - 1] as number) : undefined;
    const t0 = timeOf(st.startSeq);
    const t1 = timeOf(st.endSeq);
    const list = stepsByTurnStart.get(turnStarts[at] as number) ?? [];
    list.push({
      step: st.step,
      startSeq: st.startSeq,
      endSeq: st.endSeq,
      durationMs: t0 !== null && t1 !== null ? t1 - t0 : null,
      endReason: last !== undefined ? finishOf(last) : null,
      dispatches: [...st.requestIndexes],
      retries: retries.byStep.get(stepKey(st.turn, st.step)) ?? 0,
    });
    stepsByTurnStart.set(turnStarts[at] as number, list);
  }
  return summary.turns.map((t) => {
    const t0 = timeOf(t.startSeq);
    const t1 = timeOf(t.endSeq);
    return { turn: t.turn, startSeq: t.startSeq, endSeq: t.endSeq, reason: t.reason, synthetic: t.synthetic, durationMs: t0 !== null && t1 !== null ? t1 - t0 : null, startTime: t0, steps: stepsByTurnStart.get(t.startSeq) ?? [] };
  });
}

/** A transcript entry for the reading column: its texts cut at {@link TEXT_LIMIT}. */
export function transcriptRow(x: TranscriptEntry): TranscriptEntry {
  switch (x.kind) {
    case 'message':
      return {
        ...x,
        text: cut(x.text),
        reasoning: x.reasoning === null ? null : cut(x.reasoning),
        toolCalls: x.toolCalls.map((c) => ({ ...c, arguments: cut(c.arguments), result: c.result ? { ...c.result, text: cut(c.result.text) } : null })),
      };
    case 'tool-result':
      return { ...x, result: { ...x.result, text: cut(x.result.text) } };
    case 'compaction':
      return { ...x, summary: cut(x.summary) };
    case 'prune':
    case 'replacement':
      return { ...x, text: cut(x.text) };
    default:
      return x;
  }
}

/** What the model saw at the end (`dsh surface`), texts cut. */
export function surfaceSection(view: SurfaceView): ReportData['surface'] {
  return {
    nodes: view.surface.nodes,
    replacements: view.surface.replacements,
    entries: view.entries.map((x) => {
      const m = x.message as { role?: unknown; id?: unknown; content?: unknown } | null;
      return {
        seq: x.seq,
        type: x.type,
        op: x.op,
        replaced: x.replaced,
        role: m && typeof m.role === 'string' ? m.role : null,
        id: m && typeof m.id === 'string' ? m.id : null,
        text: m ? cut(blocksText(m.content)) : '(no message: empty assistant response)',
        interrupted: x.interrupted,
        synthetic: x.synthetic,
      };
    }),
  };
}

/** The Context view's data from `dsh context`'s view (numbers only, and each break's cause in words). */
export function pageContext(v: ContextView): PageContext {
  return {
    tokens: v.tokens,
    categories: [...CONTEXT_CATEGORIES],
    rows: v.dispatches.map((r) => ({
      i: r.index,
      time: r.time,
      bytes: r.bytes,
      cats: CONTEXT_CATEGORIES.map((c) => r.byCategory[c]),
      tokens: r.promptTokens,
      window: r.contextWindow,
      prompt: r.cache.promptBytes,
      shared: r.cache.sharedBytes,
      cacheRead: r.cache.cacheReadTokens,
      brk: r.break,
    })),
    breaks: v.breaks.map((b) => ({ i: b.index, key: b.key, cause: b.cause, causeSeq: b.causeSeq, detail: b.detail, resentTokens: b.resentTokens })),
  };
}

/** The members of the compaction audit the report keeps, in its order. */
export const AUDIT_MEMBERS = ['counts', 'attempts', 'verdicts', 'foldError'] as const;

/** The compaction audit as the report keeps it (or the audit's error). */
export function auditSection(run: () => CompactionsReport): Pick<ReportData, 'audit' | 'auditError'> {
  try {
    const a = run();
    return { audit: Object.fromEntries(AUDIT_MEMBERS.map((k) => [k, a[k]])) as NonNullable<ReportData['audit']>, auditError: null };
  } catch (error) {
    return { audit: null, auditError: (error as Error).message };
  }
}

/** Build the report document from the held logical events (events not included; see {@link reportParts}). */
export function buildReportData(input: ReportInput): ReportData {
  const r = input.inspection;
  const events = r.error ? [] : (r.events ?? []);
  const summary = summarize(events, r.storedEventCount);
  const title = new TitleOf();
  for (const e of events) title.observe(e);
  const data = reportBase(input, summary, title.title, events.length);
  if (r.error || !r.events || !r.meta) return data;

  const session = loadedFromInspection(r);
  // --- dispatches
  const index = deriveDispatches(events, { lazy: events });
  const rows = new DispatchRows(data.headers, data.contexts);
  for (const entry of index.requests) data.dispatches.push(rows.add(entry, diffDispatches(rows.previous, entry, events)));
  // --- turns and steps
  const retries = new RetryCounts();
  for (const e of events) retries.observe(e);
  data.turns = reportTurns(summary, index.steps, (i) => data.dispatches[i]?.finish ?? null, retries, (seq) => (seq === null ? null : (events[seq]?.time ?? null)));
  // --- transcript (what the user saw), texts cut for the reading column
  data.transcript = buildTranscript(session).entries.map(transcriptRow);
  // --- surface (what the model saw at the end)
  const view = surfaceView(session);
  data.surface = surfaceSection(view);
  // --- compactions
  data.compactions = deriveCompactions(events, (seq) => events[seq], view.surface.replacements, r.storedEventCount);
  const audit = auditSection(() => auditCompactions(events, { sessionId: session.sessionId }));
  data.audit = audit.audit;
  data.auditError = audit.auditError;
  return data;
}

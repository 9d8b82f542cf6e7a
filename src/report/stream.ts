/**
 * `dsh report` of an accepted log without holding it: the validating pass
 * (or the saved session index) gives the final fold, the dispatch index and
 * the surface events; three re-reads of the log then give everything else,
 * and the page is written as it is computed, never as one string:
 *
 * 1. analysis: summary, title, retries, check facts, secrets, the transcript's
 *    links, the compaction audit, citation counts, the compaction records,
 *    and every dispatch with its diff (holding only the events between two
 *    dispatch inputs and those on the surface);
 * 2. the transcript, entry by entry, inside the report document;
 * 3. the events blob, row by row, with the per-event facts.
 *
 * The output is byte-identical to {@link buildReport} + `reportParts` over
 * the held log (test/report-stream.test.ts). What the first pass fed (check's
 * replay, the secrets fold, the audit's replay, the dispatch index) is let go
 * before the second; the audit's attempts are written one at a time (their
 * origin lists are never held as a whole). What is still held grows with the
 * log's dispatches (their deflated JSON, the page's headers and contexts), the
 * transcript size is not held, and the facts keep a few bytes per event
 * (labels, preview index, citers) plus the distinct previews, each a string of
 * its own.
 */
import type { FrameDecoder } from '../physical/decoders.js';
import { inspectTargetIndexed, sparseArray, type IndexedInspection, type IndexUse, type SessionInspection } from '../log/session.js';
import type { ResolvedTarget } from '../log/target.js';
import { LogError } from '../log/errors.js';
import { repairPlanOf } from '../log/inspect.js';
import { isIgnorableUnknown } from '../log/logical.js';
import type { SeqRange } from '../log/reread.js';
import type { SessionEvent } from '../log/types.js';
import { checkInspection, rootLookup, StreamedFactsCollector, type StreamedFacts } from '../check/engine.js';
import type { BehaviourSettings } from '../check/behaviour.js';
import { SecretsFold, secretsOfFold, type SecretsReport } from '../views/secrets.js';
import { Summarizer, type SessionSummary } from '../views/summary.js';
import { DISPATCHES, type Dispatches } from '../views/dispatch-fold.js';
import { CITATIONS, foldOf, SURFACE_EVENTS, type Citations } from '../views/index-folds.js';
import { diffDispatches, releaseSurfaceNodes, type DispatchEntry } from '../views/requests.js';
import { streamedTranscript, TranscriptLinker } from '../views/transcript.js';
import { StreamingSurface } from '../views/messages.js';
import { CompactionAudit, compactionsJson, priceAudit, type AuditedCompactions } from '../views/compactions.js';
import { contextIndexed } from '../views/context.js';
import { shippedPriceTable } from '../views/prices.js';
import {
  AUDIT_MEMBERS,
  pageContext,
  deriveCompactions,
  DispatchRows,
  isCompactionRecord,
  reportBase,
  reportTurns,
  RetryCounts,
  surfaceSection,
  TitleOf,
  transcriptRow,
  type ReportData,
} from './data.js';
import { CitationCounts, emptyFacts, eventFacts, StreamedEventFacts, type SavedCiters } from './facts.js';
import { lineageOf, secretsInfo } from './build.js';
import { BETWEEN_BLOBS, embedJson, embedJsonParts, embedJsonPieces, embedPieces, EventRows, reportClosing, reportOpening, TextBatch } from './html.js';
import { deflateRawSync, inflateRawSync } from 'node:zlib';

export interface StreamOptions {
  decoder?: FrameDecoder;
  /** Session root for lineage (default: the root the target sits in). */
  root?: string;
  version: string;
  /** The session index to use (and save); `cold`: the same folds with the cache turned off. */
  use: IndexUse;
  cold: IndexUse;
  /** Also list the findings of these behaviour rules (`dsh report --behaviour`). */
  behaviour?: BehaviourSettings;
}

export interface StreamedReport {
  sessionId: string | null;
  warnings: string[];
  /** The page, in pieces (call once; it re-reads the log). */
  parts(): AsyncGenerator<string>;
  close(): void;
}

/** The report document's keys, in the order the page's JSON has them (the writer splices three of them in). */
const DATA_KEYS = ['v', 'tool', 'session', 'health', 'lineage', 'turns', 'dispatches', 'headers', 'contexts', 'transcript', 'surface', 'compactions', 'context', 'audit', 'auditError', 'findings', 'secrets', 'textLimit'];

/**
 * The streamed report of `target`, or undefined when DSH refuses the log (or it has no header):
 * the caller then builds the held report, which shows the refusal.
 */
export async function streamReport(target: ResolvedTarget, options: StreamOptions): Promise<StreamedReport | undefined> {
  const decoder = options.decoder ? { decoder: options.decoder } : {};
  let indexed: IndexedInspection;
  try {
    indexed = await inspectTargetIndexed(target, decoder, options.use);
    // The saved index keeps neither the repair plan nor the tolerated defect: a log DSH would
    // repair is read cold (such logs end in a crash, so they are rarely the big ones).
    const r = indexed.inspection;
    if (!r.error && (indexed.warm || indexed.extended) && (r.torn !== null || r.closers.length > 0)) {
      indexed.close();
      indexed = await inspectTargetIndexed(target, decoder, options.cold);
    }
  } catch (error) {
    if (error instanceof LogError) return undefined;
    throw error;
  }
  const r = indexed.inspection;
  if (r.error || !r.meta || !r.surface || !indexed.stream || !indexed.events) {
    indexed.close();
    return undefined;
  }
  return {
    sessionId: r.meta.id,
    warnings: r.warnings,
    parts: () => writeReport(target, indexed, options),
    close: () => indexed.close(),
  };
}

/** What the first pass leaves for writing the page: the rest of it is let go before the log is re-read again. */
interface FirstPass {
  /** The report document, its dispatches, transcript and audit left out (the writer splices them in). */
  doc: ReportData;
  /** The page's dispatches, each as its embedded JSON text. */
  dispatches: PackedTexts;
  /** The transcript's links (the second pass writes the transcript from them). */
  linker: TranscriptLinker;
  /** The audit's members as JSON text, in pieces (null: `doc.audit` and `doc.auditError` say why there is none). */
  audit: (() => Generator<string>) | null;
  /** Which earlier events each event cites (checked; counted for the per-event facts when `saved` is null). */
  citations: CitationCounts;
  /** The session index's citations (the per-event facts' citers come from them). */
  saved: SavedCiters | null;
}

async function* writeReport(target: ResolvedTarget, indexed: IndexedInspection, options: StreamOptions): AsyncGenerator<string> {
  const base = indexed.inspection;
  const surface = base.surface!;
  const stream = indexed.stream!;
  const total = base.storedEventCount + base.closers.length;
  let first: FirstPass | undefined = await firstPass(target, indexed, options);
  // The dispatch index and the surface events were for the first pass only.
  indexed.folds.delete(DISPATCHES.tag);
  indexed.folds.delete(SURFACE_EVENTS.tag);
  const citations = first.citations;
  const saved = first.saved;

  // --- the page: the report document, member by member, its dispatches, transcript and audit spliced in as they come
  yield reportOpening(first.doc);
  let sep = '{';
  for (const key of DATA_KEYS) {
    yield `${sep}${JSON.stringify(key)}:`;
    sep = ',';
    if (key === 'dispatches') {
      yield '[';
      yield* first.dispatches.drain();
      yield ']';
    } else if (key === 'transcript') {
      // --- pass 2: the transcript
      const { entries } = await streamedTranscript(indexed, first.linker);
      const out = new TextBatch({ separator: ',' });
      yield '[';
      for await (const x of entries) {
        // A row holding a long string in its pieces (the first one takes the separator).
        let sep = true;
        for (const text of embedJsonPieces(transcriptRow(x))) {
          const t = sep ? out.push(text) : out.append(text);
          sep = false;
          if (t !== undefined) yield t;
        }
      }
      yield `${out.take()}]`;
    } else if (key === 'audit' && first.audit) yield* embedPieces(first.audit());
    else yield* embedJsonParts(first.doc[key as keyof ReportData], 3);
    // Written: let it go (the dispatches' headers and contexts, say, while the transcript is written).
    (first.doc as unknown as Record<string, unknown>)[key] = null;
    if (key === 'audit') first.audit = null;
  }
  yield '}';
  yield BETWEEN_BLOBS;
  // Nothing of the first pass is needed from here on but the citation counts.
  first = undefined;

  // --- pass 3: the events blob and the per-event facts
  const facts = total > 0 && !citations.irregular ? new StreamedEventFacts(total, surface, saved ?? citations) : undefined;
  const held: SessionEvent[] | undefined = total > 0 && !facts ? [] : undefined;
  const eventRows = new EventRows();
  const batch = new TextBatch({ start: EventRows.OPEN });
  for await (const events of stream()) {
    for (const e of events) {
      for (const text of eventRows.row(e)) {
        const piece = batch.push(text);
        if (piece !== undefined) yield piece;
      }
      facts?.observe(e);
      held?.push(e);
    }
  }
  batch.push(eventRows.close());
  yield batch.take();
  if (facts) yield* facts.json();
  else yield embedJson(held ? eventFacts(held, surface) : emptyFacts());
  yield '}';
  yield reportClosing();
}

/**
 * Pass 1: one re-read gives everything the report document needs before its transcript (summary,
 * title, retries, check facts, secrets, the transcript's links, the compaction audit, citation
 * counts, compaction records, every dispatch with its diff); then the document is built. What the
 * pass held (the folds it fed, the dispatch index's hydrated texts, the audit's replay) is let go
 * on return, save what {@link FirstPass} keeps.
 */
async function firstPass(target: ResolvedTarget, indexed: IndexedInspection, options: StreamOptions): Promise<FirstPass> {
  const meta = indexed.inspection.meta!;
  const fetch = indexed.events!;
  const dispatches = foldOf(indexed.folds, DISPATCHES);
  // The walk's folds, the audit and the restored surface are let go here (their function has returned):
  // the Context view re-reads the surface's events, which they would otherwise hold a second time.
  const { doc, audited, kept } = await walkedDocument(target, indexed, dispatches, options);
  // The Context view: every dispatch hydrated once more and its surface events re-read, then let go.
  doc.context = pageContext(await contextIndexed(dispatches, (ranges, into) => fetch(ranges, into), meta.id, { prices: shippedPriceTable() }));
  dispatches.release(dispatches.index.requests);
  if (Object.keys(doc).join() !== DATA_KEYS.join()) throw new Error(`the report document's keys changed (${Object.keys(doc).join()}): update DATA_KEYS and the writer`);
  const a = audited;
  return { doc, dispatches: kept.texts, linker: kept.linker, audit: a ? () => compactionsJson(a, a.report.attempts, AUDIT_MEMBERS) : null, citations: kept.citations, saved: kept.saved };
}

/**
 * The walk's compaction audit priced and finished (written attempt by attempt later: an attempt's
 * originSeqs can list millions of seqs); the walk lets go of the audit and the events it held.
 */
async function finishAudit(walked: Walked, dispatches: Dispatches, fetch: NonNullable<IndexedInspection['events']>, sessionId: string): Promise<{ audited: AuditedCompactions | undefined; auditFailure: string | null }> {
  const audit = walked.audit;
  walked.audit = null;
  let auditFailure = walked.auditFailure;
  let priced: DispatchEntry[] | undefined;
  let audited: AuditedCompactions | undefined;
  if (audit && auditFailure === null) {
    try {
      priced = audit.end();
    } catch (error) {
      auditFailure = (error as Error).message;
    }
  }
  if (audit && auditFailure === null && priced) {
    await priceAudit(audit, priced, dispatches, (ranges) => fetch(ranges));
    try {
      audited = audit.finish(sessionId);
    } catch (error) {
      auditFailure = (error as Error).message;
    }
  }
  return { audited, auditFailure };
}

/** The report document but its Context view, from one walk of the log, with the finished audit and what the later passes keep of the walk. */
async function walkedDocument(
  target: ResolvedTarget,
  indexed: IndexedInspection,
  dispatches: Dispatches,
  options: StreamOptions,
): Promise<{ doc: ReportData; audited: AuditedCompactions | undefined; kept: Pick<Walked, 'texts' | 'linker' | 'citations' | 'saved'> }> {
  const base = indexed.inspection;
  const meta = base.meta!;
  const surface = base.surface!;
  const fetch = indexed.events!;
  const total = base.storedEventCount + base.closers.length;
  const lineage = await lineageOf(target, meta, options);
  const walked = await walkLog(target, indexed, dispatches, options.behaviour);
  // The audit is finished (and its events let go) before the surface's events are read again.
  const { audited, auditFailure } = await finishAudit(walked, dispatches, fetch, meta.id);

  // The inspection as a full validating pass reports it (a saved index keeps neither).
  const r: SessionInspection = { ...base, ignorableUnknown: walked.ignorableUnknown, repairPlan: base.repairPlan ?? repairPlanOf(base.encoding, base.bytes, base.torn, base.closers, []) };
  const findings = (await checkInspection(r, target, { ...(options.decoder ? { decoder: options.decoder } : {}), lookup: rootLookup() }, walked.checkFacts)).findings;
  const doc: ReportData = reportBase({ inspection: r, findings, lineage, version: options.version, secrets: walked.secrets }, walked.summary, walked.title, total);
  doc.headers = walked.headers;
  doc.contexts = walked.contexts;
  doc.turns = walked.turns;
  const restored = await StreamingSurface.restored(undefined, total, foldOf(indexed.folds, SURFACE_EVENTS), surface.replacements, base.closers, (seqs) => fetch(seqs.map((x) => [x, x] as [number, number])));
  const view = restored.view(meta.id, meta, base.storedEventCount);
  doc.surface = surfaceSection(view);
  const kept = walked.kept;
  doc.compactions = deriveCompactions(walked.records, (seq) => kept.get(seq), view.surface.replacements, base.storedEventCount);
  doc.auditError = audited ? null : auditFailure;
  return { doc, audited, kept: { texts: walked.texts, linker: walked.linker, citations: walked.citations, saved: walked.saved } };
}

/** What the first pass's walk of the log leaves for building the document (its folds are let go on return). */
interface Walked {
  summary: SessionSummary;
  title: string | null;
  checkFacts: StreamedFacts;
  secrets: SecretsReport['secrets'];
  turns: ReportData['turns'];
  headers: ReportData['headers'];
  contexts: ReportData['contexts'];
  texts: PackedTexts;
  linker: TranscriptLinker;
  /** Null once {@link finishAudit} took it. */
  audit: CompactionAudit | null;
  auditFailure: string | null;
  citations: CitationCounts;
  saved: SavedCiters | null;
  ignorableUnknown: number[];
  records: SessionEvent[];
  kept: Map<number, SessionEvent>;
}

/**
 * The first pass's walk of the log, every fold it feeds taken to its result before it returns, so
 * that what only the walk needed (check's look-back events, the secrets fold, the step times, the
 * dispatch differ's window) is collectable while the document is built: that is when a large
 * report peaks.
 */
async function walkLog(target: ResolvedTarget, indexed: IndexedInspection, dispatches: Dispatches, behaviour?: BehaviourSettings): Promise<Walked> {
  const base = indexed.inspection;
  const meta = base.meta!;
  const surface = base.surface!;
  const stream = indexed.stream!;
  const fetch = indexed.events!;
  const total = base.storedEventCount + base.closers.length;
  const requests = dispatches.index.requests;

  const summary = new Summarizer(base.storedEventCount);
  const title = new TitleOf();
  const retries = new RetryCounts();
  const checks = new StreamedFactsCollector(undefined, behaviour);
  checks.meta(meta);
  const secrets = new SecretsFold(meta.id, meta);
  const linker = new TranscriptLinker(surface.replacements);
  const audit = new CompactionAudit(requests);
  let auditFailure: string | null = null;
  // The citers come from the index's citations when it has them all (a typed array per event otherwise).
  const cited = indexed.folds.get(CITATIONS.tag) as Citations | undefined;
  const saved = cited?.complete ? { citations: cited, closers: base.closers } : null;
  const citations = new CitationCounts(total, saved === null);
  const ignorableUnknown: number[] = [];
  const records: SessionEvent[] = [];
  const kept = new Map<number, SessionEvent>();
  const replacementSeqs = new Set(surface.replacements.map((x) => x.seq));
  const stepSeqs = new Set<number>();
  for (const st of dispatches.index.steps) {
    stepSeqs.add(st.startSeq);
    if (st.endSeq !== null) stepSeqs.add(st.endSeq);
  }
  const times = new Map<number, number | null>();
  const headers: ReportData['headers'] = {};
  const contexts: ReportData['contexts'] = {};
  const rows = new DispatchRows(headers, contexts);
  const differ = new DispatchDiffer(requests, total, dispatches, rows, fetch);
  for await (const batch of stream()) {
    for (const e of batch) {
      summary.observe(e);
      title.observe(e);
      retries.observe(e);
      checks.observe(e);
      secrets.observe(e);
      linker.observe(e);
      if (auditFailure === null) {
        try {
          audit.push(e);
        } catch (error) {
          auditFailure = (error as Error).message;
        }
      }
      citations.observe(e);
      if (e.seq < base.storedEventCount && isIgnorableUnknown(e)) ignorableUnknown.push(e.seq);
      if (isCompactionRecord(e)) {
        records.push(e);
        kept.set(e.seq, e);
      } else if (replacementSeqs.has(e.seq)) kept.set(e.seq, e);
      if (e.type === 'turn/start' || e.type === 'turn/end' || stepSeqs.has(e.seq)) times.set(e.seq, e.time ?? null);
      differ.observe(e);
    }
    const last = batch[batch.length - 1];
    if (last) await differ.flush(last.seq);
  }
  await differ.flush(Number.POSITIVE_INFINITY);
  const sums = summary.result();
  return {
    summary: sums,
    title: title.title,
    checkFacts: checks.result(true),
    secrets: secretsOfFold(secretsInfo(target, meta), secrets).secrets,
    turns: reportTurns(sums, dispatches.index.steps, (i) => differ.finishes[i] ?? null, retries, (seq) => (seq === null ? null : (times.get(seq) ?? null))),
    headers,
    contexts,
    texts: differ.texts,
    linker,
    audit,
    auditFailure,
    citations,
    saved,
    ignorableUnknown,
    records,
    kept,
  };
}

/**
 * Comma-separated texts held deflated until they are written (the page's dispatches: JSON that
 * compresses ~10x, computed in the first pass and written after the turns).
 */
class PackedTexts {
  private readonly chunks: Buffer[] = [];
  private readonly batch = new TextBatch({ separator: ',' });
  push(text: string): void {
    const piece = this.batch.push(text);
    if (piece !== undefined) this.chunks.push(deflateRawSync(Buffer.from(piece, 'utf8'), { level: 1 }));
  }
  /** The texts, once, in pieces. */
  *drain(): Generator<string> {
    const rest = this.batch.take();
    for (const c of this.chunks.splice(0)) yield inflateRawSync(c).toString('utf8');
    if (rest !== '') yield rest;
  }
}

/**
 * Every dispatch of the page with its diff (`diffDispatches`), in one forward walk of the log:
 * each dispatch is taken once the walk has passed its input, its chunks and its assistant message,
 * holding only the events since the previous dispatch's input, the previous and current surface's
 * events and the latest request header and context. An event the diff needs that was let go is
 * re-read (never a different answer, only a slower one).
 */
class DispatchDiffer {
  /** The page's dispatches, each as its embedded JSON text. */
  readonly texts = new PackedTexts();
  /** Each dispatch's finish text (a step's end reason). */
  readonly finishes: (string | null)[] = [];
  private readonly held: SessionEvent[];
  private heldSeqs: number[] = [];
  private next = 0;
  private lastHeaderSeq = -1;
  private lastContextSeq = -1;

  constructor(
    private readonly requests: readonly DispatchEntry[],
    total: number,
    private readonly dispatches: Dispatches,
    private readonly rows: DispatchRows,
    private readonly fetch: (ranges: readonly SeqRange[], into?: SessionEvent[]) => Promise<SessionEvent[]>,
  ) {
    // Indexed by seq, holding a window: `new Array(total)` would be 100 MB of slots on the bench's 2 GB log.
    this.held = sparseArray<SessionEvent>(total);
  }

  observe(e: SessionEvent): void {
    if (this.next >= this.requests.length) return;
    this.held[e.seq] = e;
    this.heldSeqs.push(e.seq);
    if (e.type === 'request/header') this.lastHeaderSeq = e.seq;
    else if (e.type === 'request/context') this.lastContextSeq = e.seq;
  }

  /** Take every dispatch the walk has passed (`seq`: the last event walked). */
  async flush(seq: number): Promise<void> {
    while (this.next < this.requests.length) {
      const cur = this.requests[this.next] as DispatchEntry;
      const ready = Math.max(cur.prefixEventCount - 1, cur.lastChunkSeq, cur.assistantMessageSeq ?? -1);
      if (ready > seq) return;
      await this.take(cur);
      this.next++;
    }
    // Past the last dispatch: nothing more to hold.
    for (const s of this.heldSeqs) delete this.held[s];
    this.heldSeqs = [];
  }

  private async take(cur: DispatchEntry): Promise<void> {
    const prev = this.rows.previous;
    const windowStart = prev?.prefixEventCount ?? 0;
    const ranges: [number, number][] = [];
    if (cur.prefixEventCount > windowStart) ranges.push([windowStart, cur.prefixEventCount - 1]);
    for (const s of prev?.surfaceNodes ?? []) ranges.push([s, s]);
    for (const s of cur.surfaceNodes) ranges.push([s, s]);
    await this.ensure(ranges);
    await this.dispatches.hydrate([cur], (want) => this.ensure(want));
    const page = this.rows.add(cur, diffDispatches(prev, cur, this.held));
    this.texts.push(embedJson(page));
    this.finishes.push(page.finish);
    if (prev) {
      // No later diff reads it (the audit hydrates the few it prices again): its surface snapshot and its header, context and usage go.
      releaseSurfaceNodes(prev);
      this.dispatches.release([prev]);
    }
    // Keep what the next dispatch's diff reads: its window (from this input on), this surface, the latest header and context.
    const keep = new Set(cur.surfaceNodes);
    const nextEntry = this.requests[this.next + 1];
    for (const s of [this.lastHeaderSeq, this.lastContextSeq, nextEntry?.headerSeq, nextEntry?.requestContextSeq]) if (s !== null && s !== undefined) keep.add(s);
    const left: number[] = [];
    for (const s of this.heldSeqs) {
      if (s >= cur.prefixEventCount || keep.has(s)) left.push(s);
      else delete this.held[s];
    }
    this.heldSeqs = left;
  }

  /** Make sure the held events cover `ranges` (re-reading any the walk let go); the held array. */
  private async ensure(ranges: readonly SeqRange[]): Promise<SessionEvent[]> {
    const missing: [number, number][] = [];
    for (const [a, b] of ranges) {
      for (let s = a; s <= b && s < this.held.length; s++) {
        if (this.held[s] !== undefined) continue;
        const last = missing[missing.length - 1];
        if (last && last[1] === s - 1) last[1] = s;
        else missing.push([s, s]);
      }
    }
    if (missing.length > 0) {
      const before = new Set(this.heldSeqs);
      await this.fetch(missing, this.held);
      for (const [a, b] of missing) for (let s = a; s <= b; s++) if (this.held[s] !== undefined && !before.has(s)) this.heldSeqs.push(s);
    }
    return this.held;
  }
}

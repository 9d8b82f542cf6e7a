/**
 * dsh as a library: open a DeepSeek Harness session log (a file, a session
 * directory, an id under a root, bytes, or an entry of a raw ZIP export),
 * then ask it for DSH's views as typed plain data. Nothing here writes to,
 * locks or truncates an input; only `export` writes, and only the file it is
 * given.
 *
 * Every call returns a {@link Result}: `{ ok: true, value }`, or
 * `{ ok: false, error: { class, message, rule? } }` with DSH's error class and
 * exact text when DSH refuses or cannot read the log. Bugs in dsh still throw.
 *
 * ```ts
 * import { openSession } from 'dsh';
 * const opened = await openSession('session.jsonl.zstd');
 * if (!opened.ok) throw new Error(opened.error.message);
 * const inspect = opened.value.inspect();
 * ```
 *
 * @packageDocumentation
 */
import path from 'node:path';
import { LogError, UsageError, type DshErrorClass, type FailureKind, type RuleCode } from './core/errors.js';
import { VERSION } from './core/version.js';
import { MemorySource } from './physical/source.js';
import { createDecoder, type DecoderName, type FrameDecoder } from './physical/decoders.js';
import { resolveTarget } from './log/target.js';
import type { ResolvedTarget } from './log/resolved-target.js';
import { inspectTarget, inspectView, type InspectView, type SessionInspection } from './log/session.js';
import type { SessionEvent, SessionHeader, Encoding } from './log/types.js';
import { Labels, type SurfaceLabel } from './views/labels.js';
import { loadedFromInspection, SessionQueryError, surfaceView, type LoadedSession, type SurfaceView } from './views/messages.js';
import { analyzeLog, explainEvent, traceEvent, type EventTrace, type TraceExplanation, type LogAnalysis } from './views/trace.js';
import { deriveDispatches, diffDispatches, messagesOf, pickDispatch, pickDispatchPair, requestJson, summarizeDispatch, type DispatchDiff, type DispatchIndex, type DispatchSummary, type RequestDocument } from './views/requests.js';
import { lineageOf, type LineageTrace } from './views/lineage.js';
import type { ListingProblem } from './views/listing.js';
import { sessionStats, type StatsView } from './views/stats.js';
import { auditCompactions, type CompactionsReport } from './views/compactions.js';
import { secretsOfTarget, type SecretsOptions, type SecretsReport } from './views/secrets.js';
import { buildTranscript, type Transcript } from './views/transcript.js';
import { diffSessions, diffSide, sessionsDiffer, type SessionDiff } from './views/diff.js';
import { buildReplay, type ReplayView } from './views/replay.js';
import { checkResolved, rootLookup, type Finding, type SessionReport } from './check/engine.js';
import { RULES, type RuleMeta } from './check/rules.js';
import { exportSession, type ExportManifest, type ExportOptions } from './export/export.js';
import { ForkUnavailable } from './views/fork.js';
import { forkSession, type ForkOptions, type ForkOutcome } from './export/fork.js';
import { buildDataset as buildDatasetFiles, type DatasetOptions, type DatasetSummary } from './dataset/build.js';
import { runSql, type QueryResult } from './dataset/sql.js';
import { schemaDocument } from './dataset/schema.js';

export { VERSION };
export { isEventOf } from './log/payloads.js';
export type * from './log/payloads.js';
export type { SessionEvent, SessionHeader, Encoding, SurfaceOp } from './log/types.js';
export type { InspectView } from './log/session.js';
export type { RepairPlan } from './log/inspect.js';
export type { SurfaceLabel, EventRecord } from './views/labels.js';
export type { SurfaceView, SurfaceEntry, DerivedSurface } from './views/messages.js';
export type { EventTrace, TraceExplanation, ProvenanceNode } from './views/trace.js';
export type { RequestDocument, DispatchSummary, DispatchDiff, DispatchEntry, RequestContext, DiffMessage, DiffRemoved } from './views/requests.js';
export type { HeaderChange } from './views/header.js';
export type { LineageTrace, LineageNode } from './views/lineage.js';
export type { SessionRecord, ListingProblem } from './views/listing.js';
export type { StatsView, ModelStats, SessionStatsFigures, StepStats, ToolStats, TurnStats } from './views/stats.js';
export type {
  CompactionsReport,
  CompactionAttempt,
  AttemptKind,
  BudgetInfo,
  CoverageInfo,
  FailureInfo,
  IntegrityInfo,
  LockInfo,
  NextRequestInfo,
  Outcome,
  PairingInfo,
  RangeInfo,
  SummaryCall as CompactionSummaryCall,
  TriggerInfo,
  Verdict as CompactionVerdict,
  VerdictState,
  FailureClass,
  OrphanPair,
  TriggerKind,
  UsagePoint,
} from './views/compactions.js';
export type { SecretsReport, SecretReport, SecretInSession, SecretsOptions } from './views/secrets.js';
export type { Transcript, TranscriptEntry, TranscriptToolCall, TranscriptToolResult } from './views/transcript.js';
export type { SessionDiff, PairDiff, SharedPrefix, TextDiff, Hunk, MessageRef, ToolCallFact, DivergenceReason } from './views/diff.js';
export { sessionsDiffer };
export type { ReplayView, ReplayAttempt, AttemptOutcome, ReplayChunk, ReplaySummary, ContentBlock as ReplayContentBlock } from './views/replay.js';
export type { Finding, SessionReport } from './check/engine.js';
export type { RuleMeta, Severity } from './check/rules.js';
export type { ExportManifest, ExportOptions, ManifestEntry } from './export/export.js';
export type { ForkOptions, ForkOutcome } from './export/fork.js';
export type { ForkPlan, ForkBoundary } from './views/fork.js';
export type { ChunkSink, DecoderName, FrameDecoder } from './physical/decoders.js';
export type { ZipProgress } from './export/zip-writer.js';
export type { RedactOptions, RedactStats, ProtectedHit } from './views/redactor.js';
export type { Replacement } from './log/surface.js';
export type { DshErrorClass, ErrorObject, FailureKind } from './core/errors.js';
export { errorDocument, failureObject } from './core/errors.js';
export { RULE_CODES, type RuleCode } from './core/rules.js';
/** The usage ledger (`dsh stats`): each billed call counted once across forks and subagents, and its cost. */
export { buildLedger, readRootUsage, readSessionUsage, descendantRows, filterExplain, CATEGORIES } from './views/ledger.js';
export type { Ledger, LedgerSession, LedgerItem, ExplainRow, Usage, Cost, SessionInput, RootUsage, Category } from './views/ledger.js';
export { priceUsage, loadPriceTable, parsePriceTable, formatAtto, DEFAULT_PRICES_FILE, PriceTableError } from './views/prices.js';
export type { PriceTable, PriceEntry, Priced, PriceOptions } from './views/prices.js';
export type { Buckets, BilledUsage, UsageSample, SummaryCall, UsageRecords } from './views/stats.js';

/** Why a call failed: DSH's error class and exact text for a log DSH refuses or cannot read. */
export interface DshError {
  /**
   * DSH's class name (`Error`, `SessionFormatUnsupportedError`, `SessionPersistenceCorruptionError`) for a
   * log failure; `UsageError` for a bad argument or an unreadable target; `SessionQueryError` for a
   * session-query failure (an unknown seq); `ForkUnavailable` when no fork boundary exists.
   */
  class: DshErrorClass | 'UsageError' | 'SessionQueryError' | 'ForkUnavailable';
  message: string;
  /** `corrupt`/`refused`: a verdict about the log; `usage`/`io`: about the call. */
  kind: FailureKind;
  /** The `dsh check` rule code of the failure (e.g. `DSH-S10B`). */
  rule?: RuleCode;
  /** DSH's wrapped inner error (`SessionPersistenceCorruptionError` wraps the restore failure). */
  cause?: { class: string; message: string };
  /** dsh's own observation beside DSH's verdict (e.g. the `--compression` that opens a root of the other encoding); never DSH's text. */
  note?: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: DshError };

/** What to open. A string is a path (file, session directory, `x.zip`, `x.zip:subagents/<id>`) or a session id under `root`. */
export type TargetInput =
  | string
  | { path: string }
  | { id: string; root?: string }
  | { bytes: Uint8Array; name?: string }
  | { zip: string; entry?: string };

export interface OpenOptions {
  /** Session root for ids (default `$DSH_HOME/sessions`, else `~/.dsh/sessions`). */
  root?: string;
  /** zstd decoder (default: `node:zlib` where Node has it, else `@mongodb-js/zstd`). */
  decoder?: DecoderName | 'auto';
}

/** One event of the logical log with session-query's record fields and its surface label. */
export interface LabelledEvent {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  surface: SurfaceLabel;
  /** A crash-repair closer DSH synthesizes (not in the file). */
  synthetic?: true;
  event: SessionEvent;
}

export interface EventsFilter {
  /** Exact types, or prefixes ending in `/` (`compaction/`). */
  types?: string[];
  from?: number;
  to?: number;
  labels?: SurfaceLabel[];
}

function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

/** A thrown dsh failure as a typed error; anything else (a bug) is rethrown. */
function failure(error: unknown): { ok: false; error: DshError } {
  if (error instanceof LogError) {
    return {
      ok: false,
      error: {
        class: error.dshClass,
        message: error.message,
        kind: error.kind,
        ...(error.rule !== undefined ? { rule: error.rule } : {}),
        ...(error.detail ? { cause: { class: error.detail.class, message: error.detail.message } } : {}),
        ...(error.note !== undefined ? { note: error.note } : {}),
      },
    };
  }
  if (error instanceof UsageError) return { ok: false, error: { class: 'UsageError', message: error.message, kind: error.kind, ...(error.note !== undefined ? { note: error.note } : {}) } };
  if (error instanceof SessionQueryError) {
    const usage = error.code === 'SESSION_QUERY_EVENT_NOT_FOUND' || error.code === 'SESSION_QUERY_SESSION_NOT_FOUND';
    return { ok: false, error: { class: 'SessionQueryError', message: error.message, kind: usage ? 'usage' : 'corrupt' } };
  }
  if (error instanceof ForkUnavailable) return { ok: false, error: { class: 'ForkUnavailable', message: error.message, kind: 'usage' } };
  const e = error as NodeJS.ErrnoException;
  if (e && typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return { ok: false, error: { class: 'UsageError', message: e.message, kind: 'io' } };
  throw error;
}

function attempt<T>(body: () => T): Result<T> {
  try {
    return ok(body());
  } catch (error) {
    return failure(error);
  }
}

async function attemptAsync<T>(body: () => Promise<T>): Promise<Result<T>> {
  try {
    return ok(await body());
  } catch (error) {
    return failure(error);
  }
}

function resolveInput(target: TargetInput, options: OpenOptions): ResolvedTarget {
  const root = options.root !== undefined ? { root: options.root } : {};
  if (typeof target === 'string') return resolveTarget(target, root);
  if ('bytes' in target) {
    const name = target.name ?? '<bytes>';
    const bytes = Buffer.from(target.bytes.buffer, target.bytes.byteOffset, target.bytes.byteLength);
    return { path: name, rawPath: name, open: () => new MemorySource(name, bytes), layoutWarnings: [] };
  }
  if ('zip' in target) return resolveTarget(target.entry !== undefined ? `${path.resolve(target.zip)}:${target.entry}` : path.resolve(target.zip), root);
  if ('id' in target) return resolveTarget(target.id, target.root !== undefined ? { root: target.root } : root);
  return resolveTarget(target.path, root);
}

/**
 * Open a session log read-only and validate it the way DSH's `inspect` does.
 * Fails (`ok: false`) only when the target cannot be found or read; a log DSH
 * refuses still opens: {@link Session.error} holds DSH's verdict, `inspect()` and the
 * other views return it as their failure, and `check()` reports it as a finding.
 */
export async function openSession(target: TargetInput, options: OpenOptions = {}): Promise<Result<Session>> {
  return attemptAsync(async () => {
    const resolved = resolveInput(target, options);
    const decoder = createDecoder(options.decoder ?? 'auto');
    const inspection = await inspectTarget(resolved, { decoder, collect: true, keepReplacements: true });
    return new Session(resolved, inspection, decoder);
  });
}

/** An opened session: its logical log held in memory, and DSH's views of it. */
export class Session {
  /** @internal */
  constructor(
    private readonly target: ResolvedTarget,
    private readonly inspection: SessionInspection,
    private readonly decoder: FrameDecoder,
  ) {}

  /** Path of the artifact (or the `name` given with bytes). */
  get path(): string {
    return this.target.path;
  }

  /** The session root the artifact lives under, when it sits in DSH's layout. */
  get root(): string | undefined {
    return this.target.root;
  }

  /** The parsed header, or null when the log has none DSH accepts. */
  get header(): SessionHeader | null {
    return this.inspection.meta;
  }

  get encoding(): Encoding {
    return this.inspection.encoding;
  }

  /** Layout findings that do not stop a forensic read (storage identity mismatches). */
  get warnings(): readonly string[] {
    return this.inspection.warnings;
  }

  /** DSH's verdict when it refuses or cannot read this log; undefined when it loads. */
  get error(): DshError | undefined {
    const e = this.inspection.error;
    if (!e) return undefined;
    return {
      class: e.class as DshErrorClass,
      message: e.message,
      kind: e.kind,
      ...(e.rule !== undefined ? { rule: e.rule } : {}),
      ...(e.cause ? { cause: { class: e.cause.class, message: e.cause.message } } : {}),
    };
  }

  private loaded(): LoadedSession {
    const error = this.error;
    if (error) throw new LogError(error.message, { dshClass: error.class as DshErrorClass, kind: error.kind, ...(error.rule !== undefined ? { rule: error.rule } : {}) });
    return loadedFromInspection(this.inspection);
  }

  private analysisCache?: LogAnalysis;
  private analysis(s: LoadedSession): LogAnalysis {
    this.analysisCache ??= analyzeLog(s.events, s.surface);
    return this.analysisCache;
  }

  private dispatchCache?: DispatchIndex;
  private dispatches(s: LoadedSession): DispatchIndex {
    this.dispatchCache ??= deriveDispatches(s.events);
    return this.dispatchCache;
  }

  /** DSH's `inspect` (`dsh inspect --json`): header, logical events with closers, torn tail, repair plan. */
  inspect(): Result<InspectView> {
    return attempt(() => {
      this.loaded();
      return inspectView(this.inspection);
    });
  }

  /** The logical events with surface labels (`dsh events --json`), optionally filtered. */
  events(filter: EventsFilter = {}): Result<LabelledEvent[]> {
    return attempt(() => {
      const s = this.loaded();
      const labels = new Labels(s.surface!.nodes, s.surface!.replacements);
      const typeOk = (t: string) => !filter.types || filter.types.some((x) => (x.endsWith('/') ? t.startsWith(x) : t === x));
      const out: LabelledEvent[] = [];
      for (const e of s.events) {
        if ((filter.from !== undefined && e.seq < filter.from) || (filter.to !== undefined && e.seq > filter.to) || !typeOk(e.type)) continue;
        const surface = labels.ofEvent(e);
        if (filter.labels && !filter.labels.includes(surface)) continue;
        out.push({ sessionId: s.sessionId, seq: e.seq, type: e.type, time: e.time, surface, ...(e.seq >= s.storedEventCount ? { synthetic: true as const } : {}), event: e });
      }
      return out;
    });
  }

  /** session-query's `traceEvent` for one seq (`dsh trace --json`). */
  trace(seq: number): Result<EventTrace>;
  /** With `depth` (or `Infinity`): the transitive provenance tree as well (`dsh trace --depth N --json`). */
  trace(seq: number, options: { depth: number }): Result<TraceExplanation>;
  trace(seq: number, options?: { depth: number }): Result<EventTrace | TraceExplanation> {
    return attempt(() => {
      const s = this.loaded();
      const a = this.analysis(s);
      if (options === undefined) return traceEvent(s.sessionId, s.events, seq, a);
      return explainEvent(s.sessionId, s.events, seq, { depth: options.depth, storedEventCount: s.storedEventCount }, a);
    });
  }

  /** What the model sees (`dsh surface`), now or as of `at` (inclusive). */
  surface(options: { at?: number } = {}): Result<SurfaceView> {
    return attempt(() => surfaceView(this.loaded(), options.at));
  }

  /** Every model dispatch, one summary each (`dsh request --list --json`). */
  requests(): Result<DispatchSummary[]> {
    return attempt(() => {
      const index = this.dispatches(this.loaded());
      return index.requests.map((e, i) => summarizeDispatch(e, i > 0 ? index.requests[i - 1]! : null));
    });
  }

  /**
   * The exact model input of one dispatch (`dsh request --json`): by any seq inside it, or by
   * `{ step: 'T/S[#n]' }`. A seq outside every dispatch fails with `UsageError` naming the nearest ones.
   */
  request(at: number | { step: string }): Result<RequestDocument> {
    return attempt(() => {
      const s = this.loaded();
      const index = this.dispatches(s);
      const { entry } = typeof at === 'number' ? pickDispatch(index, s.events, String(at), undefined) : pickDispatch(index, s.events, undefined, at.step);
      return requestJson(entry, messagesOf(entry, s.events));
    });
  }

  /** What changed from the previous dispatch (`dsh request --diff --json`). */
  requestDiff(at: number | { step: string }): Result<DispatchDiff> {
    return attempt(() => {
      const s = this.loaded();
      const index = this.dispatches(s);
      const { entry } = typeof at === 'number' ? pickDispatch(index, s.events, String(at), undefined) : pickDispatch(index, s.events, undefined, at.step);
      return diffDispatches(entry.index > 0 ? index.requests[entry.index - 1]! : null, entry, s.events);
    });
  }

  /** Compare with another session (`dsh diff <this> <other> --json`): this session is side a. */
  async diff(other: Session): Promise<Result<SessionDiff>> {
    return attemptAsync(() => {
      const a = this.loaded();
      const b = other.loaded();
      return diffSessions(diffSide(a, this.dispatches(a)), diffSide(b, other.dispatches(b)));
    });
  }

  /** Two dispatches of this session, each by any seq inside it or `{ step: 'T/S[#n]' }` (`dsh diff <t> <A> <B> --json`). */
  diffRequests(from: number | { step: string }, to: number | { step: string }): Result<DispatchDiff> {
    return attempt(() => {
      const s = this.loaded();
      const arg = (x: number | { step: string }) => (typeof x === 'number' ? String(x) : x.step);
      const { a, b } = pickDispatchPair(this.dispatches(s), s.events, arg(from), arg(to));
      return diffDispatches(a, b, s.events);
    });
  }

  /** session-query's `traceSession` among the sessions of the root (`dsh lineage --json`). */
  async lineage(options: { root?: string } = {}): Promise<Result<{ trace: LineageTrace; problems: ListingProblem[] }>> {
    return attemptAsync(async () => {
      const header = this.header;
      if (!header) {
        this.loaded(); // DSH's verdict first, when it refuses the log
        throw new UsageError('the log has no header');
      }
      return lineageOf(header, options.root ?? this.target.root, this.decoder);
    });
  }

  /** Token, tool, timing and turn accounting with DSH's folds (`dsh stats --json`). */
  stats(): Result<StatsView> {
    return attempt(() => {
      const s = this.loaded();
      return sessionStats(s.sessionId, s.events, { storedEventCount: s.storedEventCount, createdAt: s.header.createdAt });
    });
  }

  /** `dsh check` for this session: findings with stable rule codes (a log DSH refuses gets its load-failure finding). */
  async check(): Promise<Result<SessionReport>> {
    return attemptAsync(() => checkResolved(this.target, { decoder: this.decoder, lookup: rootLookup() }));
  }

  /** The compaction audit (`dsh compactions --json`). */
  compactions(): Result<CompactionsReport> {
    return attempt(() => {
      const s = this.loaded();
      return auditCompactions(s.events, { sessionId: s.sessionId });
    });
  }

  /**
   * Which secrets reached the model (`dsh secrets --json`): masked tokens, the dispatches that sent each,
   * removals, re-embedding, the final surface; forks and subagents in the session's root too.
   */
  async secrets(options: SecretsOptions = {}): Promise<Result<SecretsReport>> {
    return attemptAsync(async () => {
      const { warnings: _warnings, ...report } = await secretsOfTarget(this.target, { ...options, decoder: this.decoder });
      void _warnings;
      if (report.sessions[0]?.error) this.loaded(); // DSH's verdict on the log
      return report;
    });
  }

  /** What the user saw (`dsh transcript --format json`). */
  transcript(): Result<Transcript> {
    return attempt(() => buildTranscript(this.loaded()));
  }

  /** Every model attempt rebuilt from its chunks (`dsh replay --json`). */
  replay(): Result<ReplayView> {
    return attempt(() => {
      const s = this.loaded();
      return buildReplay(s.sessionId, s.events);
    });
  }

  /**
   * DSH Host's `session.fork` offline (`dsh fork --json`): the plan (boundary, cut, what the child inherits,
   * the child's header), and with `out` the child written as a NEW session into that root (never the
   * source's own) and read back (`verified`). No boundary fails with `ForkUnavailable`.
   */
  async fork(options: Omit<ForkOptions, 'decoder'> = {}): Promise<Result<ForkOutcome>> {
    return attemptAsync(async () => {
      const s = this.loaded();
      const events = s.events;
      return forkSession(
        {
          header: s.header,
          storedEventCount: s.storedEventCount,
          target: this.inspection.target,
          read: async function* () {
            yield events;
          },
        },
        { ...options, decoder: this.decoder },
      );
    });
  }

  /** Write DSH's raw ZIP export of this session to `output` (a new file; an existing one is refused unless `force`). */
  async export(output: string, options: Omit<ExportOptions, 'output' | 'decoder'> = {}): Promise<Result<ExportManifest>> {
    return attemptAsync(() => exportSession(this.target, { ...options, output, decoder: this.decoder }));
  }
}

/** `dsh check`'s rule catalogue. */
export function checkRules(): readonly RuleMeta[] {
  return RULES;
}

export type { Finding as CheckFinding };

/**
 * Build or refresh a Parquet dataset from roots/targets into `outDir` (`dsh dataset`): one file per session
 * per table, incremental by artifact identity; see `datasetSchema()` for the tables.
 */
export async function buildDataset(inputs: string[], outDir: string, options: Omit<DatasetOptions, 'version'> = {}): Promise<Result<DatasetSummary>> {
  return attemptAsync(() => buildDatasetFiles(inputs, outDir, { ...options, version: VERSION }));
}

/** The dataset's tables and columns, versioned (`dsh-dataset/N`), as written into every file's metadata. */
export function datasetSchema(): ReturnType<typeof schemaDocument> {
  return schemaDocument();
}

/** SQL over a dataset with embedded DuckDB (`@duckdb/node-api`, optional; its absence is a usage failure saying how to install it). */
export async function queryDataset(dir: string, query: string): Promise<Result<QueryResult>> {
  return attemptAsync(() => runSql(dir, query));
}

export type { DatasetOptions, DatasetSummary, Manifest as DatasetManifest } from './dataset/build.js';
export type { QueryResult } from './dataset/sql.js';
export type { TableDef, ColumnDef, TableName } from './dataset/schema.js';

// OpenTelemetry export and live following.
export { sessionSpans, exportRequest, exportRequestText, traceIdOf, spanIdOf, SCHEMA_URL, SEMCONV_VERSION, GENAI_SEMCONV_VERSION } from './export/otlp.js';
export type { OtlpSpan, OtlpOptions, ExportTraceServiceRequest } from './export/otlp.js';
export { otlpSpans } from './export/otlp-run.js';
export { sendRequest as sendOtlp, encodeProtobuf as encodeOtlpProtobuf, tracesUrl as otlpTracesUrl, OtlpSendError } from './export/otlp-send.js';
export { LogFollower } from './views/follow.js';
export type { FollowNotice, FollowSink, FollowState } from './views/follow.js';

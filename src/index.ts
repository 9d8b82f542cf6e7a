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
import { LogError, UsageError, type DshErrorClass, type FailureKind, type RuleCode, type SerializedError } from './core/errors.js';
import { VERSION } from './core/version.js';
import { MemorySource } from './physical/source.js';
import { createDecoder, type DecoderName, type FrameDecoder } from './physical/decoders.js';
import { resolveTarget, type ResolveOptions } from './log/target.js';
import type { ResolvedTarget } from './log/resolved-target.js';
import { inspectTarget, inspectTargetIndexed, inspectView, type IndexedInspection, type InspectView, type SessionInspection, type Speculation } from './log/session.js';
import { cacheConfig, type CacheConfig } from './log/index/cache.js';
import type { PersistentFold } from './log/index/session-index.js';
import type { ReadProgress } from './log/read.js';
import { heldBytesBudget } from './log/inspect.js';
import { streamInspectDocument, streamPassBytes, type DocumentSink } from './log/logical-stream.js';
import { Summarizer, type SessionSummary } from './views/summary.js';
import { salvageMayHelp, salvageWouldRecoverMore } from './salvage/hint.js';
import { CITATIONS, SESSION_FOLDS, SURFACE_EVENTS, foldOf } from './views/index-folds.js';
import { stepKey } from './core/keys.js';
import { DISPATCHES } from './views/dispatch-fold.js';
import { contextIndexed, type ContextView } from './views/context.js';
import { IndexedDispatches, type DispatchDetail, type DispatchPair, type DispatchReads } from './views/dispatch-view.js';
import type { SessionEvent, SessionHeader, Encoding } from './log/types.js';
import { Labels, type SurfaceLabel } from './views/labels.js';
import { loadedFromInspection, SessionQueryError, surfaceIndexed, type LoadedSession, type SurfaceView } from './views/messages.js';
import { traceIndexed, type EventTrace, type TraceExplanation } from './views/trace.js';
import { deriveDispatches, diffDispatches, messagesOf, requestJson, type DispatchDiff, type DispatchIndex, type DispatchSummary, type RequestDocument } from './views/requests.js';
import { lineageOf, type LineageTrace } from './views/lineage.js';
import { readHeaderFromSource, type ListingProblem } from './views/listing.js';
import { sessionStatsReport, type StatsDocument } from './views/stats-report.js';
import { loadPriceTable } from './views/prices.js';
import { auditCompactionsStreamed, type AuditedCompactions, type CompactionsReport } from './views/compactions.js';
import { secretsOfTarget, type SecretsOptions, type SecretsReport } from './views/secrets.js';
import { streamedTranscript, type Transcript, type TranscriptEntry, type TranscriptHead } from './views/transcript.js';
import { diffSessions, diffSide, sessionsDiffer, type SessionDiff } from './views/diff.js';
import { planReplay, REPLAY_PLAN, replayGapTotal, streamReplay, type ReplayAttempt, type ReplayPlan, type ReplaySummary, type ReplayView } from './views/replay.js';
import { checkResolved, rootLookup, type Finding, type SessionReport } from './check/engine.js';
import { RULES, type RuleMeta } from './check/rules.js';
import { applyLevels, behaviourSettings, parseConfig, type RuleLevel } from './check/config.js';
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
export type { InspectView, SessionInspection } from './log/session.js';
export type { DocumentSink, Flushable, RowMemberBytes } from './log/logical-stream.js';
export type { SessionSummary, TurnSummary } from './views/summary.js';
export type { RepairPlan } from './log/inspect.js';
export type { SurfaceLabel, EventRecord } from './views/labels.js';
export type { SurfaceView, SurfaceEntry, DerivedSurface } from './views/messages.js';
export type { EventTrace, TraceExplanation, ProvenanceNode } from './views/trace.js';
export type { RequestDocument, DispatchSummary, DispatchDiff, DispatchEntry, RequestContext, DiffMessage, DiffRemoved } from './views/requests.js';
export type { HeaderChange } from './views/header.js';
export { contextByTurn, headerCacheBreaks, CONTEXT_CATEGORIES } from './views/context.js';
export type { ContextView, ContextRow, ContextChange, ContextChangeKind, CacheBreak, CacheBreakCause, ContextCategory, CategoryBytes, ContextTurnRow, PromptElementRef } from './views/context.js';
export type { LineageTrace, LineageNode } from './views/lineage.js';
export type { SessionRecord, ListingProblem } from './views/listing.js';
export type { StatsDocument } from './views/stats-report.js';
export type { StatsView, ModelStats, SessionStatsFigures, StepStats, ToolStats, TurnStats } from './views/stats.js';
export type {
  CompactionsReport,
  AuditedCompactions,
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
export type { Transcript, TranscriptEntry, TranscriptHead, TranscriptToolCall, TranscriptToolResult } from './views/transcript.js';
export type { SessionDiff, PairDiff, SharedPrefix, TextDiff, Hunk, MessageRef, ToolCallFact, DivergenceReason } from './views/diff.js';
export { sessionsDiffer };
export type { ReplayView, ReplayAttempt, AttemptOutcome, ReplayChunk, ReplaySummary, ContentBlock as ReplayContentBlock } from './views/replay.js';
export type { Finding, SessionReport } from './check/engine.js';
export type { BehaviourEvidence, CarriedEvidence, OptionValue as CheckRuleOptionValue } from './check/behaviour.js';
export type { RuleLevel } from './check/config.js';

/** Options of {@link Session.check}: the keys of `dsh.config.json` that shape findings. */
export interface CheckOptions {
  /** Run every behaviour rule (family X) at its catalogue level. */
  behaviour?: boolean;
  /** By rule code or family: a level, or `[level, options]` (a behaviour rule given a level runs). */
  rules?: Record<string, RuleLevel | [RuleLevel] | [RuleLevel, Record<string, number | string[]>]>;
}
export type { RuleMeta, Severity } from './check/rules.js';
export type { ExportManifest, ExportOptions, ManifestEntry } from './export/export.js';
export type { ForkOptions, ForkOutcome } from './export/fork.js';
export type { ForkPlan, ForkBoundary } from './views/fork.js';
export type { ChunkSink, DecoderName, FrameDecoder } from './physical/decoders.js';
export type { CacheConfig } from './log/index/cache.js';
export type { ReadProgress } from './log/read.js';
export type { DispatchDetail, DispatchPair, DispatchReads } from './views/dispatch-view.js';
export type { ZipProgress } from './export/zip-writer.js';
export type { RedactOptions, RedactStats, ProtectedHit } from './views/redactor.js';
export type { Replacement } from './log/surface.js';
export type { DshErrorClass, ErrorObject, FailureKind, SerializedError } from './core/errors.js';
export { errorDocument, failureObject } from './core/errors.js';
export { RULE_CODES, type RuleCode } from './core/rules.js';
/** The usage ledger (`dsh stats`): each billed call counted once across forks and subagents, and its cost. */
export { buildLedger, readRootUsage, filterExplain } from './views/ledger.js';
export type { Ledger, LedgerSession, LedgerItem, ExplainRow, Usage, Cost, SessionInput, RootUsage, Category } from './views/ledger.js';
export { loadPriceTable } from './views/prices.js';
export type { PriceTable, PriceEntry, Priced, PriceOptions } from './views/prices.js';
export type { Buckets, BilledUsage, UsageSample, SummaryCall, UsageRecords } from './views/stats.js';

/** Why a call failed: DSH's error class and exact text for a log DSH refuses or cannot read. */
export interface DshError {
  /**
   * DSH's class name (`Error`, `SessionFormatUnsupportedError`, `SessionPersistenceCorruptionError`) for a
   * log failure, and `Error` for a session id DSH's backend does not find (`session "<id>" not found`, kind `io`);
   * `UsageError` for a bad argument or an unreadable target; `SessionQueryError` for a
   * session-query failure (an unknown seq); `ForkUnavailable` when no fork boundary exists.
   */
  class: DshErrorClass | 'UsageError' | 'SessionQueryError' | 'ForkUnavailable';
  message: string;
  /** `corrupt`/`refused`: a verdict about the log; `usage`/`io`: about the call. */
  kind: FailureKind;
  /** The `dsh check` rule code of the failure (e.g. `DSH-S10B`). */
  rule?: RuleCode;
  /** DSH's wrapped inner error (`SessionPersistenceCorruptionError` wraps the restore failure). */
  cause?: SerializedError & { code?: string };
  /** A system error's code (`ENOENT`). */
  code?: string;
  /** dsh's own observation beside DSH's verdict (e.g. the `--compression` that opens a root of the other encoding); never DSH's text. */
  note?: string;
  /** True when this is DSH's verdict on the log itself (it refuses or cannot read it), not a failure of the call. */
  verdict?: true;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: DshError };

/**
 * What to open. A string is a path (file, session directory, `x.zip`, `x.zip:subagents/<id>`) or a session id under `root`
 * (a string that names no file is looked up as an id; with `root` given, one not found is DSH's `session "<id>" not found`).
 * `{ id }` is only ever an id.
 */
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
  /**
   * The session index, which answers the second question about a log without re-reading it: on by
   * default (the cache directory: `$DSH_CACHE_DIR`, else `$XDG_CACHE_HOME/dsh`, else `~/.cache/dsh`; off
   * with `DSH_NO_CACHE=1`); `false` reads and writes none; or a {@link CacheConfig} of your own.
   */
  cache?: boolean | CacheConfig;
  /** Read the bytes as this encoding whatever the file name says (DSH goes by the name). */
  encoding?: 'zstd' | 'none';
  /** For a session given by id: the compression DSH's backend is configured for (default `zstd`). */
  compression?: 'zstd' | 'none';
  /** The bytes of `-` (a command line's stdin). */
  stdin?: Buffer;
  /** Called as a long validating pass reads the log. */
  onProgress?: (progress: ReadProgress) => void;
  /**
   * @internal A caller that holds everything it shows until the index it came from is verified (the CLI)
   * may be answered from the one saved index of the log's size before the log's hash names it.
   */
  speculation?: Speculation;
  /** Most events a provenance tree (`trace` with `depth`) may reach before it is refused (default: one per KiB of a fifth of the heap, at least 1,000). */
  maxTraceEvents?: number;
}

/** DSH's verdict on an opened log: its header, encoding and layout warnings, and DSH's error when it refuses or cannot read it. */
export interface SessionVerdict {
  /** The parsed header, or null when the log has none DSH accepts. */
  header: SessionHeader | null;
  encoding: Encoding;
  /** Layout findings that do not stop a forensic read (storage identity mismatches). */
  warnings: readonly string[];
  /** DSH's verdict when it refuses or cannot read this log; undefined when it loads. */
  error?: DshError;
  /** Events stored in the file (the committed prefix, and events recovered from a torn tail). */
  storedEventCount: number;
  /** The crash-repair closers DSH adds in memory (inspect) and writes on load(); their seqs follow the stored events. */
  closers: readonly SessionEvent[];
  /** The artifact ends in a torn (incomplete) frame or line. */
  torn: boolean;
  /** True when the answer came from the saved session index (no validating pass). */
  warm: boolean;
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
  if (error instanceof VerdictFailure) return { ok: false, error: error.error };
  if (error instanceof LogError) {
    return {
      ok: false,
      error: {
        class: error.dshClass,
        message: error.message,
        kind: error.kind,
        ...(error.rule !== undefined ? { rule: error.rule } : {}),
        ...(error.detail ? { cause: error.detail } : {}),
        ...(error.note !== undefined ? { note: error.note } : {}),
      },
    };
  }
  if (error instanceof UsageError) return { ok: false, error: { class: error.dshClass ?? 'UsageError', message: error.message, kind: error.kind, ...(error.note !== undefined ? { note: error.note } : {}) } };
  if (error instanceof SessionQueryError) {
    const usage = error.code === 'SESSION_QUERY_EVENT_NOT_FOUND' || error.code === 'SESSION_QUERY_SESSION_NOT_FOUND';
    return { ok: false, error: { class: 'SessionQueryError', message: error.message, kind: usage ? 'usage' : 'corrupt' } };
  }
  if (error instanceof ForkUnavailable) return { ok: false, error: { class: 'ForkUnavailable', message: error.message, kind: 'usage' } };
  const e = error as NodeJS.ErrnoException;
  if (e && typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return { ok: false, error: { class: 'Error', message: e.message, kind: 'io', code: e.code } };
  throw error;
}

async function attemptAsync<T>(body: () => Promise<T>): Promise<Result<T>> {
  try {
    return ok(await body());
  } catch (error) {
    return failure(error);
  }
}

function resolveInput(target: TargetInput, options: OpenOptions): ResolvedTarget {
  const root: ResolveOptions = {
    ...(options.root !== undefined ? { root: options.root } : {}),
    ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
    ...(options.encoding !== undefined ? { encoding: options.encoding } : {}),
    ...(options.compression !== undefined ? { compression: options.compression } : {}),
  };
  if (typeof target === 'string') return resolveTarget(target, root);
  if ('bytes' in target) {
    const name = target.name ?? '<bytes>';
    const bytes = Buffer.from(target.bytes.buffer, target.bytes.byteOffset, target.bytes.byteLength);
    return { path: name, rawPath: name, open: () => new MemorySource(name, bytes), layoutWarnings: [] };
  }
  if ('zip' in target) return resolveTarget(target.entry !== undefined ? `${path.resolve(target.zip)}:${target.entry}` : path.resolve(target.zip), root);
  if ('id' in target) return resolveTarget(target.id, { ...root, ...(target.root !== undefined ? { root: target.root } : {}), id: true });
  return resolveTarget(target.path, root);
}

/**
 * Open a session log read-only. Fails (`ok: false`) only when the target cannot be found or read;
 * nothing of the log is read until a view asks. A log DSH refuses still opens: {@link Session.verdict}
 * holds DSH's verdict, every view returns it as its failure (with `verdict: true`), and `check()`
 * reports it as a finding.
 *
 * Every view reads the log through one event store: the first one validates it in a streaming pass
 * that keeps an index of the log, not its events, and saves that index in the cache (see
 * {@link OpenOptions.cache}); later views of the same bytes, in this process or another, are answered
 * from the index and re-read only the events they show. Call {@link Session.close} when done.
 */
export async function openSession(target: TargetInput, options: OpenOptions = {}): Promise<Result<Session>> {
  return attemptAsync(async () => new Session(resolveInput(target, options), options));
}

/** The error of a log DSH refuses or cannot read, as the library reports it. */
function verdictError(e: NonNullable<SessionInspection['error']>): DshError {
  return {
    class: e.class as DshErrorClass,
    message: e.message,
    kind: e.kind,
    ...(e.rule !== undefined ? { rule: e.rule } : {}),
    ...(e.cause ? { cause: e.cause } : {}),
    ...((e as { code?: string }).code !== undefined ? { code: (e as { code?: string }).code as string } : {}),
    ...(e.note !== undefined ? { note: e.note } : {}),
    verdict: true,
  };
}

/** A thrown verdict: `failure()` turns it back into the {@link DshError} it carries. */
class VerdictFailure extends Error {
  constructor(readonly error: DshError) {
    super(error.message);
  }
}

/** `dsh inspect`'s review ({@link Session.review}). */
export interface InspectReview {
  view: 'artifact' | 'stored' | 'logical';
  /** DSH's inspection (its `error` when DSH refuses or cannot read the log). */
  inspection: SessionInspection;
  summary: SessionSummary;
  /** The view failed: DSH refuses or cannot read the log (the artifact view: its bytes cannot be read). */
  failed: boolean;
  /** `dsh salvage` would keep more of this damaged log than DSH's reader: what to run. */
  hint?: string;
}

/** A replay played attempt by attempt ({@link Session.replayAttempts}). */
export interface ReplayAttempts {
  sessionId: string;
  /** Milliseconds between the chunks of the attempts asked for, as a timed replay paces them before scaling. */
  gapTotal: number;
  /** One re-read of the log: each attempt asked for to `emit`, in order; the summary of all attempts. */
  play(emit: (attempt: ReplayAttempt) => void | Promise<void>): Promise<ReplaySummary>;
}

/** An opened session: a handle on its log and DSH's views of it, each read through the session's event store. */
export class Session {
  private readonly cache: CacheConfig;
  private readonly decoder: FrameDecoder;
  /** The store a view last opened, and the folds it holds. */
  private held?: { indexed: IndexedInspection; tags: Set<number> };
  private collectedCache?: SessionInspection;

  /** @internal */
  constructor(
    private readonly target: ResolvedTarget,
    private readonly options: OpenOptions,
  ) {
    this.decoder = createDecoder(options.decoder ?? 'auto');
    const c = options.cache;
    this.cache = c === undefined || typeof c === 'boolean' ? cacheConfig(process.env, { noCache: c === false }) : c;
  }

  /** Path of the artifact (or the `name` given with bytes). */
  get path(): string {
    return this.target.path;
  }

  /** The session root the artifact lives under, when it sits in DSH's layout. */
  get root(): string | undefined {
    return this.target.root;
  }

  /** Whether the session holds its log open: a view has read it (and DSH's verdict is known). */
  get opened(): boolean {
    return this.held !== undefined;
  }

  /** Let go of the open log and the index this session holds (a later view opens them again). */
  close(): void {
    this.held?.indexed.close();
    this.held = undefined;
  }

  /**
   * The event store holding at least the folds `needs` (every fold the session index keeps is built by
   * a cold pass that writes it; a store that lacks one is opened again, answered warm from the index).
   */
  private async store(needs: readonly PersistentFold[]): Promise<IndexedInspection> {
    const held = this.held;
    if (held && needs.every((f) => held.tags.has(f.tag))) return held.indexed;
    const tags = new Set([...(held?.tags ?? []), ...needs.map((f) => f.tag)]);
    this.close();
    const folds = SESSION_FOLDS.filter((f) => tags.has(f.tag));
    const options = { decoder: this.decoder, ...(this.options.onProgress ? { onProgress: this.options.onProgress } : {}) };
    const speculation = this.options.speculation;
    const indexed = await inspectTargetIndexed(this.target, options, { cache: this.cache, folds: SESSION_FOLDS, needs: folds, ...(speculation ? { speculation } : {}) });
    this.held = { indexed, tags };
    return indexed;
  }

  /** The store with `needs`, once DSH accepts the log (its verdict thrown otherwise). */
  private async accepted(needs: readonly PersistentFold[]): Promise<IndexedInspection & { events: NonNullable<IndexedInspection['events']> }> {
    const store = await this.store(needs);
    const e = store.inspection.error;
    if (e || !store.events) throw new VerdictFailure(verdictError(e ?? { class: 'Error', message: 'the log could not be read', kind: 'corrupt' } as NonNullable<SessionInspection['error']>));
    return store as IndexedInspection & { events: NonNullable<IndexedInspection['events']> };
  }

  /** DSH's verdict on the log (reads it once, or its saved index). */
  async verdict(): Promise<SessionVerdict> {
    const store = await this.store([]);
    const r = store.inspection;
    return {
      header: r.meta,
      encoding: r.encoding,
      warnings: r.warnings,
      ...(r.error ? { error: verdictError(r.error) } : {}),
      storedEventCount: r.storedEventCount,
      closers: r.closers,
      torn: r.torn !== null,
      warm: store.warm,
    };
  }

  /** The whole logical log held in memory, for the views not yet answered from the store. */
  private async collected(): Promise<SessionInspection> {
    this.collectedCache ??= await inspectTarget(this.target, { decoder: this.decoder, collect: true, keepReplacements: true });
    return this.collectedCache;
  }

  private async loaded(): Promise<LoadedSession> {
    const r = await this.collected();
    if (r.error) throw new VerdictFailure(verdictError(r.error));
    return loadedFromInspection(r);
  }

  private dispatchCache?: DispatchIndex;
  private dispatches(s: LoadedSession): DispatchIndex {
    this.dispatchCache ??= deriveDispatches(s.events);
    return this.dispatchCache;
  }

  /** The store's dispatch index, re-reading only the events of the dispatches a view shows. */
  private async dispatchView(): Promise<IndexedDispatches> {
    const store = await this.accepted([DISPATCHES]);
    return new IndexedDispatches(foldOf(store.folds, DISPATCHES), store.events);
  }

  /** DSH's `inspect` (`dsh inspect --json`): header, logical events with closers, torn tail, repair plan. */
  async inspect(): Promise<Result<InspectView>> {
    return attemptAsync(async () => {
      await this.loaded();
      return inspectView(await this.collected());
    });
  }

  /**
   * `dsh inspect`'s review of the log: DSH's inspection as `view` sees it (`logical`, the default;
   * `stored`: the committed prefix; `artifact`: the verbatim text), with a summary of its turns and
   * steps folded as it is read. A log DSH refuses is reviewed too (`failed`, its error in the
   * inspection). `events`: hold the view's events (for `inspectDocument()` in `dsh/log`); `hint`: on a damaged
   * log DSH refuses, `dsh salvage`'s suggestion when it would keep more (best effort).
   */
  async review(options: { view?: 'artifact' | 'stored' | 'logical'; events?: boolean; hint?: boolean } = {}): Promise<Result<InspectReview>> {
    return attemptAsync(async () => {
      const view = options.view ?? 'logical';
      const summarizer = new Summarizer();
      const r = await inspectTarget(this.target, {
        decoder: this.decoder,
        ...(this.options.onProgress ? { onProgress: this.options.onProgress } : {}),
        collect: Boolean(options.events),
        collectStored: view === 'stored',
        keepReplacements: true,
        // The artifact view's sha256 is only reported by the artifact view.
        skipArtifact: view !== 'artifact',
        // The summary reads only what pruned events carry (type, seq, time, turn): workers may parse.
        pruned: true,
        onLogical: (e) => summarizer.observe(e),
      });
      for (const closer of r.closers) summarizer.observe(closer);
      summarizer.setCloserStart(r.storedEventCount);
      const failed = view === 'artifact' ? r.artifact.error !== undefined : r.error !== undefined;
      let hint: string | undefined;
      // DSH refuses a damaged log outright; say when dsh salvage would keep more of it.
      if (options.hint && view !== 'artifact' && salvageMayHelp(r)) {
        const source = this.target.open();
        try {
          const found = await salvageWouldRecoverMore(source, r, { decoder: this.decoder, target: this.target.path });
          if (found?.more) hint = found.suggestion;
        } catch {
          // The hint is best effort; the verdict stands.
        } finally {
          source.close();
        }
      }
      return { view, inspection: r, summary: summarizer.result(), failed, ...(hint !== undefined ? { hint } : {}) };
    });
  }

  /**
   * {@link Session.inspect}'s document written to `out` as the log is read, never held (`dsh inspect --json`):
   * a big log is validated first (or answered by its saved index), then its events are copied out;
   * nothing is written when DSH refuses the log (its verdict is the failure).
   */
  async writeInspect(out: DocumentSink, options: { /** @internal logs of at least this many bytes take the two passes (default 4 MiB) */ streamPassBytes?: number } = {}): Promise<Result<void>> {
    return attemptAsync(async () => {
      const r = await streamInspectDocument(this.target, { decoder: this.decoder }, this.cache, out, streamPassBytes(options.streamPassBytes));
      if (r.error) throw new VerdictFailure(verdictError(r.error));
    });
  }

  /** The logical events with surface labels (`dsh events --json`), optionally filtered. */
  async events(filter: EventsFilter = {}): Promise<Result<LabelledEvent[]>> {
    return attemptAsync(async () => {
      const s = await this.loaded();
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
  trace(seq: number): Promise<Result<EventTrace>>;
  /** With `depth` (or `Infinity`): the transitive provenance tree as well (`dsh trace --depth N --json`). */
  trace(seq: number, options: { depth: number }): Promise<Result<TraceExplanation>>;
  async trace(seq: number, options?: { depth: number }): Promise<Result<EventTrace | TraceExplanation>> {
    return attemptAsync(async () => {
      const store = await this.accepted([CITATIONS]);
      const maxEvents = this.options.maxTraceEvents ?? Math.max(1000, Math.floor(heldBytesBudget() / 1024));
      const x = await traceIndexed({ inspection: store.inspection, citations: foldOf(store.folds, CITATIONS), events: store.events }, seq, options?.depth ?? 1, maxEvents);
      return options === undefined ? x.trace : x;
    });
  }

  /** What the model sees (`dsh surface`), now or as of `at` (inclusive). */
  async surface(options: { at?: number } = {}): Promise<Result<SurfaceView>> {
    return attemptAsync(async () => {
      const store = await this.accepted([SURFACE_EVENTS]);
      return surfaceIndexed({ inspection: store.inspection, surfaceEvents: foldOf(store.folds, SURFACE_EVENTS), events: store.events }, options.at);
    });
  }

  /** Every model dispatch, one summary each (`dsh request --list --json`). */
  async requests(): Promise<Result<DispatchSummary[]>> {
    return attemptAsync(async () => (await this.dispatchView()).list());
  }

  /**
   * One dispatch, by any seq inside it or by `{ step: 'T/S[#n]' }`, with its neighbours and the events
   * the view reads (`reads.around`: its chunks and what follows; `reads.diff`: what a diff from the
   * previous dispatch reads). A seq outside every dispatch fails with `UsageError` naming the nearest ones.
   */
  async dispatch(at: number | string | { step: string }, reads: DispatchReads = {}): Promise<Result<DispatchDetail>> {
    return attemptAsync(async () => {
      const view = await this.dispatchView();
      return typeof at === 'object' ? view.detail(undefined, at.step, reads) : view.detail(String(at), undefined, reads);
    });
  }

  /** The exact model input of one dispatch (`dsh request --json`): by any seq inside it, or by `{ step: 'T/S[#n]' }`. */
  async request(at: number | { step: string }): Promise<Result<RequestDocument>> {
    const d = await this.dispatch(at);
    return d.ok ? ok(requestJson(d.value.entry, messagesOf(d.value.entry, d.value.events))) : d;
  }

  /** What changed from the previous dispatch (`dsh request --diff --json`). */
  async requestDiff(at: number | { step: string }): Promise<Result<DispatchDiff>> {
    const d = await this.dispatch(at, { diff: true });
    return d.ok ? ok(diffDispatches(d.value.previous, d.value.entry, d.value.events)) : d;
  }

  /**
   * Where the context went (`dsh context --json`): every dispatch's request bytes by category, its prompt
   * tokens split in proportion, window fill, what changed since the dispatch before, and prompt-cache
   * attribution with every cache break priced (`prices`: a price table file, default the shipped one).
   */
  async context(options: { prices?: string; currency?: string } = {}): Promise<Result<ContextView>> {
    return attemptAsync(async () => {
      const prices = loadPriceTable(options.prices);
      const store = await this.accepted([DISPATCHES]);
      return contextIndexed(foldOf(store.folds, DISPATCHES), store.events, store.inspection.meta?.id ?? null, { prices, ...(options.currency !== undefined ? { currency: options.currency } : {}) });
    });
  }

  /** Compare with another session (`dsh diff <this> <other> --json`): this session is side a. */
  async diff(other: Session): Promise<Result<SessionDiff>> {
    return attemptAsync(async () => {
      const a = await this.loaded();
      const b = await other.loaded();
      return diffSessions(diffSide(a, this.dispatches(a)), diffSide(b, other.dispatches(b)));
    });
  }

  /** Two dispatches of this session, each by any seq inside it or `{ step: 'T/S[#n]' }`, the earlier first, with the events a diff of them reads. */
  async dispatchPair(from: number | string | { step: string }, to: number | string | { step: string }): Promise<Result<DispatchPair>> {
    return attemptAsync(async () => {
      const arg = (x: number | string | { step: string }) => (typeof x === 'object' ? x.step : String(x));
      return (await this.dispatchView()).pair(arg(from), arg(to));
    });
  }

  /** What changed between two dispatches of this session (`dsh diff <t> <A> <B> --json`). */
  async diffRequests(from: number | string | { step: string }, to: number | string | { step: string }): Promise<Result<DispatchDiff>> {
    const p = await this.dispatchPair(from, to);
    return p.ok ? ok(diffDispatches(p.value.a, p.value.b, p.value.events)) : p;
  }

  /**
   * session-query's `traceSession` among the sessions of the root (`dsh lineage --json`; `root`: another
   * root to search). Reads the log's header only; a log without one fails with DSH's reason (`verdict`).
   */
  async lineage(options: { root?: string } = {}): Promise<Result<{ trace: LineageTrace; problems: ListingProblem[] }>> {
    return attemptAsync(async () => {
      // Only the header is read: the lineage is its ids and the headers of the root's sessions.
      const source = this.target.open();
      let read;
      try {
        read = await readHeaderFromSource(source, undefined, this.decoder);
      } finally {
        source.close();
      }
      if (!read.header) throw new VerdictFailure({ class: 'Error', message: `${this.target.path}: ${read.reason}`, kind: 'corrupt', verdict: true });
      return lineageOf(read.header, options.root ?? this.target.root, this.decoder);
    });
  }

  /**
   * Token, tool, timing and turn accounting with DSH's folds, and the usage ledger across the session's
   * lineage in its root, priced (`dsh stats --json`; `prices`: a price table file, default the shipped one).
   */
  async stats(options: { prices?: string; currency?: string; tree?: boolean; explain?: boolean; figure?: string } = {}): Promise<Result<StatsDocument>> {
    return attemptAsync(async () => {
      const prices = loadPriceTable(options.prices);
      const report = await sessionStatsReport(this.target, {
        decoder: this.decoder,
        prices,
        currency: (options.currency ?? 'USD').toUpperCase(),
        ...(options.tree ? { tree: true } : {}),
        ...(options.explain ? { explain: true } : {}),
        ...(options.figure !== undefined ? { figure: options.figure } : {}),
      });
      if (!report.ok) throw new VerdictFailure(verdictError(report.inspection.error ?? ({ class: 'Error', message: 'session events were not collected', kind: 'corrupt' } as NonNullable<SessionInspection['error']>)));
      return report.document;
    });
  }

  /**
   * `dsh check` for this session: findings with stable rule codes (a log DSH refuses gets its load-failure finding).
   * `behaviour` and `rules` are `dsh.config.json`'s keys (`{ behaviour: true, rules: { 'DSH-X6': ['warning', { minBytes: 8192 }] } }`):
   * the same findings `dsh check --json` gives with that config. A bad config fails as a usage error.
   */
  async check(options: CheckOptions = {}): Promise<Result<SessionReport>> {
    return attemptAsync(async () => {
      const config = parseConfig({ ...(options.behaviour !== undefined ? { behaviour: options.behaviour } : {}), ...(options.rules ? { rules: options.rules } : {}) }, 'check options');
      const behaviour = behaviourSettings(config);
      const report = await checkResolved(this.target, { decoder: this.decoder, lookup: rootLookup(), ...(behaviour ? { behaviour } : {}) });
      return { ...report, findings: applyLevels(report.findings, config) };
    });
  }

  /** The compaction audit (`dsh compactions --json`). */
  async compactions(): Promise<Result<CompactionsReport>> {
    const audit = await this.compactionAudit();
    if (!audit.ok) return audit;
    const { report, full } = audit.value;
    return ok({ ...report, attempts: report.attempts.map(full) });
  }

  /**
   * The compaction audit as `dsh compactions` prints it: walked over a re-read of the log with the
   * store's dispatch index, never holding the log; each attempt's origin list is filled in as it is
   * printed (`full`, or `json` in pieces), since over a log whose checkpoints re-compact each other
   * those lists grow with the log squared.
   */
  async compactionAudit(): Promise<Result<AuditedCompactions>> {
    return attemptAsync(async () => {
      const store = await this.accepted([DISPATCHES]);
      const events = store.events;
      return auditCompactionsStreamed(store.stream!(), foldOf(store.folds, DISPATCHES), (ranges) => events(ranges), { sessionId: store.inspection.meta?.id ?? null });
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
      if (report.sessions[0]?.error) await this.loaded(); // DSH's verdict on the log
      return report;
    });
  }

  /** What the user saw (`dsh transcript --format json`). */
  async transcript(): Promise<Result<Transcript>> {
    const streamed = await this.transcriptEntries();
    if (!streamed.ok) return streamed;
    return attemptAsync(async () => {
      const entries: TranscriptEntry[] = [];
      for await (const e of streamed.value.entries) entries.push(e);
      return { ...streamed.value.head, entries };
    });
  }

  /**
   * The transcript as `dsh transcript` prints it: its head, then each entry once it is final, as the
   * log is re-read (never held). Iterate the entries before `close()` or another view.
   */
  async transcriptEntries(): Promise<Result<{ head: TranscriptHead; entries: AsyncIterable<TranscriptEntry> }>> {
    return attemptAsync(async () => streamedTranscript(await this.accepted([])));
  }

  /** Every model attempt rebuilt from its chunks (`dsh replay --json`). */
  async replay(): Promise<Result<ReplayView>> {
    const replay = await this.replayAttempts();
    if (!replay.ok) return replay;
    return attemptAsync(async () => {
      const attempts: ReplayAttempt[] = [];
      const summary = await replay.value.play((a) => {
        attempts.push(a);
      });
      return { sessionId: replay.value.sessionId, attempts, summary };
    });
  }

  /**
   * The replay as `dsh replay` prints it, attempt by attempt: `play` re-reads the log once, hands
   * `emit` each attempt asked for (those of `step` `{ turn, step }`, default all; with their raw
   * chunks when `chunks`) and resolves to the summary of every attempt. `gapTotal`: the recorded
   * delays between the chunks asked for, each capped as a timed replay caps it. A `step` with no
   * attempt fails with `UsageError` naming the steps that have some. Play before `close()`.
   */
  async replayAttempts(options: { step?: { turn: number; step: number }; chunks?: boolean } = {}): Promise<Result<ReplayAttempts>> {
    return attemptAsync(async () => {
      const store = await this.accepted([REPLAY_PLAN]);
      const meta = store.inspection.meta;
      if (!meta) throw new VerdictFailure(verdictError({ class: 'Error', message: 'session events were not collected', kind: 'corrupt' } as NonNullable<SessionInspection['error']>));
      const stream = store.stream!;
      // The plan comes with the index (built on its validating pass), else from a re-read.
      const plan = (store.folds.get(REPLAY_PLAN.tag) as ReplayPlan | null | undefined) ?? (await planReplay(stream()));
      const step = options.step;
      const wanted = (a: { turn: unknown; step: unknown }) => !step || (a.turn === step.turn && a.step === step.step);
      if (step && !plan.attempts.some(wanted)) {
        const steps = [...new Set(plan.attempts.map((a) => stepKey(a.turn, a.step)))];
        throw new UsageError(`no model attempt in turn ${step.turn} step ${step.step}${steps.length ? `; steps with attempts: ${steps.slice(0, 20).join(', ')}${steps.length > 20 ? ', …' : ''}` : '; the log has no model attempts'}`);
      }
      const keepChunks = Boolean(options.chunks);
      return {
        sessionId: meta.id,
        gapTotal: replayGapTotal(plan, wanted),
        play: (emit) => streamReplay(plan, stream(), (a) => (wanted(a) ? emit(a) : undefined), { keepChunks }),
      };
    });
  }

  /**
   * DSH Host's `session.fork` offline (`dsh fork --json`): the plan (boundary, cut, what the child inherits,
   * the child's header), and with `out` the child written as a NEW session into that root (never the
   * source's own) and read back (`verified`). No boundary fails with `ForkUnavailable`.
   */
  async fork(options: Omit<ForkOptions, 'decoder'> = {}): Promise<Result<ForkOutcome>> {
    return attemptAsync(async () => {
      const s = await this.loaded();
      const events = s.events;
      return forkSession(
        {
          header: s.header,
          storedEventCount: s.storedEventCount,
          target: (await this.collected()).target,
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
export { exportRequest, exportRequestText } from './export/otlp.js';
export type { OtlpSpan, OtlpOptions, ExportTraceServiceRequest } from './export/otlp.js';
export { otlpSpans } from './export/otlp-run.js';
export { encodeProtobuf as encodeOtlpProtobuf, OtlpSendError } from './export/otlp-send.js';
export { LogFollower } from './views/follow.js';
export type { FollowNotice, FollowSink, FollowState } from './views/follow.js';

/**
 * DSH's views of a read log as plain data (`dsh/views`): surface labels and previews, traces, dispatches and request bodies, diffs, compactions, replay, transcript, history, search, stats and the usage ledger, listings and lineage, fork plans, live following.
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { auditCompactionsStreamed, compactionsJson } from '../views/compactions.js';
export type { AuditedCompactions, BudgetInfo, CompactionAttempt, CompactionsReport, Verdict, VerdictState } from '../views/compactions.js';
export { BodyError, deepseekBody } from '../views/deepseek-body.js';
export type { DeepSeekBody, DeepSeekBodyResult } from '../views/deepseek-body.js';
export { costText, diffSessions, indexedDiffSide, pushAll, sessionsDiffer, textLines, unifiedDiff } from '../views/diff.js';
export type { DiffLine, DiffSide, Hunk, MessageRef, PairDiff, SessionDiff, TextDiff, ToolCallFact, UsageNumbers } from '../views/diff.js';
export { DISPATCHES } from '../views/dispatch-fold.js';
export type { Dispatches, Fetch } from '../views/dispatch-fold.js';
export { LogFollower } from '../views/follow.js';
export type { FollowNotice, FollowSink, FollowState } from '../views/follow.js';
export { ForkUnavailable } from '../views/fork.js';
export type { ForkBoundary, ForkPlan, ForkPlanOptions } from '../views/fork.js';
export { DEFAULT_MAX_MESSAGES, DEFAULT_SIZE_LIMITS, hostServableWarning, pageSizeWarnings, paginate } from '../views/history.js';
export type { HistoryPage, MessageGroups, SizeLimits } from '../views/history.js';
export { CITATIONS, MESSAGE_GROUPS, SESSION_FOLDS, SURFACE_EVENTS, TURN_STARTS, foldOf } from '../views/index-folds.js';
export type { Citations } from '../views/index-folds.js';
export { Labels, labelNeedsFold } from '../views/labels.js';
export type { SurfaceLabel } from '../views/labels.js';
export { buildLedger, filterExplain, loadPriceTable, readRootUsage } from '../views/ledger.js';
export type { Cost, ExplainRow, Ledger, LedgerSession, SessionInput, Usage } from '../views/ledger.js';
export type { LineageNode, LineageTrace } from '../views/lineage.js';
export { healthOf, listSessions, sessionKind } from '../views/listing.js';
export type { Health, ListOptions, ListedSession, Listing, ListingProblem, SessionKind, SessionRecord } from '../views/listing.js';
export { EVENT_PREVIEW_WIDTH, SessionQueryError, eventSummary } from '../views/messages.js';
export type { LoadedSession, SurfaceView } from '../views/messages.js';
export { chunkGap, MAX_CHUNK_GAP_MS, type ReplayPlan } from '../views/replay.js';
export type { ContentBlock, ReplayAttempt, ReplayChunk, ReplayOptions, ReplaySummary, ReplayView } from '../views/replay.js';
export { diffDispatches, dispatchesDiffer, messagesOf, requestJson, summarizeDispatch } from '../views/requests.js';
export type { DispatchDiff, DispatchEntry, DispatchIndex, DispatchSummary, SeqResolution, StepEntry } from '../views/requests.js';
export type { NumberMap } from '../core/sorted.js';
export { compileTextFilter, searchFold } from '../views/search.js';
export type { SearchFilters, SearchHit } from '../views/search.js';
export { ledgerJson, sessionStatsReport } from '../views/stats-report.js';
export type { StatsDocument, StatsReport, StatsReportOptions } from '../views/stats-report.js';
export { STATS_EXPLAIN, billedInput, cacheHitPercent, zero } from '../views/stats.js';
export type { Buckets, StatsView } from '../views/stats.js';
export { Summarizer } from '../views/summary.js';
export type { SessionSummary, TurnSummary } from '../views/summary.js';
export type { FoldLike, LogAnalysis, ProvenanceNode, ProvenanceOptions, TraceExplanation } from '../views/trace.js';
export type { Transcript, TranscriptEntry, TranscriptHead, TranscriptToolCall, TranscriptToolResult } from '../views/transcript.js';

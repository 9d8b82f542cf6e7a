/**
 * What the report page reads: the shapes of the two JSON blobs of a report
 * (`dsh-data`, the report document; `dsh-events`, the events with their
 * per-event facts). Types only, no imports, so the page (compiled with the
 * DOM library and without Node types, tsconfig.page.json) and the writer
 * (src/report, Node) share them. The writer's `ReportData` extends
 * {@link PageData} (src/report/data.ts), so a field the page
 * reads cannot disappear or change type on one side only.
 *
 * Every DSH rule (surface labels, traces, previews, message derivation) is
 * computed by the writer with the library's views; the page only looks the
 * results up.
 */

export interface PageError {
  class: string;
  message: string;
  cause?: string;
  stage?: string;
  kind?: string;
  seq?: number;
  byteOffset?: number;
  rule?: string;
}

export interface PageTorn {
  truncateTo: number;
  tornBytes: number;
  recoveredEventSeqs: number[];
  lostPlaintextBytes: number;
}

export interface PageHeader {
  cwd?: string;
  createdAt?: number;
  version?: number;
  delegationDepth?: number;
  agentPreset?: unknown;
  origin?: unknown;
}

export interface PageLineage {
  root: string | null;
  parent: string | null;
  /** Nearest first. */
  ancestors: { id: string; createdAt: number; kind: string }[];
  /** Depth-first, `depth` 1 = direct child. */
  descendants: { id: string; createdAt: number; kind: string; depth: number; seedLength: number | null }[];
  /** The header's fork boundary: the child's first `seedLength` events are the parent's. */
  seedLength: number | null;
  unresolvedParent: string | null;
  note: string | null;
}

export interface PageStep {
  step: number;
  startSeq: number;
  endSeq: number | null;
  durationMs: number | null;
  /** The last dispatch's finish reason (DSH's step/end carries none). */
  endReason: string | null;
  dispatches: number[];
  /** `llm/retry` events logged in this step. */
  retries: number;
}

export interface PageTurn {
  turn: number;
  startSeq: number;
  endSeq: number | null;
  reason: string;
  synthetic: boolean;
  durationMs: number | null;
  startTime: number | null;
  steps: PageStep[];
}

export interface PageUsage {
  inputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
}

export interface PageDiffNode {
  seq: number;
  type: string;
  role: unknown;
  id: unknown;
  replace?: { start: number; end: number };
  shadowedBy?: number | null;
}

export interface PageDispatchDiff {
  from: string | null;
  prefixEvents: { from: number; to: number };
  between: { type: string; count: number; firstSeq: number }[];
  header: { changed: boolean; changes: { field: string; before: unknown; after: unknown }[] };
  requestContext: { changed: boolean; from: unknown; to: unknown };
  messages: { fromCount: number; toCount: number; kept: number; added: PageDiffNode[]; removed: PageDiffNode[]; transient: PageDiffNode[] };
}

export interface PageDispatch {
  i: number;
  key: string;
  turn: number;
  step: number;
  attempt: number;
  first: number;
  last: number;
  finish: string | null;
  durationMs: number;
  usage: unknown;
  model: string | null;
  msgCount: number;
  assistantSeq: number | null;
  headerSeq: number | null;
  headerChanges: string[];
  ctxSeq: number | null;
  /** Surface node seqs at dispatch, delta-coded: `[k, ...added]` = previous dispatch's first k nodes, then `added`. */
  nodes: number[];
  diff: PageDispatchDiff;
}

export interface PageRequestHeader {
  config?: unknown;
  adapterDefaults?: unknown;
  system?: unknown;
  tools?: unknown;
}

export interface PageToolResult {
  seq: number;
  text: string;
  isError: boolean;
  errorCode: string | null;
  synthetic: boolean;
  prunedBy: number | null;
}

export interface PageToolCall {
  name: string;
  arguments: string;
  callSeq: number | null;
  result: PageToolResult | null;
}

export type PageTranscriptEntry =
  | { kind: 'turn'; seq: number; time: number; turn: number }
  | {
      kind: 'message';
      seq: number;
      role: string;
      id: string | null;
      source: string;
      text: string;
      reasoning: string | null;
      toolCalls: PageToolCall[];
      interrupted: boolean;
      empty: boolean;
      synthetic: boolean;
      shadowedBy: number | null;
    }
  | { kind: 'tool-result'; seq: number; result: PageToolResult }
  | { kind: 'compaction'; seq: number; compactionId: string | null; summarySeq: number | null; summary: string; shadowedSeqs: number[]; synthetic: boolean }
  | { kind: 'prune'; seq: number; originalSeq: number; text: string }
  | { kind: 'replacement'; seq: number; type: string; shadowedSeqs: number[]; text: string }
  | { kind: 'turn-end'; seq: number; turn: number; reason: string; detail: string | null; synthetic: boolean };

export interface PageSurfaceEntry {
  seq: number;
  type: string;
  op: 'append' | 'replace';
  replaced: number[];
  role: string | null;
  id: string | null;
  text: string;
  interrupted: boolean;
  synthetic: boolean;
}

export interface PageReplacement {
  seq: number;
  start: number;
  end: number;
  shadowedSeqs: number[];
}

export interface PageCompaction {
  /** The replacement event (checkpoint user/message, pruned tool/result, other) or null for a compaction that never replaced anything. */
  seq: number | null;
  kind: 'compaction' | 'prune' | 'replacement' | 'unfinished';
  type: string | null;
  compactionId: string | null;
  start: number | null;
  end: number | null;
  shadowedSeqs: number[];
  sourceEventSeqs: number[];
  startSeq: number | null;
  endSeq: number | null;
  summarySeq: number | null;
  pruneSeq: number | null;
  tokens: number | null;
  turn: number | null;
  synthetic: boolean;
}

export interface PageAttempt {
  index: number;
  kind: string;
  compactionId: string | null;
  seqs: { start: number | null; summary: number | null; replacement: number | null; end: number | null; prune: number | null };
  firstSeq: number;
  trigger: { kind: string; detail: string };
  range: { start: number; end: number; shadowedSeqs: number[] } | null;
  coverage: { covered: boolean; missing: number[]; declaredMatches: boolean | null } | null;
  pairing: { ok: boolean; orphanCalls: unknown[]; orphanResults: unknown[] } | null;
  integrity: { ok: boolean; missingEvents: number[] } | null;
  outcome: string;
  failure: { class: string; reason: string } | null;
  lock: { state: string } | null;
  budget: { savedMessageTokens: number; netGain: number; eatenByHeader: boolean } | null;
  nextRequest: { status: string; reason: string; key: string | null };
  notes: string[];
}

export interface PageAudit {
  counts: {
    compactions: number;
    succeeded: number;
    failed: number;
    unclosed: number;
    unbracketed: number;
    prunes: number;
    otherReplacements: number;
    notStarted: number;
    activeLocks: number;
    staleLocks: number;
  };
  attempts: PageAttempt[];
  verdicts: { title: string; state: string; detail: string }[];
  foldError: { seq: number; rule: string; message: string } | null;
}

export interface PageFinding {
  code: string;
  severity: string;
  seq?: number;
  byteOffset?: number;
  offsetIn?: 'file' | 'plaintext';
  message: string;
  hint: string;
  /** Behaviour rules (`dsh report --behaviour`): the events and figures behind the finding. */
  evidence?: PageEvidence;
}

/** dsh check's evidence of a behaviour finding, as the page reads it. */
export interface PageEvidence {
  seqs: number[];
  turn?: number;
  tool?: string;
  count?: number;
  bytes?: number;
  carried?: { count: number; first: string | null; last: string | null; tokensEach: number; tokensResent: number; costResent: { currency: string; cacheMiss: string; cacheHit: string } | null; unpriced: number };
}

export interface PageSecret {
  token: string;
  detector: string;
  exposure: string;
  verdict: string;
  dispatchCount: number;
  sessions: { events: { seq: number }[] }[];
}

export type HealthStatus = 'ok' | 'torn' | 'needs-repair' | 'refused' | 'corrupt';

/** The report document (`dsh-data`). */
/** One dispatch of the Context view: its request by category and its prompt-cache facts (`dsh context`). */
export interface PageContextRow {
  /** Dispatch index (into `dispatches`). */
  i: number;
  time: number;
  /** Request bytes, and by category in `PageContext.categories` order. */
  bytes: number;
  cats: number[];
  /** Logged prompt tokens (null: no usage logged). */
  tokens: number | null;
  window: number | null;
  /** Prompt bytes and the prefix shared with an earlier dispatch. */
  prompt: number;
  shared: number;
  cacheRead: number | null;
  /** Index into `PageContext.breaks`. */
  brk: number | null;
}

export interface PageContextBreak {
  i: number;
  key: string;
  cause: string;
  causeSeq: number | null;
  detail: string;
  resentTokens: number | null;
}

/** `dsh context` as the page draws it. */
export interface PageContext {
  tokens: 'proportional';
  categories: string[];
  rows: PageContextRow[];
  breaks: PageContextBreak[];
}

export interface PageData {
  session: {
    id: string | null;
    file: string;
    encoding: string;
    bytes: number;
    decoder: string | null;
    header: PageHeader | null;
    storedEventCount: number;
    eventCount: number;
    title: string | null;
    firstTime: number | null;
    lastTime: number | null;
    countsByType: [string, number][];
  };
  health: {
    status: HealthStatus;
    error: PageError | null;
    torn: PageTorn | null;
    closers: { seq: number; type: string; why: string }[];
    repair: { writes: boolean; truncateTo: number | null; truncatedBytes: number; reappendSeqs: number[]; closerSeqs: number[]; appendAs: string | null } | null;
    warnings: string[];
    migratedEvents: number;
    ignorableUnknown: number[];
    defect: { message: string; line: number } | null;
  };
  lineage: PageLineage;
  turns: PageTurn[];
  dispatches: PageDispatch[];
  headers: Record<string, PageRequestHeader | null>;
  contexts: Record<string, unknown>;
  transcript: PageTranscriptEntry[];
  surface: { nodes: number[]; replacements: PageReplacement[]; entries: PageSurfaceEntry[] };
  compactions: PageCompaction[];
  /** The Context view (null: the log did not load). */
  context: PageContext | null;
  audit: PageAudit | null;
  auditError: string | null;
  findings: PageFinding[];
  secrets: PageSecret[] | null;
}

/** One event as the page holds it (decoded from the events blob). */
export interface PageEvent {
  type: string;
  seq: number;
  time: number;
  data?: unknown;
  surfaceOp?: unknown;
  sourceEventSeqs?: unknown;
}

/**
 * Per-event facts the writer derives with the views (labels, previews,
 * messages, trace relations), stored compactly; index = seq.
 */
export interface PageEventFacts {
  /** Surface label of each event: `c` current, `s` shadowed, `l` log-only (views/labels.ts). */
  labels: string;
  /** The one-line previews (views eventSummary, clipped to `previewLimit` code points), each distinct within a window of 65,536 (`PREVIEW_WINDOW`). */
  previews: string[];
  /** Index into `previews` of each event's preview. */
  preview: number[];
  previewLimit: number;
  /**
   * Where each event's model message is (log/surface.ts deriveEventMessage):
   * `-` none, `d` the event's `data`, `m` its `data.message`, `x` in `messages`.
   */
  message: string;
  messages: Record<string, unknown>;
  /** Trace relations (views/trace.ts analyzeLog): `[shadowedSeq, replacerSeq, …]`. */
  replacedBy: number[];
  /** `[replacerSeq, n, shadowed₁ … shadowedₙ, …]`. */
  replaced: number[];
  /** Later citers, run-length coded: `[firstSeq, runLength, n, citer₁ … citerₙ, …]` = every seq of the run has those citers. */
  derived: number[];
}

/** The events blob (`dsh-events`): compact rows (src/report/html.ts eventsBlob), then the facts. */
export interface PageEventsBlob {
  rows: unknown[];
  types: string[];
  facts: PageEventFacts;
}

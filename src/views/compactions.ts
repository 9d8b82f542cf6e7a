/**
 * Compaction audit (`dsh compactions`): every compaction attempt and every
 * tool-result prune of a session, judged against DSH's own contracts
 * (format.md §6.1, §7.6, §7.7, §9; the compaction seam's region transaction,
 * tool-pairing balance and token-meter heuristic) and summarized in the shape
 * of the compaction/recovery acceptance table: raw facts survived, new surface
 * legal, next request reconstructable, failure classified, budget gain.
 *
 * Pure: takes the logical events (`inspectTarget(..., {collect:true}).events`)
 * and returns plain data. One forward pass folds the surface (so the positions
 * before each replacement are known), tracks turns/steps/finishes (trigger),
 * brackets (outcome, lock), commands (manual outcomes); dispatches come from
 * {@link deriveDispatches}.
 */
import { splitPairs, toolPairsOf, type SplitPair } from './tool-pairs.js';
import type { BlockView, SessionEvent, UsageView } from '../log/types.js';
import { SurfaceFold, SurfaceError, deriveEventMessage, isSurfaceEligibleType } from '../log/surface.js';
import { canonicalHeader, type EpochHeader } from './header.js';
import { deriveDispatches, releaseSurfaceNodes, type DispatchEntry } from './requests.js';
import { spansOf, type Dispatches, type DispatchSpans, type Fetch } from './dispatch-fold.js';
import { NodeValues } from './surface-nodes.js';
import { toJson, toJsonAround } from '../core/json.js';
import { stepKey } from '../core/keys.js';
import { rec, type JsonRecord } from '../core/records.js';

// ---------------------------------------------------------------- heuristic pricing

/** DSH token-meter heuristic constants (query-export.md §7 contextBreakdown). */
const CHARS_PER_TOKEN = 4;
const BLOCK_OVERHEAD = 4;
const ROLE_OVERHEAD = 4;

export interface Priced {
  tokens: number;
  /** UTF-16 characters the heuristic priced (text, reasoning, tool-call name+arguments, nested results, unknown blocks as JSON). */
  chars: number;
}

function priceBlocks(blocks: unknown): Priced {
  let tokens = 0;
  let chars = 0;
  if (!Array.isArray(blocks)) return { tokens, chars };
  for (const raw of blocks as unknown[]) {
    const b = (raw ?? {}) as NonNullable<BlockView>;
    switch (b.type) {
      case 'text':
      case 'reasoning': {
        const n = typeof b.text === 'string' ? b.text.length : 0;
        tokens += Math.ceil(n / CHARS_PER_TOKEN) + BLOCK_OVERHEAD;
        chars += n;
        break;
      }
      case 'tool-call': {
        const name = typeof b.name === 'string' ? b.name.length : 0;
        const args = typeof b.arguments === 'string' ? b.arguments.length : 0;
        tokens += Math.ceil(name / CHARS_PER_TOKEN) + Math.ceil(args / CHARS_PER_TOKEN) + BLOCK_OVERHEAD;
        chars += name + args;
        break;
      }
      case 'tool-result': {
        const inner = priceBlocks(b.content);
        tokens += inner.tokens + BLOCK_OVERHEAD;
        chars += inner.chars;
        break;
      }
      default: {
        const n = (toJson(raw) ?? '').length;
        tokens += BLOCK_OVERHEAD + Math.ceil(n / CHARS_PER_TOKEN);
        chars += n;
      }
    }
  }
  return { tokens, chars };
}

/** `estimateMessage`: content tokens + 4 role overhead. */
export function estimateMessage(message: unknown): Priced {
  const p = priceBlocks((message as { content?: unknown } | null)?.content);
  return { tokens: p.tokens + ROLE_OVERHEAD, chars: p.chars };
}

/** `estimateSystemTokens`: ceil(len/4) + 4, 0 when absent. */
export function estimateSystemTokens(header: EpochHeader | null | undefined): number {
  const s = header?.system;
  if (typeof s !== 'string') return 0;
  return Math.ceil(s.length / CHARS_PER_TOKEN) + ROLE_OVERHEAD;
}

/** `estimateToolsTokens`: ceil(JSON.stringify(tools).length/4) + 4, 0 when absent or empty. */
export function estimateToolsTokens(header: EpochHeader | null | undefined): number {
  const t = header?.tools as unknown;
  if (t === undefined || t === null || (t as { length?: number }).length === 0) return 0;
  return Math.ceil((toJson(t) ?? '').length / CHARS_PER_TOKEN) + BLOCK_OVERHEAD;
}

/** A request header as the audit reads it: DSH's token-meter estimates of its system prompt and tools. */
interface HeaderPrice {
  system: number;
  tools: number;
}

/** What the audit reads of a dispatch's text-valued fields: its header's estimates (null: no header) and its billed input. */
interface DispatchPrice {
  header: HeaderPrice | null;
  billed: number | null;
}

function headerPrice(h: EpochHeader | null | undefined): HeaderPrice | null {
  return h === null || h === undefined ? null : { system: estimateSystemTokens(h), tools: estimateToolsTokens(h) };
}

function dispatchPrice(d: DispatchEntry): DispatchPrice {
  return { header: headerPrice(d.header), billed: billed(d.messageUsage ?? d.chunkUsage) };
}

/** The event with a seq, as far as the audit holds it (the surface's nodes and the event being visited). */
export type EventAt = (seq: number) => SessionEvent | undefined;

function priceNodes(nodes: readonly number[], at: EventAt): { messages: number; tokens: number; chars: number } {
  let messages = 0;
  let tokens = 0;
  let chars = 0;
  for (const seq of nodes) {
    const e = at(seq);
    if (!e) continue;
    const m = deriveEventMessage(e);
    if (m === null || m === undefined) continue;
    const p = estimateMessage(m);
    messages += 1;
    tokens += p.tokens;
    chars += p.chars;
  }
  return { messages, tokens, chars };
}

// ---------------------------------------------------------------- failure classes

/** DSH's `ManualCompactionErrorCode`, plus `other` for a logged error no rule explains. */
export type FailureClass = 'busy' | 'cancelled' | 'changed' | 'summary' | 'commit' | 'persistence' | 'other';

export interface FailureInfo {
  class: FailureClass;
  /** Short name of the matched cause (`not-smaller`, `truncated`, `surface-changed-during`, …). */
  reason: string;
  /** How it was classified: the logged error text, the bracket's shape, or the manual command's reported outcome. */
  basis: 'error text' | 'bracket shape' | 'command/done';
  /** The logged `compaction/end.error` (or command/done text). */
  text: string | null;
}

/** Typical `compaction/end.error` texts (format.md §9.3; DSH compaction-basic region/summarizer). */
const ERROR_PATTERNS: { re: RegExp; cls: FailureClass; reason: string }[] = [
  { re: /^summary is not smaller than the shadowed content/, cls: 'summary', reason: 'not-smaller' },
  { re: /^summarization truncated at the token cap/, cls: 'summary', reason: 'truncated' },
  { re: /^summarization produced no text summary content/, cls: 'summary', reason: 'no-text' },
  { re: /^compaction summary cannot contain image output/, cls: 'summary', reason: 'image-output' },
  { re: /^no provider\/model available for summarization/, cls: 'summary', reason: 'no-provider' },
  { re: /^compaction: selected surface changed before summarization began/, cls: 'changed', reason: 'surface-changed-before' },
  { re: /^compaction: session surface changed during summarization/, cls: 'changed', reason: 'surface-changed-during' },
  { re: /^compaction: the selected span is no longer a valid replacement target/, cls: 'changed', reason: 'span-invalid' },
  { re: /^compaction: the selected span changed during summarization/, cls: 'changed', reason: 'span-changed' },
  { re: /^compaction: the selected span was rewritten during summarization/, cls: 'changed', reason: 'span-rewritten' },
  { re: /^compaction still above threshold after/, cls: 'summary', reason: 'still-above-threshold' },
  { re: /(^AbortError\b|\babort(ed)?\b|\bcancel(l)?ed\b|\bcancellation\b)/i, cls: 'cancelled', reason: 'cancelled' },
];

/** `/compact`'s human outcomes (command-compact `expectedFailure`) → class. */
const COMMAND_TEXTS: { prefix: string; cls: FailureClass | 'success' | 'nothing' }[] = [
  { prefix: 'Compaction is unavailable because', cls: 'busy' },
  { prefix: 'Compaction cancelled.', cls: 'cancelled' },
  { prefix: 'The history selected for compaction changed', cls: 'changed' },
  { prefix: 'Compaction could not produce a useful summary', cls: 'summary' },
  { prefix: 'Compaction did not finish cleanly', cls: 'commit' },
  { prefix: 'Compaction finished, but the session could not be saved', cls: 'persistence' },
  { prefix: 'No compactable history yet.', cls: 'nothing' },
  { prefix: 'Compacted ', cls: 'success' },
];

/** Classify a logged `compaction/end.error` string (and whether a summary landed in the bracket). */
export function classifyCompactionError(text: string, summaryLogged: boolean): FailureInfo {
  for (const p of ERROR_PATTERNS) if (p.re.test(text)) return { class: p.cls, reason: p.reason, basis: 'error text', text };
  // DSH's stage rule: a failure after the body started to land is a commit-stage failure.
  if (summaryLogged) return { class: 'commit', reason: 'body-append-failed', basis: 'bracket shape', text };
  return { class: 'other', reason: 'unrecognized', basis: 'error text', text };
}

/** Map a `/compact` command/done text to DSH's manual outcome class. */
export function classifyCommandText(text: string): FailureClass | 'success' | 'nothing' | null {
  for (const p of COMMAND_TEXTS) if (text.startsWith(p.prefix)) return p.cls;
  return null;
}

// ---------------------------------------------------------------- audit records

export type AttemptKind = 'compaction' | 'prune' | 'replacement';
/**
 * manual: standalone `/compact` (turn: null); pressure: agent/pre-step (in a turn, before step/start);
 * context-overflow: agent/request-error recovery after a CONTEXT_WINDOW_EXCEEDED finish in the same step;
 * request-error: the same position after another failure code; automatic: a numbered (in-turn) owner at a
 * position neither DSH hook writes (e.g. inside a step before its first dispatch); unknown: no owner context.
 */
export type TriggerKind = 'manual' | 'pressure' | 'context-overflow' | 'request-error' | 'automatic' | 'unknown';

export interface TriggerInfo {
  kind: TriggerKind;
  /** Human explanation with the evidence seqs. */
  detail: string;
  turn: number | null;
  /** The step the attempt sits in (overflow) or precedes (pressure). */
  step: number | null;
  command?: { commandId: string; runSeq: number | null; doneSeq: number | null; doneKind: string | null; doneText: string | null };
  /** The failed dispatch (overflow / request-error). */
  failedDispatch?: { key: string | null; finishSeq: number; code: string | null; message: string | null };
}

export interface SummaryCall {
  seq: number;
  provider: unknown;
  model: unknown;
  maxTokens: unknown;
  usage: unknown;
  llmStreamCall: boolean;
  /** Estimated tokens of the summary blocks. */
  summaryTokens: number;
  /** The summary's text blocks, joined (what the checkpoint tells the model). */
  summaryText: string;
}

export interface RangeInfo {
  /** The replacement's `surfaceOp` endpoints (surface-node seqs). */
  start: number;
  end: number;
  /** Their positions on the surface just before the replacement. */
  startPosition: number;
  endPosition: number;
  surfaceLengthBefore: number;
  /** Fold-computed shadowed nodes, in surface order. */
  shadowedSeqs: number[];
}

export interface CoverageInfo {
  /** Every shadowed node is cited by the replacement's sourceEventSeqs (DSH S10b). */
  covered: boolean;
  missing: number[];
  /** Compactions: the replacement also cites its compaction/start and compaction/summary (DSH writer contract). */
  citesStart: boolean | null;
  citesSummary: boolean | null;
  /** The declared `shadowedSeqs`/`shadowedRange` (summary or prune event) equal the fold's. */
  declaredMatches: boolean | null;
  declaredShadowedSeqs: number[] | null;
  declaredTokenCount: number | null;
  /** The token-meter heuristic over the shadowed nodes' messages (DSH prices with the meter's node fold, so a replaced node can differ). */
  estimatedShadowedTokens: number | null;
}

export interface OrphanPair {
  callId: string;
  /** Surviving node that now holds half a pair. */
  survivingSeq: number;
  /** Shadowed node that held the other half. */
  shadowedSeq: number;
}

export interface PairingInfo {
  /**
   * DSH `toolPairingBalancedBefore(start)` / `toolPairingBalancedAfter(end)` over the surface before the
   * replacement (null for a tool/result rewrite, which keeps its pair by construction, S11/S12).
   */
  balancedBefore: boolean | null;
  balancedAfter: boolean | null;
  /** Tool-call blocks left on the new surface whose result was shadowed. */
  orphanCalls: OrphanPair[];
  /** Tool results left on the new surface whose call block was shadowed. */
  orphanResults: OrphanPair[];
  ok: boolean;
}

export interface IntegrityInfo {
  /** Shadowed seqs whose event is missing, renumbered, or not a surface type. */
  missingEvents: number[];
  /** Shadowed nodes that were themselves replacements (earlier checkpoints or pruned results). */
  shadowedReplacements: number[];
  /** Append-origin events this replacement stands for, transitively through shadowed replacements (what a human saw). */
  originSeqs: number[];
  /** Where those facts are on the surface at the end of the log: this replacement, or the later one that shadowed it. */
  currentHolder: number | null;
  ok: boolean;
}

export interface UsagePoint {
  key: string;
  firstChunkSeq: number;
  /** input + cacheRead + cacheWrite of the dispatch's reported usage. */
  billedInput: number;
}

export interface BudgetInfo {
  messagesBefore: number;
  messagesAfter: number;
  charsBefore: number;
  charsAfter: number;
  messageTokensBefore: number;
  messageTokensAfter: number;
  savedMessageTokens: number;
  /** Estimate of the replacement message itself. */
  replacementTokens: number;
  /** System + tools estimate of the header in force before (at the attempt). */
  headerTokensBefore: number;
  /** System + tools estimate of the next request's header (or the folded header when none is dispatched yet). */
  systemTokensNext: number;
  toolsTokensNext: number;
  headerTokensNext: number;
  /** (messages+header) before − (messages+header) of the next request's envelope. */
  netGain: number;
  eatenByHeader: boolean;
  usageBefore: UsagePoint | null;
  usageAfter: UsagePoint | null;
}

export interface NextRequestInfo {
  status: 'ok' | 'not-reconstructable' | 'pending';
  reason: string;
  key: string | null;
  firstChunkSeq: number | null;
  headerSeq: number | null;
  messageCount: number;
  /** The overflow recovery's retry: the next dispatch is in the failed step. */
  retryOfFailedStep: boolean;
}

export interface LockInfo {
  /** §9.4: active (DSH's next compaction is refused 'busy'), stale (a later session/end-seed ends that lifecycle), superseded (a later compaction marker; F1 violation). */
  state: 'active' | 'stale' | 'superseded';
  endSeedSeq: number | null;
  detail: string;
}

/**
 * succeeded/failed: a closed bracket without/with `error`; unclosed: a start with no end; unbracketed: a
 * checkpoint (or summary) with no compaction/start at all; applied: a prune or other replacement that landed;
 * not-started / nothing-to-compact: a /compact command that never opened a bracket.
 */
export type Outcome = 'succeeded' | 'failed' | 'unclosed' | 'unbracketed' | 'applied' | 'not-started' | 'nothing-to-compact';

export interface CompactionAttempt {
  index: number;
  kind: AttemptKind;
  compactionId: string | null;
  /** compaction/start `turn` (null = standalone manual); undefined for prunes/replacements. */
  owner: number | null | undefined;
  sourceCommandId: string | null;
  seqs: { start: number | null; summary: number | null; replacement: number | null; end: number | null; prune: number | null };
  firstSeq: number;
  lastSeq: number;
  trigger: TriggerInfo;
  summaryCall: SummaryCall | null;
  range: RangeInfo | null;
  coverage: CoverageInfo | null;
  pairing: PairingInfo | null;
  integrity: IntegrityInfo | null;
  outcome: Outcome;
  failure: FailureInfo | null;
  lock: LockInfo | null;
  budget: BudgetInfo | null;
  nextRequest: NextRequestInfo;
  /** Prunes: the compaction/start that directly follows this prune run (same automatic pass), if any. */
  precedesCompaction: string | null;
  notes: string[];
}

export type VerdictState = 'pass' | 'warn' | 'fail' | 'n/a';

export interface Verdict {
  item: 'raw-facts' | 'surface' | 'request' | 'failure' | 'budget';
  title: string;
  state: VerdictState;
  detail: string;
}

export interface CompactionsReport {
  sessionId: string | null;
  eventCount: number;
  surfaceNodes: number;
  replaceGeneration: number;
  counts: { compactions: number; succeeded: number; failed: number; unclosed: number; unbracketed: number; prunes: number; otherReplacements: number; notStarted: number; activeLocks: number; staleLocks: number };
  attempts: CompactionAttempt[];
  verdicts: Verdict[];
  /** The surface fold rejected an event (only possible on logs DSH itself would refuse). */
  foldError: { seq: number; rule: string; message: string } | null;
}

// ---------------------------------------------------------------- the pass

const CWE = 'CONTEXT_WINDOW_EXCEEDED';


function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** DSH's balance counting (assistant tool-call blocks +n, tool/result −1) over surface order: balanced[i] = cut before node i. */
function cuts(nodes: readonly number[], at: EventAt): boolean[] {
  const out: boolean[] = [true];
  let open = 0;
  for (const seq of nodes) {
    const e = at(seq);
    if (e?.type === 'assistant/message') open += toolPairsOf(e).calls.length;
    else if (e?.type === 'tool/result') open -= 1;
    out.push(open === 0);
  }
  return out;
}

/**
 * Tool pairing across one replacement: `before`/`after` are the surface node seqs around it, the shadowed span
 * is `before[startIdx..endIdx]`. Reports pairs split by the boundary (one half shadowed, the other surviving).
 */
export function toolPairing(before: readonly number[], startIdx: number, endIdx: number, after: readonly number[], at: EventAt, inPlace: boolean): PairingInfo {
  const c = cuts(before, at);
  const shadowed = before.slice(startIdx, endIdx + 1);
  const split = splitPairs(
    shadowed.map((seq) => [seq, toolPairsOf(at(seq))] as const),
    after.map((seq) => [seq, toolPairsOf(at(seq))] as const),
  );
  const orphan = ({ callId, survivingSeq, shadowedSeq }: SplitPair): OrphanPair => ({ callId, survivingSeq, shadowedSeq });
  const orphanCalls = split.filter((x) => x.kind === 'call').map(orphan);
  const orphanResults = split.filter((x) => x.kind === 'result').map(orphan);
  const balancedBefore = inPlace ? null : (c[startIdx] ?? false);
  const balancedAfter = inPlace ? null : (c[endIdx + 1] ?? false);
  return { balancedBefore, balancedAfter, orphanCalls, orphanResults, ok: orphanCalls.length === 0 && orphanResults.length === 0 };
}

interface StepState {
  turn: number;
  step: number;
  startSeq: number;
  lastFinish: { seq: number; reason: unknown } | null;
}

function billed(usage: unknown): number | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as NonNullable<UsageView>;
  const n = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
  if (typeof u.inputTokens !== 'number') return null;
  return n(u.inputTokens) + n(u.cacheReadTokens) + n(u.cacheWriteTokens);
}

/** Audit every compaction attempt, prune and other surface replacement in a logical event list. */
export function auditCompactions(events: readonly SessionEvent[], options: { sessionId?: string | null } = {}): CompactionsReport {
  const audit = new CompactionAudit(deriveDispatches(events, { lazy: events }).requests);
  for (const e of events) audit.push(e);
  audit.price(audit.end());
  return audit.finishHeld(options.sessionId ?? null);
}

/**
 * An audit whose attempts are passed on one at a time: an attempt's `integrity.originSeqs` lists
 * every append-origin event it stands for, so over a log whose checkpoints re-compact each other the
 * lists grow with the log squared; the audit keeps what each one is made of instead (see {@link Origin}).
 */
export interface AuditedCompactions {
  /** The audit, final (counts and verdicts included), but each attempt's `integrity.originSeqs` is left empty: {@link full} fills it in. */
  report: CompactionsReport;
  /** An attempt of `report` as printed: a copy with its `integrity.originSeqs`. Called in attempt order, it keeps only the lists a later attempt re-lists. */
  full(a: CompactionAttempt): CompactionAttempt;
  /** `toJson(full(a))`, in pieces (its originSeqs a few thousand at a time). */
  json(a: CompactionAttempt): Iterable<string>;
}

/** Dispatches hydrated at a time for the audit's prices (each holds its request header until priced). */
const HYDRATE_BATCH = 256;

/**
 * `auditCompactions()` over logical events that come in batches (a re-read of the log), never
 * holding them: `dispatches` is the session's dispatch index (complete before the walk); the text-valued
 * fields (header, usage) of the few entries the audit prices against are read back with `fetch`, a few
 * hundred at a time, and only their estimates are kept.
 * Print it with {@link compactionsJson} (or attempt by attempt through `full`), never whole.
 */
export async function auditCompactionsStreamed(
  batches: AsyncIterable<readonly SessionEvent[]>,
  dispatches: Dispatches,
  fetch: Fetch,
  options: { sessionId?: string | null } = {},
): Promise<AuditedCompactions> {
  const audit = new CompactionAudit(dispatches.index.requests, dispatches.spans());
  for await (const batch of batches) for (const e of batch) audit.push(e);
  await priceAudit(audit, audit.end(), dispatches, fetch);
  return audit.finish(options.sessionId ?? null);
}

/**
 * Price `audit` against `wanted` (what its `end()` returned), a few hundred hydrated at a time and
 * let go once priced: hydrated at once, they would hold every priced dispatch's request header
 * (~22 KB of tools and system prompt each; 2,400 of them on the bench's 2 GB log).
 */
export async function priceAudit(audit: CompactionAudit, wanted: readonly DispatchEntry[], dispatches: Dispatches, fetch: Fetch): Promise<void> {
  for (let i = 0; i < wanted.length; i += HYDRATE_BATCH) {
    const part = wanted.slice(i, i + HYDRATE_BATCH);
    await dispatches.hydrate(part, fetch);
    audit.price(part);
    dispatches.release(part);
  }
}

/**
 * `toJson` of the report (with `attempts`, default all of them, in its place), in pieces: the text
 * around the attempts, then one attempt at a time. The same bytes, never the whole document at once.
 * `members`: only these members of the report, in this order (default all of them).
 */
export function* compactionsJson(
  audit: AuditedCompactions,
  attempts: readonly CompactionAttempt[] = audit.report.attempts,
  members?: readonly (keyof CompactionsReport)[],
): Generator<string> {
  const doc: Record<string, unknown> = members ? Object.fromEntries(members.map((k) => [k, audit.report[k]])) : { ...audit.report };
  const { before, after } = toJsonAround({ ...doc, attempts: null }, 'attempts');
  yield `${before}[`;
  let first = true;
  for (const a of attempts) {
    if (!first) yield ',';
    yield* audit.json(a);
    first = false;
  }
  yield `]${after}`;
}

// ---------------------------------------------------------------- what a replacement stands for

/**
 * What one replacement stands for (its `integrity.originSeqs`), as it was made: the nodes it
 * shadowed, each earlier replacement among them standing for its own origins. The lists grow with
 * the log squared (a checkpoint that re-compacts the previous one lists all that one lists and
 * more); these recipes only with the log.
 */
export class Origin {
  /** Later recipes that embed this one and have not been listed yet. */
  pending = 0;
  constructor(readonly parts: readonly (number | Origin)[]) {}
  /** This recipe, embedded in a later one. */
  used(): this {
    this.pending += 1;
    return this;
  }
}

/** Lists recipes (sorted, distinct), keeping a list only while a later recipe that embeds it is still to be listed. */
class OriginLists {
  // Typed arrays: their bytes are off the JS heap and let go as soon as the list is (a list can be
  // millions of seqs, one per attempt printed).
  private readonly kept = new Map<Origin, Float64Array>();

  list(o: Origin): Float64Array {
    const have = this.kept.get(o);
    if (have) return have;
    // The longest embedded list (typically the previous checkpoint's) is merged with the rest, sorted.
    const inner = o.parts.filter((p): p is Origin => typeof p !== 'number').map((p) => this.inner(p));
    let longest: Float64Array = new Float64Array(0);
    for (const l of inner) if (l.length > longest.length) longest = l;
    const rest = o.parts.filter((p): p is number => typeof p === 'number');
    for (const l of inner) if (l !== longest) for (const s of l) rest.push(s);
    const out = mergeDistinct(longest, distinctSorted(rest));
    if (o.pending > 0) this.kept.set(o, out);
    return out;
  }

  private inner(p: Origin): Float64Array {
    const out = this.list(p);
    p.pending -= 1;
    if (p.pending <= 0) this.kept.delete(p);
    return out;
  }
}

/** Ascending, each value once. */
function distinctSorted(values: number[]): Float64Array {
  values.sort((x, y) => x - y);
  const out = new Float64Array(values.length);
  let n = 0;
  for (const v of values) if (n === 0 || out[n - 1] !== v) out[n++] = v;
  return out.subarray(0, n);
}

/** The union of two ascending lists of distinct values, ascending. */
function mergeDistinct(a: Float64Array, b: Float64Array): Float64Array {
  if (b.length === 0) return a.slice();
  if (a.length === 0) return b.slice();
  const out = new Float64Array(a.length + b.length);
  let n = 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as number;
    const y = b[j] as number;
    if (x < y) {
      out[n++] = x;
      i++;
    } else if (y < x) {
      out[n++] = y;
      j++;
    } else {
      out[n++] = x;
      i++;
      j++;
    }
  }
  while (i < a.length) out[n++] = a[i++] as number;
  while (j < b.length) out[n++] = b[j++] as number;
  return n === out.length ? out : out.slice(0, n);
}

const JSON_NUMBERS_PER_PIECE = 8192;

/** `toJson` of a list of numbers, in pieces of a few thousand. */
function* numbersJson(values: Float64Array): Generator<string> {
  yield '[';
  for (let i = 0; i < values.length; i += JSON_NUMBERS_PER_PIECE) {
    const part = Array.from(values.subarray(i, i + JSON_NUMBERS_PER_PIECE), (v) => toJson(v));
    yield `${i > 0 ? ',' : ''}${part.join(',')}`;
  }
  yield ']';
}

/** How many distinct seqs the lists of `origins` hold together (without listing them). */
function originCount(origins: readonly Origin[]): number {
  const seqs = new Set<number>();
  const seen = new Set<Origin>();
  const todo = [...origins];
  while (todo.length > 0) {
    const o = todo.pop() as Origin;
    if (seen.has(o)) continue;
    seen.add(o);
    for (const p of o.parts) {
      if (typeof p === 'number') seqs.add(p);
      else todo.push(p);
    }
  }
  return seqs.size;
}

interface CommandState {
  runSeq: number;
  /** The folded request header before the command/run. */
  header: HeaderPrice | null;
  name: unknown;
  doneSeq: number | null;
  doneKind: string | null;
  doneText: string | null;
  attempt: CompactionAttempt | null;
}

/**
 * The audit's state, walked once in log order. Its jobs, one method each:
 * where the log is (turn, step, last finish: {@link position}), `/compact`
 * commands ({@link onCommandRun}, {@link onCommandDone}), compaction brackets
 * ({@link onStart}, {@link onSummary}, {@link onEnd}, {@link onEndSeed}),
 * prunes ({@link onPrune}) and surface replacements ({@link onReplacement});
 * then {@link finish} classifies what stayed open and prices what landed.
 * Events come one at a time ({@link push}); it holds the events on the
 * folded surface (what DSH itself holds), never the log.
 */
export class CompactionAudit {
  private readonly lookup: DispatchLookup;
  /** The estimates and billed input of the dispatches {@link finish} reads (see {@link price}). */
  private readonly prices = new Map<number, DispatchPrice | { error: unknown }>();
  private readonly fold = new SurfaceFold(false);
  private readonly attempts: CompactionAttempt[] = [];
  private readonly byId = new Map<string, CompactionAttempt>();
  private readonly commands = new Map<string, CommandState>();
  /** The folded request header before each attempt's first event, priced. */
  private readonly headerAt = new Map<CompactionAttempt, HeaderPrice | null>();
  /** The data of each attempt's compaction/summary and compaction/prune (read when its replacement lands). */
  private readonly summaryData = new Map<CompactionAttempt, JsonRecord>();
  private readonly pruneData = new Map<CompactionAttempt, JsonRecord>();
  /** The events whose seqs are the fold's surface nodes. */
  private readonly nodeEvents = new NodeValues<SessionEvent>();
  /** The event being visited, the one before it, and the one pushed but not yet visited (a prune looks one ahead). */
  private current: SessionEvent | undefined;
  private previous: SessionEvent | undefined;
  private pending: SessionEvent | undefined;
  private headerBefore: EpochHeader | null = null;
  private count = 0;
  private readonly at: EventAt = (seq) => this.nodeEvents.get(seq) ?? (this.current?.seq === seq ? this.current : undefined);
  private readonly surfacePrices = new Map<CompactionAttempt, SurfacePrices>();
  private readonly pruneAt = new Map<number, CompactionAttempt>();
  /** Each audited replacement's recipe, by its seq, and each attempt's (its integrity's). */
  private readonly origin = new Map<number, Origin>();
  private readonly stands = new Map<CompactionAttempt, Origin>();
  private header: EpochHeader | null = null;
  /** {@link header} priced (header objects stay in force for many attempts). */
  private headerPriced: { of: EpochHeader | null; price: HeaderPrice | null } = { of: null, price: null };
  private openTurn: number | null = null;
  private lastStepOfTurn = 0;
  private step: StepState | null = null;
  private open: CompactionAttempt | undefined;
  private foldError: CompactionsReport['foldError'] = null;
  private lastPrunes: CompactionAttempt[] = [];

  /** `spans`: the dispatches' chunk spans, when known without reading every entry (a saved index). */
  constructor(dispatches: readonly DispatchEntry[], spans: DispatchSpans = spansOf(dispatches)) {
    this.lookup = new DispatchLookup(dispatches, spans);
  }

  /** The folded header before the event being visited, priced. */
  private priceBefore(): HeaderPrice | null {
    const h = this.headerBefore;
    if (this.headerPriced.of !== h) this.headerPriced = { of: h, price: headerPrice(h) };
    return this.headerPriced.price;
  }

  /** Keep the estimates and billed input of some (hydrated) entries of those {@link end} returned: {@link finish} reads only these. */
  price(entries: readonly DispatchEntry[]): void {
    for (const d of entries) {
      // A header the estimates cannot read fails in {@link finish}, in its order, as it would unpriced.
      try {
        this.prices.set(d.index, dispatchPrice(d));
      } catch (error) {
        this.prices.set(d.index, { error });
      }
    }
  }

  private priceOf(d: DispatchEntry): DispatchPrice {
    const p = this.prices.get(d.index);
    if (p === undefined) return dispatchPrice(d);
    if ('error' in p) throw p.error;
    return p;
  }

  /** The next logical event (in log order). */
  push(e: SessionEvent): void {
    if (this.pending) this.visit(this.pending, e);
    this.pending = e;
  }

  /** After the last event: the dispatches {@link finish} reads headers and usage of (to hydrate first). */
  end(): DispatchEntry[] {
    if (this.pending) this.visit(this.pending, undefined);
    this.pending = undefined;
    this.current = undefined;
    const out = new Set<DispatchEntry>();
    for (const a of this.attempts) {
      const lastBefore = this.lookup.lastBefore(a.firstSeq);
      const next = this.lookup.firstAfter(a.lastSeq);
      if (lastBefore) out.add(lastBefore);
      if (next) out.add(next);
    }
    return [...out];
  }

  /** One event: the surface fold first, then each job that event concerns. */
  private visit(e: SessionEvent, next: SessionEvent | undefined): void {
    this.current = e;
    this.count += 1;
    const d = rec(e.data);
    const isReplacement = isSurfaceEligibleType(e.type) && e.surfaceOp !== undefined && e.surfaceOp !== 'append';
    const before = isReplacement ? this.fold.nodes.slice() : null;
    this.nodeEvents.before(this.fold.nodes);
    if (this.foldError === null) {
      try {
        this.fold.apply(e);
      } catch (error) {
        if (error instanceof SurfaceError) this.foldError = { seq: error.seq, rule: error.rule, message: error.message };
        else this.foldError = { seq: e.seq, rule: '?', message: (error as Error).message };
      }
    }
    this.headerBefore = this.header;
    switch (e.type) {
      case 'turn/start':
        this.openTurn = typeof d['turn'] === 'number' ? d['turn'] : null;
        this.lastStepOfTurn = 0;
        this.step = null;
        break;
      case 'turn/end':
        this.openTurn = null;
        this.step = null;
        break;
      case 'step/start':
        // The step's numbers as logged (DSH's step/start writes numbers; the report carries whatever is there).
        this.step = { turn: d['turn'] as number, step: d['step'] as number, startSeq: e.seq, lastFinish: null };
        if (typeof d['step'] === 'number') this.lastStepOfTurn = d['step'];
        break;
      case 'step/end':
        this.step = null;
        break;
      case 'assistant/chunk':
        if (this.step && rec(d['chunk'])['type'] === 'finish') this.step.lastFinish = { seq: e.seq, reason: rec(d['chunk'])['reason'] };
        break;
      case 'request/header':
        this.header = canonicalHeader(d['header']);
        break;
      case 'command/run':
        this.onCommandRun(e, d);
        break;
      case 'command/done':
        this.onCommandDone(e, d);
        break;
      case 'session/end-seed':
        this.onEndSeed(e);
        break;
      case 'compaction/start':
        this.onStart(e, d);
        break;
      case 'compaction/summary':
        this.onSummary(e, d);
        break;
      case 'compaction/end':
        this.onEnd(e, d);
        break;
      case 'compaction/prune':
        this.onPrune(e, d, next);
        break;
      default:
        break;
    }
    if (e.type !== 'compaction/prune' && !(e.type === 'tool/result' && isReplacement)) this.lastPrunes = [];
    if (isReplacement && before) this.onReplacement(e, d, before, this.previous);
    this.nodeEvents.after(this.fold.nodes, e.seq, e, e.surfaceOp !== undefined && e.surfaceOp !== 'append');
    this.previous = e;
  }

  private newAttempt(kind: AttemptKind, firstSeq: number, trigger: TriggerInfo, header: HeaderPrice | null = this.priceBefore()): CompactionAttempt {
    const a: CompactionAttempt = {
      index: this.attempts.length,
      kind,
      compactionId: null,
      owner: undefined,
      sourceCommandId: null,
      seqs: { start: null, summary: null, replacement: null, end: null, prune: null },
      firstSeq,
      lastSeq: firstSeq,
      trigger,
      summaryCall: null,
      range: null,
      coverage: null,
      pairing: null,
      integrity: null,
      outcome: kind === 'compaction' ? 'unclosed' : 'applied',
      failure: null,
      lock: null,
      budget: null,
      nextRequest: { status: 'pending', reason: '', key: null, firstChunkSeq: null, headerSeq: null, messageCount: 0, retryOfFailedStep: false },
      precedesCompaction: null,
      notes: [],
    };
    this.attempts.push(a);
    this.headerAt.set(a, header);
    return a;
  }

  /** The bracket a record with this compactionId belongs to: the open one, else an earlier one. */
  private bracketOf(id: string | null): CompactionAttempt | undefined {
    return this.open && this.open.compactionId === id ? this.open : id !== null ? this.byId.get(id) : undefined;
  }

  /** Where an automatic attempt sits: pre-step pressure, failed-step recovery, or neither. */
  private position(owner: number | null | undefined, what: string): TriggerInfo {
    const step = this.step;
    if (owner === null) {
      return { kind: 'manual', detail: 'standalone bracket between turns (turn: null): a manual /compact', turn: null, step: null };
    }
    if (step !== null && this.openTurn !== null) {
      const f = step.lastFinish;
      const reason = rec(f?.reason);
      if (f && (reason['kind'] === 'error' || reason['kind'] === 'aborted')) {
        const failure = rec(reason['failure']);
        const code = str(failure['code']);
        const d = this.lookup.byLastChunk(f.seq);
        const failedDispatch = { key: d?.key ?? null, finishSeq: f.seq, code, message: str(failure['message']) };
        if (code === CWE) {
          return {
            kind: 'context-overflow',
            detail: `inside failed step ${stepKey(step.turn, step.step)}: ${d ? `dispatch ${d.key}` : 'the attempt'} finished ${String(reason['kind'])} with ${CWE} (finish chunk seq ${f.seq}); agent/request-error recovery`,
            turn: step.turn,
            step: step.step,
            failedDispatch,
          };
        }
        return {
          kind: 'request-error',
          detail: `inside failed step ${stepKey(step.turn, step.step)} after a ${String(reason['kind'])} finish with code ${code ?? '(none)'} (seq ${f.seq}); DSH's basic engine recovers only ${CWE}`,
          turn: step.turn,
          step: step.step,
          failedDispatch,
        };
      }
      return {
        kind: 'automatic',
        detail: `in-turn, inside open step ${stepKey(step.turn, step.step)} with no failed attempt before it (DSH's hooks compact before step/start or after a failed finish; this placement is the writer's)`,
        turn: step.turn,
        step: step.step,
      };
    }
    if (this.openTurn !== null) {
      return {
        kind: 'pressure',
        detail: `turn ${this.openTurn}, before step ${this.lastStepOfTurn + 1} (agent/pre-step: step-boundary pressure)`,
        turn: this.openTurn,
        step: this.lastStepOfTurn + 1,
      };
    }
    return {
      kind: 'unknown',
      detail: `${what} outside any open turn: no DSH trigger writes it there${what === 'compaction/prune' ? ' (its tool/result replacement also breaks DSH-E7: replacements need an open turn)' : ''}`,
      turn: null,
      step: null,
    };
  }

  private onCommandRun(e: SessionEvent, d: JsonRecord): void {
    const id = str(d['commandId']);
    if (id !== null) this.commands.set(id, { runSeq: e.seq, header: this.priceBefore(), name: d['name'], doneSeq: null, doneKind: null, doneText: null, attempt: null });
  }

  private onCommandDone(e: SessionEvent, d: JsonRecord): void {
    const id = str(d['commandId']);
    const c = id !== null ? this.commands.get(id) : undefined;
    if (!c) return;
    c.doneSeq = e.seq;
    c.doneKind = str(d['kind']);
    c.doneText = str(d['text']);
    if (c.name === 'compact' && c.attempt === null && id !== null) {
      // A /compact that never opened a bracket: busy, cancelled before start, or nothing to compact.
      const cls = c.doneText !== null ? classifyCommandText(c.doneText) : null;
      const a = this.newAttempt('compaction', c.runSeq, {
        kind: 'manual',
        detail: `/compact command ${toJson(id)} (command/run seq ${c.runSeq}) never opened a compaction bracket`,
        turn: null,
        step: null,
        command: { commandId: id, runSeq: c.runSeq, doneSeq: e.seq, doneKind: c.doneKind, doneText: c.doneText },
      }, c.header);
      a.sourceCommandId = id;
      a.lastSeq = e.seq;
      a.owner = null;
      if (cls === 'nothing') a.outcome = 'nothing-to-compact';
      else {
        a.outcome = 'not-started';
        if (cls !== null && cls !== 'success') a.failure = { class: cls, reason: cls, basis: 'command/done', text: c.doneText };
        else a.failure = { class: 'other', reason: 'unrecognized', basis: 'command/done', text: c.doneText };
      }
      c.attempt = a;
    } else if (c.attempt) {
      applyCommandOutcome(c.attempt, c.doneKind, c.doneText, e.seq);
    }
  }

  private onEndSeed(e: SessionEvent): void {
    if (!this.open) return;
    this.open.lock = { state: 'stale', endSeedSeq: e.seq, detail: `unmatched compaction/start seq ${this.open.seqs.start} is closed by session/end-seed seq ${e.seq}: its lifecycle ended (crash, exit or fork); DSH ignores it` };
    this.open = undefined;
  }

  private onStart(e: SessionEvent, d: JsonRecord): void {
    if (this.open) {
      this.open.lock = { state: 'superseded', endSeedSeq: null, detail: `unmatched compaction/start seq ${this.open.seqs.start} is followed by another compaction/start (seq ${e.seq}) with no session/end-seed between (DSH-F1 violation)` };
    }
    const owner = d['turn'] === null ? null : typeof d['turn'] === 'number' ? d['turn'] : undefined;
    const a = this.newAttempt('compaction', e.seq, this.position(owner, 'compaction/start'));
    a.compactionId = str(d['compactionId']);
    a.owner = owner;
    a.sourceCommandId = str(d['sourceCommandId']);
    a.seqs.start = e.seq;
    if (owner === undefined) a.notes.push(`compaction/start turn ${toJson(d['turn']) ?? 'undefined'} is neither a turn number nor null (DSH-F1)`);
    if (a.sourceCommandId !== null) {
      const c = this.commands.get(a.sourceCommandId);
      a.trigger.command = { commandId: a.sourceCommandId, runSeq: c?.runSeq ?? null, doneSeq: null, doneKind: null, doneText: null };
      if (c) {
        c.attempt = a;
        a.trigger.detail = `/compact command ${toJson(a.sourceCommandId)} (command/run seq ${c.runSeq}${c.name !== 'compact' ? `, name ${toJson(c.name)}` : ''})`;
      } else a.trigger.detail = `manual: sourceCommandId ${toJson(a.sourceCommandId)} (no command/run in the log)`;
      if (typeof owner === 'number') a.notes.push('a sourceCommandId on a numbered (in-turn) bracket: DSH writes manual brackets with turn: null');
    }
    if (a.compactionId !== null) {
      if (this.byId.has(a.compactionId)) a.notes.push(`compactionId ${toJson(a.compactionId)} was already used by an earlier bracket`);
      else this.byId.set(a.compactionId, a);
    }
    for (const p of this.lastPrunes) p.precedesCompaction = a.compactionId;
    this.open = a;
  }

  private onSummary(e: SessionEvent, d: JsonRecord): void {
    const id = str(d['compactionId']);
    let a = this.bracketOf(id);
    if (!a) {
      a = this.newAttempt('compaction', e.seq, orphanTrigger(this.position(undefined, 'compaction/summary')));
      a.compactionId = id;
    }
    if (a.seqs.summary !== null) a.notes.push(`a second compaction/summary (seq ${e.seq}) in one bracket`);
    else {
      a.seqs.summary = e.seq;
      this.summaryData.set(a, d);
      a.summaryCall = {
        seq: e.seq,
        provider: d['provider'],
        model: d['model'],
        maxTokens: d['maxTokens'] ?? null,
        usage: d['usage'] ?? null,
        llmStreamCall: d['llmStreamCall'] === true,
        summaryTokens: priceBlocks(d['summary']).tokens,
        summaryText: Array.isArray(d['summary']) ? (d['summary'] as BlockView[]).filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b!.text as string).join('\n') : '',
      };
    }
    a.lastSeq = e.seq;
  }

  private onEnd(e: SessionEvent, d: JsonRecord): void {
    const id = str(d['compactionId']);
    let a = this.bracketOf(id);
    if (!a) {
      a = this.newAttempt('compaction', e.seq, orphanTrigger(this.position(undefined, 'compaction/end')));
      a.compactionId = id;
      a.notes.push('compaction/end without a matching compaction/start (DSH-F1)');
    }
    a.seqs.end = e.seq;
    a.lastSeq = e.seq;
    if (d['error'] !== undefined) {
      a.outcome = 'failed';
      if (typeof d['error'] === 'string') a.failure = classifyCompactionError(d['error'], a.seqs.summary !== null);
      else {
        a.failure = { class: 'other', reason: 'non-string-error', basis: 'error text', text: toJson(d['error']) ?? String(d['error']) };
        a.notes.push('compaction/end error is not a string (DSH writes errorChain text)');
      }
      if (a.seqs.replacement !== null) a.notes.push('the bracket failed after its replacement landed: the surface was changed by a failed compaction');
    } else {
      a.outcome = 'succeeded';
      if (a.seqs.summary === null) a.notes.push('successful compaction/end without a compaction/summary (DSH-F1)');
      if (a.seqs.replacement === null) a.notes.push('successful compaction/end without a checkpoint replacement');
    }
    if (this.open === a) this.open = undefined;
  }

  private onPrune(e: SessionEvent, d: JsonRecord, next: SessionEvent | undefined): void {
    const a = this.newAttempt('prune', e.seq, this.position(undefined, 'compaction/prune'));
    a.seqs.prune = e.seq;
    this.pruneData.set(a, d);
    a.coverage = {
      covered: false,
      missing: [],
      citesStart: null,
      citesSummary: null,
      declaredMatches: null,
      declaredShadowedSeqs: Array.isArray(d['shadowedSeqs']) ? d['shadowedSeqs'] : null,
      declaredTokenCount: typeof d['shadowedTokenCount'] === 'number' ? d['shadowedTokenCount'] : null,
      estimatedShadowedTokens: null,
    };
    if (!(next?.type === 'tool/result' && next.surfaceOp !== undefined && next.surfaceOp !== 'append')) {
      a.outcome = 'failed';
      a.failure = { class: 'commit', reason: 'prune-without-replacement', basis: 'bracket shape', text: null };
      a.notes.push('compaction/prune is not immediately followed by its replacement tool/result (shadow-price adjacency broken)');
    }
    this.lastPrunes.push(a);
    this.pruneAt.set(e.seq, a);
  }

  /** A replacement that landed on the surface (`before`: the surface just before it): whose it is, what it shadowed. */
  private onReplacement(e: SessionEvent, d: JsonRecord, before: readonly number[], prev: SessionEvent | undefined): void {
    let a: CompactionAttempt | undefined;
    const source = rec(d['source']);
    if (e.type === 'user/message' && source['kind'] === 'plugin' && source['plugin'] === 'compact') {
      const id = str(source['compactionId']);
      a = this.bracketOf(id);
      if (!a) {
        a = this.newAttempt('compaction', e.seq, orphanTrigger(this.position(undefined, 'checkpoint replacement')));
        a.compactionId = id;
      }
      if (a.seqs.summary === null) a.notes.push('no compaction/summary precedes the checkpoint: its summary model call is unrecorded');
      else if (a.seqs.summary !== e.seq - 1) a.notes.push(`the checkpoint replacement does not immediately follow its compaction/summary (seq ${a.seqs.summary}; the adjacency is contractual)`);
    } else if (e.type === 'tool/result' && prev?.type === 'compaction/prune') {
      a = this.pruneAt.get(prev.seq);
    }
    if (!a) {
      a = this.newAttempt(e.type === 'tool/result' ? 'prune' : 'replacement', e.seq, this.position(undefined, `${e.type} replacement`));
      if (e.type === 'tool/result') a.notes.push('tool/result replacement with no compaction/prune shadow-price event before it (unpriced)');
      else a.notes.push(`a ${e.type} replacement that is neither a compaction checkpoint nor a prune`);
    }
    a.seqs.replacement = e.seq;
    a.lastSeq = Math.max(a.lastSeq, e.seq);
    const stands = auditReplacement(a, e, before, this.fold.nodes, this.at, this.origin, this.summaryData.get(a), this.pruneData.get(a));
    if (stands) this.stands.set(a, stands);
    this.surfacePrices.set(a, { before: priceNodes(before, this.at), after: priceNodes(this.fold.nodes, this.at), replacement: priceNodes([e.seq], this.at) });
  }

  /** After the last event: the lock left open, unclosed shapes, current holders, budgets, counts and verdicts. */
  /** {@link finish} with every attempt's `integrity.originSeqs` filled in: the whole report, held. */
  finishHeld(sessionId: string | null): CompactionsReport {
    const { report, full } = this.finish(sessionId);
    return { ...report, attempts: report.attempts.map(full) };
  }

  finish(sessionId: string | null): AuditedCompactions {
    const { attempts } = this;
    if (this.open) {
      this.open.lock = {
        state: 'active',
        endSeedSeq: null,
        detail: `compaction/start seq ${this.open.seqs.start} has no compaction/end and no later session/end-seed: DSH treats the compaction lock as active and refuses new compactions ('busy')`,
      };
    }
    classifyUnclosed(attempts);
    const finalNodes = this.fold.nodes.slice();
    resolveHolders(attempts, finalNodes);
    const finalHeader = headerPrice(this.header);
    const price = (d: DispatchEntry | null) => (d ? { d, ...this.priceOf(d) } : null);
    for (const a of attempts) {
      const lastBefore = price(this.lookup.lastBefore(a.firstSeq));
      const next = price(this.lookup.firstAfter(a.lastSeq));
      a.nextRequest = nextRequest(a, next, this.at, attempts, finalHeader, finalNodes);
      const priced = this.surfacePrices.get(a);
      if (a.range && priced) a.budget = budget(priced, lastBefore, next, this.headerAt.get(a) ?? null, finalHeader);
      // An entry of a saved index reads its surface from a shared snapshot again when asked.
      if (next) releaseSurfaceNodes(next.d);
    }
    const report: CompactionsReport = {
      sessionId,
      eventCount: this.count,
      surfaceNodes: finalNodes.length,
      replaceGeneration: this.fold.replaceGeneration,
      counts: countAttempts(attempts),
      attempts,
      verdicts: [],
      foldError: this.foldError,
    };
    const { stands } = this;
    report.verdicts = verdictsOf(report, this.lookup, (replaced) => originCount(replaced.map((a) => stands.get(a)).filter((o): o is Origin => o !== undefined)));
    return auditedOf(report, stands);
  }
}

/**
 * The finished audit with its printers. Made outside the audit's methods: a closure made in one
 * keeps that method's scope, `this` included, so the printers would hold the audit (its fold, its
 * dispatch lookup and, through it, the session's dispatch index) until the last attempt is printed.
 */
function auditedOf(report: CompactionsReport, stands: ReadonlyMap<CompactionAttempt, Origin>): AuditedCompactions {
  const lists = new OriginLists();
  const full = (a: CompactionAttempt): CompactionAttempt => {
    const o = stands.get(a);
    return o && a.integrity ? { ...a, integrity: { ...a.integrity, originSeqs: Array.from(lists.list(o)) } } : a;
  };
  function* json(a: CompactionAttempt): Generator<string> {
    const o = stands.get(a);
    if (!o || !a.integrity) {
      yield toJson(a);
      return;
    }
    const outer = toJsonAround({ ...a, integrity: null }, 'integrity');
    const inner = toJsonAround({ ...a.integrity, originSeqs: null }, 'originSeqs');
    yield `${outer.before}${inner.before}`;
    yield* numbersJson(lists.list(o));
    yield `${inner.after}${outer.after}`;
  }
  return { report, full, json };
}

/** Unclosed attempts: classified by shape (§9.2). */
function classifyUnclosed(attempts: readonly CompactionAttempt[]): void {
  for (const a of attempts) {
    if (a.outcome !== 'unclosed') continue;
    if (a.seqs.start === null) {
      a.outcome = 'unbracketed';
      a.notes.push('no compaction/start bracket at all: DSH\'s compaction invariant rejects it (DSH-F1); no lock, no recorded outcome');
      continue;
    }
    if (a.seqs.replacement !== null) a.notes.push('summary and replacement landed but compaction/end did not (the close append failed, or the process died)');
    else if (a.seqs.summary !== null) a.notes.push('a summary landed without its replacement and without compaction/end');
    // With a summary logged, DSH was in its commit stage; without one, the lock state is the finding.
    if (a.failure === null && a.seqs.summary !== null) a.failure = { class: 'commit', reason: 'unclosed-after-body', basis: 'bracket shape', text: null };
  }
}

/** Which node on the final surface now holds each attempt's replacement (through later replacements that shadowed it). */
function resolveHolders(attempts: readonly CompactionAttempt[], finalNodes: readonly number[]): void {
  const onSurface = new Set(finalNodes);
  const shadowedBy = new Map<number, number>();
  for (const a of attempts) if (a.range && a.seqs.replacement !== null) for (const s of a.range.shadowedSeqs) shadowedBy.set(s, a.seqs.replacement);
  for (const a of attempts) {
    if (!a.integrity || a.seqs.replacement === null) continue;
    let at: number | undefined = a.seqs.replacement;
    const seen = new Set<number>();
    while (at !== undefined && !onSurface.has(at) && !seen.has(at)) {
      seen.add(at);
      at = shadowedBy.get(at);
    }
    a.integrity.currentHolder = at !== undefined && onSurface.has(at) ? at : null;
    if (a.integrity.currentHolder === null) a.integrity.ok = false;
  }
}

function countAttempts(attempts: readonly CompactionAttempt[]): CompactionsReport['counts'] {
  return {
    compactions: attempts.filter((a) => a.kind === 'compaction' && a.outcome !== 'not-started' && a.outcome !== 'nothing-to-compact').length,
    succeeded: attempts.filter((a) => a.kind === 'compaction' && a.outcome === 'succeeded').length,
    failed: attempts.filter((a) => a.kind === 'compaction' && a.outcome === 'failed').length,
    unclosed: attempts.filter((a) => a.outcome === 'unclosed').length,
    unbracketed: attempts.filter((a) => a.outcome === 'unbracketed').length,
    prunes: attempts.filter((a) => a.kind === 'prune').length,
    otherReplacements: attempts.filter((a) => a.kind === 'replacement').length,
    notStarted: attempts.filter((a) => a.outcome === 'not-started' || a.outcome === 'nothing-to-compact').length,
    activeLocks: attempts.filter((a) => a.lock?.state === 'active').length,
    staleLocks: attempts.filter((a) => a.lock?.state === 'stale').length,
  };
}

/** A `/compact` command's `command/done` on the attempt it opened: DSH's typed outcome for a manual attempt is authoritative. */
function applyCommandOutcome(a: CompactionAttempt, kind: string | null, text: string | null, seq: number): void {
  if (a.trigger.command) {
    a.trigger.command.doneSeq = seq;
    a.trigger.command.doneKind = kind;
    a.trigger.command.doneText = text;
  }
  a.lastSeq = Math.max(a.lastSeq, seq);
  const cls = text !== null ? classifyCommandText(text) : null;
  if (cls === null || cls === 'success' || cls === 'nothing') {
    if (kind === 'error' && a.outcome === 'succeeded') a.notes.push(`the /compact command reported an error (${toJson(text)}) for a closed successful bracket`);
    return;
  }
  if (a.failure && a.failure.class !== cls && a.failure.class !== 'other') {
    a.notes.push(`the logged error reads as '${a.failure.class}' but /compact reported '${cls}'`);
  }
  a.failure = { class: cls, reason: a.failure?.reason ?? cls, basis: 'command/done', text: a.failure?.text ?? text };
  if (cls === 'persistence') a.notes.push('the bracket closed successfully but its durability checkpoint (flush) failed: the compaction may be missing from storage after a crash');
}

/** A record with no compaction/start: its owner is unknown, so only its position is reported. */
function orphanTrigger(t: TriggerInfo): TriggerInfo {
  return { ...t, kind: 'unknown', detail: `no compaction/start (owner unknown); position: ${t.detail}` };
}

/**
 * The dispatches around an attempt, found by their chunk spans (numbers: an entry of a saved index is
 * built only when returned): binary searches when the spans ascend (as in any log DSH writes: one
 * dispatch at a time), else the scans they stand for.
 */
class DispatchLookup {
  private readonly ascending: boolean;
  private readonly n: number;
  /** The dispatch whose last chunk has a seq (the last such one). */
  private readonly byLast = new Map<number, number>();
  private maxFirst = -Infinity;
  constructor(
    private readonly d: readonly DispatchEntry[],
    private readonly spans: DispatchSpans,
  ) {
    const { first, last } = spans;
    this.n = first.length;
    let ok = true;
    for (let i = 0; i < this.n; i++) {
      this.byLast.set(last[i] as number, i);
      if (i > 0) ok &&= (first[i - 1] as number) <= (first[i] as number) && (last[i - 1] as number) <= (last[i] as number);
      if ((first[i] as number) > this.maxFirst) this.maxFirst = first[i] as number;
    }
    this.ascending = ok;
  }

  private at(i: number): DispatchEntry | null {
    return i >= 0 && i < this.n ? (this.d[i] as DispatchEntry) : null;
  }

  /** The first index whose value fails `before` (all before it pass), on ascending spans. */
  private cut(values: ArrayLike<number>, before: (v: number) => boolean): number {
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(values[mid] as number)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The dispatch before the first one whose last chunk is not before `seq`. */
  lastBefore(seq: number): DispatchEntry | null {
    const { last } = this.spans;
    if (this.ascending) return this.at(this.cut(last, (v) => v < seq) - 1);
    let out = -1;
    for (let i = 0; i < this.n && (last[i] as number) < seq; i++) out = i;
    return this.at(out);
  }

  /** The first dispatch whose first chunk is after `seq`. */
  firstAfter(seq: number): DispatchEntry | null {
    const { first } = this.spans;
    if (this.ascending) return this.at(this.cut(first, (v) => v <= seq));
    for (let i = 0; i < this.n; i++) if ((first[i] as number) > seq) return this.at(i);
    return null;
  }

  /** Whether any dispatch's first chunk is after `seq`. */
  anyAfter(seq: number): boolean {
    return this.maxFirst > seq;
  }

  /** The dispatch whose last chunk is `seq`, if any. */
  byLastChunk(seq: number): DispatchEntry | undefined {
    const i = this.byLast.get(seq);
    return i === undefined ? undefined : (this.d[i] as DispatchEntry);
  }
}

/** A dispatch next to an attempt, with its prices. */
type PricedDispatch = DispatchPrice & { d: DispatchEntry };

function usagePoint(p: PricedDispatch | null): UsagePoint | null {
  if (!p || p.billed === null) return null;
  return { key: p.d.key, firstChunkSeq: p.d.firstChunkSeq, billedInput: p.billed };
}

interface SurfacePrices {
  before: { messages: number; tokens: number; chars: number };
  after: { messages: number; tokens: number; chars: number };
  replacement: { messages: number; tokens: number; chars: number };
}

function auditReplacement(
  a: CompactionAttempt,
  e: SessionEvent,
  before: readonly number[],
  after: readonly number[],
  at: EventAt,
  origin: Map<number, Origin>,
  summary: JsonRecord | undefined,
  prune: JsonRecord | undefined,
): Origin | undefined {
  const op = e.surfaceOp as { start: number; end: number };
  const startIdx = before.indexOf(op.start);
  const endIdx = before.indexOf(op.end);
  if (startIdx < 0 || endIdx < 0 || startIdx > endIdx) {
    a.notes.push(`the replacement's span ${op.start}..${op.end} is not on the surface (the fold refuses it)`);
    return undefined;
  }
  const shadowed = before.slice(startIdx, endIdx + 1);
  a.range = { start: op.start, end: op.end, startPosition: startIdx, endPosition: endIdx, surfaceLengthBefore: before.length, shadowedSeqs: shadowed };
  const sources = new Set(Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs : []);
  const missing = shadowed.filter((s) => !sources.has(s));
  const prior = a.coverage;
  let declared: number[] | null = prior?.declaredShadowedSeqs ?? null;
  let declaredRange: { start: unknown; end: unknown } | null = null;
  let tokenCount: number | null = prior?.declaredTokenCount ?? null;
  if (a.kind === 'compaction' && a.seqs.summary !== null) {
    const s = rec(summary);
    declared = Array.isArray(s['shadowedSeqs']) ? s['shadowedSeqs'] : null;
    declaredRange = rec(s['shadowedRange']) as { start: unknown; end: unknown };
    tokenCount = typeof s['shadowedTokenCount'] === 'number' ? s['shadowedTokenCount'] : null;
  } else if (a.seqs.prune !== null) {
    declaredRange = rec(rec(prune)['shadowedRange']) as { start: unknown; end: unknown };
  }
  let declaredMatches: boolean | null = null;
  if (declared !== null) {
    declaredMatches =
      toJson(declared) === toJson(shadowed) && (declaredRange === null || (declaredRange.start === op.start && declaredRange.end === op.end));
    if (!declaredMatches) a.notes.push(`declared shadowedSeqs [${declared.join(', ')}] / range ${toJson(declaredRange)} differ from the fold's [${shadowed.join(', ')}] (${op.start}..${op.end})`);
  }
  a.coverage = {
    covered: missing.length === 0,
    missing,
    citesStart: a.kind === 'compaction' ? a.seqs.start !== null && sources.has(a.seqs.start) : null,
    citesSummary: a.kind === 'compaction' ? a.seqs.summary !== null && sources.has(a.seqs.summary) : null,
    declaredMatches,
    declaredShadowedSeqs: declared,
    declaredTokenCount: tokenCount,
    estimatedShadowedTokens: priceNodes(shadowed, at).tokens,
  };
  a.pairing = toolPairing(before, startIdx, endIdx, after, at, e.type === 'tool/result');
  const missingEvents = shadowed.filter((s) => {
    const x = at(s);
    return !x || x.seq !== s || !isSurfaceEligibleType(x.type);
  });
  const shadowedReplacements = shadowed.filter((s) => {
    const x = at(s);
    return x !== undefined && x.surfaceOp !== undefined && x.surfaceOp !== 'append';
  });
  const stands = new Origin(shadowed.map((s) => origin.get(s)?.used() ?? s));
  origin.set(e.seq, stands);
  // originSeqs is filled in from `stands` when the attempt is passed on (see CompactionOrigins).
  a.integrity = { missingEvents, shadowedReplacements, originSeqs: [], currentHolder: null, ok: missingEvents.length === 0 };
  return stands;
}

function budget(p: SurfacePrices, lastBefore: PricedDispatch | null, next: PricedDispatch | null, headerBefore: HeaderPrice | null, finalHeader: HeaderPrice | null): BudgetInfo {
  const hBefore = headerBefore ?? lastBefore?.header ?? null;
  const hNext = next ? next.header : finalHeader;
  const headerTokensBefore = (hBefore?.system ?? 0) + (hBefore?.tools ?? 0);
  const systemTokensNext = hNext?.system ?? 0;
  const toolsTokensNext = hNext?.tools ?? 0;
  const headerTokensNext = systemTokensNext + toolsTokensNext;
  const saved = p.before.tokens - p.after.tokens;
  const netGain = p.before.tokens + headerTokensBefore - (p.after.tokens + headerTokensNext);
  return {
    messagesBefore: p.before.messages,
    messagesAfter: p.after.messages,
    charsBefore: p.before.chars,
    charsAfter: p.after.chars,
    messageTokensBefore: p.before.tokens,
    messageTokensAfter: p.after.tokens,
    savedMessageTokens: saved,
    replacementTokens: p.replacement.tokens,
    headerTokensBefore,
    systemTokensNext,
    toolsTokensNext,
    headerTokensNext,
    netGain,
    eatenByHeader: saved > 0 && netGain <= 0,
    usageBefore: usagePoint(lastBefore),
    usageAfter: usagePoint(next),
  };
}

function nextRequest(
  a: CompactionAttempt,
  priced: PricedDispatch | null,
  at: EventAt,
  attempts: readonly CompactionAttempt[],
  finalHeader: HeaderPrice | null,
  finalNodes: readonly number[],
): NextRequestInfo {
  const next = priced?.d;
  const rep = a.seqs.replacement;
  const shadowed = a.range?.shadowedSeqs ?? [];
  const check = (nodes: readonly number[], hdr: HeaderPrice | null, count: number): string | null => {
    if (hdr === null) return 'no request/header precedes it: system prompt, tools and model are unknown (DSH-F3)';
    if (count === 0) return 'its surface derives no messages';
    const set = new Set(nodes);
    const stillSent = shadowed.filter((s) => set.has(s));
    if (stillSent.length > 0) return `shadowed seq(s) ${stillSent.join(', ')} are still on its surface`;
    if (rep !== null && !set.has(rep)) {
      // The replacement may itself have been shadowed by a later replacement before this request.
      const later = attempts.find((x) => x.seqs.replacement !== null && x.seqs.replacement > rep && (x.range?.shadowedSeqs ?? []).includes(rep));
      if (!later) return `the replacement (seq ${rep}) is not on its surface and no later replacement shadowed it`;
    }
    return null;
  };
  if (next) {
    const nodes = next.surfaceNodes;
    const reason = check(nodes, priced!.header, next.messageCount);
    const retry = a.trigger.kind === 'context-overflow' || a.trigger.kind === 'request-error' ? next.turn === a.trigger.turn && next.step === a.trigger.step : false;
    return {
      status: reason === null ? 'ok' : 'not-reconstructable',
      reason: reason ?? `${next.messageCount} message(s) derived over the prefix before seq ${next.firstChunkSeq}; header from seq ${next.headerSeq}`,
      key: next.key,
      firstChunkSeq: next.firstChunkSeq,
      headerSeq: next.headerSeq,
      messageCount: next.messageCount,
      retryOfFailedStep: retry,
    };
  }
  const count = finalNodes.filter((s) => {
    const e = at(s);
    return e !== undefined && deriveEventMessage(e) !== null;
  }).length;
  const reason = check(finalNodes, finalHeader, count);
  return {
    status: reason === null ? 'pending' : 'not-reconstructable',
    reason: reason === null ? `no dispatch after it yet; the next request would carry ${count} message(s) under the folded header` : `no dispatch after it, and the next one could not be built: ${reason}`,
    key: null,
    firstChunkSeq: null,
    headerSeq: null,
    messageCount: count,
    retryOfFailedStep: false,
  };
}

// ---------------------------------------------------------------- verdicts

const TITLES: Record<Verdict['item'], string> = {
  'raw-facts': 'Raw fact integrity',
  surface: 'Surface legality',
  request: 'Request reconstructable',
  failure: 'Failure recovery',
  budget: 'Budget gain',
};

/** `appendOrigins`: how many distinct append-origin events the `integrity.originSeqs` of some attempts list together. */
function verdictsOf(r: CompactionsReport, dispatches: DispatchLookup, appendOrigins: (attempts: readonly CompactionAttempt[]) => number): Verdict[] {
  const v = (item: Verdict['item'], state: VerdictState, detail: string): Verdict => ({ item, title: TITLES[item], state, detail });
  const replaced = r.attempts.filter((a) => a.seqs.replacement !== null);
  const any = r.attempts.length > 0;
  const out: Verdict[] = [];
  const label = (a: CompactionAttempt) => `#${a.index + 1}`;

  // Raw facts.
  if (!replaced.length) out.push(v('raw-facts', 'n/a', any ? 'no replacement landed' : 'no compaction, prune or replacement in this log'));
  else {
    const bad: string[] = [];
    const warn: string[] = [];
    for (const a of replaced) {
      if (!a.range) bad.push(`${label(a)} span not on the surface`);
      if (a.integrity && a.integrity.missingEvents.length) bad.push(`${label(a)} shadowed events missing: ${a.integrity.missingEvents.join(', ')}`);
      if (a.integrity && a.integrity.currentHolder === null) bad.push(`${label(a)} its facts trace to no node on the current surface`);
      if (a.coverage && !a.coverage.covered) bad.push(`${label(a)} does not cite shadowed ${a.coverage.missing.join(', ')}`);
      if (a.coverage?.declaredMatches === false) bad.push(`${label(a)} declared shadowedSeqs differ from the fold`);
      if (a.kind === 'compaction' && (a.coverage?.citesStart === false || a.coverage?.citesSummary === false)) warn.push(`${label(a)} does not cite its compaction/start+summary`);
    }
    const total = replaced.reduce((n, a) => n + (a.range?.shadowedSeqs.length ?? 0), 0);
    if (bad.length) out.push(v('raw-facts', 'fail', bad.join('; ')));
    else if (warn.length) out.push(v('raw-facts', 'warn', warn.join('; ')));
    else {
      out.push(v('raw-facts', 'pass', `${total} shadowed node(s) across ${replaced.length} replacement(s) (${appendOrigins(replaced)} append-origin event(s)): all still in the log, cited by sourceEventSeqs, equal to the declared shadowedSeqs, traceable to the current surface`));
    }
  }

  // Surface legality.
  if (r.foldError) out.push(v('surface', 'fail', `the surface fold refuses seq ${r.foldError.seq} (${r.foldError.rule}): ${r.foldError.message}`));
  else if (!replaced.length) out.push(v('surface', 'n/a', 'no replacement'));
  else {
    const bad: string[] = [];
    const warn: string[] = [];
    for (const a of replaced) {
      const p = a.pairing;
      if (!p) continue;
      for (const o of p.orphanCalls) bad.push(`${label(a)} leaves tool call ${o.callId} (seq ${o.survivingSeq}) without its result (shadowed seq ${o.shadowedSeq})`);
      for (const o of p.orphanResults) bad.push(`${label(a)} leaves the result of ${o.callId} (seq ${o.survivingSeq}) without its call (shadowed seq ${o.shadowedSeq})`);
      if (p.ok && (p.balancedBefore === false || p.balancedAfter === false)) warn.push(`${label(a)} cuts at an unbalanced boundary (${p.balancedBefore === false ? 'before start' : 'after end'})`);
    }
    if (bad.length) out.push(v('surface', 'fail', bad.join('; ')));
    else if (warn.length) out.push(v('surface', 'warn', warn.join('; ')));
    else out.push(v('surface', 'pass', `the fold accepts all ${replaced.length} replacement(s); no tool call/result split across a boundary`));
  }

  // Request reconstructable.
  if (!any) out.push(v('request', 'n/a', 'nothing to check'));
  else {
    const bad = r.attempts.filter((a) => a.nextRequest.status === 'not-reconstructable').map((a) => `${label(a)}: ${a.nextRequest.reason}`);
    const ok = r.attempts.filter((a) => a.nextRequest.status === 'ok').length;
    const pending = r.attempts.filter((a) => a.nextRequest.status === 'pending').length;
    if (bad.length) out.push(v('request', 'fail', bad.join('; ')));
    else out.push(v('request', 'pass', `${ok} next request(s) rebuilt (header + messages)${pending ? `; ${pending} not dispatched yet but buildable` : ''}`));
  }

  // Failure recovery.
  const failed = r.attempts.filter((a) => a.failure !== null);
  const locks = r.attempts.filter((a) => a.lock !== null);
  const unbracketed = r.attempts.filter((a) => a.outcome === 'unbracketed');
  const hollow = r.attempts.filter((a) => a.kind === 'compaction' && a.outcome === 'succeeded' && a.seqs.replacement === null);
  if (!failed.length && !locks.length && !unbracketed.length && !hollow.length) out.push(v('failure', any ? 'pass' : 'n/a', any ? 'no failed or unclosed attempt' : 'nothing to check'));
  else {
    const bad: string[] = [];
    const warn: string[] = [];
    const info: string[] = [];
    for (const a of r.attempts) {
      if (a.kind === 'compaction' && a.outcome === 'succeeded' && a.seqs.replacement === null) warn.push(`${label(a)} closed as successful but landed no checkpoint replacement`);
    }
    for (const a of unbracketed) warn.push(`${label(a)} ${a.kind === 'compaction' ? 'checkpoint' : 'record'} without a compaction/start..end bracket (DSH-F1): no recorded outcome`);
    for (const a of locks) {
      if (a.lock?.state === 'active') bad.push(`${label(a)} orphan lock is active (start seq ${a.seqs.start})`);
      else if (a.lock?.state === 'superseded') warn.push(`${label(a)} unmatched start superseded by a later bracket`);
      else info.push(`${label(a)} stale lock (end-seed seq ${a.lock?.endSeedSeq})`);
    }
    for (const a of failed) {
      const f = a.failure as FailureInfo;
      if (f.class === 'other') warn.push(`${label(a)} failure not classified: ${toJson(f.text)}`);
      else info.push(`${label(a)} ${f.class}${f.reason !== f.class ? ` (${f.reason})` : ''}`);
      if (f.class === 'commit' && dispatches.anyAfter(a.lastSeq)) warn.push(`${label(a)} commit-stage failure: the surface may be partly changed, yet execution continued`);
    }
    const state: VerdictState = bad.length ? 'fail' : warn.length ? 'warn' : 'pass';
    out.push(v('failure', state, [...bad, ...warn, ...info].join('; ')));
  }

  // Budget gain.
  const budgets = replaced.filter((a) => a.budget !== null && a.outcome !== 'failed');
  if (!budgets.length) out.push(v('budget', 'n/a', 'no applied replacement'));
  else {
    const bad: string[] = [];
    const warn: string[] = [];
    let net = 0;
    for (const a of budgets) {
      const b = a.budget as BudgetInfo;
      net += b.netGain;
      if (b.netGain <= 0) bad.push(`${label(a)} net ${b.netGain} est. tokens${b.eatenByHeader ? ` (messages −${b.savedMessageTokens}, header +${b.headerTokensNext - b.headerTokensBefore})` : ''}`);
      if (b.savedMessageTokens <= 0 && b.netGain > 0) warn.push(`${label(a)} saved no message tokens (gain only from a header change)`);
    }
    if (bad.length) out.push(v('budget', 'fail', bad.join('; ')));
    else if (warn.length) out.push(v('budget', 'warn', `net −${net} est. tokens; ${warn.join('; ')}`));
    else out.push(v('budget', 'pass', `net −${net} est. tokens over ${budgets.length} replacement(s) (messages + system + tools)`));
  }
  return out;
}

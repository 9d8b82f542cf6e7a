/**
 * The rows of one session, for every table but `findings` (which come from
 * the check engine): one validated read of the logical log (held for small
 * logs, two passes for large ones), each event handed to the folds the views
 * use — surface labels, the dispatch index, the compaction audit — so every
 * row equals what the corresponding `dsh` view prints.
 */
import { forEachLogicalEvent, logicalEventJson, SINGLE_PASS_BYTES } from '../log/logical-stream.js';
import { heldBytesBudget } from '../log/inspect.js';
import { inspectTarget } from '../log/session.js';
import type { ResolvedTarget } from '../log/target.js';
import type { KindView, KnownEvent, SessionEvent, SessionHeader } from '../log/types.js';
import { assistantCalls, resultCallId } from '../views/tool-pairs.js';
import type { FrameDecoder } from '../physical/decoders.js';
import { Labels } from '../views/labels.js';
import { DispatchBuilder, summarizeDispatch, type DispatchEntry } from '../views/requests.js';
import { auditCompactions, type CompactionAttempt } from '../views/compactions.js';
import { healthOf, sessionKind } from '../views/listing.js';
import { isErrorResult } from '../views/stats.js';
import { priceDispatch, shippedPriceTable } from '../views/prices.js';
import { CONTEXT_CATEGORIES, contextOf, type ContextView } from '../views/context.js';
import { extractSessionEventText } from '../views/search.js';
import type { Redactor } from '../views/redactor.js';
import type { Row, TableName } from './schema.js';
import { toJson } from '../core/json.js';

export interface SessionRowsOptions {
  decoder?: FrameDecoder;
  /** Write `text` and `data_json` columns. */
  content?: boolean;
  /** Redact content (a fresh redactor per session: its cwd is the session's). */
  redactor?: () => Redactor;
  /** Artifact identity recorded in the sessions row. */
  identity: string;
  /** Session ids of the same root (for lineage `parent_found`). */
  rootIds?: ReadonlySet<string>;
}

/** Receives rows as they are produced (events stream; the other tables come at the end). */
export type RowSink = (table: TableName, rows: Row[]) => void;

const EVENT_BATCH = 8192;

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function json(v: unknown): string | null {
  return v === undefined || v === null ? null : toJson(v);
}

/** Per-call tool rows, with the rules `dsh stats` counts by (appended results only, matched by callId). */
class ToolCallFold {
  private rows: Row[] = [];
  private open = new Map<string, { row: Row; time: number }>();
  private blockNames = new Map<string, string>();
  constructor(private readonly sessionId: string | null) {}
  observe(e: SessionEvent, synthetic: boolean): void {
    const d = (e.data ?? {}) as NonNullable<KnownEvent<'tool/result'>['data']>;
    if (e.type === 'assistant/message') {
      for (const { id, block } of assistantCalls(e)) if (typeof block.name === 'string') this.blockNames.set(id, block.name);
    } else if (e.type === 'tool/call') {
      const row: Row = {
        session_id: this.sessionId,
        call_id: str(d.callId) ?? (d.callId !== undefined ? String(d.callId) : null),
        tool: typeof d.name === 'string' ? d.name : null,
        turn: num(d.turn),
        step: num(d.step),
        call_seq: e.seq,
        result_seq: null,
        outcome: 'pending',
        duration_ms: null,
        error_code: null,
        error_message: null,
      };
      this.rows.push(row);
      this.open.set(String(d.callId), { row, time: e.time });
    } else if (e.type === 'tool/result' && e.surfaceOp === 'append') {
      const callId = resultCallId(e);
      const pending = typeof callId === 'string' ? this.open.get(callId) : undefined;
      const row: Row = pending?.row ?? {
        session_id: this.sessionId,
        call_id: str(callId),
        tool: typeof callId === 'string' ? (this.blockNames.get(callId) ?? null) : null,
        turn: num(d.turn),
        step: num(d.step),
        call_seq: null,
      };
      if (pending) this.open.delete(callId as string);
      else this.rows.push(row);
      row.result_seq = e.seq;
      row.outcome = synthetic ? 'unknown' : isErrorResult(e) ? 'error' : 'ok';
      row.duration_ms = pending ? Math.max(0, e.time - pending.time) : null;
      row.error_code = str(d.error?.code);
      row.error_message = str(d.error?.message);
    }
  }
  finish(): Row[] {
    return this.rows;
  }
}

/** A dispatch's cost in USD from the shipped price table; null when it has no usage or is unpriced, never zero. */
function dispatchCostUsd(entry: DispatchEntry): number | null {
  const table = shippedPriceTable();
  const p = table === null ? null : priceDispatch(entry, table);
  return p?.priced ? Number(p.atto) / 1e18 : null;
}

function dispatchRow(sessionId: string | null, entry: DispatchEntry, prev: DispatchEntry | null): Row {
  const s = summarizeDispatch(entry, prev);
  const usage = s.usage as Record<string, unknown> | null;
  const finish = s.finish as (KindView & { error?: KindView }) | null;
  return {
    session_id: sessionId,
    index: s.index,
    key: s.key,
    turn: entry.turn,
    step: entry.step,
    attempt: entry.attemptInStep,
    first_chunk_seq: s.firstChunkSeq,
    last_chunk_seq: s.lastChunkSeq,
    chunk_count: entry.chunkCount,
    finish: json(s.finish),
    finish_kind: finish && typeof finish === 'object' ? str(finish['kind']) : str(finish),
    error_code: finish && typeof finish === 'object' ? str(finish['error']?.code) : null,
    header_seq: s.headerSeq,
    header_changes: s.headerChanges.join(','),
    assistant_message_seq: s.assistantMessageSeq,
    message_count: s.messageCount,
    provider: s.provider,
    model: s.model,
    usage_from: s.usageFrom,
    prompt_tokens: num(usage?.['inputTokens']),
    output_tokens: num(usage?.['outputTokens']),
    cache_read_tokens: num(usage?.['cacheReadTokens']),
    cache_write_tokens: num(usage?.['cacheWriteTokens']),
    usage_json: json(s.usage),
    duration_ms: s.durationMs,
    start_time: s.startTime,
    cost_usd: dispatchCostUsd(entry),
  };
}

function contextRows(sessionId: string | null, v: ContextView): Row[] {
  const out: Row[] = [];
  for (const r of v.dispatches) {
    for (const c of CONTEXT_CATEGORIES) {
      out.push({
        session_id: sessionId,
        dispatch_index: r.index,
        key: r.key,
        turn: r.turn,
        first_chunk_seq: r.firstChunkSeq,
        time: num(r.time),
        model: r.model,
        category: c,
        bytes: r.byCategory[c],
        tokens: r.tokensByCategory ? r.tokensByCategory[c] : null,
        request_bytes: r.bytes,
        prompt_tokens: r.promptTokens,
        context_window: r.contextWindow,
        fill_percent: r.fillPercent,
        shared_prefix_bytes: r.cache.sharedBytes,
        cache_read_tokens: r.cache.cacheReadTokens,
      });
    }
  }
  return out;
}

function breakRows(sessionId: string | null, v: ContextView): Row[] {
  return v.breaks.map((b) => ({
    session_id: sessionId,
    dispatch_index: b.index,
    key: b.key,
    first_chunk_seq: b.firstChunkSeq,
    time: num(b.time),
    previous_key: b.previous,
    cause: b.cause,
    cause_seq: b.causeSeq,
    fields: b.fields ? b.fields.join(',') : null,
    position: b.at.position,
    element: b.at.element,
    element_seq: b.at.seq,
    resent_bytes: b.resentBytes,
    resent_tokens: b.resentTokens,
    uncached_cost_usd: b.cost?.priced ? Number(b.cost.uncached) : null,
    extra_cost_usd: b.cost?.priced ? Number(b.cost.extra) : null,
    detail: b.detail,
  }));
}

function compactionRow(sessionId: string | null, a: CompactionAttempt): Row {
  const usage = a.summaryCall?.usage as Record<string, unknown> | null | undefined;
  return {
    session_id: sessionId,
    index: a.index,
    kind: a.kind,
    compaction_id: a.compactionId,
    first_seq: a.firstSeq,
    last_seq: a.lastSeq,
    start_seq: a.seqs.start,
    summary_seq: a.seqs.summary,
    replacement_seq: a.seqs.replacement,
    end_seq: a.seqs.end,
    prune_seq: a.seqs.prune,
    trigger: a.trigger.kind,
    outcome: a.outcome,
    failure_class: a.failure?.class ?? null,
    failure_reason: a.failure?.reason ?? null,
    lock_state: a.lock?.state ?? null,
    shadowed_nodes: a.range ? a.range.shadowedSeqs.length : null,
    summary_input_tokens: num(usage?.['inputTokens']),
    summary_output_tokens: num(usage?.['outputTokens']),
    net_gain_tokens: a.budget ? a.budget.netGain : null,
    attempt_json: toJson(a),
  };
}

function lineageRow(h: SessionHeader, rootIds: ReadonlySet<string> | undefined): Row | undefined {
  if (h.parentSession === undefined) return undefined;
  return {
    session_id: h.id,
    parent_session: h.parentSession,
    kind: sessionKind(h),
    seed_length: h.seedLength ?? null,
    delegation_depth: num(h.delegationDepth),
    agent_preset: h.agentPreset ?? null,
    parent_found: rootIds ? rootIds.has(h.parentSession) : null,
  };
}

const COMPACTION_TYPES = /^compaction\//;

/**
 * Read one session and hand its rows to `sink`. Never throws for log problems:
 * a log DSH refuses (or cannot read) gets its `sessions` row with DSH's error
 * and no other rows.
 */
export async function sessionRows(target: ResolvedTarget, options: SessionRowsOptions, sink: RowSink): Promise<{ sessionId: string | null; loaded: boolean; warnings: string[] }> {
  let size = 0;
  let logicalBytes = 0;
  const warnings: string[] = [];
  try {
    const s = target.open();
    size = s.size;
    s.close();
  } catch {
    size = 0;
  }
  let sessionId: string | null = target.expectedId ?? null;
  let batch: Row[] = [];
  let currentTurn: number | undefined;
  let title: string | null = null;
  let compactionActivity = false;
  const held: SessionEvent[] | undefined = size <= SINGLE_PASS_BYTES ? [] : undefined;
  const builder = new DispatchBuilder({ lazy: () => [] });
  let tools: ToolCallFold | undefined;
  let redactor: Redactor | undefined;
  const r = await forEachLogicalEvent(target, { ...(options.decoder ? { decoder: options.decoder } : {}) }, (valid) => {
    sessionId = valid.meta?.id ?? sessionId;
    const labels = new Labels(valid.surface!.nodes, valid.surface!.replacements);
    tools = new ToolCallFold(sessionId);
    if (options.content && options.redactor) {
      redactor = options.redactor();
      redactor.setCwd(valid.meta?.cwd);
    }
    return (e, text, synthetic) => {
      if (e.type === 'turn/start') currentTurn = e.data?.turn as number | undefined; // as logged
      if (e.type === 'session/title') title = typeof e.data?.title === 'string' ? e.data.title : null;
      if (COMPACTION_TYPES.test(e.type) || (typeof e.surfaceOp === 'object' && e.surfaceOp !== null)) compactionActivity = true;
      held?.push(e);
      builder.apply(e);
      tools!.observe(e, synthetic);
      const bytes = Buffer.byteLength(logicalEventJson(e, text));
      logicalBytes += bytes;
      const op = e.surfaceOp;
      const row: Row = {
        session_id: sessionId,
        seq: e.seq,
        type: e.type,
        time: e.time,
        turn: typeof e.data?.turn === 'number' ? e.data.turn : (currentTurn ?? null),
        step: num(e.data?.step),
        label: labels.ofEvent(e),
        logical_bytes: bytes,
        surface_op: op === undefined ? null : op === 'append' ? 'append' : 'replace',
        replace_start: typeof op === 'object' ? op.start : null,
        replace_end: typeof op === 'object' ? op.end : null,
        synthetic,
      };
      if (options.content) {
        const t = extractSessionEventText(e);
        const data = e.data === undefined ? null : toJson(e.data);
        row['text'] = redactor ? redactor.redactText(t, { seq: e.seq }) : t;
        row['data_json'] = data !== null && redactor ? toJson((redactor.redactRecord({ seq: e.seq, data: e.data }) as { data: unknown }).data) : data;
      }
      batch.push(row);
      if (batch.length >= EVENT_BATCH) {
        sink('events', batch);
        batch = [];
      }
    };
  });
  const meta = r.meta ?? r.artifact.meta ?? null;
  sessionId = meta?.id ?? sessionId;
  sink('sessions', [
    {
      session_id: sessionId,
      root: target.root ?? null,
      path: target.path,
      kind: meta ? sessionKind(meta) : null,
      parent_session: meta?.parentSession ?? null,
      seed_length: meta?.seedLength ?? null,
      delegation_depth: num(meta?.delegationDepth),
      created_at: num(meta?.createdAt),
      cwd: meta?.cwd ?? null,
      title: r.error ? null : title,
      encoding: r.encoding,
      bytes: r.bytes,
      health: healthOf(r),
      loaded: !r.error,
      error_class: r.error?.class ?? null,
      error_message: r.error?.message ?? null,
      stored_events: r.storedEventCount,
      logical_events: r.error ? null : r.storedEventCount + r.closers.length,
      closers: r.error ? null : r.closers.length,
      torn_truncate_to: r.torn ? r.torn.truncateTo : null,
      identity: options.identity,
    },
  ]);
  if (r.error) return { sessionId, loaded: false, warnings };
  if (batch.length > 0) sink('events', batch);
  const index = builder.finish();
  sink(
    'dispatches',
    index.requests.map((e, i) => dispatchRow(sessionId, e, i > 0 ? (index.requests[i - 1] as DispatchEntry) : null)),
  );
  sink('tool_calls', tools ? tools.finish() : []);
  if (index.requests.length > 0) {
    if (!held && logicalBytes > heldBytesBudget()) {
      warnings.push(`${target.path}: context not written: the view holds the log's surface events (${logicalBytes} logical bytes) and that exceeds this process's budget (DSH_MAX_HELD_BYTES or a fifth of the heap); run with a larger --max-old-space-size`);
    } else {
      const events = held ?? (await inspectTarget(target, { ...(options.decoder ? { decoder: options.decoder } : {}), collect: true, keepReplacements: false })).events ?? [];
      const view = await contextOf(index.requests, async () => events, sessionId, { prices: shippedPriceTable(), currency: 'USD' });
      sink('context', contextRows(sessionId, view));
      sink('cache_breaks', breakRows(sessionId, view));
    }
  }
  if (compactionActivity && !held && logicalBytes > heldBytesBudget()) {
    warnings.push(`${target.path}: compactions not audited: the audit holds the whole log (${logicalBytes} logical bytes) and that exceeds this process's budget (DSH_MAX_HELD_BYTES or a fifth of the heap); run with a larger --max-old-space-size`);
  } else if (compactionActivity) {
    // The audit needs the whole log; a large one is read again holding its events, as `dsh compactions` does.
    const events = held ?? (await inspectTarget(target, { ...(options.decoder ? { decoder: options.decoder } : {}), collect: true, keepReplacements: false })).events ?? [];
    const report = auditCompactions(events, { sessionId });
    sink(
      'compactions',
      report.attempts.map((a) => compactionRow(sessionId, a)),
    );
  }
  const edge = r.meta ? lineageRow(r.meta, options.rootIds) : undefined;
  if (edge) sink('lineage', [edge]);
  return { sessionId, loaded: true, warnings };
}

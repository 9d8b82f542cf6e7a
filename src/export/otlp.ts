/**
 * OpenTelemetry export: one DSH session as one OTLP trace (OTLP/JSON shapes,
 * opentelemetry-proto v1.11.0), following the OpenTelemetry GenAI semantic
 * conventions (semantic-conventions-genai v0.1.0, on semantic conventions
 * v1.45.0; `SCHEMA_URL`).
 *
 * - root span `invoke_agent <agent>`: the session (conversation id = session id);
 * - a span per turn (`turn N`), child of the root;
 * - a `chat <model>` CLIENT span per model dispatch (the attempts of
 *   `dsh request --list` / `dsh replay`), child of its turn;
 * - an `execute_tool <name>` span per tool call, child of its turn;
 * - compactions and prunes as span events (the GenAI conventions define no
 *   compaction event yet: names and attributes are in the `dsh.` namespace);
 * - forks and subagents: their own trace, whose root links to the parent.
 *
 * Ids are derived from the session id and seqs (sha256), so the same log
 * always gives the same trace and a backend de-duplicates a re-export.
 */
import { createHash } from 'node:crypto';
import type { BlockView, KindView, KnownEvent, MessageView, SessionEvent, SessionHeader } from '../log/types.js';
import { isEventOf } from '../log/payloads.js';
import { assistantCalls, resultBlock, resultCallId } from '../views/tool-pairs.js';
import type { CloserReason } from '../log/closers.js';
import { buildReplay, finishKind, type ReplayAttempt } from '../views/replay.js';
import { deriveDispatches, messagesOf, type DispatchEntry } from '../views/requests.js';
import { bucketsOf, billedInput } from '../views/stats.js';
import { sessionKind } from '../views/listing.js';
import { toJson } from '../core/json.js';

export const SEMCONV_VERSION = '1.45.0';
export const GENAI_SEMCONV_VERSION = 'semantic-conventions-genai v0.1.0';
export const SCHEMA_URL = `https://opentelemetry.io/schemas/${SEMCONV_VERSION}`;
export const SCOPE_NAME = 'dsh';

/** An OTLP AnyValue in its JSON form. */
export type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } };

export interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface OtlpEvent {
  timeUnixNano: string;
  name: string;
  attributes: KeyValue[];
}

export interface OtlpLink {
  traceId: string;
  spanId: string;
  attributes: KeyValue[];
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 INTERNAL, 3 CLIENT. */
  kind: 1 | 3;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  events: OtlpEvent[];
  links: OtlpLink[];
  /** 0 UNSET, 1 OK, 2 ERROR. */
  status: { code: 0 | 1 | 2; message?: string };
}

export interface ExportTraceServiceRequest {
  resourceSpans: {
    resource: { attributes: KeyValue[] };
    scopeSpans: { scope: { name: string; version: string }; spans: OtlpSpan[]; schemaUrl: string }[];
    schemaUrl: string;
  }[];
}

/** Whatever redacts content before it is exported (`src/redact`'s Redactor fits). */
export interface ContentRedactor {
  redactValue(value: unknown, key: string | undefined, ctx: { seq?: number }): unknown;
}

export interface OtlpOptions {
  /** Export message content (system instructions, input/output messages, tool arguments and results). */
  content?: boolean;
  /** Applied to every piece of content before export. */
  redactor?: ContentRedactor;
  /** Synthetic closers (DSH's crash-repair events) and why each exists. */
  closers?: readonly CloserReason[];
  /** The log had a torn tail. */
  torn?: boolean;
  /** dsh version (scope version). */
  version?: string;
  /**
   * Most bytes of `gen_ai.input.messages` per chat span (default 64 KiB): every
   * dispatch re-sends the whole conversation, so a long session would export its
   * history once per dispatch. The oldest messages are left out first, counted in
   * `dsh.content.omitted_input_messages`.
   */
  maxInputBytes?: number;
}

export const DEFAULT_MAX_INPUT_BYTES = 64 * 1024;

/** The newest messages whose JSON fits in `limit` bytes (at least one), and how many older ones were left out. */
function newestFitting(messages: readonly unknown[], limit: number, text: (m: unknown) => string): { text: string; omitted: number } {
  let bytes = 2;
  const kept: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const t = text(messages[i]);
    const b = Buffer.byteLength(t) + (kept.length > 0 ? 1 : 0);
    if (bytes + b > limit && kept.length > 0) break;
    bytes += b;
    kept.push(t);
  }
  return { text: `[${kept.reverse().join(',')}]`, omitted: messages.length - kept.length };
}

const hash = (text: string, hexChars: number) => createHash('sha256').update(text).digest('hex').slice(0, hexChars);

/** The trace id of a session: derived from its id alone. */
export function traceIdOf(sessionId: string): string {
  return hash(`dsh-trace\0${sessionId}`, 32);
}

/** A span id: session id, span kind and the seq that opens it. */
export function spanIdOf(sessionId: string, kind: string, seq: number | string): string {
  return hash(`dsh-span\0${sessionId}\0${kind}\0${seq}`, 16);
}

const nanos = (ms: number) => (BigInt(Math.round(ms)) * 1_000_000n).toString();

function value(v: unknown): AnyValue | undefined {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return undefined;
    return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  }
  if (Array.isArray(v)) {
    const values = v.map(value).filter((x): x is AnyValue => x !== undefined);
    return { arrayValue: { values } };
  }
  return undefined;
}

/** Attributes from a record; undefined, null and non-finite values are left out. */
function attrs(record: Record<string, unknown>): KeyValue[] {
  const out: KeyValue[] = [];
  for (const [key, v] of Object.entries(record)) {
    if (v === undefined || v === null) continue;
    const av = value(v);
    if (av) out.push({ key, value: av });
  }
  return out;
}

/** The GenAI provider name for a DSH provider id (well-known values where one fits). */
export function providerName(provider: unknown): string | undefined {
  if (typeof provider !== 'string' || provider === '') return undefined;
  if (provider.startsWith('deepseek')) return 'deepseek';
  if (provider.startsWith('openai')) return 'openai';
  if (provider.startsWith('anthropic')) return 'anthropic';
  return provider;
}

/** GenAI finish reason for a DSH finish. */
function finishReason(finish: unknown): string | undefined {
  if (finish === null || finish === undefined) return undefined;
  const kind = finishKind(finish);
  if (kind === 'max-tokens' || kind === 'length') return 'length';
  if (kind === 'tool-calls' || kind === 'tool-use') return 'tool_call';
  return kind.replace(/-/g, '_');
}

/** A DSH content block as a GenAI message part (gen-ai-input-messages.json / output-messages.json). */
function part(block: BlockView): Record<string, unknown> {
  switch (block?.type) {
    case 'text':
      return { type: 'text', content: String(block.text ?? '') };
    case 'reasoning':
      return { type: 'reasoning', content: String(block.text ?? '') };
    case 'tool-call': {
      let args: unknown = block.arguments;
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          /* kept as the string */
        }
      }
      return { type: 'tool_call', id: block.id ?? null, name: String(block.name ?? ''), arguments: args };
    }
    case 'tool-result':
      return { type: 'tool_call_response', id: block.toolCallId ?? null, response: block.content ?? null };
    case 'image':
      return { type: 'generic', kind: 'image', ...(block.attachmentId !== undefined ? { attachmentId: block.attachmentId } : {}) };
    default:
      return { type: String(block?.type ?? 'unknown') };
  }
}

function messageOf(value: unknown): Record<string, unknown> {
  const m = value as MessageView;
  const role = m?.role === 'assistant' ? 'assistant' : m?.source?.kind === 'tool' ? 'tool' : (m?.role ?? 'user');
  const content: BlockView[] = Array.isArray(m?.content) ? m.content : [];
  return { role, parts: content.map(part) };
}

interface TurnInfo {
  turn: number;
  startSeq: number;
  start: number;
  end: number;
  endSeq: number | null;
  reason: unknown;
  spanId: string;
  events: OtlpEvent[];
  synthetic: boolean;
}

/**
 * Build the spans of one session from its logical events (closers included).
 */
export function sessionSpans(header: SessionHeader, events: readonly SessionEvent[], options: OtlpOptions = {}): OtlpSpan[] {
  const id = header.id;
  const traceId = traceIdOf(id);
  const rootId = spanIdOf(id, 'session', 'root');
  const closerSeqs = new Map((options.closers ?? []).map((c) => [c.seq, c.why]));
  const seed = typeof header.seedLength === 'number' && header.seedLength > 0 ? header.seedLength : 0;
  const own = events.filter((e) => e.seq >= seed);
  const redact = (v: unknown, seq: number) => (options.redactor ? options.redactor.redactValue(v, undefined, { seq }) : v);
  const json = (v: unknown, seq: number) => toJson(redact(v, seq));

  const first = own[0]?.time ?? header.createdAt;
  const last = own.length > 0 ? own[own.length - 1]!.time : header.createdAt;
  const spans: OtlpSpan[] = [];
  const rootEvents: OtlpEvent[] = [];

  // Turns.
  const turns = new Map<number, TurnInfo>();
  let open: TurnInfo | null = null;
  for (const e of own) {
    if (e.type === 'turn/start') {
      open = { turn: Number(e.data?.turn), startSeq: e.seq, start: e.time, end: e.time, endSeq: null, reason: null, spanId: spanIdOf(id, 'turn', e.seq), events: [], synthetic: false };
      turns.set(open.turn, open);
      continue;
    }
    if (open) open.end = Math.max(open.end, e.time);
    if (e.type === 'turn/end' && open) {
      open.endSeq = e.seq;
      open.reason = e.data?.reason ?? null;
      open.synthetic = closerSeqs.has(e.seq);
      open = null;
    }
  }
  const turnOf = (n: unknown): TurnInfo | undefined => (typeof n === 'number' ? turns.get(n) : undefined);
  const turnList = [...turns.values()].sort((a, b) => a.startSeq - b.startSeq);
  // The turn an event sits in (by seq), for events without a turn field: one pass over the turn ranges.
  const inTurn: (TurnInfo | undefined)[] = [];
  for (const t of turnList) {
    const end = t.endSeq ?? (own.length > 0 ? own[own.length - 1]!.seq : t.startSeq);
    for (let seq = t.startSeq; seq <= end; seq++) inTurn[seq] = t;
  }
  const enclosing = (seq: number): TurnInfo | undefined => inTurn[seq];

  // Compactions, prunes and closers as span events.
  for (const e of own) {
    const holder = enclosing(e.seq)?.events ?? rootEvents;
    if (isEventOf(e, 'compaction/summary') || isEventOf(e, 'compaction/prune')) {
      const d: NonNullable<KnownEvent<'compaction/summary'>['data']> = e.data ?? {};
      const prune = e.type === 'compaction/prune';
      const a: Record<string, unknown> = {
        'dsh.event.seq': e.seq,
        'dsh.compaction.kind': prune ? 'prune' : 'compaction',
        'dsh.compaction.id': prune ? undefined : d.compactionId,
        'dsh.compaction.shadowed_seqs': Array.isArray(d.shadowedSeqs) ? d.shadowedSeqs.filter((s: unknown) => typeof s === 'number') : undefined,
        'dsh.compaction.shadowed_range.start': d.shadowedRange?.start,
        'dsh.compaction.shadowed_range.end': d.shadowedRange?.end,
        'dsh.compaction.shadowed_token_count': d.shadowedTokenCount,
        'gen_ai.conversation.id': id,
      };
      if (!prune && d.usage) {
        const b = bucketsOf(d.usage);
        a['gen_ai.usage.input_tokens'] = billedInput(b);
        a['gen_ai.usage.output_tokens'] = b.outputTokens;
      }
      if (!prune && options.content && Array.isArray(d.summary)) a['dsh.compaction.summary'] = json(d.summary.map(part), e.seq);
      holder.push({ timeUnixNano: nanos(e.time), name: prune ? 'dsh.context.prune' : 'dsh.context.compaction', attributes: attrs(a) });
    } else if (e.type === 'compaction/end' && typeof e.data?.error === 'string') {
      holder.push({ timeUnixNano: nanos(e.time), name: 'dsh.context.compaction.failed', attributes: attrs({ 'dsh.event.seq': e.seq, 'dsh.compaction.id': e.data.compactionId, 'error.type': 'compaction_failed', ...(options.content ? { 'dsh.compaction.error': String(redact(e.data.error, e.seq)) } : {}) }) });
    }
    const why = closerSeqs.get(e.seq);
    if (why !== undefined) {
      holder.push({ timeUnixNano: nanos(e.time), name: 'dsh.synthetic_closer', attributes: attrs({ 'dsh.event.seq': e.seq, 'dsh.event.type': e.type, 'dsh.synthetic': true, 'dsh.closer.reason': why }) });
    }
  }

  // Root span.
  const kind = sessionKind(header);
  const links: OtlpLink[] = [];
  if (header.parentSession !== undefined) {
    const parent = header.parentSession;
    // A fork's seed ends at a parent turn: link to that turn (same seqs in the parent); a subagent to the parent session.
    let linkSpan = spanIdOf(parent, 'session', 'root');
    if (seed > 0) {
      const seedTurn = [...events].filter((e) => e.seq < seed && e.type === 'turn/start').pop();
      if (seedTurn) linkSpan = spanIdOf(parent, 'turn', seedTurn.seq);
    }
    links.push({ traceId: traceIdOf(parent), spanId: linkSpan, attributes: attrs({ 'dsh.link.kind': kind === 'subagent' ? 'subagent-of' : 'fork-of', 'dsh.session.id': parent, 'dsh.fork.seed_length': seed || undefined }) });
  }
  const interrupted = turnList.filter((t) => (t.reason as KindView)?.kind === 'interrupted').length;
  spans.push({
    traceId,
    spanId: rootId,
    name: `invoke_agent ${header.agentPreset ?? 'dsh'}`,
    kind: 1,
    startTimeUnixNano: nanos(Math.min(header.createdAt, first)),
    endTimeUnixNano: nanos(Math.max(last, header.createdAt)),
    attributes: attrs({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': header.agentPreset ?? 'dsh',
      'gen_ai.conversation.id': id,
      'dsh.session.id': id,
      'dsh.session.kind': kind,
      'dsh.session.parent': header.parentSession,
      'dsh.session.seed_length': seed || undefined,
      'dsh.session.delegation_depth': header.delegationDepth,
      'dsh.session.cwd': options.content && header.cwd !== undefined ? String(redact(header.cwd, 0)) : undefined,
      'dsh.session.turns': turnList.length,
      'dsh.session.interrupted_turns': interrupted,
      'dsh.session.synthetic_closers': closerSeqs.size,
      'dsh.log.torn': options.torn ? true : undefined,
      'dsh.log.events': events.length,
    }),
    events: rootEvents,
    links,
    status: { code: 0 },
  });

  // Turn spans.
  for (const t of turnList) {
    const reasonKind = (t.reason as KindView)?.kind;
    const status: OtlpSpan['status'] = reasonKind === 'error' || reasonKind === 'failed' ? { code: 2, message: `turn ended: ${reasonKind}` } : { code: 0 };
    spans.push({
      traceId,
      spanId: t.spanId,
      parentSpanId: rootId,
      name: `turn ${t.turn}`,
      kind: 1,
      startTimeUnixNano: nanos(t.start),
      endTimeUnixNano: nanos(t.end),
      attributes: attrs({
        'dsh.turn': t.turn,
        'dsh.turn.end_reason': typeof reasonKind === 'string' ? reasonKind : t.endSeq === null ? 'open' : undefined,
        'dsh.turn.interrupted': reasonKind === 'interrupted' ? true : undefined,
        'dsh.turn.synthetic_end': t.synthetic ? true : undefined,
        'dsh.event.seq': t.startSeq,
        'gen_ai.conversation.id': id,
      }),
      events: t.events,
      links: [],
      status,
    });
  }

  // Chat spans: one per dispatch.
  // The fold runs over the whole log (a fork's model surface starts with its seed); only own attempts become spans.
  const replay = buildReplay(id, events);
  const byKey = new Map<string, DispatchEntry>();
  const dispatches = deriveDispatches(events, { lazy: events }); // surface snapshots only for the spans that export content
  for (const d of dispatches.requests) byKey.set(d.key, d);
  for (const a of replay.attempts) {
    if (a.firstChunkSeq === null || a.firstChunkSeq < seed) continue;
    const d = byKey.get(a.key);
    const turn = turnOf(a.turn) ?? enclosing(a.firstChunkSeq);
    spans.push(chatSpan(id, traceId, turn?.spanId ?? rootId, a, d, events, options, json));
  }

  // Tool spans.
  const calls = new Map<string, SessionEvent>();
  const requested = new Map<string, string>(); // callId → tool name the assistant asked for
  for (const e of own) {
    if (e.type === 'tool/call' && typeof e.data?.callId === 'string') calls.set(e.data.callId, e);
    if (e.type === 'assistant/message') for (const { id, block } of assistantCalls(e)) requested.set(id, String(block.name ?? 'unknown'));
  }
  const seen = new Set<string>();
  for (const e of own) {
    if (e.type !== 'tool/result') continue;
    // Its one tool-result block, whose toolCallId is its tool source's callId, a string (B5).
    const block = resultBlock(e);
    const callId = (block?.toolCallId ?? resultCallId(e)) as string | undefined;
    if (callId === undefined || seen.has(callId)) continue; // a prune's replacement result re-states the same call
    seen.add(callId);
    const call = calls.get(callId);
    const synthetic = closerSeqs.has(e.seq);
    const name = String(call?.data?.name ?? requested.get(callId) ?? 'unknown');
    const turn = turnOf(e.data?.turn) ?? enclosing(e.seq);
    const outcome = synthetic ? (call ? 'unknown' : 'not-started') : block?.isError ? 'error' : 'success';
    const a: Record<string, unknown> = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': name,
      'gen_ai.tool.call.id': callId,
      'gen_ai.tool.type': 'function',
      'gen_ai.conversation.id': id,
      'dsh.tool.outcome': outcome,
      'dsh.synthetic': synthetic ? true : undefined,
      'dsh.event.seq': call?.seq ?? e.seq,
      'dsh.tool.result_seq': e.seq,
      'error.type': outcome === 'error' ? 'tool_error' : synthetic ? 'interrupted' : undefined,
    };
    if (options.content) {
      if (call) a['gen_ai.tool.call.arguments'] = String(redact(call.data?.arguments ?? '', call.seq));
      a['gen_ai.tool.call.result'] = json(block?.content ?? null, e.seq);
    }
    spans.push({
      traceId,
      spanId: spanIdOf(id, 'tool', callId),
      parentSpanId: turn?.spanId ?? rootId,
      name: `execute_tool ${name}`,
      kind: 1,
      startTimeUnixNano: nanos(call?.time ?? e.time),
      endTimeUnixNano: nanos(e.time),
      attributes: attrs(a),
      events: [],
      links: [],
      status: outcome === 'error' || synthetic ? { code: 2, message: synthetic ? (closerSeqs.get(e.seq) ?? 'interrupted') : 'tool returned an error' } : { code: 0 },
    });
  }
  return spans;
}

function chatSpan(
  id: string,
  traceId: string,
  parent: string,
  a: ReplayAttempt,
  d: DispatchEntry | undefined,
  events: readonly SessionEvent[],
  options: OtlpOptions,
  json: (v: unknown, seq: number) => string,
): OtlpSpan {
  const config = d?.header?.config;
  const model = config?.model ?? d?.requestContext?.model;
  const usage = (d?.messageUsage ?? d?.chunkUsage ?? a.usage) as unknown;
  const b = usage ? bucketsOf(usage) : null;
  const reason = finishReason(a.finish);
  const start = a.anchorTime ?? a.firstChunkTime ?? 0;
  const end = a.lastChunkTime ?? start;
  const attributes: Record<string, unknown> = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': providerName(config?.provider ?? d?.requestContext?.provider),
    'gen_ai.request.model': model,
    'gen_ai.response.model': model,
    'gen_ai.request.temperature': config?.temperature,
    'gen_ai.request.max_tokens': config?.maxTokens,
    'gen_ai.request.stop_sequences': Array.isArray(config?.stop) ? config!.stop : undefined,
    'gen_ai.conversation.id': id,
    'gen_ai.response.finish_reasons': reason ? [reason] : undefined,
    'gen_ai.usage.input_tokens': b ? billedInput(b) : undefined,
    'gen_ai.usage.output_tokens': b ? b.outputTokens : undefined,
    'gen_ai.usage.cache_read.input_tokens': b && b.cacheReadTokens > 0 ? b.cacheReadTokens : undefined,
    'gen_ai.usage.cache_creation.input_tokens': b && b.cacheWriteTokens > 0 ? b.cacheWriteTokens : undefined,
    'dsh.provider': config?.provider,
    'dsh.request.reasoning_effort': config?.reasoningEffort,
    'dsh.request.context_window': d?.requestContext?.contextWindow,
    'dsh.dispatch.key': a.key,
    'dsh.dispatch.outcome': a.outcome,
    'dsh.dispatch.retried': a.retried ? true : undefined,
    'dsh.dispatch.ttft_ms': a.ttftMs ?? undefined,
    'dsh.dispatch.message_count': d?.messageCount,
    'dsh.event.seq': a.firstChunkSeq,
    'dsh.dispatch.message_seq': a.messageSeq ?? undefined,
    'error.type': a.outcome === 'failed' ? String(a.error?.['code'] ?? a.finishKind ?? 'error') : undefined,
  };
  if (options.content) {
    const anchor = a.firstChunkSeq ?? 0;
    if (d?.header?.system) attributes['gen_ai.system_instructions'] = json([{ type: 'text', content: d.header.system }], anchor);
    if (d) {
      const fit = newestFitting(messagesOf(d, events), options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES, (m) => json(messageOf(m), anchor));
      attributes['gen_ai.input.messages'] = fit.text;
      if (fit.omitted > 0) attributes['dsh.content.omitted_input_messages'] = fit.omitted;
    }
    attributes['gen_ai.output.messages'] = json([{ role: 'assistant', parts: a.blocks.map(part), ...(reason ? { finish_reason: reason } : {}) }], anchor);
  }
  const failed = a.outcome === 'failed';
  return {
    traceId,
    spanId: spanIdOf(id, 'chat', a.firstChunkSeq ?? a.key),
    parentSpanId: parent,
    name: model ? `chat ${model}` : 'chat',
    kind: 3,
    startTimeUnixNano: nanos(start),
    endTimeUnixNano: nanos(end),
    attributes: attrs(attributes),
    events: [],
    links: [],
    status: failed ? { code: 2, message: String(a.error?.['message'] ?? a.finishKind ?? 'failed') } : { code: 0 },
  };
}

/** One request holding the spans of many sessions (one ResourceSpans). */
export function exportRequest(spans: readonly OtlpSpan[], version = '0.0.0'): ExportTraceServiceRequest {
  return {
    resourceSpans: [
      {
        resource: { attributes: attrs({ 'service.name': 'deepseek-harness', 'telemetry.sdk.name': 'dsh', 'telemetry.sdk.language': 'nodejs', 'telemetry.sdk.version': version }) },
        scopeSpans: [{ scope: { name: SCOPE_NAME, version }, spans: [...spans], schemaUrl: SCHEMA_URL }],
        schemaUrl: SCHEMA_URL,
      },
    ],
  };
}

/** `JSON.stringify(exportRequest(spans, version))` in pieces, one span at a time (no single huge string). */
export function* exportRequestText(spans: Iterable<OtlpSpan>, version = '0.0.0'): Generator<string> {
  const shell = toJson(exportRequest([], version));
  const at = shell.indexOf('"spans":[') + '"spans":['.length;
  yield shell.slice(0, at);
  let first = true;
  for (const span of spans) {
    yield (first ? '' : ',') + toJson(span);
    first = false;
  }
  yield shell.slice(at);
}

/** Split spans into batches of at most `size`, never splitting less than needed. */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

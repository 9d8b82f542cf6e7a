import { RuleError, type RuleCode } from '../core/errors.js';
import type { SessionEvent } from './types.js';
import { PrunedEvent } from './pruned-event.js';
import { RowChunkEvent } from './rows.js';

/**
 * DSH's coordinator-side legacy-shape normalization (format.md §11.7) and
 * message-shape validation (§5 B5). Functions throw plain Errors with DSH's
 * exact text; callers wrap them as DSH does.
 */

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function hasOnlyKeys(r: Record<string, unknown>, required: readonly string[], optional: readonly string[] = []): boolean {
  const allowed = [...required, ...optional];
  return Object.keys(r).every((k) => allowed.includes(k)) && required.every((k) => Object.hasOwn(r, k));
}

export function legacyMessageId(id: string, seq: number): string {
  return `legacy-message:${id}:${seq}`;
}

/** Whole-log legacy rejections, in DSH's type order (not seq order). */
export class LegacyRejections {
  private headerDelta: number | undefined;
  private modeSet: number | undefined;
  /**
   * The first request/header DSH's fallback search stops at: one whose reason
   * is "fallback", or one whose `data` is undefined or null (DSH reads
   * `data.reason` unguarded and throws a TypeError there).
   */
  private fallback: { seq: number; missing?: 'undefined' | 'null' } | undefined;

  observe(event: SessionEvent): void {
    if (event === null || typeof event !== 'object') return;
    if (event.type === 'request/header-delta') this.headerDelta ??= event.seq;
    else if (event.type === 'mode/set') this.modeSet ??= event.seq;
    else if (event.type === 'request/header' && this.fallback === undefined) {
      const data = (event as { data?: unknown }).data;
      if (data === undefined || data === null) this.fallback = { seq: event.seq, missing: data === null ? 'null' : 'undefined' };
      else if ((data as { reason?: unknown }).reason === 'fallback') this.fallback = { seq: event.seq };
    }
  }

  /** The error DSH's `assertSupportedEvents` throws, if any: [message, seq, DSH's error class]. */
  first(id: string): [string, number, 'Error' | 'TypeError'] | undefined {
    if (this.headerDelta !== undefined) return [`session "${id}" contains unsupported legacy request/header-delta event at seq ${this.headerDelta}`, this.headerDelta, 'Error'];
    if (this.modeSet !== undefined) return [`session "${id}" contains unsupported legacy mode/set event at seq ${this.modeSet}`, this.modeSet, 'Error'];
    const f = this.fallback;
    if (f?.missing !== undefined) return [`Cannot read properties of ${f.missing} (reading 'reason')`, f.seq, 'TypeError'];
    if (f !== undefined) return [`session "${id}" contains unsupported legacy request/header reason "fallback" at seq ${f.seq}`, f.seq, 'Error'];
    return undefined;
  }
}

function migrateTurnStart(event: SessionEvent, id: string): SessionEvent {
  if (event.type !== 'turn/start') return event;
  const data = asRecord(event.data);
  if (data === undefined || !Object.hasOwn(data, 'trigger')) return event;
  const trigger = asRecord(data['trigger']);
  if (
    !Number.isSafeInteger(data['turn']) ||
    (data['turn'] as number) < 1 ||
    !hasOnlyKeys(data, ['turn', 'trigger']) ||
    trigger === undefined ||
    typeof trigger['kind'] !== 'string' ||
    trigger['kind'].length === 0
  ) {
    throw new RuleError(`session "${id}" contains malformed pre-react-loop turn/start at seq ${event.seq}`, 'DSH-B3');
  }
  return { ...event, data: { turn: data['turn'] } };
}

function migrateTurnEnd(event: SessionEvent, id: string): SessionEvent {
  if (event.type !== 'turn/end') return event;
  const data = asRecord(event.data);
  if (data === undefined) return event;
  const malformed = (): never => {
    throw new RuleError(`session "${id}" contains malformed pre-react-loop turn/end at seq ${event.seq}`, 'DSH-B2');
  };
  const reason = asRecord(data['reason']);
  if (
    !Number.isSafeInteger(data['turn']) ||
    (data['turn'] as number) < 1 ||
    !hasOnlyKeys(data, ['turn', 'reason']) ||
    reason === undefined ||
    typeof reason['kind'] !== 'string'
  ) {
    return malformed();
  }
  let current: Record<string, unknown>;
  switch (reason['kind']) {
    case 'completed':
    case 'blocked':
    case 'max-tokens':
    case 'interrupted':
      if (!hasOnlyKeys(reason, ['kind'])) return malformed();
      return event;
    case 'aborted':
      if (Object.hasOwn(reason, 'reason')) return event;
      if (!hasOnlyKeys(reason, ['kind'])) return malformed();
      current = { kind: 'aborted', reason: { kind: 'legacy' } };
      break;
    case 'disposed':
      if (!hasOnlyKeys(reason, ['kind'])) return malformed();
      current = { kind: 'aborted', reason: { kind: 'disposed' } };
      break;
    case 'error': {
      if (Object.hasOwn(reason, 'error')) return event;
      if (!Number.isSafeInteger(reason['step']) || (reason['step'] as number) < 0) return malformed();
      const failure = asRecord(reason['failure']);
      if (
        failure !== undefined &&
        hasOnlyKeys(reason, ['kind', 'step', 'failure']) &&
        hasOnlyKeys(failure, ['message', 'code'], ['status', 'providerRetryAfterMs', 'requestId']) &&
        typeof failure['message'] === 'string' &&
        typeof failure['code'] === 'string' &&
        (failure['status'] === undefined || typeof failure['status'] === 'number') &&
        (failure['providerRetryAfterMs'] === undefined || typeof failure['providerRetryAfterMs'] === 'number') &&
        (failure['requestId'] === undefined || typeof failure['requestId'] === 'string')
      ) {
        current = { kind: 'error', error: failure };
        break;
      }
      const keys = reason['code'] === undefined ? ['kind', 'step', 'message'] : ['kind', 'step', 'message', 'code'];
      if (!hasOnlyKeys(reason, keys) || typeof reason['message'] !== 'string' || (reason['code'] !== undefined && typeof reason['code'] !== 'string')) {
        return malformed();
      }
      current = { kind: 'error', error: { message: reason['message'], code: typeof reason['code'] === 'string' ? reason['code'] : 'UNKNOWN' } };
      break;
    }
    default:
      return event;
  }
  return { ...event, data: { ...data, reason: current } };
}

function migrateSteering(event: SessionEvent, id: string): SessionEvent {
  if (event.type !== 'steering/message') return event;
  const data = asRecord(event.data);
  const malformed = () => new RuleError(`session "${id}" contains malformed pre-react-loop steering/message at seq ${event.seq}`, 'DSH-B4');
  if (data === undefined) throw malformed();
  const wrapped = asRecord(data['message']);
  if (wrapped !== undefined && Number.isSafeInteger(data['turn']) && hasOnlyKeys(data, ['turn', 'message'])) {
    return { ...event, type: 'user/message', data: wrapped };
  }
  if (!Number.isSafeInteger(data['turn']) || !hasOnlyKeys(data, ['turn', 'content', 'source'])) throw malformed();
  const { turn: _turn, ...message } = data;
  void _turn;
  return { ...event, type: 'user/message', data: { ...message, id: legacyMessageId(id, event.seq), role: 'user' } };
}

function replacementStart(event: SessionEvent): number | undefined {
  const op = asRecord((event as { surfaceOp?: unknown }).surfaceOp);
  return op?.['op'] === 'replace' && typeof op['start'] === 'number' ? (op['start'] as number) : undefined;
}

function migrateMessage(event: SessionEvent, id: string, messageIds: ReadonlyMap<number, string>): SessionEvent {
  const data = asRecord(event.data);
  if (data === undefined) return event;
  switch (event.type) {
    case 'user/message': {
      if (Object.hasOwn(data, 'id') || Object.hasOwn(data, 'role') || Object.hasOwn(data, 'message') || !Object.hasOwn(data, 'content') || !Object.hasOwn(data, 'source')) {
        return event;
      }
      return { ...event, data: { ...data, id: legacyMessageId(id, event.seq), role: 'user' } };
    }
    case 'assistant/message': {
      if (Object.hasOwn(data, 'message') || !Object.hasOwn(data, 'content') || !Object.hasOwn(data, 'provenance')) return event;
      const { content, provenance, ...rest } = data;
      return {
        ...event,
        data: {
          ...rest,
          message: { id: legacyMessageId(id, event.seq), role: 'assistant', content, source: { ...asRecord(provenance), kind: 'model' } },
        },
      };
    }
    case 'tool/result': {
      if (Object.hasOwn(data, 'message') || !Object.hasOwn(data, 'callId') || !Object.hasOwn(data, 'content') || !Object.hasOwn(data, 'isError')) {
        return event;
      }
      const { callId, content, isError, ...rest } = data;
      const inherited = replacementStart(event);
      const message: Record<string, unknown> = {
        id: inherited === undefined ? legacyMessageId(id, event.seq) : messageIds.get(inherited),
        role: 'user',
        content: [{ type: 'tool-result', toolCallId: callId, content, isError }],
        source: { kind: 'tool', callId },
      };
      return { ...event, data: { ...rest, message } };
    }
    default:
      return event;
  }
}

function hasProviderModel(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Record<string, unknown>;
  return typeof p['provider'] === 'string' && p['provider'].length > 0 && typeof p['model'] === 'string' && p['model'].length > 0;
}

/** The event types whose message shape `assertMessageEventShape` checks (any other passes). */
function isMessageType(type: unknown): boolean {
  return type === 'user/message' || type === 'assistant/message' || type === 'tool/result';
}

/** DSH's `assertMessageEventShape` (B5); `subject` is e.g. `session event at seq 4`. */
export function assertMessageEventShape(event: Record<string, unknown>, subject: string, rule: RuleCode = 'DSH-B5'): void {
  const type = event['type'];
  if (!isMessageType(type)) return;
  const data = event['data'];
  const record = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : undefined;
  const message = type === 'user/message' ? record : record?.['message'];
  if (typeof message !== 'object' || message === null || typeof (message as Record<string, unknown>)['id'] !== 'string' || (message as Record<string, unknown>)['id'] === '') {
    throw new RuleError(`${subject} lacks an identified message`, rule);
  }
  const m = message as Record<string, unknown>;
  const role = type === 'assistant/message' ? 'assistant' : 'user';
  if (m['role'] !== role) throw new RuleError(`${subject} message must have role "${role}"`, rule);
  const source = m['source'];
  if (typeof source !== 'object' || source === null || typeof (source as Record<string, unknown>)['kind'] !== 'string' || (source as Record<string, unknown>)['kind'] === '') {
    throw new RuleError(`${subject} message has invalid source`, rule);
  }
  if (!Array.isArray(m['content'])) throw new RuleError(`${subject} message has invalid content`, rule);
  const s = source as Record<string, unknown>;
  if (type === 'assistant/message') {
    if (s['kind'] !== 'model' || !hasProviderModel(s)) throw new RuleError(`${subject} message must have model source`, rule);
    return;
  }
  if (type !== 'tool/result') return;
  if (s['kind'] !== 'tool' || typeof s['callId'] !== 'string' || s['callId'] === '') throw new RuleError(`${subject} message must have tool source`, rule);
  const content = m['content'] as unknown[];
  const block = content[0] as Record<string, unknown> | undefined;
  if (content.length !== 1 || typeof block !== 'object' || block === null || block['type'] !== 'tool-result' || !Array.isArray(block['content'])) {
    throw new RuleError(`${subject} message must contain one tool-result block`, rule);
  }
  if (block['toolCallId'] !== s['callId']) throw new RuleError(`${subject} message has mismatched tool call ids`, rule);
}

/** Restore's LLM-shape checks: request/header config shape (C3), then message shapes (C5). */
export function assertCurrentLlmShape(event: Record<string, unknown>, index: number): void {
  const data = event['data'];
  const record = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : undefined;
  if (event['type'] === 'request/header') {
    const header = record?.['header'];
    const h = typeof header === 'object' && header !== null && !Array.isArray(header) ? (header as Record<string, unknown>) : undefined;
    const config = h?.['config'];
    if (!hasProviderModel(config)) throw new RuleError(`seed request/header at index ${index} lacks provider/model`, 'DSH-C3');
    const c = config as Record<string, unknown>;
    const effort = c['reasoningEffort'];
    if (effort !== undefined && (typeof effort !== 'string' || effort.length === 0)) {
      throw new RuleError(`seed request/header at index ${index} has an invalid reasoningEffort`, 'DSH-C3');
    }
    const defaults = h?.['adapterDefaults'];
    if (defaults !== undefined) {
      const bad = () => new RuleError(`seed request/header at index ${index} has invalid adapterDefaults`, 'DSH-C3');
      if (typeof defaults !== 'object' || defaults === null || Array.isArray(defaults)) throw bad();
      const d = defaults as Record<string, unknown>;
      if (
        Object.keys(d).some((k) => k !== 'reasoningEffort' && k !== 'maxTokens') ||
        Object.values(d).some((v) => v !== true) ||
        (d['reasoningEffort'] === true && c['reasoningEffort'] === undefined) ||
        (d['maxTokens'] === true && c['maxTokens'] === undefined)
      ) {
        throw bad();
      }
    }
  }
  const type = event['type'];
  if (type !== 'user/message' && type !== 'assistant/message' && type !== 'tool/result') return;
  assertMessageEventShape(event, `seed ${type} at index ${index}`, 'DSH-C5');
}

/** The normalization chain, in DSH's order: turn/start, turn/end, steering/message, pre-identity messages. */
function migrate(event: SessionEvent, id: string, messageIds: ReadonlyMap<number, string>): SessionEvent {
  return migrateMessage(migrateSteering(migrateTurnEnd(migrateTurnStart(event, id), id), id), id, messageIds);
}

const NO_IDS: ReadonlyMap<number, string> = new Map();

/**
 * Does normalization leave this (object) event as it is, with a valid message shape (B2-B5 pass)?
 * Stateless: what a worker thread checks before handing the main thread a `PrunedEvent`.
 */
export function isCurrentShape(event: SessionEvent): boolean {
  try {
    if (migrate(event, '', NO_IDS) !== event) return false;
    assertMessageEventShape(event as unknown as Record<string, unknown>, '');
    return true;
  } catch {
    return false;
  }
}

/**
 * Per-event coordinator normalization, in DSH's order: turn/start, turn/end,
 * steering/message, pre-identity messages, then message-shape validation.
 */
export class LegacyNormalizer {
  private messageIds = new Map<number, string>();
  migrated = 0;

  constructor(private readonly id: string) {}

  normalize(event: SessionEvent): SessionEvent {
    if (event === null || typeof event !== 'object') return event;
    // A worker already found it current (`isCurrentShape`): only its message id is remembered.
    if (event instanceof PrunedEvent) {
      const id = (event as PrunedEvent).messageId;
      if (id !== undefined) this.messageIds.set(event.seq, id);
      return event;
    }
    // A packed row's member: no migration touches an assistant/chunk, and it has no message shape.
    if (event instanceof RowChunkEvent) return event;
    const d = migrate(event, this.id, this.messageIds);
    if (d !== event) this.migrated += 1;
    // The subject is text only for the error: not made for every event of the log.
    if (isMessageType(d.type)) assertMessageEventShape(d as unknown as Record<string, unknown>, `session event at seq ${d.seq}`);
    const data = asRecord(d.data);
    const message = d.type === 'user/message' ? data : asRecord(data?.['message']);
    if (typeof message?.['id'] === 'string') this.messageIds.set(d.seq, message['id'] as string);
    return d;
  }
}

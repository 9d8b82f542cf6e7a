/**
 * Per-line facts: what a worker thread of the parallel reader hands the main
 * thread instead of text when the read's consumers take pruned events
 * (`PrunedEvent`). The worker parses each line and runs the checks that read
 * the line alone (JSON, row decoding, envelope, legacy and message shapes,
 * surface-op shape and provenance); a line that passes becomes a fixed-size
 * row of numbers plus a few strings, and the main thread folds it without
 * parsing. Anything else (an unparsable line, a shape any check rejects, a
 * type whose fold reads more: request/header, turn/end, a tool/result
 * rewrite, an unknown type) is left to the main thread, which parses that
 * line itself on the one-thread path with its state, so every error, and
 * which error comes first, is the one-thread path's.
 */
import { isRowRecord, rowMemberTimes } from './rows.js';
import { isCurrentShape } from './legacy.js';
import { statelessRestoreChecks } from './restore.js';
import { contentFreeKey, provenance, surfaceShape } from './surface.js';
import { KNOWN_EVENT_TYPES } from './vocabulary.js';
import { PrunedEvent, RowChunk } from './pruned-event.js';
import type { CheckedMessage, SessionEvent } from './types.js';

/** Numbers per line in `LineFacts.rows`. */
export const FACT_STRIDE = 11;
/** Row kinds (slot 0): the main thread parses the line; a packed chunk row; else the type's index in `FACT_TYPES` + 1. */
export const SLOW = 0;
export const CHUNK_ROW = -1;

/** Types a worker may hand over as facts (their fold reads only what the facts carry). */
const FACT_TYPES: readonly string[] = [...KNOWN_EVENT_TYPES].filter((t) => t !== 'request/header' && t !== 'turn/end');
const TYPE_CODE = new Map(FACT_TYPES.map((t, i) => [t, i + 1]));

/**
 * One group's facts: per line `FACT_STRIDE` numbers (kind, seq, time, number, op, start, end,
 * sources at, sources count, strings at, strings count); `pool` holds provenance seqs and chunk rows' member
 * times; `strings` the ids and content-free keys, in line order.
 * Plain event: [code, seq, time, turn-or-step (NaN: absent), op (0 none, 1 append, 2 replace), start, end, poolAt, poolCount, stringsAt, strings].
 * Chunk row: [CHUNK_ROW, seq0, members, poolAt (member times), turn, step].
 */
export interface LineFacts {
  rows: Float64Array;
  pool: Float64Array;
  strings: string[];
}

class Growable {
  buf: Float64Array;
  length = 0;
  constructor(size: number) {
    this.buf = new Float64Array(Math.max(16, size));
  }
  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.length++] = v;
  }
  done(): Float64Array {
    return this.buf.slice(0, this.length);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A number the crash-closer tracker may copy into a closer (NaN stands for absent). */
function optionalNumber(v: unknown): number | null {
  if (v === undefined) return NaN;
  return typeof v === 'number' ? v : null;
}

/** Builds a group's facts on the worker, line by line. */
export class FactsWriter {
  private readonly rows: Float64Array;
  private readonly pool = new Growable(64);
  private readonly strings: string[] = [];

  constructor(lines: number) {
    this.rows = new Float64Array(lines * FACT_STRIDE);
  }

  /** Line `k`'s facts from its text (undefined: no text, longer than a string or the line limit). */
  line(k: number, text: string | undefined): void {
    if (text === undefined) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    const at = k * FACT_STRIDE;
    if (isRowRecord(value)) {
      // The row's checks, its member times and its turn and step: its members are never built.
      let row: ReturnType<typeof rowMemberTimes>;
      try {
        row = rowMemberTimes(value);
      } catch {
        return;
      }
      this.rows[at] = CHUNK_ROW;
      this.rows[at + 1] = row.seq0;
      this.rows[at + 2] = row.count;
      this.rows[at + 3] = this.pool.length;
      this.rows[at + 4] = row.turn;
      this.rows[at + 5] = row.step;
      let time = row.time0;
      this.pool.push(time);
      for (const gap of row.gaps) this.pool.push((time += gap));
      return;
    }
    if (!isObject(value)) return;
    const event = value as unknown as SessionEvent;
    const code = TYPE_CODE.get(event.type);
    if (code === undefined) return;
    let replace: { start: number; end: number } | undefined | null;
    try {
      statelessRestoreChecks(value, 0);
      if (!isCurrentShape(event)) return;
      replace = surfaceShape(event);
      provenance(event);
    } catch {
      return;
    }
    // A tool/result rewrite is checked against the payload it replaces: the main thread parses it.
    if (replace && event.type === 'tool/result') return;
    const stringsAt = this.strings.length;
    let n: number | null = NaN;
    // The message events passed the message-shape check (`isCurrentShape` above).
    const data = event.data as { turn: unknown; step: unknown; callId: unknown; id: string; message: CheckedMessage & { source: { callId: string } } };
    // What the crash-closer tracker and the normalizer read, in a shape they read without a TypeError.
    switch (event.type) {
      case 'turn/start':
        if (!isObject(data) || Object.hasOwn(data, 'trigger')) return;
        n = optionalNumber(data['turn']);
        break;
      case 'step/start':
        if (!isObject(data)) return;
        n = optionalNumber(data['step']);
        break;
      case 'tool/call':
        if (!isObject(data) || typeof data['callId'] !== 'string') return;
        this.strings.push(data['callId']);
        break;
      case 'user/message':
        this.strings.push(data.id);
        break;
      case 'assistant/message': {
        n = optionalNumber(data.step);
        const blocks = data.message.content;
        const ids: string[] = [];
        for (const block of blocks) {
          if (typeof block !== 'object' || block === null) return;
          const b = block as Record<string, unknown>;
          if (b['type'] === 'tool-call') {
            if (typeof b['id'] !== 'string') return;
            ids.push(b['id']);
          }
        }
        this.strings.push(data.message.id, ...ids);
        break;
      }
      case 'tool/result':
        this.strings.push(data.message.id, data.message.source.callId, contentFreeKey(data));
        break;
      default:
        break;
    }
    if (n === null) {
      this.strings.length = stringsAt;
      return;
    }
    const r = this.rows;
    r[at] = code;
    r[at + 1] = event.seq;
    r[at + 2] = event.time;
    r[at + 3] = n;
    r[at + 4] = replace === null ? 0 : replace === undefined ? 1 : 2;
    if (replace) {
      r[at + 5] = replace.start;
      r[at + 6] = replace.end;
    }
    const list = event.sourceEventSeqs;
    if (list === undefined) r[at + 7] = -1;
    else {
      r[at + 7] = this.pool.length;
      r[at + 8] = list.length;
      for (const s of list) this.pool.push(s);
    }
    r[at + 9] = stringsAt;
    r[at + 10] = this.strings.length - stringsAt;
  }

  done(): LineFacts {
    return { rows: this.rows, pool: this.pool.done(), strings: this.strings };
  }
}

const NO_DATA = Object.freeze({});

/** The pruned event of plain line `k` (its kind is a type code). */
export function prunedEvent(facts: LineFacts, k: number): PrunedEvent {
  const { rows: r, pool, strings } = facts;
  const at = k * FACT_STRIDE;
  const type = FACT_TYPES[(r[at] as number) - 1] as string;
  const seq = r[at + 1] as number;
  const n = r[at + 3] as number;
  const s = r[at + 9] as number;
  let data: PrunedEvent['data'] = NO_DATA;
  let messageId: string | undefined;
  let contentFree: string | undefined;
  switch (type) {
    case 'turn/start':
      data = Number.isNaN(n) ? {} : { turn: n };
      break;
    case 'step/start':
      data = Number.isNaN(n) ? {} : { step: n };
      break;
    case 'tool/call':
      data = { callId: strings[s] };
      break;
    case 'user/message':
      messageId = strings[s] as string;
      data = { id: messageId };
      break;
    case 'assistant/message': {
      messageId = strings[s] as string;
      // Only the tool-call blocks: the tracker reads nothing else of the content.
      const content: { type: 'tool-call'; id: string }[] = [];
      for (let i = s + 1; i < s + (r[at + 10] as number); i++) content.push({ type: 'tool-call', id: strings[i] as string });
      data = { ...(Number.isNaN(n) ? {} : { step: n }), message: { id: messageId, content } };
      break;
    }
    case 'tool/result':
      messageId = strings[s] as string;
      data = { message: { id: messageId, source: { callId: strings[s + 1] } } };
      contentFree = strings[s + 2] as string;
      break;
    default:
      break;
  }
  const e = new PrunedEvent(type, seq, r[at + 2] as number, data);
  const op = r[at + 4];
  if (op === 1) e.surfaceOp = 'append';
  else if (op === 2) e.surfaceOp = { op: 'replace', start: r[at + 5] as number, end: r[at + 6] as number };
  const from = r[at + 7] as number;
  if (from !== -1) e.sourceEventSeqs = Array.from(pool.subarray(from, from + (r[at + 8] as number)));
  if (messageId !== undefined) e.messageId = messageId;
  if (contentFree !== undefined) e.contentFree = contentFree;
  return e;
}

/** The pruned events of packed chunk row `k` (assistant/chunk; the fold reads their seq and time only). */
export function prunedChunks(facts: LineFacts, k: number): RowChunk[] {
  const { rows: r, pool } = facts;
  const at = k * FACT_STRIDE;
  const seq0 = r[at + 1] as number;
  const members = r[at + 2] as number;
  const from = r[at + 3] as number;
  const data = rowData(r[at + 4] as number, r[at + 5] as number);
  const out: RowChunk[] = new Array(members);
  for (let i = 0; i < members; i++) out[i] = new RowChunk('assistant/chunk', seq0 + i, pool[from + i] as number, data);
  return out;
}

/**
 * What a packed row's pruned members carry in `data`: the row's turn and step, one object the
 * row's members share (never changed). Of a chunk, the fold and the step rules read nothing else.
 */
function rowData(turn: number, step: number): { readonly turn: number; readonly step: number } {
  return Object.freeze({ turn, step });
}

/**
 * `decodeStorageRecord` of a packed row for a read whose consumers take pruned events: the same
 * checks (throws `MalformedRow`), the members as pruned events, never built.
 */
export function prunedRowMembers(row: Record<string, unknown>): RowChunk[] {
  const { seq0, time0, count, gaps, turn, step } = rowMemberTimes(row);
  const data = rowData(turn, step);
  const out: RowChunk[] = new Array(count);
  let time = time0;
  for (let k = 0; k < count; k++) {
    if (k > 0) time += gaps[k - 1] as number;
    out[k] = new RowChunk('assistant/chunk', seq0 + k, time, data);
  }
  return out;
}

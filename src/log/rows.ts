import type { EventEnvelope, KnownEvent, SessionEvent } from './types.js';
import { toJson } from '../core/json.js';

/** Storage-only packed chunk-row tags (never events). */
export const ROW_TAGS = ['text-chunks', 'reasoning-chunks', 'tool-call-chunks'] as const;
export type RowTag = (typeof ROW_TAGS)[number];

export class MalformedRow extends Error {}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function exactKeys(r: Record<string, unknown>, keys: readonly string[]): boolean {
  const own = Object.keys(r);
  return own.length === keys.length && keys.every((k) => Object.hasOwn(r, k));
}

function isSafe(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

/** Is `value` a packed chunk row (by its tag), which `decodeStorageRecord` validates and expands? */
export function isRowRecord(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const tag = value['type'];
  return tag === 'text-chunks' || tag === 'reasoning-chunks' || tag === 'tool-call-chunks';
}

/** A packed row that passed DSH's checks: what its members are expanded from. */
interface CheckedRow {
  tag: RowTag;
  seq0: number;
  time0: number;
  data: Record<string, unknown>;
  payload: string[];
  gaps: number[];
  tool: boolean;
}

/** DSH's checks of a packed row, in DSH's order (throws `MalformedRow`). */
function checkedRow(value: Record<string, unknown>): CheckedRow {
  const tag = value['type'] as RowTag;
  const fail = (why: string): never => {
    throw new MalformedRow(`malformed ${tag} storage row: ${why}`);
  };
  if (!exactKeys(value, ['type', 'seq0', 'time0', 'data'])) fail('envelope must be exactly {type, seq0, time0, data}');
  const seq0 = value['seq0'];
  if (!isSafe(seq0) || seq0 < 0) fail('seq0 must be a non-negative safe integer');
  const time0 = value['time0'];
  if (!isSafe(time0)) fail('time0 must be a safe integer');
  const data = value['data'];
  if (!isRecord(data)) return fail('data must be an object');
  const tool = tag === 'tool-call-chunks';
  if (tool) {
    if (!exactKeys(data, ['turn', 'step', 'index', 'id', 'name', 'dt', 'args']) && !exactKeys(data, ['turn', 'step', 'index', 'id', 'dt', 'args'])) {
      fail('data must be exactly {turn, step, index, id, name?, dt, args}');
    }
    if (typeof data['id'] !== 'string' || (Object.hasOwn(data, 'name') && typeof data['name'] !== 'string')) {
      fail('id (and name when present) must be strings');
    }
  } else if (!exactKeys(data, ['turn', 'step', 'index', 'dt', 'texts'])) {
    fail('data must be exactly {turn, step, index, dt, texts}');
  }
  if (typeof data['turn'] !== 'number' || typeof data['step'] !== 'number' || typeof data['index'] !== 'number') {
    fail('turn/step/index must be numbers');
  }
  const payloadKey = tool ? 'args' : 'texts';
  const payload = data[payloadKey];
  if (!Array.isArray(payload) || payload.length === 0 || !payload.every((t) => typeof t === 'string')) {
    fail(`${payloadKey} must be a non-empty string array`);
  }
  const dt = data['dt'];
  if (!Array.isArray(dt) || !dt.every(isSafe)) fail('dt must be an array of safe integers');
  const members = (payload as string[]).length;
  const gaps = dt as number[];
  if (gaps.length !== members - 1) fail(`dt length ${gaps.length} does not match ${members} members`);
  if (!Number.isSafeInteger((seq0 as number) + members - 1)) fail('member seqs must stay safe integers');
  let time = time0 as number;
  for (const gap of gaps) {
    time += gap;
    if (!Number.isSafeInteger(time)) fail('member times must stay safe integers');
  }
  return { tag, seq0: seq0 as number, time0: time0 as number, data, payload: payload as string[], gaps, tool };
}

/**
 * An `assistant/chunk` event `decodeStorageRecord` expanded from a checked packed row: a plain
 * event in every way a consumer can see (own fields type, seq, time, data, in that order), whose
 * class says its envelope is known to be valid (a safe non-negative seq, a safe time, data), so
 * restore's stateless checks, which cannot fail on it, are not run again for each member.
 */
export class RowChunkEvent implements KnownEvent<'assistant/chunk'> {
  // Declared in the order a parsed event's keys come (JSON.stringify and Object.keys see this order).
  type: 'assistant/chunk';
  seq: number;
  time: number;
  data: KnownEvent<'assistant/chunk'>['data'];
  constructor(seq: number, time: number, data: KnownEvent<'assistant/chunk'>['data']) {
    this.type = 'assistant/chunk';
    this.seq = seq;
    this.time = time;
    this.data = data;
  }
}

/**
 * DSH's `decodeStorageRecord`: a non-row value passes through as one event
 * (unvalidated); a row tag is validated in DSH's order and expanded.
 */
export function decodeStorageRecord(value: unknown): SessionEvent[] {
  if (!isRowRecord(value)) return [value as SessionEvent];
  const { tag, seq0, time0, data, payload, gaps, tool } = checkedRow(value);
  const members = payload.length;
  const turn = data['turn'];
  const step = data['step'];
  const index = data['index'];
  const out: SessionEvent[] = new Array(members);
  let time = time0;
  for (let k = 0; k < members; k++) {
    if (k > 0) time += gaps[k - 1] as number;
    const piece = payload[k] as string;
    let chunk: Record<string, unknown>;
    if (tool) {
      chunk = { type: 'tool-call-delta', index, id: data['id'] };
      if (Object.hasOwn(data, 'name')) chunk['name'] = data['name'];
      chunk['argumentsDelta'] = piece;
    } else {
      chunk = { type: tag === 'text-chunks' ? 'text-delta' : 'reasoning-delta', index, text: piece };
    }
    out[k] = new RowChunkEvent(seq0 + k, time, { turn, step, chunk });
  }
  return out;
}

/**
 * A packed row's member seqs and times as `decodeStorageRecord` expands them, without building
 * its events: `seq0`, `count` members, the first at `time0`, each next one `gaps[k]` later; all
 * of them of the row's `turn` and `step`.
 * The row is checked as `decodeStorageRecord` checks it (throws `MalformedRow`).
 */
export function rowMemberTimes(row: Record<string, unknown>): { seq0: number; time0: number; count: number; gaps: readonly number[]; turn: number; step: number } {
  const { seq0, time0, payload, gaps, data } = checkedRow(row);
  return { seq0, time0, count: payload.length, gaps, turn: data['turn'] as number, step: data['step'] as number };
}

/**
 * A packed row's members as `decodeStorageRecord` expands them, without building them: each
 * member's seq, time and JSON text (`expandedChunkJson` of the expanded event), in order. The
 * row is checked as `decodeStorageRecord` checks it (throws `MalformedRow`).
 */
export function forEachRowMemberJson(row: Record<string, unknown>, each: (seq: number, time: number, json: string) => void): void {
  const { tag, seq0, time0, data, payload, gaps, tool } = checkedRow(row);
  const mid = rowMemberMid(tag, data['turn'] as number, data['step'] as number, data['index'] as number, tool ? (data['id'] as string) : undefined, Object.hasOwn(data, 'name') ? (data['name'] as string) : undefined);
  let time = time0;
  for (let k = 0; k < payload.length; k++) {
    if (k > 0) time += gaps[k - 1] as number;
    each(seq0 + k, time, `${rowMemberHead(seq0 + k, time)}${mid}${JSON.stringify(payload[k])}}}}`);
  }
}

/**
 * The JSON text of a packed row member's event (as `decodeStorageRecord` expands it) is
 * `rowMemberHead(seq, time)`, then `rowMemberMid(...)` (the same for every member of the row),
 * then the member's text (or arguments delta) as a JSON string, then `}}}`.
 */
export function rowMemberHead(seq: number, time: number): string {
  return `${ROW_MEMBER_HEAD[0]}${seq}${ROW_MEMBER_HEAD[1]}${time}`;
}

/** `rowMemberHead(seq, time)` is the first text, the seq, the second, the time. */
export const ROW_MEMBER_HEAD = ['{"type":"assistant/chunk","seq":', ',"time":'] as const;

/** See `rowMemberHead`: `id` is given for a tool-call row (`name` when the row has one). */
export function rowMemberMid(tag: RowTag, turn: number, step: number, index: number, id: string | undefined, name: string | undefined): string {
  const head = `,"data":{"turn":${turn},"step":${step},"chunk":`;
  return tag === 'tool-call-chunks'
    ? `${head}{"type":"tool-call-delta","index":${index},"id":${toJson(id)}${name !== undefined ? `,"name":${toJson(name)}` : ''},"argumentsDelta":`
    : `${head}{"type":"${tag === 'text-chunks' ? 'text-delta' : 'reasoning-delta'}","index":${index},"text":`;
}

/**
 * `JSON.stringify` of an event `decodeStorageRecord` expanded from a packed
 * row, written out directly (the expansion's shape and key order are fixed):
 * about 2.5x faster than the generic serializer, which matters when a
 * streaming view re-serializes millions of chunks. Only for such events.
 */
export function expandedChunkJson(event: SessionEvent): string {
  const d = event.data as PackableChunk;
  const c = d.chunk;
  const tool = c.type === 'tool-call-delta';
  const tag: RowTag = tool ? 'tool-call-chunks' : c.type === 'text-delta' ? 'text-chunks' : 'reasoning-chunks';
  const mid = rowMemberMid(tag, d.turn, d.step, c.index, tool ? c.id : undefined, tool && Object.hasOwn(c, 'name') ? c.name : undefined);
  return `${rowMemberHead(event.seq, event.time)}${mid}${toJson(tool ? c.argumentsDelta : c.text)}}}}`;
}

type ChunkKind = 'text' | 'reasoning' | 'tool';

/** The `data` of a delta chunk a row holds (what `candidate` checks; an expanded row member's shape). */
type PackableChunk = {
  turn: number;
  step: number;
  chunk: { type: string; index: number; text: string; id: string; name?: string; argumentsDelta: string };
};

interface Candidate {
  kind: ChunkKind;
  event: EventEnvelope<'assistant/chunk', PackableChunk>;
}

function candidate(input: SessionEvent): Candidate | undefined {
  const e = input as unknown as Record<string, unknown>;
  // Its shape is checked below before a candidate is made of it.
  const event = input as unknown as Candidate['event'];
  if (!exactKeys(e, ['type', 'seq', 'time', 'data'])) return undefined;
  if (e['type'] !== 'assistant/chunk' || !isSafe(e['seq']) || (e['seq'] as number) < 0 || !isSafe(e['time'])) return undefined;
  const data = e['data'];
  if (!isRecord(data) || !exactKeys(data, ['turn', 'step', 'chunk'])) return undefined;
  if (typeof data['turn'] !== 'number' || typeof data['step'] !== 'number') return undefined;
  const chunk = data['chunk'];
  if (!isRecord(chunk) || typeof chunk['index'] !== 'number') return undefined;
  if ((chunk['type'] === 'text-delta' || chunk['type'] === 'reasoning-delta') && exactKeys(chunk, ['type', 'index', 'text']) && typeof chunk['text'] === 'string') {
    return { kind: chunk['type'] === 'text-delta' ? 'text' : 'reasoning', event };
  }
  if (chunk['type'] === 'tool-call-delta' && typeof chunk['id'] === 'string' && typeof chunk['argumentsDelta'] === 'string') {
    if (exactKeys(chunk, ['type', 'index', 'id', 'argumentsDelta'])) return { kind: 'tool', event };
    if (exactKeys(chunk, ['type', 'index', 'id', 'name', 'argumentsDelta']) && typeof chunk['name'] === 'string') return { kind: 'tool', event };
  }
  return undefined;
}

function continues(prev: Candidate, next: Candidate): boolean {
  if (prev.kind !== next.kind) return false;
  const a = prev.event;
  const b = next.event;
  if (b.seq !== a.seq + 1 || !Number.isSafeInteger(b.time - a.time)) return false;
  if (a.data.turn !== b.data.turn || a.data.step !== b.data.step || a.data.chunk.index !== b.data.chunk.index) return false;
  if (prev.kind === 'tool') {
    const ca = a.data.chunk;
    const cb = b.data.chunk;
    if (ca.id !== cb.id) return false;
    if (Object.hasOwn(ca, 'name') !== Object.hasOwn(cb, 'name')) return false;
    if (Object.hasOwn(ca, 'name') && ca.name !== cb.name) return false;
  }
  return true;
}

/** Serialize one event line in the writer's key order (live appends). */
export function eventLine(event: SessionEvent): string {
  return toJson(event);
}

function rowLine(run: Candidate[]): string {
  const first = run[0]!.event;
  const dt: number[] = [];
  for (let i = 1; i < run.length; i++) dt.push(run[i]!.event.time - run[i - 1]!.event.time);
  const { turn, step, chunk } = first.data;
  if (run[0]!.kind === 'tool') {
    const data: Record<string, unknown> = { turn, step, index: chunk.index, dt, id: chunk.id };
    if (Object.hasOwn(chunk, 'name')) data['name'] = chunk.name;
    data['args'] = run.map((c) => c.event.data.chunk.argumentsDelta);
    return toJson({ type: 'tool-call-chunks', seq0: first.seq, time0: first.time, data });
  }
  return toJson({
    type: run[0]!.kind === 'text' ? 'text-chunks' : 'reasoning-chunks',
    seq0: first.seq,
    time0: first.time,
    data: { turn, step, index: chunk.index, dt, texts: run.map((c) => c.event.data.chunk.text) },
  });
}

/**
 * The writer's `packChunkRuns` for one append batch: runs of >= 3 whitelisted
 * delta chunks become one row; everything else is written verbatim, in order.
 * Returns the batch's lines (without trailing LF).
 */
export function packBatchLines(events: readonly SessionEvent[], packChunks = true): string[] {
  return packBatch(events, packChunks, eventLine);
}

/** `packBatchLines` with each unpacked event's line made by `line` (the writer leaves a huge one as its event). */
export function packBatch<L>(events: readonly SessionEvent[], packChunks: boolean, line: (event: SessionEvent) => string | L): (string | L)[] {
  const lines: (string | L)[] = [];
  let run: Candidate[] = [];
  const flush = () => {
    if (run.length >= 3) lines.push(rowLine(run));
    else for (const c of run) lines.push(line(c.event));
    run = [];
  };
  for (const event of events) {
    const c = packChunks ? candidate(event) : undefined;
    if (!c) {
      flush();
      lines.push(line(event));
      continue;
    }
    if (run.length > 0 && !continues(run[run.length - 1]!, c)) flush();
    run.push(c);
  }
  flush();
  return lines;
}

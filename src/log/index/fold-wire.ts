/**
 * The wire between a validating pass and the folds that run on a thread of
 * their own (`fold-thread.ts`): each logical event reduced to what those folds
 * read of it, in batches of numbers (most events: a packed row's chunk is five
 * numbers) and, for the few events that carry more, a small JSON projection.
 *
 * What crosses (the *fold projection*; a fold that runs off the thread reads
 * nothing else of an event): `type`, `seq`, `time`, `surfaceOp`,
 * `sourceEventSeqs`, and of `data`: whether it is there, null or another
 * value, its `turn`, `step` and `callId`, `chunk.type`, and of `message`:
 * whether it is there or null, its `content`'s length, and each content
 * block's `type` and `id`. Every value crosses as it was parsed (JSON in,
 * JSON out), except long text the folds only test for presence or length.
 * `test/fold-thread.test.ts` proves that folds fed this projection save the
 * same bytes as folds fed the events, on every corpus artifact and mutation.
 */
import { RowChunk } from '../pruned-event.js';
import type { SessionEvent } from '../types.js';

/** Record kinds (the first number of each record). */
const ROWS = 1; // [ROWS, seq0, turn, step, count, ...times]: consecutive lean members of one packed row
const SIMPLE = 2; // [SIMPLE, type, seq, time, turn, step]: an event of SIMPLE_TYPES with only a numeric turn and step read
const CHUNK = 3; // [CHUNK, seq, time, turn, step, chunk kind]: an assistant/chunk with a numeric turn and step
const PROJECTED = 4; // [PROJECTED, string index, source count (-1: none or in the JSON), ...sources]
const SURFACE = 5; // [SURFACE, type, seq, time, flags, turn, step, start, end, content length, ids, ...id string indexes, sources, ...sources]
const TOOL_CALL = 6; // [TOOL_CALL, seq, time, turn, step, id string index]

/** Types whose fold-visible part is their type, seq, time, turn and step (no surface op, no sources). */
const SIMPLE_TYPES = ['turn/start', 'turn/end', 'step/start', 'step/end', 'request/header', 'request/context', 'llm/retry'] as const;
const SIMPLE_CODE = new Map<string, number>(SIMPLE_TYPES.map((t, i) => [t, i]));
const SURFACE_WIRE_TYPES = ['user/message', 'assistant/message', 'tool/result'] as const;
const SURFACE_CODE = new Map<string, number>(SURFACE_WIRE_TYPES.map((t, i) => [t, i]));

/** SURFACE flags. */
const HAS_TURN = 1;
const HAS_STEP = 2;
const REPLACE = 4; // else the op is 'append'
const HAS_SOURCES = 8;
const HAS_MESSAGE = 16;
const NULL_MESSAGE = 32;
const CONTENT = 64; // the message is an object whose content is an array

/** `chunk.type` as the folds read it: a finish, a usage chunk, anything else. */
const CHUNK_KINDS = [undefined, 'finish', 'usage'] as const;

/** One batch on the wire: the numbers (transferred) and the projections they point at. */
export interface WireBatch {
  nums: Float64Array;
  /** How many of `nums` the batch holds. */
  length: number;
  strs: string[];
}

const BATCH_SLOTS = 1 << 17;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A value the folds only test for presence, null-ness or property reads: long text need not cross. */
function opaque(v: unknown): unknown {
  if (typeof v === 'string') return '';
  if (Array.isArray(v)) return [];
  if (isPlainObject(v)) return {};
  return v;
}

/** What the folds read of `data.message.content` (its length, each block's type and id). */
function projectContent(c: unknown): unknown {
  if (Array.isArray(c)) {
    return c.map((b) => {
      if (!isPlainObject(b)) return opaque(b);
      const out: Record<string, unknown> = {};
      if (b['type'] !== undefined) out['type'] = b['type'];
      if (b['id'] !== undefined) out['id'] = b['id'];
      return out;
    });
  }
  if (typeof c === 'string' || isPlainObject(c)) {
    const length = (c as { length?: unknown }).length;
    return length === undefined ? {} : { length };
  }
  return c;
}

function projectData(d: unknown): unknown {
  if (!isPlainObject(d)) return opaque(d);
  const out: Record<string, unknown> = {};
  for (const k of ['turn', 'step', 'callId'] as const) if (d[k] !== undefined) out[k] = d[k];
  const chunk = d['chunk'];
  if (chunk !== undefined) out['chunk'] = isPlainObject(chunk) ? (chunk['type'] !== undefined ? { type: chunk['type'] } : {}) : opaque(chunk);
  const message = d['message'];
  if (message !== undefined) {
    if (isPlainObject(message)) {
      const m: Record<string, unknown> = {};
      if (message['content'] !== undefined) m['content'] = projectContent(message['content']);
      out['message'] = m;
    } else out['message'] = opaque(message);
  }
  return out;
}

/** Whether every element is a number (sources that cross as numbers). */
function allNumbers(list: unknown[]): boolean {
  for (let i = 0; i < list.length; i++) if (typeof list[i] !== 'number') return false;
  return true;
}

/** A replace op rebuilt exactly from its two numbers. */
function isPlainReplace(op: Record<string, unknown>): boolean {
  const keys = Object.keys(op);
  return keys.length === 3 && op['op'] === 'replace' && typeof op['start'] === 'number' && typeof op['end'] === 'number' && Object.hasOwn(op, 'op') && Object.hasOwn(op, 'start') && Object.hasOwn(op, 'end');
}

/** Writes events to the wire on the validating pass's thread; `flush` hands over a batch. */
export class FoldWireWriter {
  private nums = new Float64Array(BATCH_SLOTS);
  private n = 0;
  private strs: string[] = [];
  /** The open run of row members: its data object, the next seq it takes, and where its count is. */
  private runData: unknown;
  private runNext = -1;
  private runCountAt = -1;

  /** Whether a batch is due (the caller flushes then). */
  get full(): boolean {
    return this.n >= BATCH_SLOTS - 64;
  }

  private room(slots: number): Float64Array {
    if (this.n + slots <= this.nums.length) return this.nums;
    const grown = new Float64Array(Math.max(this.nums.length * 2, this.n + slots));
    grown.set(this.nums.subarray(0, this.n));
    return (this.nums = grown);
  }

  /** A record of six numbers. */
  private six(k: number, a1: number, a2: number, a3: number, a4: number, a5: number): void {
    const a = this.room(6);
    const n = this.n;
    a[n] = k;
    a[n + 1] = a1;
    a[n + 2] = a2;
    a[n + 3] = a3;
    a[n + 4] = a4;
    a[n + 5] = a5;
    this.n = n + 6;
  }

  write(e: SessionEvent): void {
    const seq = e.seq;
    const time = e.time;
    if (typeof seq !== 'number' || typeof time !== 'number') return this.projected(e);
    const data = e.data;
    if (e instanceof RowChunk) {
      if (data === this.runData && seq === this.runNext) {
        const a = this.room(1);
        a[this.n++] = time;
        a[this.runCountAt]! += 1;
        this.runNext = seq + 1;
        return;
      }
      const turn = data?.turn;
      const step = data?.step;
      if (typeof turn === 'number' && typeof step === 'number') {
        const a = this.room(6);
        let n = this.n;
        a[n++] = ROWS;
        a[n++] = seq;
        a[n++] = turn;
        a[n++] = step;
        this.runCountAt = n;
        a[n++] = 1;
        a[n++] = time;
        this.n = n;
        this.runData = data;
        this.runNext = seq + 1;
        return;
      }
      return this.projected(e);
    }
    this.runData = undefined;
    const plain = e as SessionEvent & { surfaceOp?: unknown; sourceEventSeqs?: unknown };
    if (!isPlainObject(data)) return this.projected(e);
    const type = e.type;
    const op = plain.surfaceOp;
    const sources = plain.sourceEventSeqs;
    if (op === undefined && sources === undefined) {
      const turn = data['turn'];
      const step = data['step'];
      if (typeof turn === 'number' && typeof step === 'number') {
        if (type === 'assistant/chunk') {
          const chunk = data['chunk'];
          const kind = isPlainObject(chunk) ? chunk['type'] : undefined;
          return this.six(CHUNK, seq, time, turn, step, kind === 'finish' ? 1 : kind === 'usage' ? 2 : 0);
        }
        const code = SIMPLE_CODE.get(type);
        if (code !== undefined) return this.six(SIMPLE, code, seq, time, turn, step);
        const id = data['callId'];
        if (type === 'tool/call' && typeof id === 'string') {
          this.six(TOOL_CALL, seq, time, turn, step, this.strs.length);
          this.strs.push(id);
          return;
        }
      }
      return this.projected(e);
    }
    const code = SURFACE_CODE.get(type);
    if (code === undefined || (sources !== undefined && !(Array.isArray(sources) && allNumbers(sources)))) return this.projected(e);
    let flags = 0;
    if (op !== 'append') {
      if (!isPlainObject(op) || !isPlainReplace(op)) return this.projected(e);
      flags |= REPLACE;
    }
    const turn = data['turn'];
    const step = data['step'];
    if (turn !== undefined) {
      if (typeof turn !== 'number') return this.projected(e);
      flags |= HAS_TURN;
    }
    if (step !== undefined) {
      if (typeof step !== 'number') return this.projected(e);
      flags |= HAS_STEP;
    }
    const message = data['message'];
    let content: unknown[] | undefined;
    if (message !== undefined) {
      flags |= HAS_MESSAGE;
      if (message === null) flags |= NULL_MESSAGE;
      else if (isPlainObject(message) && Array.isArray(message['content'])) {
        flags |= CONTENT;
        content = message['content'];
      } else return this.projected(e);
    }
    const list = sources as number[] | undefined;
    if (list) flags |= HAS_SOURCES;
    // The content blocks the folds read: a tool call's id (any other block is only counted).
    let ids = 0;
    if (content) for (const b of content) if (isPlainObject(b) && b['type'] === 'tool-call' && typeof b['id'] === 'string') ids++;
    const a = this.room(12 + ids + (list?.length ?? 0));
    let n = this.n;
    a[n++] = SURFACE;
    a[n++] = code;
    a[n++] = seq;
    a[n++] = time;
    a[n++] = flags;
    a[n++] = typeof turn === 'number' ? turn : 0;
    a[n++] = typeof step === 'number' ? step : 0;
    const range = op as unknown as { start: number; end: number };
    a[n++] = flags & REPLACE ? range.start : 0;
    a[n++] = flags & REPLACE ? range.end : 0;
    a[n++] = content ? content.length : 0;
    a[n++] = ids;
    if (ids > 0) {
      for (const b of content as unknown[]) {
        if (isPlainObject(b) && b['type'] === 'tool-call' && typeof b['id'] === 'string') {
          a[n++] = this.strs.length;
          this.strs.push(b['id']);
        }
      }
    }
    a[n++] = list ? list.length : 0;
    if (list) for (let i = 0; i < list.length; i++) a[n++] = list[i] as number;
    this.n = n;
  }

  private projected(e: SessionEvent): void {
    this.runData = undefined;
    const p: Record<string, unknown> = { type: e.type, seq: e.seq, time: e.time };
    const plain = e as SessionEvent & { surfaceOp?: unknown; sourceEventSeqs?: unknown };
    const op = plain.surfaceOp;
    if (op !== undefined) {
      p['surfaceOp'] = op;
      // JSON drops a key whose value is undefined, which the folds still count (an event built in memory may have one).
      if (isPlainObject(op)) {
        const gone = Object.keys(op).filter((k) => (op as Record<string, unknown>)[k] === undefined);
        if (gone.length > 0) p['undefinedOpKeys'] = gone;
      }
    }
    const sources = plain.sourceEventSeqs;
    // Sources that are all numbers cross as numbers (a message can cite thousands of chunks).
    const list = Array.isArray(sources) && allNumbers(sources) ? (sources as number[]) : undefined;
    if (sources !== undefined && !list) p['sourceEventSeqs'] = sources;
    if (e.data !== undefined) p['data'] = projectData(e.data);
    const a = this.room(3 + (list?.length ?? 0));
    a[this.n++] = PROJECTED;
    a[this.n++] = this.strs.length;
    a[this.n++] = list ? list.length : -1;
    if (list) for (const s of list) a[this.n++] = s;
    this.strs.push(JSON.stringify(p));
  }

  /** The batch written so far (undefined: none), and a fresh one begun. */
  flush(): WireBatch | undefined {
    if (this.n === 0 && this.strs.length === 0) return undefined;
    // The buffer itself is handed over (transferred); its first `length` numbers are the batch.
    const batch = { nums: this.nums, length: this.n, strs: this.strs };
    this.nums = new Float64Array(BATCH_SLOTS);
    this.n = 0;
    this.strs = [];
    this.runData = undefined;
    return batch;
  }
}

/**
 * The events of a batch as the folds off the thread see them, in order. `cursor`: a packed row's
 * members are one object, its seq and time moved to each member in turn before it is emitted (most
 * events of a long log, and no garbage), for folds that read a row member only while it is emitted
 * and keep none past the next event but its seq and time.
 */
export function readWire(batch: WireBatch, emit: (e: SessionEvent) => void, cursor = false): void {
  const a = batch.nums;
  const n = batch.length;
  const strs = batch.strs;
  for (let i = 0; i < n; ) {
    const kind = a[i] as number;
    if (kind === ROWS) {
      // A row's members share one `{turn, step}`, as a lean read hands them over.
      const seq0 = a[i + 1] as number;
      const data = { turn: a[i + 2] as number, step: a[i + 3] as number };
      const count = a[i + 4] as number;
      i += 5;
      if (cursor) {
        // One member object for the run, moved along it (see `readWire`'s `cursor`).
        const member = new RowChunk('assistant/chunk', seq0, a[i] as number, data) as { seq: number; time: number };
        emit(member as RowChunk);
        for (let k = 1; k < count; k++) {
          member.seq = seq0 + k;
          member.time = a[i + k] as number;
          emit(member as RowChunk);
        }
      } else for (let k = 0; k < count; k++) emit(new RowChunk('assistant/chunk', seq0 + k, a[i + k] as number, data));
      i += count;
    } else if (kind === SIMPLE) {
      emit({ type: SIMPLE_TYPES[a[i + 1] as number] as string, seq: a[i + 2] as number, time: a[i + 3] as number, data: { turn: a[i + 4], step: a[i + 5] } } as SessionEvent);
      i += 6;
    } else if (kind === CHUNK) {
      const type = CHUNK_KINDS[a[i + 5] as number];
      emit({ type: 'assistant/chunk', seq: a[i + 1] as number, time: a[i + 2] as number, data: { turn: a[i + 3], step: a[i + 4], chunk: type === undefined ? {} : { type } } } as SessionEvent);
      i += 6;
    } else if (kind === TOOL_CALL) {
      emit({ type: 'tool/call', seq: a[i + 1] as number, time: a[i + 2] as number, data: { turn: a[i + 3], step: a[i + 4], callId: strs[a[i + 5] as number] } } as SessionEvent);
      i += 6;
    } else if (kind === SURFACE) {
      const flags = a[i + 4] as number;
      const data: Record<string, unknown> = {};
      if (flags & HAS_TURN) data['turn'] = a[i + 5];
      if (flags & HAS_STEP) data['step'] = a[i + 6];
      const e: Record<string, unknown> = {
        type: SURFACE_WIRE_TYPES[a[i + 1] as number],
        seq: a[i + 2],
        time: a[i + 3],
        surfaceOp: flags & REPLACE ? { op: 'replace', start: a[i + 7], end: a[i + 8] } : 'append',
        data,
      };
      const length = a[i + 9] as number;
      const ids = a[i + 10] as number;
      i += 11;
      if (flags & HAS_MESSAGE) {
        if (flags & NULL_MESSAGE) data['message'] = null;
        else {
          // The tool calls' ids, then blocks that are only counted.
          const content: unknown[] = [];
          for (let k = 0; k < ids; k++) content.push({ type: 'tool-call', id: strs[a[i + k] as number] });
          while (content.length < length) content.push(null);
          data['message'] = { content };
        }
      }
      i += ids;
      const count = a[i] as number;
      i += 1;
      if (flags & HAS_SOURCES) e['sourceEventSeqs'] = Array.from(a.subarray(i, i + count));
      i += count;
      emit(e as unknown as SessionEvent);
    } else if (kind === PROJECTED) {
      const e = JSON.parse(strs[a[i + 1] as number] as string) as SessionEvent & { sourceEventSeqs?: unknown; surfaceOp?: Record<string, unknown>; undefinedOpKeys?: string[] };
      if (e.undefinedOpKeys) {
        for (const k of e.undefinedOpKeys) (e.surfaceOp as Record<string, unknown>)[k] = undefined;
        delete e.undefinedOpKeys;
      }
      const count = a[i + 2] as number;
      i += 3;
      if (count >= 0) {
        e.sourceEventSeqs = Array.from(a.subarray(i, i + count));
        i += count;
      }
      emit(e);
    } else throw new Error(`fold wire: unknown record kind ${kind}`);
  }
}

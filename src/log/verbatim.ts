/**
 * Stored lines whose logical JSON text is the line itself, recognised without parsing them: the
 * second pass of a streamed view over a log already accepted copies such a line's bytes to its
 * output instead of parsing and re-serializing it.
 *
 * A line qualifies when its bytes are valid UTF-8 (decoding and re-encoding gives them back), it
 * does not end in CR (the logical text of such a line is re-serialized), and it is an object that
 * begins `{"type":"T","seq":S,"time":N` with no other top-level `type`, `seq` or `time` key (so
 * `JSON.parse` gives exactly T, S and N), T written without escapes and not a packed-row tag (so
 * the line is one plain event), and S and N canonical integers (so `String(n)` writes them back).
 * Anything else is left to the caller's parse. The line must be one the validating pass parsed
 * (valid JSON): this scan finds structure, it does not check syntax.
 */
import { isUtf8 } from 'node:buffer';
import { ROW_TAGS, rowMemberMid, type RowTag } from './rows.js';

/** What a qualifying line says about its event (its seq is the caller's to check). */
export interface VerbatimHead {
  type: string;
  seq: number;
  time: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

const PREFIX_TYPE = Buffer.from('{"type":"');
const AFTER_TYPE = Buffer.from('","seq":');
const AFTER_SEQ = Buffer.from(',"time":');
/** Bytes of number and literal tokens. */
const LITERAL = new Uint8Array(256);
for (const c of '-+.0123456789eEtrufalsn') LITERAL[c.charCodeAt(0)] = 1;
const ROW_TAG_SET = new Set<string>(ROW_TAGS);

function startsWithAt(line: Buffer, at: number, bytes: Buffer): boolean {
  if (at + bytes.length > line.length) return false;
  for (let i = 0; i < bytes.length; i++) if (line[at + i] !== bytes[i]) return false;
  return true;
}

/** The value of the integer `integerAt` read last (so a row's many numbers make no objects). */
let integerValue = 0;

/**
 * A canonical integer literal at `at` (`-`, then 1 to 15 digits, no leading zero, not `-0`: what
 * `String(n)` writes for it): its end, its value left in `integerValue`; -1 if there is none.
 */
function integerAt(line: Buffer, at: number): number {
  let i = at;
  const negative = line[i] === 0x2d;
  if (negative) i++;
  const first = i;
  let value = 0;
  for (; i < line.length; i++) {
    const d = (line[i] as number) - 0x30;
    if (d < 0 || d > 9) break;
    value = value * 10 + d;
  }
  const digits = i - first;
  if (digits === 0 || digits > 15 || (digits > 1 && line[first] === 0x30) || (negative && value === 0)) return -1;
  integerValue = negative ? -value : value;
  return i;
}

/** The end of the JSON string whose opening quote is at `at` (just past its closing quote). */
function stringEnd(line: Buffer, at: number): number {
  let q = at;
  for (;;) {
    q = line.indexOf(QUOTE, q + 1);
    if (q < 0) return -1;
    let slashes = 0;
    while (line[q - 1 - slashes] === BACKSLASH) slashes++;
    if ((slashes & 1) === 0) return q + 1;
  }
}

/** The end of the JSON value starting at `at` (no leading whitespace), or -1. */
function valueEnd(line: Buffer, at: number): number {
  const c = line[at];
  if (c === QUOTE) return stringEnd(line, at);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let i = at; i < line.length; i++) {
      const b = line[i];
      if (b === QUOTE) {
        const e = stringEnd(line, i);
        if (e < 0) return -1;
        i = e - 1;
      } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) depth++;
      else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  // A number or a literal (true, false, null): its characters only (whitespace: the caller parses).
  let i = at;
  while (i < line.length && LITERAL[line[i] as number] === 1) i++;
  return i === at ? -1 : i;
}

/** Is the top-level key whose quote opens at `at` (ending at `end`) one of `type`, `seq`, `time`, or written with escapes? */
function reservedKey(line: Buffer, at: number, end: number): boolean {
  for (let i = at + 1; i < end - 1; i++) if (line[i] === BACKSLASH) return true;
  const n = end - at - 2;
  if (n !== 3 && n !== 4) return false;
  const key = line.toString('latin1', at + 1, end - 1);
  return key === 'type' || key === 'seq' || key === 'time';
}

/**
 * The head of `line` (one stored line, without its LF) when its logical JSON text is the line
 * itself, byte for byte (see the module comment); undefined when the caller must parse it.
 */
export function verbatimHead(line: Buffer): VerbatimHead | undefined {
  const n = line.length;
  if (n < 2 || line[n - 1] !== CLOSE_OBJECT) return undefined;
  if (!startsWithAt(line, 0, PREFIX_TYPE)) return undefined;
  const typeEnd = line.indexOf(QUOTE, PREFIX_TYPE.length);
  if (typeEnd < 0) return undefined;
  for (let i = PREFIX_TYPE.length; i < typeEnd; i++) if (line[i] === BACKSLASH) return undefined;
  if (!startsWithAt(line, typeEnd, AFTER_TYPE)) return undefined;
  const seqEnd = integerAt(line, typeEnd + AFTER_TYPE.length);
  if (seqEnd < 0 || !startsWithAt(line, seqEnd, AFTER_SEQ)) return undefined;
  const seq = integerValue;
  const timeEnd = integerAt(line, seqEnd + AFTER_SEQ.length);
  if (timeEnd < 0) return undefined;
  const time = integerValue;
  // The other top-level members: none may be named type, seq or time (JSON.parse keeps the last).
  let at = timeEnd;
  for (;;) {
    const c = line[at];
    if (c === CLOSE_OBJECT) {
      if (at !== n - 1) return undefined;
      break;
    }
    if (c !== COMMA || line[at + 1] !== QUOTE) return undefined;
    const keyEnd = stringEnd(line, at + 1);
    if (keyEnd < 0 || reservedKey(line, at + 1, keyEnd) || line[keyEnd] !== COLON) return undefined;
    const end = valueEnd(line, keyEnd + 1);
    if (end < 0) return undefined;
    at = end;
  }
  const type = line.toString('utf8', PREFIX_TYPE.length, typeEnd);
  if (ROW_TAG_SET.has(type) || !isUtf8(line)) return undefined;
  return { type, seq, time };
}

/**
 * A packed row line whose members' logical JSON texts can be written from its bytes: each member's
 * event is `rowMemberHead(seq0 + k, times[k])`, then `mid`, then the line's bytes
 * `[tokens[2k], tokens[2k + 1])` (the member's text or arguments delta, a JSON string), then `}}}`.
 */
export interface VerbatimRow {
  seq0: number;
  times: number[];
  mid: string;
  tokens: number[];
}

const ROW_SEQ0 = Buffer.from('","seq0":');
const ROW_TIME0 = Buffer.from(',"time0":');
const ROW_TURN = Buffer.from(',"data":{"turn":');
const ROW_STEP = Buffer.from(',"step":');
const ROW_INDEX = Buffer.from(',"index":');
const ROW_DT = Buffer.from(',"dt":[');
const ROW_ID = Buffer.from(',"id":');
const ROW_NAME = Buffer.from(',"name":');
const ROW_ARGS = Buffer.from(',"args":[');
const ROW_TEXTS = Buffer.from(',"texts":[');
/** The short escapes `JSON.stringify` writes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`. */
const SHORT_ESCAPE = new Uint8Array(256);
for (const c of '"\\bfnrt') SHORT_ESCAPE[c.charCodeAt(0)] = 1;
/** Control characters `JSON.stringify` writes as `\b`, `\t`, `\n`, `\f`, `\r` rather than `\u00XX`. */
const SHORT_CONTROL = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

function lowerHex(b: number | undefined): number {
  if (b === undefined) return -1;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x61 && b <= 0x66) return b - 0x61 + 10;
  return -1;
}

/**
 * The end (just past the closing quote) of the JSON string whose opening quote is at `at`, when
 * its bytes are exactly what `JSON.stringify` writes for its value (no other escape than the short
 * ones and `\u00XX` for the other control characters, in lowercase; no raw control character);
 * else -1. Bytes of 0x80 and more are taken as they are: the caller checks the line is valid UTF-8,
 * so they encode no surrogate, and `JSON.stringify` escapes nothing else.
 */
function canonicalStringEnd(line: Buffer, at: number): number {
  if (line[at] !== QUOTE) return -1;
  const n = line.length;
  for (let i = at + 1; i < n; ) {
    const b = line[i] as number;
    if (b === QUOTE) return i + 1;
    if (b < 0x20) return -1;
    if (b !== BACKSLASH) {
      i++;
      continue;
    }
    const c = line[i + 1];
    if (c !== undefined && SHORT_ESCAPE[c] === 1) {
      i += 2;
      continue;
    }
    // \u00XX: only a control character without a short escape (lowercase hex, as JSON.stringify writes it).
    if (c !== 0x75 || line[i + 2] !== 0x30 || line[i + 3] !== 0x30) return -1;
    const hi = lowerHex(line[i + 4]);
    const lo = lowerHex(line[i + 5]);
    if (hi < 0 || hi > 1 || lo < 0) return -1;
    if (SHORT_CONTROL.has(hi * 16 + lo)) return -1;
    i += 6;
  }
  return -1;
}

/**
 * The end (just past its `]`) of the compact JSON array whose first item starts at `at` (just past
 * its `[`), each item read by `item` (its end, or -1); -1 if an item or a separator is off, or the
 * array is empty where `empty` does not allow it.
 */
function arrayEnd(line: Buffer, at: number, empty: boolean, item: (at: number) => number): number {
  if (line[at] === CLOSE_ARRAY) return empty ? at + 1 : -1;
  for (;;) {
    at = item(at);
    if (at < 0) return -1;
    if (line[at] === COMMA) at++;
    else return line[at] === CLOSE_ARRAY ? at + 1 : -1;
  }
}

/**
 * A canonical packed row (see `VerbatimRow`): exactly the members, order and spelling DSH's writer
 * gives a row (`{"type":T,"seq0":S,"time0":N,"data":{"turn":,"step":,"index":,"dt":[…],` then
 * `"texts":[…]` or `"id":…,("name":…,)"args":[…]`}}), no whitespace, canonical integers for
 * the numbers, payload strings as `JSON.stringify` writes them, valid UTF-8, and every check of
 * `decodeStorageRecord` passing (at least one member, one gap fewer than members, safe seqs and
 * times). Anything else is left to the caller's parse. The line must be one the validating pass
 * accepted.
 */
export function verbatimRow(line: Buffer): VerbatimRow | undefined {
  const n = line.length;
  if (n < 2 || line[n - 1] !== CLOSE_OBJECT || !startsWithAt(line, 0, PREFIX_TYPE)) return undefined;
  const tagEnd = line.indexOf(QUOTE, PREFIX_TYPE.length);
  if (tagEnd < 0 || tagEnd - PREFIX_TYPE.length > 16) return undefined;
  const tag = line.toString('latin1', PREFIX_TYPE.length, tagEnd);
  if (!ROW_TAG_SET.has(tag)) return undefined;
  let at = tagEnd;
  const int = (prefix: Buffer): number | undefined => {
    if (!startsWithAt(line, at, prefix)) return undefined;
    const end = integerAt(line, at + prefix.length);
    if (end < 0) return undefined;
    at = end;
    return integerValue;
  };
  const seq0 = int(ROW_SEQ0);
  const time0 = int(ROW_TIME0);
  const turn = int(ROW_TURN);
  const step = int(ROW_STEP);
  const index = int(ROW_INDEX);
  if (seq0 === undefined || seq0 < 0 || time0 === undefined || turn === undefined || step === undefined || index === undefined) return undefined;
  if (!startsWithAt(line, at, ROW_DT)) return undefined;
  at += ROW_DT.length;
  const gaps: number[] = [];
  at = arrayEnd(line, at, true, (i) => {
    const end = integerAt(line, i);
    if (end >= 0) gaps.push(integerValue);
    return end;
  });
  if (at < 0) return undefined;
  let id: string | undefined;
  let name: string | undefined;
  const stringToken = (prefix: Buffer): string | undefined => {
    if (!startsWithAt(line, at, prefix)) return undefined;
    const start = at + prefix.length;
    const end = canonicalStringEnd(line, start);
    if (end < 0) return undefined;
    at = end;
    return JSON.parse(line.toString('utf8', start, end)) as string;
  };
  if (tag === 'tool-call-chunks') {
    id = stringToken(ROW_ID);
    if (id === undefined) return undefined;
    if (startsWithAt(line, at, ROW_NAME)) {
      name = stringToken(ROW_NAME);
      if (name === undefined) return undefined;
    }
    if (!startsWithAt(line, at, ROW_ARGS)) return undefined;
    at += ROW_ARGS.length;
  } else {
    if (!startsWithAt(line, at, ROW_TEXTS)) return undefined;
    at += ROW_TEXTS.length;
  }
  const tokens: number[] = [];
  at = arrayEnd(line, at, false, (i) => {
    const end = canonicalStringEnd(line, i);
    if (end >= 0) tokens.push(i, end);
    return end;
  });
  if (at < 0) return undefined;
  // `]}}` ends the line: the data object, then the row.
  if (at !== n - 2 || line[at] !== CLOSE_OBJECT) return undefined;
  const members = tokens.length / 2;
  if (gaps.length !== members - 1 || !Number.isSafeInteger(seq0 + members - 1)) return undefined;
  const times = [time0];
  let time = time0;
  for (const gap of gaps) {
    time += gap;
    if (!Number.isSafeInteger(time)) return undefined;
    times.push(time);
  }
  if (!isUtf8(line)) return undefined;
  return { seq0, times, mid: rowMemberMid(tag as RowTag, turn, step, index, id, name), tokens };
}

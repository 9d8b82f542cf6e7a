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
import { ROW_TAGS } from './rows.js';

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

/** A canonical non-negative or negative safe integer literal at `at` (its end, or -1), and its value. */
function integerAt(line: Buffer, at: number): { end: number; value: number } | undefined {
  let i = at;
  if (line[i] === 0x2d) i++;
  const first = i;
  while (i < line.length && (line[i] as number) >= 0x30 && (line[i] as number) <= 0x39) i++;
  const digits = i - first;
  if (digits === 0 || digits > 15 || (digits > 1 && line[first] === 0x30)) return undefined;
  const value = Number(line.toString('latin1', at, i));
  if (Object.is(value, -0)) return undefined;
  return { end: i, value };
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
  const seq = integerAt(line, typeEnd + AFTER_TYPE.length);
  if (!seq || !startsWithAt(line, seq.end, AFTER_SEQ)) return undefined;
  const time = integerAt(line, seq.end + AFTER_SEQ.length);
  if (!time) return undefined;
  // The other top-level members: none may be named type, seq or time (JSON.parse keeps the last).
  let at = time.end;
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
  return { type, seq: seq.value, time: time.value };
}

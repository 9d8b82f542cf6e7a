import { toJson } from './json.js';

/**
 * Log content is untrusted: escape C0/C1 control characters (and DEL) so a
 * crafted log cannot move the cursor, retitle the terminal or hide text.
 * `keepNewlines` keeps LF and TAB for multi-line blocks.
 */
export function escapeControl(value: unknown, keepNewlines = false): string {
  const text = displayText(value);
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (ch) => {
    if (keepNewlines && (ch === '\n' || ch === '\t')) return ch;
    switch (ch) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  });
}

/**
 * Any value read from a log as display text: a field the schema says is a
 * string may hold any JSON type in a hostile log. Strings pass unchanged;
 * other values print as (bounded) JSON; a value too deep to serialize says so.
 */
export function displayText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  if (value === null || typeof value !== 'object') return String(value);
  try {
    const json = toJson(value);
    return json.length > 4096 ? json.slice(0, 4096) + '…' : json;
  } catch {
    return Array.isArray(value) ? '[…]' : '{…}';
  }
}

/** One-line preview of any value read from a log, escaped and truncated by code points. */
export function preview(value: unknown, max = 80): string {
  return clipLine(displayText(value), max, (flat) => escapeControl(flat));
}


/**
 * Code-point helpers for texts of any size: `Array.from(text)` makes one array
 * element per code point and dies with `RangeError: Invalid array length` on a
 * few hundred MB; these walk the string instead (same code-point boundaries as
 * the string iterator: a surrogate pair is one, a lone surrogate is one).
 */

function unitsAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return 2;
  }
  return 1;
}

/** `Array.from(text).length`. */
export function codePointLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i += unitsAt(text, i)) n++;
  return n;
}

/** `Array.from(text).slice(0, n).join('')`. */
/**
 * `s` as a string of its own: V8 keeps the whole parent of a slice (and every part of a
 * concatenation) alive while the result lives, so a short text cut from a long one and then held
 * (a distinct preview, kept for a whole pass) would hold the long one.
 */
export function ownString(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string;
}

export function headCodePoints(text: string, n: number): string {
  let i = 0;
  for (let k = 0; k < n && i < text.length; k++) i += unitsAt(text, i);
  return text.slice(0, i);
}

/**
 * One-line clip of any text to `max` code points (whitespace runs folded,
 * trimmed, `transform` applied, an ellipsis when cut), reading a growing
 * window of the text rather than all of it: once the window's result is two
 * code points past `max`, its first `max - 1` are those of the whole text's (a
 * cut can only trim a trailing space or split a trailing surrogate pair).
 */
export function clipLine(text: string, max: number, transform: (s: string) => string = (s) => s): string {
  for (let window = 4096; ; window *= 2) {
    const part = window >= text.length ? text : text.slice(0, window);
    const flat = transform(part.replace(/\s+/g, ' ').trim());
    const whole = part === text;
    const n = codePointLength(flat.length > 8 * max + 16 ? flat.slice(0, 8 * max + 16) : flat);
    if (n >= max + 2 || whole) return whole && codePointLength(flat) <= max ? flat : headCodePoints(flat, max - 1) + '…';
  }
}

/**
 * A number as `toLocaleString('en-US')` writes it (digit groups of three, comma-separated), without
 * its cost for the common case: an integer is grouped here, since the first `toLocaleString` call
 * loads ICU's number formatting (tens of ms of start-up for every text command). Other numbers
 * (fractions, -0, beyond 2^53) are left to `toLocaleString`.
 */
export function formatCount(x: number): string {
  if (!Number.isSafeInteger(x) || Object.is(x, -0)) return x.toLocaleString('en-US');
  const digits = String(x < 0 ? -x : x);
  let out = digits.length % 3 === 0 ? '' : digits.slice(0, digits.length % 3);
  for (let i = digits.length % 3; i < digits.length; i += 3) out += (out === '' ? '' : ',') + digits.slice(i, i + 3);
  return x < 0 ? '-' + out : out;
}

/**
 * `text` in pieces of about `size` UTF-16 units, never cut inside a surrogate pair (a pair cut in
 * two would be written as two replacement characters): the pieces' UTF-8 bytes, written one after
 * another, are `text`'s. For writing a huge string out without a second copy of it (its Buffer).
 */
export function* textPieces(text: string, size = 1 << 20): Generator<string, void, undefined> {
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + size);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    yield text.slice(at, end);
    at = end;
  }
}

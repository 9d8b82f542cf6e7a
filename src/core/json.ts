/**
 * `JSON.stringify` for values read from a log, at any nesting depth.
 *
 * V8's `JSON.stringify` recurses and throws `RangeError: Maximum call stack
 * size exceeded` on values nested a few thousand levels deep, which DSH's own
 * `JSON.parse` reads without complaint. `toJson` tries the native serializer
 * first and, only when it runs out of stack, serializes with an explicit stack
 * instead: same output, byte for byte (key order, `toJSON`, omitted
 * `undefined`/functions, `null` for non-finite numbers, `space` indentation).
 */

const CONTAINER = Symbol('container');

type Leaf = string | undefined | typeof CONTAINER;

function leaf(v: unknown): Leaf {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(v); // throws the native TypeError
    case 'object':
      if (v instanceof Number || v instanceof String || v instanceof Boolean) return JSON.stringify(v);
      return CONTAINER;
    default:
      return undefined;
  }
}

function withToJson(v: unknown, key: string): unknown {
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    return (v as { toJSON: (k: string) => unknown }).toJSON(key);
  }
  return v;
}

interface Frame {
  array: boolean;
  value: Record<string, unknown> | unknown[];
  keys: string[] | null;
  next: number;
  count: number;
  wrote: boolean;
  depth: number;
}

function gapOf(space: string | number | undefined): string {
  if (typeof space === 'number') return ' '.repeat(Math.max(0, Math.min(10, Math.floor(space))));
  if (typeof space === 'string') return space.slice(0, 10);
  return '';
}

/** A `JSON.stringify` replacer function: called with the holder as `this`, after `toJSON`. */
export type JsonReplacer = (this: unknown, key: string, value: unknown) => unknown;

/** The explicit-stack serializer (exported for tests; use `toJson`, or `toJsonReplaced` with a replacer). */
export function toJsonIterative(value: unknown, space?: string | number, replacer?: JsonReplacer): string | undefined {
  const out: string[] = [];
  const pieces = jsonPieces(value, space, replacer);
  for (let r = pieces.next(); ; r = pieces.next()) {
    if (r.done) return r.value === CONTAINER ? out.join('') : r.value;
    out.push(r.value);
  }
}

/** A string this long is serialized in slices by `forEachJsonPiece` (a copy of its size at most once at a time, never whole). */
const LONG_STRING = 1 << 20;

/**
 * The pieces of `toJson(value)` in order, with an explicit stack; a long string is given in
 * slices (cut between, never inside, a surrogate pair: each slice escapes as it does in the
 * whole). Returns the text itself when `value` is not an array or object.
 */
function* jsonPieces(value: unknown, space: string | number | undefined, replacer: JsonReplacer | undefined): Generator<string, Leaf, undefined> {
  const gap = gapOf(space);
  const replaced = (holder: unknown, key: string, v: unknown) => (replacer ? replacer.call(holder, key, v) : v);
  const top = replaced({ '': value }, '', withToJson(value, ''));
  const first = leaf(top);
  if (first !== CONTAINER) return first;
  const stack: Frame[] = [];
  const indents: string[] = [''];
  const indent = (d: number): string => (indents[d] ??= indent(d - 1) + gap);
  /** Opens a container: returns its opening bracket. */
  const open = (v: object, depth: number): string => {
    const array = Array.isArray(v);
    const keys = array ? null : Object.keys(v);
    stack.push({ array, value: v as Frame['value'], keys, next: 0, count: array ? (v as unknown[]).length : (keys as string[]).length, wrote: false, depth });
    return array ? '[' : '{';
  };
  yield open(top as object, 0);
  while (stack.length > 0) {
    const f = stack[stack.length - 1] as Frame;
    if (f.next >= f.count) {
      if (f.wrote && gap) yield '\n' + indent(f.depth);
      yield f.array ? ']' : '}';
      stack.pop();
      continue;
    }
    const i = f.next++;
    const key = f.array ? String(i) : (f.keys as string[])[i] as string;
    const v = replaced(f.value, key, withToJson(f.array ? (f.value as unknown[])[i] : (f.value as Record<string, unknown>)[key], key));
    if (typeof v === 'string' && v.length > LONG_STRING) {
      if (f.wrote) yield ',';
      if (gap) yield '\n' + indent(f.depth + 1);
      if (!f.array) yield JSON.stringify(key) + (gap ? ': ' : ':');
      f.wrote = true;
      yield* stringSlices(v);
      continue;
    }
    let l = leaf(v);
    if (l === undefined) {
      if (!f.array) continue;
      l = 'null';
    }
    if (f.wrote) yield ',';
    if (gap) yield '\n' + indent(f.depth + 1);
    if (!f.array) yield JSON.stringify(key) + (gap ? ': ' : ':');
    f.wrote = true;
    yield l === CONTAINER ? open(v as object, f.depth + 1) : l;
  }
  return CONTAINER;
}

/** `JSON.stringify(text)` as slices: the opening quote, each slice's escaped text, the closing quote. */
function* stringSlices(text: string): Generator<string, void, undefined> {
  yield '"';
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + LONG_STRING);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    const quoted = JSON.stringify(text.slice(at, end));
    yield quoted.slice(1, -1);
    at = end;
  }
  yield '"';
}

/** Whether `value` holds a string longer than `LONG_STRING` at any depth (an explicit stack). */
function holdsLongString(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.length > LONG_STRING) return true;
    } else if (v !== null && typeof v === 'object') {
      for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
    }
  }
  return false;
}

/**
 * `Buffer.byteLength(toJson(value))` for plain data read from a log, without building the text
 * when it holds a long string (then measured slice by slice): a page of events one of which is a
 * 200 MB message is sized without a second copy of it.
 */
export function jsonByteLength(value: unknown): number {
  if (typeof value === 'string' ? value.length <= LONG_STRING : !holdsLongString(value)) return Buffer.byteLength(toJson(value) ?? '');
  let bytes = 0;
  for (const piece of jsonText(value)) bytes += Buffer.byteLength(piece);
  return bytes;
}

/**
 * `toJson(value)` (with `replacer`: `toJsonReplaced(value, replacer) ?? 'undefined'`) as pieces to
 * write or hash one after another: the text itself in one piece, unless the value holds a long
 * string; then in pieces of about a MiB, each long string in slices, so that writing a document
 * with a 200 MB message never makes a second copy of it.
 */
export function* jsonText(value: unknown, replacer?: JsonReplacer): Generator<string, void, undefined> {
  if (typeof value === 'string' ? value.length <= LONG_STRING : !holdsLongString(value)) {
    // `undefined` (a value JSON cannot hold) as the text 'undefined', as the callers that key on it spell it.
    yield replacer ? (toJsonReplaced(value, replacer) ?? 'undefined') : toJson(value);
    return;
  }
  if (typeof value === 'string' && !replacer) {
    yield* stringSlices(value);
    return;
  }
  let batch: string[] = [];
  let size = 0;
  const pieces = jsonPieces(value, undefined, replacer);
  for (let r = pieces.next(); ; r = pieces.next()) {
    if (r.done) {
      if (r.value !== CONTAINER) batch.push(r.value ?? (replacer ? 'undefined' : ''));
      break;
    }
    if (r.value.length >= LONG_STRING) {
      if (batch.length > 0) yield batch.join('');
      batch = [];
      size = 0;
      yield r.value;
      continue;
    }
    batch.push(r.value);
    size += r.value.length;
    if (size >= LONG_STRING) {
      yield batch.join('');
      batch = [];
      size = 0;
    }
  }
  if (batch.length > 0) yield batch.join('');
}

function isStackOverflow(error: unknown): boolean {
  return error instanceof RangeError && /call stack/i.test(error.message);
}

/** `JSON.stringify(value, null, space)`, at any depth (no replacer function). */
export function toJson(value: unknown, replacer?: null, space?: string | number): string {
  try {
    return JSON.stringify(value, replacer, space);
  } catch (error) {
    if (!isStackOverflow(error)) throw error;
    return toJsonIterative(value, space) as string;
  }
}

/** `JSON.stringify(value, replacer)`, at any depth: the native serializer, else (out of stack) the explicit-stack one. */
export function toJsonReplaced(value: unknown, replacer: JsonReplacer): string | undefined {
  try {
    return JSON.stringify(value, replacer as (key: string, value: unknown) => unknown);
  } catch (error) {
    if (!isStackOverflow(error)) throw error;
    return toJsonIterative(value, undefined, replacer);
  }
}

/**
 * `toJson(value)` in pieces whose concatenation is the same text: arrays and objects down to
 * `depth` levels are written member by member, deeper values whole (a document too long for one
 * string, with no single member that long). Values with `toJSON` are serialized as `toJson` does
 * for plain data (JSON read from a log has none).
 */
export function* toJsonParts(value: unknown, depth: number, key = ''): Generator<string> {
  const v = withToJson(value, key);
  const l = leaf(v);
  if (l !== CONTAINER) {
    yield l ?? 'null';
    return;
  }
  if (depth <= 0) {
    yield toJson(v);
    return;
  }
  if (Array.isArray(v)) {
    yield '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) yield ',';
      yield* toJsonParts(v[i], depth - 1, String(i));
    }
    yield ']';
    return;
  }
  yield '{';
  let wrote = false;
  for (const k of Object.keys(v as object)) {
    const raw = (v as Record<string, unknown>)[k];
    if (leaf(withToJson(raw, k)) === undefined) continue;
    yield (wrote ? ',' : '') + JSON.stringify(k) + ':';
    wrote = true;
    yield* toJsonParts(raw, depth - 1, k);
  }
  yield '}';
}

/**
 * `toJson(object)` cut around the value under `key`: `before` ends with `"key":`, `after` is
 * what follows that value. A document too big to hold is then written as `before`, the value
 * in pieces, `after`, with the bytes `toJson` gives (for plain data: own keys, no `toJSON`).
 * The value under `key` is never serialized here; the key is always written.
 */
export function toJsonAround(object: Record<string, unknown>, key: string): { before: string; after: string } {
  const parts: string[] = [];
  let at = -1;
  for (const k of Object.keys(object)) {
    if (k === key) {
      at = parts.length;
      parts.push(`${JSON.stringify(k)}:`);
      continue;
    }
    const v = toJson(object[k]);
    if (v !== undefined) parts.push(`${JSON.stringify(k)}:${v}`);
  }
  if (at < 0) throw new Error(`toJsonAround: no key ${JSON.stringify(key)}`);
  const head = parts.slice(0, at + 1);
  const tail = parts.slice(at + 1);
  return { before: `{${head.join(',')}`, after: `${tail.length > 0 ? ',' : ''}${tail.join(',')}}` };
}

/**
 * Deep copy of a JSON value with every non-container value passed through
 * `leafFn`, with an explicit stack (any depth). Arrays stay arrays; objects
 * become plain objects with the same own enumerable keys in the same order.
 */
export function mapJsonLeaves(value: unknown, leafFn: (v: unknown) => unknown): unknown {
  const copyOf = (v: unknown): unknown => (v === null || typeof v !== 'object' ? leafFn(v) : Array.isArray(v) ? new Array(v.length) : {});
  const root = copyOf(value);
  // Each pair is a container and its copy (an array and an array, or an object and a plain object), read and written by key or index.
  const pending: [Record<string | number, unknown>, Record<string | number, unknown>][] =
    root !== null && typeof root === 'object' ? [[value as Record<string | number, unknown>, root as Record<string | number, unknown>]] : [];
  while (pending.length > 0) {
    const [from, to] = pending.pop()!;
    for (const k of Array.isArray(from) ? from.keys() : Object.keys(from)) {
      const v = from[k];
      const c = copyOf(v);
      to[k] = c;
      if (c !== null && typeof c === 'object') pending.push([v as Record<string | number, unknown>, c as Record<string | number, unknown>]);
    }
  }
  return root;
}

/**
 * Canonical JSON text: object keys sorted (code-unit order), arrays in order,
 * `undefined` written as `undefined` (never omitted), any depth (explicit
 * stack). For content digests where key order must not matter.
 */
export function canonicalJson(value: unknown): string {
  try {
    return canonicalRecursive(value);
  } catch (error) {
    if (!isStackOverflow(error)) throw error;
    return canonicalIterative(value);
  }
}

/** The fast path for ordinary depths (same text as `canonicalIterative`). */
function canonicalRecursive(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalRecursive).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalRecursive((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

/** The explicit-stack canonical serializer (exported for tests; use `canonicalJson`). */
export function canonicalIterative(value: unknown): string {
  const out: string[] = [];
  // Work items: a value to write, or a literal piece of text.
  const work: ({ text: string } | { value: unknown })[] = [{ value }];
  while (work.length > 0) {
    const item = work.pop() as { text: string } | { value: unknown };
    if ('text' in item) {
      out.push(item.text);
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      const next: ({ text: string } | { value: unknown })[] = [{ text: '[' }];
      v.forEach((e, i) => next.push(...(i > 0 ? [{ text: ',' }] : []), { value: e }));
      next.push({ text: ']' });
      for (let i = next.length - 1; i >= 0; i--) work.push(next[i] as { text: string });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v).sort();
      const next: ({ text: string } | { value: unknown })[] = [{ text: '{' }];
      keys.forEach((k, i) => next.push({ text: `${i > 0 ? ',' : ''}${JSON.stringify(k)}:` }, { value: (v as Record<string, unknown>)[k] }));
      next.push({ text: '}' });
      for (let i = next.length - 1; i >= 0; i--) work.push(next[i] as { text: string });
    } else {
      out.push(JSON.stringify(v) ?? 'undefined');
    }
  }
  return out.join('');
}

/**
 * `JSON.parse(toJson(value))` for plain data, without the text: containers copied (any depth,
 * an explicit stack), strings shared (a copy of an event with a 200 MB message costs no second
 * copy of it). As the round trip does: `undefined` members left out (null in arrays), non-finite
 * numbers and -0 written as JSON writes them, a `__proto__` key kept as an own member.
 */
export function cloneJson(value: unknown): unknown {
  const copyOf = (v: unknown): unknown => {
    if (typeof v === 'number') return Number.isFinite(v) ? (Object.is(v, -0) ? 0 : v) : null;
    if (v === null || typeof v !== 'object') return v;
    return Array.isArray(v) ? new Array<unknown>(v.length) : {};
  };
  const root = value === undefined ? undefined : copyOf(value);
  const pending: [unknown, unknown][] = root !== null && typeof root === 'object' ? [[value, root]] : [];
  while (pending.length > 0) {
    const [from, to] = pending.pop() as [unknown, unknown];
    if (Array.isArray(from)) {
      const out = to as unknown[];
      for (let i = 0; i < from.length; i++) {
        const v = from[i] as unknown;
        const c = v === undefined || typeof v === 'function' || typeof v === 'symbol' ? null : copyOf(v);
        out[i] = c;
        if (c !== null && typeof c === 'object') pending.push([v, c]);
      }
      continue;
    }
    const src = from as Record<string, unknown>;
    const out = to as Record<string, unknown>;
    for (const k of Object.keys(src)) {
      const v = src[k];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      const c = copyOf(v);
      if (k === '__proto__') Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
      else out[k] = c;
      if (c !== null && typeof c === 'object') pending.push([v, c]);
    }
  }
  return root;
}

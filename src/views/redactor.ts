import { ByteCarry } from '../core/carry.js';
import { createHash } from 'node:crypto';
import { BUILTIN_DETECTORS, cwdDetector, homeDetector, patternDetector, type Detector, type SecretSpan } from './detectors.js';
import { toJson } from '../core/json.js';
import { DEFAULT_MAX_LINE_BYTES } from '../log/scanner.js';
import { LogError } from '../core/errors.js';

/**
 * Redaction of DSH log TEXT, never structure.
 *
 * What is rewritten: string values inside an event's `data` (recursively:
 * message content text, tool arguments and outputs, reasoning, headers'
 * system prompts, replay state, errors …), including the members of packed
 * chunk rows (`texts` / `args`). What is never touched: the envelope (`type`,
 * `seq`, `time`, `surfaceOp`, `sourceEventSeqs`, `ignorable`), object keys,
 * numbers, and string values under identity keys used for pairing or
 * classification (`id`, `*Id`, `*Ids`, `type`, `kind`, `role`, `name`, `op`,
 * `provider`, `model`, …). A secret found inside such a protected value is NOT
 * redacted (pairing would break) and is reported in `protectedHits`.
 *
 * Replacement token: `[REDACTED:<label>:≤<length class>#<hash>]`, where label
 * is the detector's public prefix (`sk-…`, `ghp_…`, `bearer`, …), the length
 * class is the smallest power of two ≥ the secret's length (8 … 1024, else
 * `>1024`), and hash is the first 4 hex digits of sha256(secret): identical
 * secrets get identical tokens everywhere, so they stay linkable, and
 * redaction is deterministic (a tool-result replacement stays content-equal
 * to its original, request headers stay comparable).
 *
 * Lines whose redacted value equals the original are passed through
 * byte-for-byte; changed lines are re-serialized with JSON.stringify (key order
 * kept). A line that does not parse (a torn or corrupt record) is redacted as
 * plain text.
 *
 * Limitation: a secret streamed across several `assistant/chunk` deltas (or
 * packed-row members) is only found when one delta holds all of it; the
 * assembled `assistant/message` / `tool/call` text is redacted either way.
 * `findSplitSecrets` (used by `dsh redact`) closes that gap for the artifact
 * rewrite by scanning the assembled stream and editing the deltas.
 */

export interface RedactOptions {
  /** Extra regexes (`--redact-pattern`), whole match (or group 1) redacted. */
  patterns?: string[];
  /** Redact home directory user names and the session cwd (`--redact-paths`). */
  paths?: boolean;
  /** The session cwd for `paths`; learned from the header line when absent. */
  cwd?: string;
  /** Restrict the built-in detectors to these names (default: all). */
  detectors?: string[];
  /** Disable every built-in detector (only patterns/paths). */
  noBuiltins?: boolean;
}

export interface ProtectedHit {
  seq?: number;
  line?: number;
  key: string;
  detector: string;
}

export interface RedactStats {
  /** Secrets replaced (occurrences). */
  replacements: number;
  byDetector: Record<string, number>;
  /** Event seqs with at least one replacement, per detector (capped at 10 000 each). */
  seqsByDetector: Record<string, number[]>;
  /** Distinct secrets (by hash token). */
  distinctSecrets: number;
  linesSeen: number;
  linesChanged: number;
  headerChanged: boolean;
  /** Body lines (1-based) that did not parse and were redacted as plain text. */
  unparsableLines: number[];
  /** Secrets left in protected identity fields (capped at 1000). */
  protectedHits: ProtectedHit[];
}

const SEQ_CAP = 10_000;
const HIT_CAP = 1_000;

const PROTECTED_KEYS = new Set([
  'id',
  'type',
  'kind',
  'role',
  'name',
  'op',
  'provider',
  'model',
  'mediaType',
  'blockType',
  'policyKey',
  'plugin',
  'form',
  'dialect',
  'point',
  'mode',
  'operation',
  'status',
  'reasoningEffort',
  'apiVersion',
  'titleProvider',
  'agentPreset',
  'preset',
  'code',
]);

/** Keys whose string values identify or classify (never rewritten). */
export function isProtectedKey(key: string | undefined): boolean {
  if (key === undefined) return false;
  return PROTECTED_KEYS.has(key) || /[a-z0-9]Ids?$/.test(key) || /^ids?$/i.test(key);
}

const ROW_TAGS = new Set(['text-chunks', 'reasoning-chunks', 'tool-call-chunks']);

function lengthClass(n: number): string {
  for (let b = 8; b <= 1024; b *= 2) if (n <= b) return `≤${b}`;
  return '>1024';
}

export function hashTag(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 4);
}

export function redactionToken(label: string, secret: string): string {
  return `[REDACTED:${label}:${lengthClass(Array.from(secret).length)}#${hashTag(secret)}]`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One container of redactValue's walk: its members in order, and its copy once a member changed. */
interface WalkFrame {
  value: unknown[] | Record<string, unknown>;
  /** An object's own keys (null for an array). */
  keys: string[] | null;
  count: number;
  next: number;
  /** The key its string members are redacted under (an array passes its own key down). */
  key: string | undefined;
  copy?: unknown[] | Record<string, unknown>;
}

function walkFrame(value: unknown[] | Record<string, unknown>, key: string | undefined): WalkFrame {
  const keys = Array.isArray(value) ? null : Object.keys(value);
  return { value, keys, count: keys ? keys.length : (value as unknown[]).length, next: 0, key };
}

/** Member `i` of `f` became `r` (was `v`): copy the container on its first change, then set the member. */
function settle(f: WalkFrame, i: number, v: unknown, r: unknown): void {
  if (r === v) return;
  if (f.keys === null) {
    f.copy ??= (f.value as unknown[]).slice();
    (f.copy as unknown[])[i] = r;
    return;
  }
  const value = f.value as Record<string, unknown>;
  if (!f.copy) {
    const copy: Record<string, unknown> = {};
    for (const kk of f.keys) Object.defineProperty(copy, kk, { value: value[kk], enumerable: true, writable: true, configurable: true });
    f.copy = copy;
  }
  // defineProperty: a "__proto__" key stays an own data property.
  Object.defineProperty(f.copy, f.keys[i] as string, { value: r, enumerable: true, writable: true, configurable: true });
}

interface Ctx {
  seq?: number;
  line?: number;
}

export class Redactor {
  readonly stats: RedactStats = {
    replacements: 0,
    byDetector: {},
    seqsByDetector: {},
    distinctSecrets: 0,
    linesSeen: 0,
    linesChanged: 0,
    headerChanged: false,
    unparsableLines: [],
    protectedHits: [],
  };
  private detectors: Detector[] = [];
  private pathDetectors: Detector[] = [];
  private cwdAbsolute = false;
  private cwdKnown = false;
  private tokens = new Set<string>();
  private lastSeqs = new Map<string, number>();

  constructor(readonly options: RedactOptions = {}) {
    if (!options.noBuiltins) {
      const only = options.detectors ? new Set(options.detectors) : undefined;
      for (const d of BUILTIN_DETECTORS) if (!only || only.has(d.name)) this.detectors.push(d);
      if (only) for (const name of only) if (!BUILTIN_DETECTORS.some((d) => d.name === name)) throw new Error(`unknown detector ${toJson(name)}`);
    }
    (options.patterns ?? []).forEach((p, i) => this.detectors.push(patternDetector(p, i)));
    if (options.cwd !== undefined) this.setCwd(options.cwd);
  }

  /** Set the session cwd (for `paths`); only the first call counts. */
  setCwd(cwd: string | undefined): void {
    if (this.cwdKnown || !this.options.paths) return;
    this.cwdKnown = true;
    this.pathDetectors = [];
    const c = cwd !== undefined ? cwdDetector(cwd) : undefined;
    if (c) this.pathDetectors.push(c);
    this.pathDetectors.push(homeDetector());
    this.cwdAbsolute = cwd !== undefined && cwd.startsWith('/');
  }

  private allDetectors(): Detector[] {
    if (this.options.paths && !this.cwdKnown) this.setCwd(undefined);
    return this.pathDetectors.length > 0 ? [...this.detectors, ...this.pathDetectors] : this.detectors;
  }

  /**
   * A test every text holding a secret these detectors find passes (the union
   * of their hints: one regex for the case-sensitive hints, one for the
   * case-insensitive ones), for pre-screening large texts; undefined when a
   * detector has no hint (user patterns, paths).
   */
  prefilter(): { test(text: string): boolean } | undefined {
    const ds = this.allDetectors();
    if (ds.some((d) => d.hint === undefined)) return undefined;
    const union = (list: Detector[], flags: string) => (list.length > 0 ? new RegExp(list.map((d) => `(?:${d.hint!.source})`).join('|'), flags) : undefined);
    const cs = union(ds.filter((d) => !d.hint!.flags.includes('i')), '');
    const ci = union(ds.filter((d) => d.hint!.flags.includes('i')), 'i');
    return { test: (text) => (cs !== undefined && cs.test(text)) || (ci !== undefined && ci.test(text)) };
  }

  /** Secret spans in `text` (non-overlapping, in text order). */
  findSpans(text: string, detectors: Detector[] = this.allDetectors()): SecretSpan[] {
    if (text.length < 4) return [];
    // Kept sorted by start and non-overlapping: overlap checks are binary searches.
    const accepted: SecretSpan[] = [];
    for (const d of detectors) {
      for (const span of d.find(text)) {
        let lo = 0;
        let hi = accepted.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (accepted[mid]!.start < span.start) lo = mid + 1;
          else hi = mid;
        }
        const prev = accepted[lo - 1];
        const next = accepted[lo];
        if ((prev && prev.end > span.start) || (next && next.start < span.end)) continue;
        accepted.splice(lo, 0, span);
      }
    }
    return accepted;
  }

  /** Count one replacement (used by the split-secret pre-pass too). */
  recordHit(detector: string, token: string, ctx: Ctx): void {
    const s = this.stats;
    s.replacements += 1;
    s.byDetector[detector] = (s.byDetector[detector] ?? 0) + 1;
    if (!this.tokens.has(token)) {
      this.tokens.add(token);
      s.distinctSecrets += 1;
    }
    if (ctx.seq !== undefined && this.lastSeqs.get(detector) !== ctx.seq) {
      this.lastSeqs.set(detector, ctx.seq);
      const list = (s.seqsByDetector[detector] ??= []);
      if (list.length < SEQ_CAP && list[list.length - 1] !== ctx.seq) list.push(ctx.seq);
    }
  }

  /** Redact one free-text string; returns the same string when nothing matched. */
  redactText(text: string, ctx: Ctx = {}, detectors?: Detector[]): string {
    const spans = this.findSpans(text, detectors);
    if (spans.length === 0) return text;
    let out = '';
    let at = 0;
    for (const span of spans) {
      const secret = text.slice(span.start, span.end);
      let token = redactionToken(span.label, secret);
      if (span.detector === 'cwd' && this.cwdAbsolute) token = '/' + token;
      this.recordHit(span.detector, token, ctx);
      out += text.slice(at, span.start) + token;
      at = span.end;
    }
    return out + text.slice(at);
  }

  private protectedScan(text: string, key: string, ctx: Ctx): void {
    if (this.stats.protectedHits.length >= HIT_CAP || text.length < 8) return;
    for (const span of this.findSpans(text)) {
      if (span.detector === 'home-path' || span.detector === 'cwd') continue;
      this.stats.protectedHits.push({ ...(ctx.seq !== undefined ? { seq: ctx.seq } : {}), ...(ctx.line !== undefined ? { line: ctx.line } : {}), key, detector: span.detector });
      if (this.stats.protectedHits.length >= HIT_CAP) return;
    }
  }

  /** A value that is not a container: a string redacted (or scanned, under a protected key), anything else as it is. */
  private redactLeaf(value: unknown, key: string | undefined, ctx: Ctx): unknown {
    if (typeof value !== 'string') return value;
    if (isProtectedKey(key)) {
      this.protectedScan(value, key!, ctx);
      return value;
    }
    return this.redactText(value, ctx);
  }

  /**
   * Redact the string values of a JSON value (keys and protected values
   * untouched). Returns the same value when nothing changed, else a copy of
   * the containers on the way to each change. An array's members go under its
   * own key. The walk keeps its own stack (a log may nest a value 200,000
   * levels deep), visiting members in order, depth first.
   */
  redactValue(value: unknown, key: string | undefined, ctx: Ctx): unknown {
    if (!Array.isArray(value) && !isRecord(value)) return this.redactLeaf(value, key, ctx);
    const stack: WalkFrame[] = [walkFrame(value, key)];
    for (;;) {
      const f = stack[stack.length - 1] as WalkFrame;
      if (f.next < f.count) {
        const i = f.next++;
        const k = f.keys ? (f.keys[i] as string) : undefined;
        const v = f.keys ? (f.value as Record<string, unknown>)[k as string] : (f.value as unknown[])[i];
        const childKey = f.keys ? k : f.key;
        if (Array.isArray(v) || isRecord(v)) stack.push(walkFrame(v, childKey));
        else settle(f, i, v, this.redactLeaf(v, childKey, ctx));
        continue;
      }
      stack.pop();
      const done = f.copy ?? f.value;
      const parent = stack[stack.length - 1];
      if (!parent) return done;
      const at = parent.next - 1;
      settle(parent, at, f.value, done);
    }
  }

  /**
   * Redact one parsed storage record (event or packed row). Returns the same
   * object when nothing changed. `edits` (split secrets) apply first.
   */
  redactRecord(record: unknown, line?: number, edits?: ReadonlyMap<number, string>): unknown {
    if (!isRecord(record)) return record;
    const tag = record['type'];
    if (typeof tag === 'string' && ROW_TAGS.has(tag) && isRecord(record['data'])) {
      const data = record['data'];
      const key = Array.isArray(data['texts']) ? 'texts' : Array.isArray(data['args']) ? 'args' : undefined;
      if (!key) return record;
      const seq0 = typeof record['seq0'] === 'number' ? record['seq0'] : undefined;
      const members = data[key] as unknown[];
      let copy: unknown[] | undefined;
      for (let k = 0; k < members.length; k++) {
        const m = members[k];
        if (typeof m !== 'string') continue;
        const seq = seq0 !== undefined ? seq0 + k : undefined;
        const edited = seq !== undefined && edits?.has(seq) ? edits.get(seq)! : m;
        const r = this.redactText(edited, { ...(seq !== undefined ? { seq } : {}), ...(line !== undefined ? { line } : {}) });
        if (r !== m) {
          copy ??= members.slice();
          copy[k] = r;
        }
      }
      if (!copy) return record;
      const newData: Record<string, unknown> = {};
      for (const k of Object.keys(data)) Object.defineProperty(newData, k, { value: k === key ? copy : data[k], enumerable: true, writable: true, configurable: true });
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(record)) Object.defineProperty(out, k, { value: k === 'data' ? newData : record[k], enumerable: true, writable: true, configurable: true });
      return out;
    }
    if (!Object.hasOwn(record, 'data')) return record;
    const seq = typeof record['seq'] === 'number' ? record['seq'] : undefined;
    const ctx: Ctx = { ...(seq !== undefined ? { seq } : {}), ...(line !== undefined ? { line } : {}) };
    let data = record['data'];
    if (seq !== undefined && edits?.has(seq)) data = applyChunkEdit(data, edits.get(seq)!);
    const r = this.redactValue(data, undefined, ctx);
    if (r === record['data']) return record;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(record)) Object.defineProperty(out, k, { value: k === 'data' ? r : record[k], enumerable: true, writable: true, configurable: true });
    return out;
  }

  /**
   * Redact one body line (without its LF). Returns the identical string when
   * nothing changed. `line` is the 1-based body line number (for reports).
   */
  redactBodyLine(text: string, line?: number, edits?: ReadonlyMap<number, string>): string {
    this.stats.linesSeen += 1;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      const r = this.redactText(text, line !== undefined ? { line } : {});
      if (r !== text) {
        this.stats.linesChanged += 1;
        if (line !== undefined && this.stats.unparsableLines.length < HIT_CAP) this.stats.unparsableLines.push(line);
      }
      return r;
    }
    const r = this.redactRecord(parsed, line, edits);
    if (r === parsed) return text;
    this.stats.linesChanged += 1;
    return toJson(r);
  }

  /**
   * The header line: learns the session cwd; with `paths`, the cwd and home
   * directory in `cwd` are redacted (the token keeps the path absolute). No
   * other header field is touched (`id` and `parentSession` name sessions).
   */
  redactHeaderLine(text: string): string {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return text;
    }
    if (!isRecord(parsed)) return text;
    const cwd = typeof parsed['cwd'] === 'string' ? parsed['cwd'] : undefined;
    this.setCwd(cwd);
    if (!this.options.paths || cwd === undefined) return text;
    const r = this.redactText(cwd, {}, this.pathDetectors);
    if (r === cwd) return text;
    this.stats.headerChanged = true;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(parsed)) Object.defineProperty(out, k, { value: k === 'cwd' ? r : parsed[k], enumerable: true, writable: true, configurable: true });
    return toJson(out);
  }
}

/** Replace the delta text of an `assistant/chunk` payload (split-secret edit). */
function applyChunkEdit(data: unknown, text: string): unknown {
  if (!isRecord(data) || !isRecord(data['chunk'])) return data;
  const chunk = data['chunk'];
  const key = typeof chunk['text'] === 'string' ? 'text' : typeof chunk['argumentsDelta'] === 'string' ? 'argumentsDelta' : undefined;
  if (!key) return data;
  return { ...data, chunk: { ...chunk, [key]: text } };
}

export function createRedactor(options: RedactOptions = {}): Redactor {
  return new Redactor(options);
}

/**
 * Push-based redaction of artifact text (the `session.jsonl` view: header line
 * then body lines). `write` returns the redacted bytes of the lines completed
 * by this chunk (unchanged lines byte-for-byte); `end` returns the redacted
 * trailing fragment, if any. Suited to `readArtifact({ onArtifact })`.
 */
export class RedactingText {
  private readonly carry = new ByteCarry();
  private fragmentBytes = 0;
  private overlong = false;
  private headerDone = false;
  private line = 0;

  /** `edits`: split-secret delta edits by seq (see `SplitSecretScanner`). */
  constructor(
    readonly redactor: Redactor,
    private readonly edits?: ReadonlyMap<number, string>,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {}

  get stats(): RedactStats {
    return this.redactor.stats;
  }

  private one(bytes: Buffer): Buffer {
    const text = bytes.toString('utf8');
    let out: string;
    if (!this.headerDone) {
      this.headerDone = true;
      out = this.redactor.redactHeaderLine(text);
    } else {
      this.line += 1;
      out = this.redactor.redactBodyLine(text, this.line, this.edits);
    }
    return out === text ? bytes : Buffer.from(out, 'utf8');
  }

  write(chunk: Buffer): Buffer {
    const parts: Buffer[] = [];
    let from = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, from)) {
      if (this.overlong) this.refuseOverlong();
      const line = this.carry.take(chunk.subarray(from, nl));
      this.fragmentBytes = 0;
      parts.push(this.one(line), NL);
      from = nl + 1;
    }
    if (from < chunk.length) {
      this.fragmentBytes += chunk.length - from;
      // Past the line limit a fragment is counted, never held: it can only be dropped (a torn record) or refused.
      if (this.fragmentBytes > this.maxLineBytes && !this.overlong) {
        this.carry.clear();
        this.overlong = true;
      }
      if (!this.overlong) this.carry.push(chunk.subarray(from));
    }
    return parts.length === 0 ? EMPTY : Buffer.concat(parts);
  }

  /** A record longer than the line limit: DSH cannot parse it, and redaction cannot hold it. */
  private refuseOverlong(): never {
    throw new LogError(
      `line ${this.line + (this.headerDone ? 2 : 1)} is longer than the ${this.maxLineBytes >> 20} MiB line limit; a record that long cannot be parsed (by DSH neither) nor redacted`,
      { kind: 'corrupt' },
    );
  }

  /** Bytes of an unterminated trailing fragment held back (or counted, past the line limit). */
  get pendingBytes(): number {
    return this.fragmentBytes;
  }

  /** Forget the trailing fragment (a torn record that will not be written). */
  dropFragment(): number {
    const n = this.fragmentBytes;
    this.carry.clear();
    this.fragmentBytes = 0;
    this.overlong = false;
    return n;
  }

  end(): Buffer {
    if (this.overlong) this.refuseOverlong();
    if (this.carry.length === 0) return EMPTY;
    const rest = this.carry.take(EMPTY);
    if (!this.headerDone) return this.one(rest);
    this.line += 1;
    const text = rest.toString('utf8');
    // A torn fragment: redact as plain text (it does not parse).
    this.redactor.stats.linesSeen += 1;
    const out = this.redactor.redactText(text, { line: this.line });
    if (out === text) return rest;
    this.redactor.stats.linesChanged += 1;
    return Buffer.from(out, 'utf8');
  }
}

const NL = Buffer.from('\n');
const EMPTY = Buffer.alloc(0);

/**
 * Redact a whole artifact text given as chunks (any boundaries). Yields the
 * redacted bytes. For `dsh export --redact`: feed it the artifact view.
 */
export async function* redactArtifactText(
  chunks: AsyncIterable<Buffer> | Iterable<Buffer>,
  options: RedactOptions | Redactor = {},
): AsyncGenerator<Buffer, RedactStats, void> {
  const redactor = options instanceof Redactor ? options : new Redactor(options);
  const rt = new RedactingText(redactor);
  for await (const chunk of chunks as AsyncIterable<Buffer>) {
    const out = rt.write(chunk);
    if (out.length > 0) yield out;
  }
  const tail = rt.end();
  if (tail.length > 0) yield tail;
  return redactor.stats;
}

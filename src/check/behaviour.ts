/**
 * Behaviour rules (`dsh check --behaviour`, family X): what the agent did with the log, not whether the
 * log is sound. One fold per session, fed every logical event in seq order (closers last) by the same
 * streaming pass as the other rules; each rule is its own function over the fold's facts and attaches its
 * code. Every finding names its exact events, and a finding about what reached the model carries the
 * dispatches that sent it, the tokens they re-sent (DSH's token meter: ceil(chars/4) per block plus its
 * overheads, `estimateMessage`) and their price (data/prices.json, per dispatch's provider, model and time).
 *
 * A dispatch's input is decided as `dsh secrets` decides it: the messages of the surface nodes before its
 * first chunk, so a node appended at seq `a` and shadowed at seq `r` was sent in exactly the dispatches
 * whose first chunk lies in (a, r).
 */
import { upperBound } from '../core/sorted.js';
import { createHash } from 'node:crypto';
import type { SessionEvent } from '../log/types.js';
import { deriveEventMessage, SurfaceFold } from '../log/surface.js';
import { DispatchStarts } from '../views/requests.js';
import { estimateMessage } from '../views/compactions.js';
import { formatAtto, priceUsage, shippedPriceTable, type PriceTable } from '../views/prices.js';
import { zero } from '../views/stats.js';
import type { RuleCode } from '../core/rules.js';
import type { CacheBreak } from '../views/context.js';

/** The behaviour rules, in catalogue order. */
export const BEHAVIOUR_CODES = ['DSH-X1', 'DSH-X2', 'DSH-X3', 'DSH-X4', 'DSH-X5', 'DSH-X6', 'DSH-X7', 'DSH-X8', 'DSH-X9', 'DSH-X10', 'DSH-X11', 'DSH-X12'] as const satisfies readonly RuleCode[];
export type BehaviourCode = (typeof BEHAVIOUR_CODES)[number];

export function isBehaviourCode(code: string): code is BehaviourCode {
  return (BEHAVIOUR_CODES as readonly string[]).includes(code);
}

/** A rule option's value: a count or percentage, or a list of names. */
export type OptionValue = number | string[];

export interface OptionSpec {
  default: OptionValue;
  /** `int`: an integer >= min; `list`: comma-separated names. */
  kind: 'int' | 'list';
  min?: number;
  doc: string;
}

/** Tools that only read (a call of any other tool counts as a change for X1, X2, and as a side effect for X9). */
export const DEFAULT_READ_ONLY_TOOLS = ['read_file', 'grep', 'glob', 'list_dir', 'ls', 'search', 'web_search', 'web_fetch'];
const readOnly: OptionSpec = { default: DEFAULT_READ_ONLY_TOOLS, kind: 'list', doc: 'tools that only read: a call of any other tool is a change (a write)' };

/** Each behaviour rule's options and their documented defaults. */
export const BEHAVIOUR_OPTIONS: Readonly<Record<BehaviourCode, Readonly<Record<string, OptionSpec>>>> = {
  'DSH-X1': { min: { default: 3, kind: 'int', min: 2, doc: 'identical calls in a turn with no change between them' }, readOnlyTools: readOnly },
  'DSH-X2': { minBytes: { default: 1, kind: 'int', min: 0, doc: 'smallest repeated result (UTF-8 bytes of its text) reported' }, readOnlyTools: readOnly },
  'DSH-X3': { min: { default: 3, kind: 'int', min: 2, doc: 'tool errors in a row within a turn' } },
  'DSH-X4': { min: { default: 2, kind: 'int', min: 2, doc: 'failures of the same call within a turn' } },
  'DSH-X5': { min: { default: 3, kind: 'int', min: 1, doc: 'llm/retry events in one turn' } },
  'DSH-X6': {
    minBytes: { default: 16384, kind: 'int', min: 0, doc: 'smallest tool result (UTF-8 bytes of its text) considered' },
    minDispatches: { default: 5, kind: 'int', min: 1, doc: 'dispatches that sent it' },
  },
  'DSH-X7': { minSteps: { default: 2, kind: 'int', min: 1, doc: 'steps that must start between two compactions' } },
  'DSH-X8': { minFreedPercent: { default: 20, kind: 'int', min: 0, doc: 'share of the estimated context a compaction must free' } },
  'DSH-X9': { readOnlyTools: readOnly },
  'DSH-X10': {},
  'DSH-X11': {},
  'DSH-X12': {},
};

/** The enabled behaviour rules with their options (defaults filled in). Plain data: it crosses to worker threads. */
export type BehaviourSettings = Partial<Record<BehaviourCode, Record<string, OptionValue>>>;

/** Every behaviour rule at its default options. */
export function defaultBehaviour(): BehaviourSettings {
  const out: BehaviourSettings = {};
  for (const code of BEHAVIOUR_CODES) out[code] = defaultOptions(code);
  return out;
}

export function defaultOptions(code: BehaviourCode): Record<string, OptionValue> {
  return Object.fromEntries(Object.entries(BEHAVIOUR_OPTIONS[code]).map(([k, s]) => [k, Array.isArray(s.default) ? [...s.default] : s.default]));
}

// ---------------------------------------------------------------- evidence

/** The dispatches that sent a message, and what re-sending it added. */
export interface CarriedEvidence {
  /** Dispatches whose input held it. */
  count: number;
  /** Keys (`turn.step#n`) of the first and last of them; null when none. */
  first: string | null;
  last: string | null;
  /** Estimated tokens of the message (DSH's token meter). */
  tokensEach: number;
  /** Tokens the re-sends added: of the dispatches after the first (X6), or of all of them for a redundant copy (X2). */
  tokensResent: number;
  /** Price of the re-sent tokens in USD (exact decimal), at the input cache-miss and cache-hit rates; null when a dispatch is unpriced. */
  costResent: { currency: 'USD'; cacheMiss: string; cacheHit: string } | null;
  /** Re-sending dispatches without a price (unknown provider, model or time window). */
  unpriced: number;
}

/** What a reviewer needs to check a behaviour finding: its exact events and figures. */
export interface BehaviourEvidence {
  /** The events the finding is about, in seq order. */
  seqs: number[];
  turn?: number;
  tool?: string;
  /** The call as the rules compare it: tool name and canonical (key-sorted) JSON arguments. */
  call?: string;
  count?: number;
  bytes?: number;
  carried?: CarriedEvidence;
  /** Rule-specific figures (compaction ids, percentages, the threshold that was crossed). */
  details?: Record<string, string | number | boolean | null>;
}

/** A behaviour rule's raw finding (the engine adds file, session, severity and hint). */
export interface BehaviourFinding {
  code: BehaviourCode;
  seq: number;
  message: string;
  evidence: BehaviourEvidence;
}

// ---------------------------------------------------------------- facts

interface Call {
  seq: number;
  turn: number;
  callId: string;
  name: string;
  key: string;
  readOnly: boolean;
}

interface ResultFact {
  seq: number;
  turn: number;
  call: Call | undefined;
  error: boolean;
  bytes: number;
  hash: string;
  tokens: number;
  closer: string | null;
}

/** Canonical JSON: keys sorted at every depth. Not JSON: the raw text. */
function canonicalArgs(args: unknown): string {
  if (typeof args !== 'string') return JSON.stringify(args ?? null);
  try {
    return JSON.stringify(sortKeys(JSON.parse(args)));
  } catch {
    return args;
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, sortKeys(o[k])]));
  }
  return v;
}

function resultText(block: Record<string, unknown> | undefined): string {
  const content = block?.['content'];
  if (!Array.isArray(content)) return typeof content === 'string' ? content : '';
  let s = '';
  for (const c of content) if (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string') s += (c as { text: string }).text;
  return s;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/** A JSON object read from a log, or undefined. */
const obj = (v: unknown): Record<string, unknown> | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/**
 * The per-session fold. `observe` every logical event in seq order (closers last), then `finish()`.
 * It keeps numbers and hashes, never a tool result's text.
 */
export class BehaviourFold {
  private readonly surface = new SurfaceFold(false, true);
  private readonly dispatches = new DispatchStarts();
  private readonly dispatchTimes: number[] = [];
  /** Estimated tokens of each current surface node. */
  private readonly nodeTokens = new Map<number, number>();
  /** Surface node seq → the replacement that shadowed it. */
  private readonly shadowedAt = new Map<number, number>();
  private readonly calls = new Map<string, Call>();
  /** Calls in seq order (for "a change in between"). */
  private readonly callList: Call[] = [];
  private readonly results: ResultFact[] = [];
  private readonly retries: { seq: number; turn: number }[] = [];
  private readonly compactions: { startSeq: number; id: string | null; stepsBefore: number; turn: number }[] = [];
  private readonly lowYield: { seq: number; id: string | null; before: number; shadowed: number; replacement: number; shadowedSeqs: number }[] = [];
  private readonly asked: { seq: number; turn: number; name: string; offered: boolean | null; validJson: boolean; args: string }[] = [];
  private offered: Set<string> | null = null;
  private turn = 0;
  private steps = 0;
  private readonly readOnly: Set<string>;

  constructor(private readonly settings: BehaviourSettings, private readonly prices: PriceTable | null = shippedPriceTable()) {
    const lists = [settings['DSH-X1'], settings['DSH-X2'], settings['DSH-X9']].map((o) => o?.['readOnlyTools']).filter((v): v is string[] => Array.isArray(v));
    // X1, X2 and X9 each read their own list; the fold records calls with the union and each rule re-decides.
    this.readOnly = new Set(lists.flat());
  }

  observe(e: SessionEvent): void {
    const before = this.dispatches.count;
    this.dispatches.observe(e);
    if (this.dispatches.count > before) this.dispatchTimes.push(e.time);
    const d = obj(e.data);
    const contextBefore = e.surfaceOp !== undefined && e.surfaceOp !== 'append' ? this.contextTokens(this.surface.nodes) : 0;
    const rep = this.surface.apply(e);
    if (e.surfaceOp !== undefined && (rep || e.surfaceOp === 'append')) {
      const m = deriveEventMessage(e);
      this.nodeTokens.set(e.seq, m === null || m === undefined ? 0 : estimateMessage(m).tokens);
    }
    if (rep) {
      let shadowedTokens = 0;
      for (const s of rep.shadowedSeqs) {
        shadowedTokens += this.nodeTokens.get(s) ?? 0;
        this.nodeTokens.delete(s);
        this.shadowedAt.set(s, rep.seq);
      }
      const compactionId = obj(d?.['source'])?.['compactionId'];
      if (e.type !== 'tool/result' && typeof compactionId === 'string') {
        this.lowYield.push({ seq: e.seq, id: compactionId, before: contextBefore, shadowed: shadowedTokens, replacement: this.nodeTokens.get(e.seq) ?? 0, shadowedSeqs: rep.shadowedSeqs.length });
      }
    }
    switch (e.type) {
      case 'turn/start':
        this.turn = num(d?.['turn']) ?? this.turn + 1;
        break;
      case 'step/start':
        this.steps += 1;
        break;
      case 'request/header': {
        const tools = obj(d?.['header'])?.['tools'];
        this.offered = Array.isArray(tools) ? new Set(tools.map((t: unknown) => str(obj(t)?.['name']) ?? str(obj(obj(t)?.['function'])?.['name']) ?? '').filter(Boolean)) : null;
        break;
      }
      case 'assistant/message': {
        const content = obj(d?.['message'])?.['content'];
        if (!Array.isArray(content)) break;
        for (const raw of content) {
          const b = obj(raw);
          if (b?.['type'] !== 'tool-call') continue;
          const a = b['arguments'];
          const args = typeof a === 'string' ? a : JSON.stringify(a ?? null);
          let validJson = true;
          if (typeof a === 'string' && a !== '') {
            try {
              JSON.parse(a);
            } catch {
              validJson = false;
            }
          }
          const name = str(b['name']) ?? '';
          this.asked.push({ seq: e.seq, turn: this.turn, name, offered: this.offered === null ? null : this.offered.has(name), validJson, args });
        }
        break;
      }
      case 'tool/call': {
        const name = str(d?.['name']) ?? '';
        const callId = String(d?.['callId']);
        const call: Call = { seq: e.seq, turn: num(d?.['turn']) ?? this.turn, callId, name, key: `${name} ${canonicalArgs(d?.['arguments'])}`, readOnly: this.readOnly.has(name) };
        this.calls.set(callId, call);
        this.callList.push(call);
        break;
      }
      case 'tool/result': {
        if (e.surfaceOp !== 'append') break;
        const message = obj(d?.['message']);
        const content = message?.['content'];
        const block = Array.isArray(content) ? content.map(obj).find((b) => b?.['type'] === 'tool-result') : undefined;
        const text = resultText(block);
        const callId = String(obj(message?.['source'])?.['callId'] ?? block?.['toolCallId']);
        const error = d?.['error'];
        const code = obj(error)?.['code'];
        this.results.push({
          seq: e.seq,
          turn: num(d?.['turn']) ?? this.turn,
          call: this.calls.get(callId),
          error: block?.['isError'] === true || (error !== undefined && error !== null),
          bytes: Buffer.byteLength(text),
          hash: createHash('sha256').update(JSON.stringify([block?.['content'] ?? null, block?.['isError'] === true])).digest('hex'),
          tokens: this.nodeTokens.get(e.seq) ?? 0,
          closer: code === 'TOOL_OUTCOME_UNKNOWN' || code === 'TOOL_NOT_STARTED' ? code : null,
        });
        break;
      }
      case 'llm/retry':
        this.retries.push({ seq: e.seq, turn: num(d?.['turn']) ?? this.turn });
        break;
      case 'compaction/start':
        this.compactions.push({ startSeq: e.seq, id: str(d?.['compactionId']) ?? null, stepsBefore: this.steps, turn: this.turn });
        break;
    }
  }

  private contextTokens(nodes: readonly number[]): number {
    let t = 0;
    for (const s of nodes) t += this.nodeTokens.get(s) ?? 0;
    return t;
  }

  // ------------------------------------------------------------ dispatch sets

  /** The first dispatch whose first chunk is after `seq`. */
  private after(seq: number): number {
    return upperBound(this.dispatches.firstChunkSeqs, seq);
  }

  /** How many dispatches sent the surface node appended at `seq`. */
  private sentIn(seq: number): number {
    const r = this.shadowedAt.get(seq);
    return Math.max(0, (r === undefined ? this.dispatches.count : this.after(r)) - this.after(seq));
  }

  /**
   * The dispatches that sent the surface node appended at `seq` (until it was shadowed), and what sending it
   * again cost: every dispatch after the first, or with `wasted` every one (a copy the model already had).
   */
  carried(seq: number, tokens: number, wasted = false): CarriedEvidence {
    const d = this.dispatches;
    const lo = this.after(seq);
    const r = this.shadowedAt.get(seq);
    const hi = r === undefined ? d.count : this.after(r);
    const count = Math.max(0, hi - lo);
    let miss = 0n;
    let hit = 0n;
    let unpriced = 0;
    const from = wasted ? lo : lo + 1;
    for (let i = from; i < hi; i++) {
      const to = d.sentTo[i]!;
      const at = { currency: 'USD', at: this.dispatchTimes[i]! };
      if (!this.prices) {
        unpriced += 1;
        continue;
      }
      const m = priceUsage({ ...zero(), uncachedInputTokens: tokens }, to.model, to.provider, this.prices, at);
      const h = priceUsage({ ...zero(), cacheReadTokens: tokens }, to.model, to.provider, this.prices, at);
      if (m.priced && h.priced) {
        miss += m.atto;
        hit += h.atto;
      } else unpriced += 1;
    }
    return {
      count,
      first: count > 0 ? d.keys[lo]! : null,
      last: count > 0 ? d.keys[hi - 1]! : null,
      tokensEach: tokens,
      tokensResent: tokens * Math.max(0, hi - from),
      costResent: unpriced === 0 ? { currency: 'USD', cacheMiss: formatAtto(miss), cacheHit: formatAtto(hit) } : null,
      unpriced,
    };
  }

  /** Whether a call of another key to a tool outside `readOnly` lies strictly between seqs `a` and `b`. */
  private changedBetween(a: number, b: number, key: string, readOnly: ReadonlySet<string>): Call | undefined {
    // The calls are in seq order: start at the last one before `b`.
    const list = this.callList;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]!.seq < b) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo - 1; i >= 0; i--) {
      const c = list[i]!;
      if (c.seq <= a) return undefined;
      if (c.key !== key && !readOnly.has(c.name)) return c;
    }
    return undefined;
  }

  // ------------------------------------------------------------ the rules

  finish(): BehaviourFinding[] {
    const s = this.settings;
    const out: BehaviourFinding[] = [];
    const rules: [BehaviourCode, (o: Record<string, OptionValue>) => BehaviourFinding[]][] = [
      ['DSH-X1', (o) => this.toolLoop(o)],
      ['DSH-X2', (o) => this.redundantRead(o)],
      ['DSH-X3', (o) => this.errorStreak(o)],
      ['DSH-X4', (o) => this.repeatedFailure(o)],
      ['DSH-X5', (o) => this.retryStorm(o)],
      ['DSH-X6', (o) => this.carriedResult(o)],
      ['DSH-X7', (o) => this.compactionThrash(o)],
      ['DSH-X8', (o) => this.lowYieldCompaction(o)],
      ['DSH-X9', (o) => this.interruptedSideEffect(o)],
      ['DSH-X10', () => this.unofferedTool()],
      ['DSH-X11', () => this.invalidArguments()],
    ];
    for (const [code, rule] of rules) {
      const o = s[code];
      if (o) out.push(...rule({ ...defaultOptions(code), ...o }));
    }
    return out;
  }

  /** X1: the same call (name and canonical arguments) `min` times in one turn with no change between. */
  private toolLoop(o: Record<string, OptionValue>): BehaviourFinding[] {
    const min = o['min'] as number;
    const ro = new Set(o['readOnlyTools'] as string[]);
    const out: BehaviourFinding[] = [];
    const runs = new Map<string, Call[]>();
    const close = (run: Call[] | undefined) => {
      if (!run || run.length < min) return;
      const first = run[0]!;
      const seqs = run.map((c) => c.seq);
      out.push({
        code: 'DSH-X1',
        seq: seqs[seqs.length - 1]!,
        message: `${first.name} called ${run.length} times in turn ${first.turn} with the same arguments and no change in between (tool/call seq ${seqs.join(', ')})`,
        evidence: { seqs, turn: first.turn, tool: first.name, call: first.key, count: run.length, details: { min } },
      });
    };
    let turn: number | undefined;
    for (const c of this.callList) {
      if (c.turn !== turn) {
        for (const r of runs.values()) close(r);
        runs.clear();
        turn = c.turn;
      }
      const run = runs.get(c.key);
      if (run && this.changedBetween(run[run.length - 1]!.seq, c.seq, c.key, ro)) {
        close(run);
        runs.set(c.key, [c]);
      } else if (run) run.push(c);
      else runs.set(c.key, [c]);
    }
    for (const r of runs.values()) close(r);
    return out.sort((a, b) => a.seq - b.seq);
  }

  /** X2: a call whose result is byte-identical to an earlier result of the same call still on the surface, with no change between. */
  private redundantRead(o: Record<string, OptionValue>): BehaviourFinding[] {
    const minBytes = o['minBytes'] as number;
    const ro = new Set(o['readOnlyTools'] as string[]);
    const out: BehaviourFinding[] = [];
    const last = new Map<string, ResultFact>();
    for (const r of this.results) {
      if (!r.call || r.closer) continue;
      const prev = last.get(r.call.key);
      last.set(r.call.key, r);
      if (!prev || prev.hash !== r.hash || r.bytes < minBytes) continue;
      // Still on the surface when the repeat was asked for.
      const shadow = this.shadowedAt.get(prev.seq);
      if (shadow !== undefined && shadow < r.call.seq) continue;
      if (this.changedBetween(prev.call!.seq, r.call.seq, r.call.key, ro)) continue;
      const carried = this.carried(r.seq, r.tokens, true);
      out.push({
        code: 'DSH-X2',
        seq: r.seq,
        message:
          `${r.call.name} result at seq ${r.seq} is byte-identical to the result at seq ${prev.seq} of the same call, still on the surface (${r.bytes} bytes); ` +
          `the copy was sent in ${carried.count} dispatch(es)${range(carried)}, ${carried.tokensResent} tokens${costText(carried, carried.count)}`,
        evidence: { seqs: [prev.seq, r.call.seq, r.seq], turn: r.turn, tool: r.call.name, call: r.call.key, bytes: r.bytes, carried, details: { earlierResult: prev.seq, minBytes } },
      });
    }
    return out;
  }

  /** X3: `min` tool errors in a row within a turn. */
  private errorStreak(o: Record<string, OptionValue>): BehaviourFinding[] {
    const min = o['min'] as number;
    const out: BehaviourFinding[] = [];
    let run: ResultFact[] = [];
    const close = () => {
      if (run.length >= min) {
        const seqs = run.map((r) => r.seq);
        const tools = [...new Set(run.map((r) => r.call?.name ?? '?'))];
        out.push({
          code: 'DSH-X3',
          seq: seqs[0]!,
          message: `${run.length} tool errors in a row in turn ${run[0]!.turn} (tool/result seq ${seqs.join(', ')}; ${tools.join(', ')})`,
          evidence: { seqs, turn: run[0]!.turn, count: run.length, details: { tools: tools.join(','), min } },
        });
      }
      run = [];
    };
    for (const r of this.results) {
      if (r.closer) continue;
      if (run.length > 0 && run[0]!.turn !== r.turn) close();
      if (r.error) run.push(r);
      else close();
    }
    close();
    return out;
  }

  /** X4: the same call failing again after an error, within a turn. */
  private repeatedFailure(o: Record<string, OptionValue>): BehaviourFinding[] {
    const min = o['min'] as number;
    const out: BehaviourFinding[] = [];
    const byKey = new Map<string, ResultFact[]>();
    for (const r of this.results) {
      if (!r.call || r.closer || !r.error) continue;
      const k = `${r.turn}\u0000${r.call.key}`;
      const list = byKey.get(k);
      if (list) list.push(r);
      else byKey.set(k, [r]);
    }
    for (const list of byKey.values()) {
      if (list.length < min) continue;
      const first = list[0]!;
      const seqs = list.map((r) => r.seq);
      out.push({
        code: 'DSH-X4',
        seq: seqs[1]!,
        message: `${first.call!.name} failed ${list.length} times in turn ${first.turn} with the same arguments (tool/result seq ${seqs.join(', ')})`,
        evidence: { seqs, turn: first.turn, tool: first.call!.name, call: first.call!.key, count: list.length, details: { min } },
      });
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  /** X5: `min` llm/retry events in one turn. */
  private retryStorm(o: Record<string, OptionValue>): BehaviourFinding[] {
    const min = o['min'] as number;
    const byTurn = new Map<number, number[]>();
    for (const r of this.retries) {
      const seqs = byTurn.get(r.turn);
      if (seqs) seqs.push(r.seq);
      else byTurn.set(r.turn, [r.seq]);
    }
    const out: BehaviourFinding[] = [];
    for (const [turn, seqs] of byTurn) {
      if (seqs.length < min) continue;
      out.push({ code: 'DSH-X5', seq: seqs[0]!, message: `${seqs.length} llm/retry events in turn ${turn} (seq ${seqs.join(', ')})`, evidence: { seqs, turn, count: seqs.length, details: { min } } });
    }
    return out;
  }

  /** X6: a large tool result carried on the surface through many dispatches. */
  private carriedResult(o: Record<string, OptionValue>): BehaviourFinding[] {
    const minBytes = o['minBytes'] as number;
    const minDispatches = o['minDispatches'] as number;
    const out: BehaviourFinding[] = [];
    for (const r of this.results) {
      if (r.bytes < minBytes || r.closer || this.sentIn(r.seq) < minDispatches) continue;
      const carried = this.carried(r.seq, r.tokens);
      const removed = this.shadowedAt.get(r.seq);
      out.push({
        code: 'DSH-X6',
        seq: r.seq,
        message:
          `${r.call?.name ?? 'tool'} result at seq ${r.seq} (${r.bytes} bytes, ${r.tokens} tokens) was sent in ${carried.count} dispatches${range(carried)}` +
          `${removed !== undefined ? ` until seq ${removed} shadowed it` : ', and is still on the surface'}: ${r.bytes * Math.max(0, carried.count - 1)} bytes and ${carried.tokensResent} tokens re-sent${costText(carried, carried.count - 1)}`,
        evidence: { seqs: r.call ? [r.call.seq, r.seq] : [r.seq], turn: r.turn, ...(r.call ? { tool: r.call.name } : {}), bytes: r.bytes, carried, details: { bytesResent: r.bytes * Math.max(0, carried.count - 1), shadowedAt: removed ?? null, minBytes, minDispatches } },
      });
    }
    return out;
  }

  /** X7: two compactions with fewer than `minSteps` steps started between them. */
  private compactionThrash(o: Record<string, OptionValue>): BehaviourFinding[] {
    const minSteps = o['minSteps'] as number;
    const out: BehaviourFinding[] = [];
    for (let i = 1; i < this.compactions.length; i++) {
      const a = this.compactions[i - 1]!;
      const b = this.compactions[i]!;
      const steps = b.stepsBefore - a.stepsBefore;
      if (steps >= minSteps) continue;
      out.push({
        code: 'DSH-X7',
        seq: b.startSeq,
        message: `compaction ${b.id ?? '?'} (seq ${b.startSeq}) started ${steps} step(s) after compaction ${a.id ?? '?'} (seq ${a.startSeq})`,
        evidence: { seqs: [a.startSeq, b.startSeq], turn: b.turn, count: steps, details: { previous: a.id, compaction: b.id, stepsBetween: steps, minSteps } },
      });
    }
    return out;
  }

  /** X8: a compaction that freed less than `minFreedPercent` of the estimated context. */
  private lowYieldCompaction(o: Record<string, OptionValue>): BehaviourFinding[] {
    const pct = o['minFreedPercent'] as number;
    const out: BehaviourFinding[] = [];
    for (const c of this.lowYield) {
      const freed = c.shadowed - c.replacement;
      // Percent with one decimal, from integers (no float noise in the output).
      const tenths = c.before > 0 ? Math.floor((freed * 1000) / c.before) : 0;
      if (c.before === 0 || tenths >= pct * 10) continue;
      const shown = `${tenths < 0 ? '-' : ''}${Math.floor(Math.abs(tenths) / 10)}.${Math.abs(tenths) % 10}`;
      out.push({
        code: 'DSH-X8',
        seq: c.seq,
        message:
          freed > 0
            ? `compaction ${c.id ?? '?'} (seq ${c.seq}) freed ${freed} of ${c.before} estimated context tokens (${shown}%): ${c.shadowedSeqs} node(s) of ${c.shadowed} tokens became a summary of ${c.replacement}`
            : `compaction ${c.id ?? '?'} (seq ${c.seq}) freed no context: ${c.shadowedSeqs} node(s) of ${c.shadowed} tokens became a summary of ${c.replacement} (context ${c.before} estimated tokens before it)`,
        evidence: { seqs: [c.seq], count: c.shadowedSeqs, details: { compaction: c.id, contextTokens: c.before, shadowedTokens: c.shadowed, summaryTokens: c.replacement, freedTokens: freed, freedPercent: shown, minFreedPercent: pct } },
      });
    }
    return out;
  }

  /** X9: a turn ended interrupted after a tool that may have side effects started (a TOOL_OUTCOME_UNKNOWN closer). */
  private interruptedSideEffect(o: Record<string, OptionValue>): BehaviourFinding[] {
    const ro = new Set(o['readOnlyTools'] as string[]);
    const out: BehaviourFinding[] = [];
    for (const r of this.results) {
      if (r.closer !== 'TOOL_OUTCOME_UNKNOWN') continue;
      const name = r.call?.name ?? '?';
      if (ro.has(name)) continue;
      const seqs = r.call ? [r.call.seq, r.seq] : [r.seq];
      out.push({
        code: 'DSH-X9',
        seq: r.seq,
        message: `turn ${r.turn} ended interrupted after ${name} started (tool/call seq ${r.call?.seq ?? '?'}): its outcome is unknown (closer seq ${r.seq}, TOOL_OUTCOME_UNKNOWN)`,
        evidence: { seqs, turn: r.turn, tool: name, ...(r.call ? { call: r.call.key } : {}) },
      });
    }
    return out;
  }

  /** X10: the model asked for a tool the request header in force did not offer. */
  private unofferedTool(): BehaviourFinding[] {
    return this.asked
      .filter((a) => a.offered === false)
      .map((a) => ({
        code: 'DSH-X10' as const,
        seq: a.seq,
        message: `the model asked for tool ${JSON.stringify(a.name)} at seq ${a.seq} (turn ${a.turn}), which the request header in force did not offer`,
        evidence: { seqs: [a.seq], turn: a.turn, tool: a.name },
      }));
  }

  /** X11: the model asked for a tool with arguments that are not valid JSON. */
  private invalidArguments(): BehaviourFinding[] {
    return this.asked
      .filter((a) => !a.validJson)
      .map((a) => ({
        code: 'DSH-X11' as const,
        seq: a.seq,
        message: `the model called ${a.name || '?'} at seq ${a.seq} (turn ${a.turn}) with arguments that are not valid JSON (${a.args.length} chars)`,
        evidence: { seqs: [a.seq], turn: a.turn, tool: a.name, details: { argumentsLength: a.args.length } },
      }));
  }
}

function range(c: CarriedEvidence): string {
  return c.count === 0 ? '' : c.count === 1 ? ` (${c.first})` : ` (${c.first} to ${c.last})`;
}

function costText(c: CarriedEvidence, resends: number): string {
  if (resends <= 0) return '';
  if (c.costResent) return `, USD ${c.costResent.cacheMiss} at the cache-miss rate (${c.costResent.cacheHit} if cached)`;
  return `, ${c.unpriced} dispatch(es) unpriced`;
}

// ---------------------------------------------------------------- X12

/**
 * X12: a prompt-cache break a header change caused in the middle of a session (the system prompt, the
 * tool list, the model), one finding per break of `headerCacheBreaks` (the `dsh context --breaks` view,
 * computed by the engine from the dispatch index, not by the fold): the `request/header` that changed,
 * the dispatch that re-sent the prompt, the fields and what re-sending cost.
 */
export function headerBreakFindings(breaks: readonly CacheBreak[]): BehaviourFinding[] {
  return breaks.map((b) => {
    const fields = b.fields && b.fields.length > 0 ? b.fields : [b.cause];
    const seq = b.causeSeq ?? b.firstChunkSeq;
    const tokens = b.resentTokens === null ? `${b.resentBytes} bytes` : `${b.resentTokens} tokens (${b.resentBytes} bytes)`;
    const cost = b.cost?.priced ? `, ${b.cost.uncached} ${b.cost.currency} uncached (${b.cost.extra} more than a cache hit)` : '';
    const where = b.causeSeq === null ? '' : ` at request/header seq ${b.causeSeq}`;
    return {
      code: 'DSH-X12' as const,
      seq,
      message: `${fields.join(', ')} changed${where} mid-session: dispatch ${b.key} (seq ${b.firstChunkSeq}) broke the prompt cache of ${b.previous} and re-sent ${tokens}${cost}`,
      evidence: {
        seqs: [...new Set([seq, b.firstChunkSeq])].sort((x, y) => x - y),
        details: {
          dispatch: b.key,
          previous: b.previous,
          cause: b.cause,
          fields: fields.join(','),
          resentBytes: b.resentBytes,
          resentTokens: b.resentTokens,
          ...(b.cost?.priced ? { currency: b.cost.currency, costUncached: b.cost.uncached, costExtra: b.cost.extra } : b.cost ? { currency: b.cost.currency, unpriced: b.cost.reason } : {}),
        },
      },
    };
  });
}

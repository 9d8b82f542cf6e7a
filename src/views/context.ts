/**
 * Where the context went (`dsh context`, `Session.context`): for every model dispatch, the bytes of
 * the request `dsh request --json` rebuilds split by what filled them, the logged prompt tokens split
 * in proportion, the context window and fill, what entered or left the context since the dispatch
 * before, and prompt-cache attribution: the longest prefix the request's prompt (DeepSeek body,
 * chat-template order) shares with an earlier dispatch, and every cache break with its cause.
 *
 * A function of the store: the dispatch index (saved in the session index) plus a re-read of the
 * surface events the dispatches were sent. It holds those message events (the surface's text, not
 * the log's) and one element text per surface node and header, shared by every dispatch.
 */
import { createHash } from 'node:crypto';
import type { SessionEvent } from '../log/types.js';
import type { SeqRange } from '../log/reread.js';
import { deriveEventMessage } from '../log/surface.js';
import { jsonByteLength, jsonText, toJson } from '../core/json.js';
import type { Dispatches } from './dispatch-fold.js';
import type { Reread } from './dispatch-view.js';
import { dispatchModel, dispatchProvider, requestJson, type DispatchEntry } from './requests.js';
import { headerChanges, type EpochHeader } from './header.js';
import { serializeMessages } from './deepseek-body.js';
import { bucketsOf, billedInput } from './stats.js';
import { formatAtto, priceUsage, type PriceTable } from './prices.js';

/** What filled a request, in the order `dsh context` prints them. */
export const CONTEXT_CATEGORIES = ['system', 'tools', 'user', 'assistantText', 'assistantReasoning', 'assistantToolCalls', 'toolResults', 'compaction', 'other'] as const;
export type ContextCategory = (typeof CONTEXT_CATEGORIES)[number];
export type CategoryBytes = Record<ContextCategory, number>;

/** How each category is counted (the `--json` document's `explain`, README material). */
export const CONTEXT_EXPLAIN: Readonly<Record<ContextCategory | 'bytes' | 'tokens' | 'prefix', string>> = {
  bytes: 'UTF-8 bytes of the request `dsh request --json` prints (its JSON text without the newline); the categories sum to it exactly',
  system: 'header.system (the JSON string, quotes included), and messages with role system',
  tools: 'header.tools (the JSON array of tool schemas)',
  user: 'user messages that are not compaction checkpoints: their text/image blocks and envelopes',
  assistantText: 'assistant text blocks, and assistant message envelopes (role, id, separators)',
  assistantReasoning: 'assistant reasoning blocks',
  assistantToolCalls: 'assistant tool-call blocks',
  toolResults: 'tool-result blocks and the envelopes of the user messages that carry them',
  compaction: 'compaction checkpoints: a user message whose source is the compact plugin, whole',
  other: 'everything else: key, firstChunkSeq, header config, request context, JSON punctuation',
  tokens: 'the logged prompt tokens of the dispatch (input + cache read + cache write) split in proportion to bytes (largest remainder); no DeepSeek V4 tokenizer ships offline as a well-kept npm package',
  prefix:
    'the prompt is the DeepSeek body (`dsh request --body deepseek`) in chat-template order: the system message, the tool list, then the other messages; each element is its JSON text, and a prefix is a byte comparison of the concatenated elements. Dispatches to another provider/model share nothing',
};

export type ContextChangeKind = 'entered' | 'compaction' | 'prune' | 'rewrite' | 'removed' | 'header';

/** One thing that changed the context since the dispatch before. */
export interface ContextChange {
  kind: ContextChangeKind;
  /** The event: the message that entered, the replacement (compaction checkpoint, pruned or rewritten tool result), the request/header. */
  seq: number | null;
  /** A prune: the `compaction/prune` record before its replacement. */
  pruneSeq?: number;
  type: string;
  category?: ContextCategory;
  /** The surface nodes it shadowed (compaction, prune, rewrite) or that left without a replacement (removed). */
  replaced?: number[];
  /** Replacements between the two dispatches that this one shadowed in turn (never sent): a prune compacted before the next request. */
  via?: { kind: 'prune' | 'rewrite'; seq: number; pruneSeq?: number; shadowed: number }[];
  /** Header fields changed (kind header). */
  fields?: string[];
  addedBytes: number;
  removedBytes: number;
}

/** Where a request's prompt first differs from the dispatch before it. */
export interface PromptElementRef {
  /** Position in the prompt (0 = the system message when the header has one). */
  position: number;
  element: 'system' | 'tools' | 'message' | 'end';
  /** The surface node the element comes from (a message). */
  seq: number | null;
  role: string | null;
}

export type CacheBreakCause = 'model' | 'system' | 'tools' | 'compaction' | 'prune' | 'rewrite' | 'removed' | 'other';

/** A request that does not extend the one before it. */
export interface CacheBreak {
  index: number;
  key: string;
  firstChunkSeq: number;
  time: number;
  previous: string;
  /** The first element of the previous request's prompt that this one does not repeat. */
  at: PromptElementRef;
  cause: CacheBreakCause;
  /** The event that caused it: the compaction checkpoint, the prune record, the rewritten result, the request/header. */
  causeSeq: number | null;
  /** Header fields that changed (`system`, `tools[name]`, `config.model`). */
  fields?: string[];
  detail: string;
  /** Bytes of this prompt after the break that the previous prompt also held (sent again, uncached). */
  resentBytes: number;
  /** `resentBytes` in proportional tokens (null without logged usage). */
  resentTokens: number | null;
  /** The re-sent tokens at the uncached input price, and the extra over what a cache hit would have cost. */
  cost: { priced: true; currency: string; uncached: string; extra: string } | { priced: false; currency: string; reason: string } | null;
}

export interface ContextRow {
  index: number;
  key: string;
  turn: number;
  step: number;
  attempt: number;
  firstChunkSeq: number;
  time: number;
  provider: string | null;
  model: string | null;
  finish: unknown | null;
  messageCount: number;
  /** The request's bytes (`dsh request --json`, without the newline). */
  bytes: number;
  byCategory: CategoryBytes;
  /** Logged prompt tokens (input + cache read + cache write); null when the dispatch logged no usage. */
  promptTokens: number | null;
  tokensByCategory: CategoryBytes | null;
  contextWindow: number | null;
  /** promptTokens / contextWindow in percent, one decimal. */
  fillPercent: number | null;
  changes: ContextChange[];
  addedBytes: number;
  removedBytes: number;
  cache: {
    /** Bytes of the prompt (see `explain.prefix`). */
    promptBytes: number;
    /** The longest prefix shared with an earlier dispatch. */
    sharedBytes: number;
    sharedWith: string | null;
    sharedTokens: number | null;
    cacheReadTokens: number | null;
    /** The prompt repeats the whole prompt of the dispatch before (null for the first). */
    extendsPrevious: boolean | null;
  };
  /** Index into `breaks`, when this dispatch broke the cache. */
  break: number | null;
}

export interface ContextView {
  sessionId: string | null;
  tokens: 'proportional';
  dispatches: ContextRow[];
  breaks: CacheBreak[];
  totals: {
    dispatches: number;
    maxBytes: number;
    maxFillPercent: number | null;
    promptTokens: number;
    cacheReadTokens: number;
    breaks: number;
    resentTokens: number;
    /** The extra cost of all priced breaks (null when none was priced). */
    breakCost: { currency: string; extra: string } | null;
  };
  explain: typeof CONTEXT_EXPLAIN;
}

export interface ContextOptions {
  prices?: PriceTable | null;
  currency?: string;
}

const zeroBytes = (): CategoryBytes => ({ system: 0, tools: 0, user: 0, assistantText: 0, assistantReasoning: 0, assistantToolCalls: 0, toolResults: 0, compaction: 0, other: 0 });

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

function isCompaction(message: unknown): boolean {
  const src = (message as { source?: { kind?: unknown; plugin?: unknown } } | null)?.source;
  return !!src && typeof src === 'object' && src.kind === 'plugin' && src.plugin === 'compact';
}

/** The category of one content block of a message. */
function blockCategory(role: unknown, block: unknown, compaction: boolean): ContextCategory {
  const t = (block as { type?: unknown } | null)?.type;
  if (compaction) return 'compaction';
  if (role === 'system') return 'system';
  if (role === 'assistant') return t === 'reasoning' ? 'assistantReasoning' : t === 'tool-call' ? 'assistantToolCalls' : 'assistantText';
  return t === 'tool-result' ? 'toolResults' : 'user';
}

/** A message's envelope category (everything of it outside its content blocks). */
function messageCategory(message: unknown): ContextCategory {
  const m = message as { role?: unknown; content?: unknown } | null;
  if (isCompaction(m)) return 'compaction';
  if (m?.role === 'system') return 'system';
  if (m?.role === 'assistant') return 'assistantText';
  if (Array.isArray(m?.content) && m.content.some((b) => (b as { type?: unknown } | null)?.type === 'tool-result')) return 'toolResults';
  return 'user';
}

/** A message's bytes by category (its JSON text as it appears in the request). */
export function messageBytes(message: unknown): { total: number; byCategory: Partial<CategoryBytes> } {
  const total = jsonByteLength(message);
  const out: Partial<CategoryBytes> = {};
  const add = (c: ContextCategory, n: number) => (out[c] = (out[c] ?? 0) + n);
  const m = message as { role?: unknown; content?: unknown } | null;
  let inBlocks = 0;
  if (Array.isArray(m?.content)) {
    const compaction = isCompaction(m);
    for (const block of m.content) {
      const n = block === undefined ? 4 : jsonByteLength(block);
      inBlocks += n;
      add(blockCategory(m.role, block, compaction), n);
    }
  }
  add(messageCategory(m), total - inBlocks);
  return { total, byCategory: out };
}

/** The request's bytes (`dsh request --json`) split by category; the categories sum to `bytes`. */
export function requestBytes(entry: DispatchEntry, messages: readonly unknown[], perMessage?: (i: number) => { total: number; byCategory: Partial<CategoryBytes> }): { bytes: number; byCategory: CategoryBytes } {
  // The document with no messages, plus each message's JSON and the commas between them: the same bytes
  // as the whole document's JSON (compact), without building that string.
  const per = messages.map((m, i) => (perMessage ? perMessage(i) : messageBytes(m)));
  const bytes = utf8(toJson(requestJson(entry, []))) + per.reduce((a, m) => a + m.total, 0) + Math.max(0, messages.length - 1);
  const by = zeroBytes();
  const h = entry.header as (EpochHeader & { system?: unknown; tools?: unknown }) | null;
  if (h && h.system !== undefined) by.system += utf8(toJson(h.system));
  if (h && h.tools !== undefined) by.tools += utf8(toJson(h.tools));
  for (const m of per) for (const [c, n] of Object.entries(m.byCategory)) by[c as ContextCategory] += n as number;
  let known = 0;
  for (const c of CONTEXT_CATEGORIES) if (c !== 'other') known += by[c];
  by.other = bytes - known;
  return { bytes, byCategory: by };
}

/** `total` split in proportion to `parts` (largest remainder, so the parts sum to `total`). */
export function proportional(total: number, parts: CategoryBytes): CategoryBytes {
  const out = zeroBytes();
  const sum = CONTEXT_CATEGORIES.reduce((a, c) => a + parts[c], 0);
  if (sum <= 0 || total <= 0) return out;
  const rem: [ContextCategory, number][] = [];
  let given = 0;
  for (const c of CONTEXT_CATEGORIES) {
    const exact = (total * parts[c]) / sum;
    out[c] = Math.floor(exact);
    given += out[c];
    rem.push([c, exact - out[c]]);
  }
  rem.sort((a, b) => b[1] - a[1]);
  for (let i = 0; given < total && i < rem.length; i++, given++) out[rem[i]![0]] += 1;
  return out;
}

const scaled = (tokens: number | null, bytes: number, of: number): number | null => (tokens === null ? null : of > 0 ? Math.round((tokens * bytes) / of) : 0);

/** One element of a prompt: its JSON text's digest and bytes, and where it came from. */
interface Element {
  digest: string;
  bytes: number;
  /** A message element: which of the node's wire messages (a user message with tool results sends several). */
  part: number;
  kind: 'system' | 'tools' | 'message';
  seq: number | null;
  role: string | null;
}

const digestOf = (text: string) => createHash('sha1').update(text).digest('base64');

/** Bytes of the longest common prefix of two strings, in UTF-8. */
function commonPrefixBytes(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i > 0 && i < n) {
    const c = a.charCodeAt(i - 1);
    if (c >= 0xd800 && c <= 0xdbff) i--; // never split a surrogate pair
  }
  return utf8(a.slice(0, i));
}

/** The re-read seq ranges covering `seqs` (sorted, merged). */
function rangesOf(seqs: Iterable<number>): SeqRange[] {
  const sorted = [...new Set(seqs)].sort((a, b) => a - b);
  const out: [number, number][] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s <= last[1] + 1) last[1] = s;
    else out.push([s, s]);
  }
  return out;
}

const ratio = (num: number, den: number) => Math.round((num / den) * 1000) / 10;

/**
 * The cache breaks a header change caused (the system prompt, the tool list, the model): every break
 * is in the middle of a session (it needs a dispatch before it). The facts for a `check` info rule:
 * over held events, `headerCacheBreaks(await contextOf(deriveDispatches(events).requests, async () => events, id))`;
 * each break names the dispatch (`key`, `firstChunkSeq`), the `request/header` seq (`causeSeq`), the
 * fields and what it re-sent.
 */
export function headerCacheBreaks(view: Pick<ContextView, 'breaks'>): CacheBreak[] {
  return view.breaks.filter((b) => b.cause === 'system' || b.cause === 'tools' || b.cause === 'model');
}

/** Reads the logical events of some seq ranges: a sparse array by seq (it may hold more). */
export type ReadEvents = (ranges: readonly SeqRange[]) => Promise<readonly SessionEvent[]>;

/** Fills and lets go of the text-valued fields of dispatch entries (the store's index); absent: the entries hold them. */
export interface EntryTexts {
  hydrate(entries: readonly DispatchEntry[]): Promise<void>;
  release(entries: readonly DispatchEntry[]): void;
}

/** Dispatches hydrated at a time. */
const BATCH = 256;

/** The context of every dispatch of a session, from the store's dispatch index and a re-reader. */
export async function contextIndexed(dispatches: Dispatches, reread: Reread, sessionId: string | null, options: ContextOptions = {}): Promise<ContextView> {
  return contextOf(dispatches.index.requests, (ranges) => reread(ranges), sessionId, options, {
    hydrate: (batch) => dispatches.hydrate(batch, (ranges) => reread(ranges)),
    release: (batch) => dispatches.release(batch),
  });
}

/** The events a walk over the dispatches holds: the current surface's, and what a dispatch reads beside them. */
class EventWindow {
  private readonly held = new Map<number, SessionEvent | null>();
  constructor(private readonly read: ReadEvents) {}
  get(seq: number): SessionEvent | undefined {
    return this.held.get(seq) ?? undefined;
  }
  async ensure(seqs: Iterable<number>): Promise<void> {
    const missing = [...new Set(seqs)].filter((s) => s >= 0 && !this.held.has(s));
    if (missing.length === 0) return;
    const got = await this.read(rangesOf(missing));
    for (const s of missing) this.held.set(s, got[s] ?? null);
  }
  /** Let go of every event but these. */
  keep(seqs: ReadonlySet<number>): void {
    for (const s of this.held.keys()) if (!seqs.has(s)) this.held.delete(s);
  }
}

const isReplacement = (e: SessionEvent | undefined): e is SessionEvent => !!e && typeof e.surfaceOp === 'object' && e.surfaceOp !== null;
const sourcesOf = (e: SessionEvent | undefined): number[] => (Array.isArray(e?.sourceEventSeqs) ? e.sourceEventSeqs.filter((t): t is number => typeof t === 'number') : []);

/**
 * The context view over dispatch entries in order, reading the events their surfaces cite with `read`.
 * It holds the events of one surface at a time (and numbers and digests of every message it saw), so
 * what it holds follows the surface, not the log; `texts`, when given, hydrates the entries a batch at
 * a time and lets them go again.
 */
export async function contextOf(entries: readonly DispatchEntry[], read: ReadEvents, sessionId: string | null, options: ContextOptions = {}, texts?: EntryTexts): Promise<ContextView> {
  const prices = options.prices ?? null;
  const currency = (options.currency ?? 'USD').toUpperCase();
  const win = new EventWindow(read);
  const events = { get: (seq: number) => win.get(seq) };
  const messageOf = (seq: number): unknown | null => {
    const e = win.get(seq);
    return e ? (deriveEventMessage(e) ?? null) : null;
  };
  // Per surface node (numbers only, kept for every node seen): its message's bytes by category, and its prompt elements.
  const nodeBytes = new Map<number, { total: number; byCategory: Partial<CategoryBytes> }>();
  const bytesOfNode = (seq: number) => {
    let b = nodeBytes.get(seq);
    if (!b) nodeBytes.set(seq, (b = messageBytes(messageOf(seq))));
    return b;
  };
  const sizeOf = (seq: number) => nodeBytes.get(seq)?.total ?? 0;
  const wireOf = (seq: number): string[] => {
    const m = messageOf(seq);
    return m === null ? [] : serializeMessages([m]).map((w) => toJson(w));
  };
  const nodeElements = new Map<number, Element[]>();
  const elementsOfNode = (seq: number): Element[] => {
    let els = nodeElements.get(seq);
    if (!els) {
      const m = messageOf(seq);
      els = m === null ? [] : serializeMessages([m]).map((w, part) => messageElement(w, seq, String(w['role'] ?? ''), part));
      nodeElements.set(seq, els);
    }
    return els;
  };
  // Header elements keep their text (one per request/header).
  const headerElements = new Map<string, { system: Element | null; tools: Element | null; text: Map<Element, string> }>();
  const element = (text: string, kind: Element['kind'], seq: number | null, role: string | null, part = 0): Element => ({ digest: digestOf(text), bytes: utf8(text), part, kind, seq, role });
  // A wire message's digest and bytes from its JSON text's pieces (a 200 MB message is never serialized whole).
  const messageElement = (wire: unknown, seq: number, role: string, part: number): Element => {
    const hash = createHash('sha1');
    let bytes = 0;
    for (const piece of jsonText(wire)) {
      hash.update(piece);
      bytes += utf8(piece);
    }
    return { digest: hash.digest('base64'), bytes, part, kind: 'message', seq, role };
  };
  const headerEls = (e: DispatchEntry) => {
    const k = String(e.headerSeq);
    let h = headerElements.get(k);
    if (!h) {
      const header = e.header as (EpochHeader & { system?: unknown; tools?: unknown }) | null;
      const text = new Map<Element, string>();
      const systemText = header && header.system !== undefined ? toJson({ role: 'system', content: header.system }) : null;
      const system = systemText !== null ? element(systemText, 'system', e.headerSeq, 'system') : null;
      if (system) text.set(system, systemText as string);
      const toolList = header && Array.isArray(header.tools) && header.tools.length > 0 ? header.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) : null;
      const toolsText = toolList ? toJson(toolList) : null;
      const tools = toolsText !== null ? element(toolsText, 'tools', e.headerSeq, null) : null;
      if (tools) text.set(tools, toolsText as string);
      headerElements.set(k, (h = { system, tools, text }));
    }
    return h;
  };
  /** An element's JSON text (a message's is re-read when its event is no longer held). */
  const textOf = async (el: Element): Promise<string | null> => {
    if (el.kind !== 'message') {
      for (const h of headerElements.values()) {
        const t = h.text.get(el);
        if (t !== undefined) return t;
      }
      return null;
    }
    await win.ensure([el.seq as number]);
    return wireOf(el.seq as number)[el.part] ?? null;
  };
  const promptOf = (e: DispatchEntry): Element[] => {
    const h = headerEls(e);
    const out: Element[] = [];
    if (h.system) out.push(h.system);
    if (h.tools) out.push(h.tools);
    for (const s of e.surfaceNodes) for (const el of elementsOfNode(s)) out.push(el);
    return out;
  };

  // Earlier prompts by (model, chain digest of their first k elements): which dispatches had that prefix
  // (the latest few); a prompt is kept while some list names its dispatch.
  const chains = new Map<string, number[]>();
  const prompts = new Map<number, { elements: Element[]; lists: number }>();
  const rows: ContextRow[] = [];
  const breaks: CacheBreak[] = [];
  let prev: (Pick<DispatchEntry, 'index' | 'key' | 'surfaceNodes' | 'header' | 'requestContext' | 'headerSeq'> & { prompt: Element[] }) | null = null;
  for (let b = 0; b < entries.length; b += BATCH) {
   const batch = entries.slice(b, b + BATCH);
   if (texts) await texts.hydrate(batch);
   // The batch's surfaces in one re-read (each re-read decodes whole frames).
   const batchNodes = new Set<number>();
   for (const entry of batch) for (const s of entry.surfaceNodes) batchNodes.add(s);
   await win.ensure(batchNodes);
   for (const entry of batch) {
    // The events this dispatch reads: its surface, a replacement's prune record, what a replacement shadowed that was never sent.
    await win.ensure(entry.surfaceNodes);
    const prevSet = new Set(prev?.surfaceNodes ?? []);
    const around: number[] = [];
    for (const s of entry.surfaceNodes) {
      const e = win.get(s);
      if (prevSet.has(s) || !isReplacement(e)) continue;
      around.push(s - 1, ...sourcesOf(e).filter((t) => t < s));
    }
    await win.ensure(around);
    await win.ensure(around.filter((t) => isReplacement(win.get(t))).map((t) => t - 1));
    const messages: unknown[] = [];
    const perMessage: { total: number; byCategory: Partial<CategoryBytes> }[] = [];
    for (const s of entry.surfaceNodes) {
      const m = messageOf(s);
      if (m === null) continue;
      messages.push(m);
      perMessage.push(bytesOfNode(s));
    }
    const { bytes, byCategory } = requestBytes(entry, messages, (i) => perMessage[i]!);
    const usage = entry.messageUsage ?? entry.chunkUsage ?? null;
    const buckets = usage ? bucketsOf(usage) : null;
    const promptTokens = buckets ? billedInput(buckets) : null;
    const window = typeof entry.requestContext?.contextWindow === 'number' && entry.requestContext.contextWindow > 0 ? entry.requestContext.contextWindow : null;
    const provider = dispatchProvider(entry.header, entry.requestContext);
    const model = dispatchModel(entry.header, entry.requestContext);

    // What changed since the dispatch before.
    const changes: ContextChange[] = [];
    const prevNodes = new Set(prev?.surfaceNodes ?? []);
    const curNodes = new Set(entry.surfaceNodes);
    const removed = (prev?.surfaceNodes ?? []).filter((s) => !curNodes.has(s));
    const claimed = new Set<number>();
    const hc = prev ? headerChanges(prev.header, entry.header) : [];
    if (prev && hc.length > 0) {
      const before = prev.header as (EpochHeader & { system?: unknown; tools?: unknown }) | null;
      const after = entry.header as (EpochHeader & { system?: unknown; tools?: unknown }) | null;
      const size = (h: typeof before) => (h ? (h.system !== undefined ? utf8(toJson(h.system)) : 0) + (h.tools !== undefined ? utf8(toJson(h.tools)) : 0) : 0);
      const a = size(after);
      const b = size(before);
      changes.push({ kind: 'header', seq: entry.headerSeq, type: 'request/header', fields: hc.map((c) => c.field), addedBytes: Math.max(0, a - b), removedBytes: Math.max(0, b - a) });
    }
    for (const s of entry.surfaceNodes) {
      if (prevNodes.has(s)) continue;
      const e = events.get(s);
      const m = messageOf(s);
      const added = m === null ? 0 : bytesOfNode(s).total;
      if (e && typeof e.surfaceOp === 'object' && e.surfaceOp !== null) {
        const sources = new Set(Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs : []);
        const replaced = removed.filter((r) => sources.has(r) && !claimed.has(r));
        for (const r of replaced) claimed.add(r);
        const removedBytes = replaced.reduce((a, r) => a + sizeOf(r), 0);
        const kind: ContextChangeKind = isCompaction(m) ? 'compaction' : e.type === 'tool/result' && events.get(s - 1)?.type === 'compaction/prune' ? 'prune' : 'rewrite';
        changes.push({ kind, seq: s, ...(kind === 'prune' ? { pruneSeq: s - 1 } : {}), type: e.type, category: messageCategory(m), replaced, addedBytes: added, removedBytes });
      } else {
        changes.push({ kind: 'entered', seq: s, type: e?.type ?? '?', category: m === null ? 'other' : messageCategory(m), addedBytes: added, removedBytes: 0 });
      }
    }
    // A node shadowed by a replacement that was itself shadowed before this dispatch (never sent): the later one took it.
    for (const r of removed) {
      if (claimed.has(r)) continue;
      for (const c of changes) {
        if (!c.replaced || c.seq === null) continue;
        const via = sourcesOf(events.get(c.seq)).filter((t) => !prevNodes.has(t) && !curNodes.has(t) && isReplacement(events.get(t)) && sourcesOf(events.get(t)).includes(r));
        if (via.length === 0) continue;
        claimed.add(r);
        c.replaced.push(r);
        c.removedBytes += sizeOf(r);
        for (const t of via) {
          const how = events.get(t - 1)?.type === 'compaction/prune' ? { kind: 'prune' as const, seq: t, pruneSeq: t - 1, shadowed: r } : { kind: 'rewrite' as const, seq: t, shadowed: r };
          (c.via ??= []).push(how);
        }
        break;
      }
    }
    const left = removed.filter((r) => !claimed.has(r));
    if (left.length > 0) {
      changes.push({ kind: 'removed', seq: null, type: 'surface', replaced: left, addedBytes: 0, removedBytes: left.reduce((a, r) => a + sizeOf(r), 0) });
    }

    // Prompt-cache attribution.
    const prompt = promptOf(entry);
    const promptBytes = prompt.reduce((a, el) => a + el.bytes, 0);
    const partition = `${provider ?? '?'}\u0000${model ?? '?'}`;
    const chain = createHash('sha1').update(partition);
    const digest = chain.copy().digest('base64');
    let k = 0;
    let sharedBytes = 0;
    const holders = chains.get(digest);
    const keys: string[] = [digest];
    let candidates = holders ? [...holders] : [];
    for (; k < prompt.length; k++) {
      chain.update(prompt[k]!.digest);
      const next = chain.copy().digest('base64');
      keys.push(next);
      const h = chains.get(next);
      if (!h) break;
      sharedBytes += prompt[k]!.bytes;
      candidates = [...h];
    }
    // The rest of the chain digests (registered below).
    for (let j = k + 1; j < prompt.length; j++) {
      chain.update(prompt[j]!.digest);
      keys.push(chain.copy().digest('base64'));
    }
    let sharedWith: number | null = candidates.length > 0 ? candidates[candidates.length - 1]! : null;
    if (k < prompt.length && candidates.length > 0) {
      let best = -1;
      const mine = await textOf(prompt[k]!);
      for (const c of candidates) {
        const other = prompts.get(c)?.elements[k];
        if (!other || mine === null) continue;
        const theirs = await textOf(other);
        if (theirs === null) continue;
        const n = commonPrefixBytes(mine, theirs);
        if (n > best) {
          best = n;
          sharedWith = c;
        }
      }
      if (best > 0) sharedBytes += best;
    }
    if (sharedBytes === 0) sharedWith = null;
    const mineKept = { elements: prompt, lists: 0 };
    prompts.set(entry.index, mineKept);
    for (const key of keys) {
      const list = chains.get(key) ?? [];
      list.push(entry.index);
      mineKept.lists += 1;
      if (list.length > 4) {
        const gone = list.shift() as number;
        const kept = prompts.get(gone);
        if (kept && --kept.lists === 0) prompts.delete(gone);
      }
      chains.set(key, list);
    }

    // Does it extend the dispatch before?
    let extendsPrevious: boolean | null = null;
    let breakAt: number | null = null;
    if (prev) {
      const before = prev.prompt;
      const samePartition = dispatchProvider(prev.header, prev.requestContext) === provider && dispatchModel(prev.header, prev.requestContext) === model;
      let i = 0;
      if (samePartition) while (i < before.length && i < prompt.length && before[i]!.digest === prompt[i]!.digest) i++;
      extendsPrevious = samePartition && i === before.length;
      if (!extendsPrevious) {
        const cause = breakCause(prev, entry, before, prompt, i, samePartition, changes);
        const inBefore = new Set(before.map((el) => el.digest));
        let resentBytes = 0;
        for (let j = i; j < prompt.length; j++) if (inBefore.has(prompt[j]!.digest)) resentBytes += prompt[j]!.bytes;
        const resentTokens = scaled(promptTokens, resentBytes, promptBytes);
        let cost: CacheBreak['cost'] = null;
        if (prices && resentTokens !== null) {
          const at = Number.isFinite(entry.firstChunkTime) ? { currency, at: entry.firstChunkTime } : { currency };
          const miss = priceUsage({ uncachedInputTokens: resentTokens, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 0 }, model, provider, prices, at);
          const hit = priceUsage({ uncachedInputTokens: 0, cacheReadTokens: resentTokens, cacheWriteTokens: 0, outputTokens: 0 }, model, provider, prices, at);
          cost = miss.priced && hit.priced ? { priced: true, currency, uncached: formatAtto(miss.atto), extra: formatAtto(miss.atto - hit.atto) } : { priced: false, currency, reason: miss.priced ? 'unpriced' : miss.reason };
        }
        const el = before[i];
        breakAt = breaks.length;
        breaks.push({
          index: entry.index,
          key: entry.key,
          firstChunkSeq: entry.firstChunkSeq,
          time: entry.firstChunkTime,
          previous: prev.key,
          at: el ? { position: i, element: el.kind, seq: el.kind === 'message' ? el.seq : null, role: el.role } : { position: i, element: 'end', seq: null, role: null },
          ...cause,
          resentBytes,
          resentTokens,
          cost,
        });
      }
    }
    const cacheRead = buckets ? buckets.cacheReadTokens : null;
    rows.push({
      index: entry.index,
      key: entry.key,
      turn: entry.turn,
      step: entry.step,
      attempt: entry.attemptInStep,
      firstChunkSeq: entry.firstChunkSeq,
      time: entry.firstChunkTime,
      provider,
      model,
      finish: entry.finish,
      messageCount: messages.length,
      bytes,
      byCategory,
      promptTokens,
      tokensByCategory: promptTokens === null ? null : proportional(promptTokens, byCategory),
      contextWindow: window,
      fillPercent: promptTokens !== null && window !== null ? ratio(promptTokens, window) : null,
      changes,
      addedBytes: changes.reduce((a, c) => a + c.addedBytes, 0),
      removedBytes: changes.reduce((a, c) => a + c.removedBytes, 0),
      cache: {
        promptBytes,
        sharedBytes,
        sharedWith: sharedWith === null ? null : (entries[sharedWith]?.key ?? null),
        sharedTokens: scaled(promptTokens, sharedBytes, promptBytes),
        cacheReadTokens: cacheRead,
        extendsPrevious,
      },
      break: breakAt,
    });
    prev = { index: entry.index, key: entry.key, surfaceNodes: entry.surfaceNodes, header: entry.header, requestContext: entry.requestContext, headerSeq: entry.headerSeq, prompt };
    win.keep(batchNodes);
   }
   win.keep(new Set(prev?.surfaceNodes ?? []));
   if (texts) texts.release(batch);
  }
  let extra = 0n;
  let priced = false;
  for (const b of breaks) {
    if (b.cost?.priced) {
      priced = true;
      extra += attoOf(b.cost.extra);
    }
  }
  const fills = rows.map((r) => r.fillPercent).filter((f): f is number => f !== null);
  return {
    sessionId,
    tokens: 'proportional',
    dispatches: rows,
    breaks,
    totals: {
      dispatches: rows.length,
      maxBytes: rows.reduce((a, r) => Math.max(a, r.bytes), 0),
      maxFillPercent: fills.length > 0 ? Math.max(...fills) : null,
      promptTokens: rows.reduce((a, r) => a + (r.promptTokens ?? 0), 0),
      cacheReadTokens: rows.reduce((a, r) => a + (r.cache.cacheReadTokens ?? 0), 0),
      breaks: breaks.length,
      resentTokens: breaks.reduce((a, b) => a + (b.resentTokens ?? 0), 0),
      breakCost: priced ? { currency, extra: formatAtto(extra) } : null,
    },
    explain: CONTEXT_EXPLAIN,
  };
}

/** A decimal string of formatAtto back to atto units. */
function attoOf(text: string): bigint {
  const neg = text.startsWith('-');
  const [whole, frac = ''] = (neg ? text.slice(1) : text).split('.');
  const v = BigInt(whole || '0') * 10n ** 18n + BigInt((frac + '0'.repeat(18)).slice(0, 18));
  return neg ? -v : v;
}

function breakCause(
  prev: Pick<DispatchEntry, 'header' | 'requestContext'>,
  cur: DispatchEntry,
  before: readonly Element[],
  prompt: readonly Element[],
  i: number,
  samePartition: boolean,
  changes: readonly ContextChange[],
): Pick<CacheBreak, 'cause' | 'causeSeq' | 'fields' | 'detail'> {
  const fields = headerChanges(prev.header, cur.header).map((c) => c.field);
  if (!samePartition) {
    const f = fields.filter((x) => x === 'config.model' || x === 'config.provider' || x === 'header');
    return { cause: 'model', causeSeq: cur.headerSeq ?? cur.requestContextSeq, fields: f.length > 0 ? f : ['model'], detail: `the model changed (${dispatchModel(prev.header, prev.requestContext) ?? '?'} → ${dispatchModel(cur.header, cur.requestContext) ?? '?'}): a prompt cache is per model` };
  }
  const el = before[i];
  if (!el) return { cause: 'other', causeSeq: null, detail: 'the request is shorter than the one before it' };
  if (el.kind === 'system') {
    return { cause: 'system', causeSeq: cur.headerSeq, fields: fields.filter((f) => f === 'system' || f === 'header'), detail: `the system prompt changed (request/header seq ${cur.headerSeq})` };
  }
  if (el.kind === 'tools') {
    const f = fields.filter((x) => x.startsWith('tools'));
    return { cause: 'tools', causeSeq: cur.headerSeq, fields: f, detail: `the tool list changed (request/header seq ${cur.headerSeq}${f.length > 0 ? `: ${f.join(', ')}` : ''})` };
  }
  const seq = el.seq as number;
  const now = prompt[i];
  if (now && now.seq === seq) return { cause: 'other', causeSeq: seq, detail: `message seq ${seq} is sent differently` };
  // The node left the surface: who shadowed it?
  for (const c of changes) {
    if (!c.replaced?.includes(seq)) continue;
    if (c.kind === 'compaction') {
      const via = c.via?.find((x) => x.shadowed === seq);
      const how = via ? ` (${via.kind === 'prune' ? `pruned at seq ${via.pruneSeq}` : `rewritten at seq ${via.seq}`} first)` : '';
      return { cause: 'compaction', causeSeq: c.seq, detail: `compaction checkpoint seq ${c.seq} replaced seq ${seq}${how}${c.replaced.length > 1 ? ` and ${c.replaced.length - 1} more` : ''}` };
    }
    if (c.kind === 'prune') return { cause: 'prune', causeSeq: c.pruneSeq ?? c.seq, detail: `compaction/prune seq ${c.pruneSeq} pruned tool result seq ${seq} (replacement seq ${c.seq})` };
    if (c.kind === 'rewrite') return { cause: 'rewrite', causeSeq: c.seq, detail: `seq ${c.seq} (${c.type}) rewrote seq ${seq}` };
    return { cause: 'removed', causeSeq: null, detail: `seq ${seq} left the context without a replacement that was sent` };
  }
  // Shadowed by a replacement that was itself shadowed before this dispatch (never sent).
  return { cause: 'removed', causeSeq: null, detail: `seq ${seq} (a ${el.role ?? '?'} message) left the context` };
}

/** One row per turn: its dispatches' largest request, summed tokens and breaks (`dsh context --by turn`). */
export interface ContextTurnRow {
  turn: number;
  dispatches: number;
  firstKey: string;
  lastKey: string;
  time: number;
  /** The largest request of the turn, and its split. */
  bytes: number;
  byCategory: CategoryBytes;
  promptTokens: number;
  cacheReadTokens: number;
  contextWindow: number | null;
  maxFillPercent: number | null;
  breaks: number;
  resentTokens: number;
}

export function contextByTurn(view: ContextView): ContextTurnRow[] {
  const out: ContextTurnRow[] = [];
  for (const r of view.dispatches) {
    let t = out[out.length - 1];
    if (!t || t.turn !== r.turn) {
      t = { turn: r.turn, dispatches: 0, firstKey: r.key, lastKey: r.key, time: r.time, bytes: -1, byCategory: zeroBytes(), promptTokens: 0, cacheReadTokens: 0, contextWindow: null, maxFillPercent: null, breaks: 0, resentTokens: 0 };
      out.push(t);
    }
    t.dispatches += 1;
    t.lastKey = r.key;
    if (r.bytes > t.bytes) {
      t.bytes = r.bytes;
      t.byCategory = { ...r.byCategory };
    }
    t.promptTokens += r.promptTokens ?? 0;
    t.cacheReadTokens += r.cache.cacheReadTokens ?? 0;
    if (r.contextWindow !== null) t.contextWindow = r.contextWindow;
    if (r.fillPercent !== null) t.maxFillPercent = Math.max(t.maxFillPercent ?? 0, r.fillPercent);
    if (r.break !== null) {
      t.breaks += 1;
      t.resentTokens += view.breaks[r.break]!.resentTokens ?? 0;
    }
  }
  return out;
}

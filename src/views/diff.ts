/**
 * `dsh diff`: compare two sessions (a fork and its parent, two reruns of one
 * task, a session and its redacted or salvaged copy, an export and the live
 * log) at the level that decides behaviour — the model's input.
 *
 * Built on the request reconstruction of `requests.ts` (every dispatch's
 * input: header, request context, surface messages). Two events, messages or
 * dispatches are *equivalent* when they are equal once ids and times are set
 * aside (`equivalenceKey`): reruns draw fresh message ids, call ids and clocks,
 * and none of those reach the model's behaviour. Usage is set aside too
 * (reported as deltas, never a divergence).
 *
 * Text comparisons (final surface, transcript, changed messages, system
 * prompts) are line diffs (`diffSequences`, Myers' O(ND) with the common
 * prefix and suffix trimmed and a cost cap) grouped into unified hunks.
 *
 * Neither log is held: each side (`DiffSide`) is walked in one pass that keeps
 * digests of the equivalence keys and where calls and results lie, the
 * divergent dispatches re-read their events a few at a time, the final
 * surfaces are re-read, and the transcripts are diffed as streams
 * (`streamedUnifiedDiff`). Renderers live in the CLI layer.
 */
import { createHash } from 'node:crypto';
import type { BlockView, MessageView, SessionEvent, SessionHeader } from '../log/types.js';
import { resultBlock, resultCallId } from './tool-pairs.js';
import type { IndexedInspection } from '../log/session.js';
import type { SeqRange } from '../log/reread.js';
import { deriveEventMessage } from '../log/surface.js';
import { DispatchBuilder, lazySnapshot, type DispatchEntry, type DispatchIndex, type RequestContext } from './requests.js';
import { headerChanges, type HeaderChange } from './header.js';
import { foldSurfaceAt, type LoadedSession } from './messages.js';
import { buildTranscript, streamedTranscript, TranscriptLinker, type TranscriptEntry, type TranscriptToolCall } from './transcript.js';
import { jsonText, toJson, toJsonReplaced } from '../core/json.js';
import { formatAtto, priceDispatch, shippedPriceTable } from './prices.js';

// ---------------------------------------------------------------------------
// Sequence diff and unified hunks

export type EditOp = '=' | '-' | '+';

/** One edit: `=` keeps a[a] = b[b], `-` drops a[a], `+` inserts b[b]. */
export interface Edit {
  op: EditOp;
  a: number | null;
  b: number | null;
}

/** Beyond this many edits in the middle part, the rest is one replace block (bounded time and memory on huge inputs). */
const MAX_EDIT_DISTANCE = 2000;
/** Bound on the work of one diff: (middle length) × (edit distance searched). */
const MAX_DIFF_WORK = 50_000_000;

/**
 * Shortest edit script between two sequences of comparable keys (Myers).
 * Common prefix and suffix are trimmed first; past the edit budget
 * (`MAX_EDIT_DISTANCE`, fewer on long inputs) the middle is reported as
 * delete-all + insert-all (still a valid script, no longer minimal).
 */
export function diffSequences(a: readonly string[], b: readonly string[]): Edit[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const out: Edit[] = [];
  for (let i = 0; i < start; i++) out.push({ op: '=', a: i, b: i });
  for (const e of myersMiddle(a, b, start, endA, start, endB)) out.push(e);
  for (let i = 0; endA + i < a.length; i++) out.push({ op: '=', a: endA + i, b: endB + i });
  return out;
}

function myersMiddle(a: readonly string[], b: readonly string[], a0: number, a1: number, b0: number, b1: number): Edit[] {
  const n = a1 - a0;
  const m = b1 - b0;
  const replaceAll = (): Edit[] => {
    const e: Edit[] = [];
    for (let i = a0; i < a1; i++) e.push({ op: '-', a: i, b: null });
    for (let j = b0; j < b1; j++) e.push({ op: '+', a: null, b: j });
    return e;
  };
  if (n === 0 || m === 0) return replaceAll();
  const max = Math.max(1, Math.min(n + m, MAX_EDIT_DISTANCE, Math.floor(MAX_DIFF_WORK / (n + m))));
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] holds the frontier before step d, for diagonals -d..d (index k + d).
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice(offset - d, offset + d + 1));
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && (v[offset + k - 1] as number) < (v[offset + k + 1] as number))) x = v[offset + k + 1] as number;
      else x = (v[offset + k - 1] as number) + 1;
      let y = x - k;
      while (x < n && y < m && a[a0 + x] === b[b0 + y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return replaceAll();
  const at = (d: number, k: number) => (trace[d] as Int32Array)[k + d] as number;
  // Walk back through the saved frontiers.
  const rev: Edit[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const k = x - y;
    const prevK = k === -d || (k !== d && at(d, k - 1) < at(d, k + 1)) ? k + 1 : k - 1;
    const prevX = at(d, prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      rev.push({ op: '=', a: a0 + x, b: b0 + y });
    }
    if (x === prevX) rev.push({ op: '+', a: null, b: b0 + prevY });
    else rev.push({ op: '-', a: a0 + prevX, b: null });
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    rev.push({ op: '=', a: a0 + x, b: b0 + y });
  }
  return rev.reverse();
}

/** A line of text compared by `text`; `seq` names the event it came from (shown, not compared). */
export interface DiffLine {
  text: string;
  seq: number | null;
}

export interface HunkLine {
  op: ' ' | '-' | '+';
  text: string;
  /** Seq of the event on the side the line comes from (a for ' ' and '-', b for '+'). */
  seq: number | null;
  /** For ' ' lines: the seq on side b. */
  bSeq?: number | null;
}

export interface Hunk {
  /** 1-based first line and line count on each side, as in `@@ -a,n +b,m @@`. */
  aStart: number;
  aCount: number;
  bStart: number;
  bCount: number;
  /** Seq span each side's lines come from (null when the side has no line with a seq). */
  aSeqs: [number, number] | null;
  bSeqs: [number, number] | null;
  lines: HunkLine[];
}

export interface TextDiff {
  aLines: number;
  bLines: number;
  added: number;
  removed: number;
  hunks: Hunk[];
}

/** Unified hunks of a line diff with `context` unchanged lines around each change. */
export function unifiedDiff(a: readonly DiffLine[], b: readonly DiffLine[], context = 3): TextDiff {
  const edits = diffSequences(
    a.map((l) => l.text),
    b.map((l) => l.text),
  );
  let added = 0;
  let removed = 0;
  for (const e of edits) {
    if (e.op === '+') added++;
    else if (e.op === '-') removed++;
  }
  const hunks: Hunk[] = [];
  const changed = edits.map((e, i) => (e.op !== '=' ? i : -1)).filter((i) => i >= 0);
  let i = 0;
  while (i < changed.length) {
    const from = Math.max(0, (changed[i] as number) - context);
    let to = Math.min(edits.length - 1, (changed[i] as number) + context);
    let j = i + 1;
    while (j < changed.length && (changed[j] as number) - context <= to + 1) {
      to = Math.min(edits.length - 1, (changed[j] as number) + context);
      j++;
    }
    const lines: HunkLine[] = [];
    let aStart = -1;
    let bStart = -1;
    let aCount = 0;
    let bCount = 0;
    let aSeqs: [number, number] | null = null;
    let bSeqs: [number, number] | null = null;
    const seen = (span: [number, number] | null, seq: number | null): [number, number] | null =>
      seq === null ? span : span === null ? [seq, seq] : [Math.min(span[0], seq), Math.max(span[1], seq)];
    for (let k = from; k <= to; k++) {
      const e = edits[k] as Edit;
      if (e.a !== null && aStart < 0) aStart = e.a;
      if (e.b !== null && bStart < 0) bStart = e.b;
      if (e.op === '=') {
        const la = a[e.a as number] as DiffLine;
        const lb = b[e.b as number] as DiffLine;
        lines.push({ op: ' ', text: la.text, seq: la.seq, bSeq: lb.seq });
        aCount++;
        bCount++;
        aSeqs = seen(aSeqs, la.seq);
        bSeqs = seen(bSeqs, lb.seq);
      } else if (e.op === '-') {
        const la = a[e.a as number] as DiffLine;
        lines.push({ op: '-', text: la.text, seq: la.seq });
        aCount++;
        aSeqs = seen(aSeqs, la.seq);
      } else {
        const lb = b[e.b as number] as DiffLine;
        lines.push({ op: '+', text: lb.text, seq: lb.seq });
        bCount++;
        bSeqs = seen(bSeqs, lb.seq);
      }
    }
    // A side with no line in the hunk starts after the previous line (git's convention: count 0, start = line before).
    if (aStart < 0) aStart = positionBefore(edits, from, 'a');
    if (bStart < 0) bStart = positionBefore(edits, from, 'b');
    hunks.push({
      aStart: aCount === 0 ? aStart : aStart + 1,
      aCount,
      bStart: bCount === 0 ? bStart : bStart + 1,
      bCount,
      aSeqs,
      bSeqs,
      lines,
    });
    i = j;
  }
  return { aLines: a.length, bLines: b.length, added, removed, hunks };
}

function positionBefore(edits: readonly Edit[], at: number, side: 'a' | 'b'): number {
  for (let k = at - 1; k >= 0; k--) {
    const v = (edits[k] as Edit)[side];
    if (v !== null) return v + 1;
  }
  return 0;
}

/** Lines of a plain text (no seq). */
export function textLines(text: string | undefined, seq: number | null = null): DiffLine[] {
  if (text === undefined || text === '') return [];
  return text.split('\n').map((t) => ({ text: t, seq }));
}

// ---------------------------------------------------------------------------
// Equivalence: the same content once ids, times and usage are set aside

const VOLATILE_KEY = /^(time|id|usage|createdAt|updatedAt)$|Id$|At$|Ms$/;

const dropVolatile = (key: string, value: unknown) => (key !== '' && VOLATILE_KEY.test(key) ? undefined : value);

/**
 * The comparison key of an event, message or header: its JSON with ids
 * (`id`, `*Id`), times (`time`, `*At`, `*Ms`) and `usage` removed at every
 * depth. Seqs (sourceEventSeqs, surface spans) are kept: within a shared
 * prefix they name the same positions on both sides. Key order counts (DSH
 * writes a record's keys in one order).
 */
export function equivalenceKey(value: unknown): string {
  return toJsonReplaced(value, dropVolatile) ?? 'undefined';
}

/** JSON equality of parsed values (key order counts, as in their JSON), optionally ignoring volatile keys; any depth (explicit stack). */
function sameJson(x0: unknown, y0: unknown, lenient: boolean): boolean {
  const pending: [unknown, unknown][] = [[x0, y0]];
  while (pending.length > 0) {
    const [x, y] = pending.pop() as [unknown, unknown];
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    // Any member that differs makes the answer false, whichever is compared first.
    if (Array.isArray(x)) {
      const ya = y as unknown[];
      if (x.length !== ya.length) return false;
      for (let i = 0; i < x.length; i++) pending.push([x[i], ya[i]]);
    } else {
      const xo = x as Record<string, unknown>;
      const yo = y as Record<string, unknown>;
      const kx = Object.keys(xo).filter((k) => xo[k] !== undefined && !(lenient && VOLATILE_KEY.test(k)));
      const ky = Object.keys(yo).filter((k) => yo[k] !== undefined && !(lenient && VOLATILE_KEY.test(k)));
      if (kx.length !== ky.length) return false;
      for (let i = 0; i < kx.length; i++) {
        const k = kx[i] as string;
        if (k !== ky[i]) return false;
        pending.push([xo[k], yo[k]]);
      }
    }
  }
  return true;
}

/** Whether events a and b at one position are the same JSON (2), equivalent (1), or neither (0). */
function sameness(x: SessionEvent | undefined, y: SessionEvent | undefined): 0 | 1 | 2 {
  if (!x || !y) return 0;
  if (sameJson(x, y, false)) return 2;
  return x.type === y.type && sameJson(x.data, y.data, true) && sameJson(x.surfaceOp, y.surfaceOp, true) && sameJson(x.sourceEventSeqs, y.sourceEventSeqs, true) ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Session comparison

export type Relation = 'same-session' | 'fork' | 'forked-from' | 'siblings' | 'unrelated';

export interface SideInfo {
  label: 'a' | 'b';
  sessionId: string;
  parentSession: string | null;
  seedLength: number | null;
  events: number;
  storedEventCount: number;
  dispatches: number;
}

export interface SharedPrefix {
  /**
   * `fork-seed`: one side is a fork of the other, and its first `seedLength`
   * events are the seed; `equivalent-run`: the longest common run of
   * equivalent events from seq 0 (ids and times ignored).
   */
  kind: 'fork-seed' | 'equivalent-run';
  /** Events in the shared prefix (seqs 0..events-1 on both sides). */
  events: number;
  /** The first seq after the prefix on each side and its event type (null: that side ends there). */
  stopsAt: { a: { seq: number; type: string } | null; b: { seq: number; type: string } | null };
  /** Every prefix event is byte-for-byte the same JSON on both sides (ids and times too). */
  identical: boolean;
  /** First seq in the prefix whose events differ exactly (ids/times), or whose seed does not match. */
  firstInexactSeq: number | null;
  /** Fork seeds: the seeded events that are not equivalent to the parent's (should be none). */
  seedMismatches?: number[];
  /** Fork seeds: the parent has fewer events than the seed claims. */
  seedBeyondParent?: boolean;
}

export interface DispatchRef {
  index: number;
  key: string;
  firstChunkSeq: number;
  model: string | null;
  messageCount: number;
}

export interface MessageRef {
  seq: number;
  position: number;
  type: string;
  role: string | null;
  /** `source.kind` (`user`, `model`, `tool`, `plugin:<name>`, …), or null. */
  source: string | null;
  /** First visible text, for a one-line summary. */
  preview: string;
}

export interface ModifiedMessage {
  a: MessageRef;
  b: MessageRef;
  diff: TextDiff;
}

export interface ToolCallFact {
  id: string;
  name: string;
  arguments: string;
  /** `tool/call` seq (the harness started it), if logged. */
  callSeq: number | null;
  resultSeq: number | null;
  outcome: 'ok' | 'error' | 'no result';
  /** Error code the harness recorded (TOOL_OUTCOME_UNKNOWN for crash closers), if any. */
  errorCode: string | null;
  result: string | null;
}

export type DivergenceReason = 'unpaired' | 'messages' | 'header' | 'context' | 'output' | 'finish' | 'tool-calls' | 'tool-outcomes';

/** Usage figures of a dispatch by field name. */
export type UsageNumbers = Record<string, number>;

export interface PairDiff {
  a: DispatchRef | null;
  b: DispatchRef | null;
  /** Empty when the two dispatches are equivalent in input, output, finish and tool outcomes. */
  differs: DivergenceReason[];
  messages: {
    kept: number;
    /** In a's input only (a's seqs). */
    left: MessageRef[];
    /** In b's input only (b's seqs). */
    entered: MessageRef[];
    /**
     * Left/entered messages in the same replace block with the same type, role and source: their text diff.
     * Each (a seq, b seq) pair is listed once, at the first divergent pair that carries it.
     */
    modified: ModifiedMessage[];
  };
  header: { changes: HeaderChange[]; aSeq: number | null; bSeq: number | null; system: TextDiff | null };
  requestContext: { changed: boolean; a: RequestContext | null; b: RequestContext | null };
  usage: { a: UsageNumbers | null; b: UsageNumbers | null; delta: UsageNumbers | null };
  /** Each side's dispatch cost (USD, the ledger's price table); null where unpriced or without usage. */
  cost: { a: number | null; b: number | null; delta: number | null };
  toolCalls: { a: ToolCallFact[]; b: ToolCallFact[] };
  finish: { a: unknown; b: unknown };
  /** The model's answer (assistant message) as lines, when it differs. */
  output: TextDiff | null;
}

export interface SessionDiff {
  a: SideInfo;
  b: SideInfo;
  relation: Relation;
  sharedPrefix: SharedPrefix;
  /** Every event on both sides is equivalent (same count, ids and times aside). */
  equivalent: boolean;
  /** Every event on both sides is the same JSON. */
  identical: boolean;
  dispatches: {
    alignedBy: 'structure' | 'content';
    /** Aligned pairs in log order (a or b null: only one side made that dispatch). */
    pairs: { a: string | null; b: string | null; differs: DivergenceReason[] }[];
    /** Index into `pairs` of the first divergent pair, or null. */
    firstDivergent: number | null;
    /** The first divergent pair and every later one, in detail. */
    divergent: PairDiff[];
  };
  usageTotals: { a: UsageNumbers; b: UsageNumbers; delta: UsageNumbers };
  /** Cost of every dispatch per side, priced by the ledger (null when the price table cannot be read). */
  cost: { currency: string; a: SideCost; b: SideCost; /** b - a; null unless both sides are fully priced. */ delta: { amount: number; exact: string } | null } | null;
  costNote: string;
  surface: TextDiff;
  transcript: TextDiff;
}

/** One side's priced dispatches. */
export interface SideCost {
  amount: number;
  /** Exact decimal. */
  exact: string;
  priced: number;
  /** Dispatches with usage but no price (unknown model, or a time outside every price window). */
  unpriced: number;
}

/** A dispatch's price in 1e-18 USD, or null (no usage, no price table, unpriced model or time). */
function dispatchAtto(entry: DispatchEntry): bigint | null {
  const table = shippedPriceTable();
  const p = table === null ? null : priceDispatch(entry, table);
  return p?.priced ? p.atto : null;
}

function sideCost(entries: readonly DispatchEntry[]): { cost: SideCost; atto: bigint } {
  let atto = 0n;
  let priced = 0;
  let unpriced = 0;
  for (const e of entries) {
    if ((e.messageUsage ?? e.chunkUsage ?? null) === null) continue;
    const x = dispatchAtto(e);
    if (x === null) unpriced++;
    else {
      priced++;
      atto += x;
    }
  }
  return { cost: { amount: Number(atto) / 1e18, exact: formatAtto(atto), priced, unpriced }, atto };
}

function pairCost(x: DispatchEntry | undefined, y: DispatchEntry | undefined): PairDiff['cost'] {
  const a = x ? dispatchAtto(x) : null;
  const b = y ? dispatchAtto(y) : null;
  return { a: a === null ? null : Number(a) / 1e18, b: b === null ? null : Number(b) / 1e18, delta: a !== null && b !== null ? Number(b - a) / 1e18 : null };
}

/**
 * One side of a session comparison: what the comparison reads of a log. The
 * log is walked (`stream`, `transcript`) and only a few events are re-read by
 * seq (`fetch`), so nothing here needs the whole log held: `diffSide` serves a
 * held session, `indexedDiffSide` an indexed one re-read from its file.
 */
export interface DiffSide {
  sessionId: string;
  header: SessionHeader;
  /** Logical events (synthetic closers included). */
  eventCount: number;
  storedEventCount: number;
  /** The final fold's surface node seqs. */
  surfaceNodes: readonly number[];
  /** Every logical event in order, in batches; each call is a new pass. */
  stream(): AsyncIterable<readonly SessionEvent[]>;
  /** The events with seqs in `ranges`, indexed by seq (others may be absent). */
  fetch(ranges: readonly SeqRange[]): Promise<readonly SessionEvent[]>;
  /** Sees every event of the comparison's first pass. */
  observe?: (e: SessionEvent) => void;
  /** The transcript entries in order; each call is a new pass (called after the first pass). */
  transcript(): AsyncIterable<TranscriptEntry>;
  /** The dispatch index, when already built (else the first pass builds it). */
  index?: DispatchIndex;
}

/** A held session as a comparison side (`index`: its dispatches, when already derived). */
export function diffSide(session: LoadedSession, index?: DispatchIndex): DiffSide {
  const events = session.events;
  let transcript: readonly TranscriptEntry[] | undefined;
  return {
    sessionId: session.sessionId,
    header: session.header,
    eventCount: events.length,
    storedEventCount: session.storedEventCount,
    surfaceNodes: session.surface?.nodes ?? foldSurfaceAt(events).nodes,
    async *stream() {
      yield events;
    },
    fetch: async () => events,
    async *transcript() {
      yield* (transcript ??= buildTranscript(session).entries);
    },
    ...(index ? { index } : {}),
  };
}

/** An accepted, indexed log as a comparison side: walked and re-read from its file, never held. */
export function indexedDiffSide(indexed: IndexedInspection): DiffSide {
  const r = indexed.inspection;
  const { stream, events } = indexed;
  if (r.error || !r.meta || !r.surface || !stream || !events) throw new Error('indexedDiffSide needs an accepted log');
  // The transcript's links are gathered on the comparison's first pass (no linking pass of its own).
  const linker = new TranscriptLinker(r.surface.replacements);
  return {
    sessionId: r.meta.id,
    header: r.meta,
    eventCount: r.storedEventCount + r.closers.length,
    storedEventCount: r.storedEventCount,
    surfaceNodes: r.surface.nodes,
    stream,
    fetch: (ranges) => events(ranges),
    observe: (e) => linker.observe(e),
    async *transcript() {
      yield* (await streamedTranscript(indexed, linker)).entries;
    },
  };
}

function sideInfo(label: 'a' | 'b', s: DiffSide, index: DispatchIndex): SideInfo {
  const h = s.header;
  return {
    label,
    sessionId: s.sessionId,
    parentSession: typeof h.parentSession === 'string' ? h.parentSession : null,
    seedLength: typeof h.seedLength === 'number' ? h.seedLength : null,
    events: s.eventCount,
    storedEventCount: s.storedEventCount,
    dispatches: index.requests.length,
  };
}

export function relationOf(a: SessionHeader, b: SessionHeader): Relation {
  if (a.id === b.id) return 'same-session';
  if (b.parentSession === a.id && typeof b.seedLength === 'number') return 'fork';
  if (a.parentSession === b.id && typeof a.seedLength === 'number') return 'forked-from';
  if (a.parentSession !== undefined && a.parentSession === b.parentSession && typeof a.seedLength === 'number' && typeof b.seedLength === 'number') return 'siblings';
  return 'unrelated';
}

/** The fork seed's length when one side is a fork of the other (0 otherwise). */
function forkSeed(relation: Relation, ha: SessionHeader, hb: SessionHeader): number {
  return relation === 'fork' ? (hb.seedLength as number) : relation === 'forked-from' ? (ha.seedLength as number) : 0;
}

type Stop = SharedPrefix['stopsAt']['a'];

function sharedPrefixOf(lenA: number, lenB: number, relation: Relation, ha: SessionHeader, hb: SessionHeader, same: (i: number) => 0 | 1 | 2, stopsAt: (at: number) => SharedPrefix['stopsAt']): SharedPrefix {
  let firstInexact: number | null = null;
  if (relation === 'fork' || relation === 'forked-from') {
    const seed = forkSeed(relation, ha, hb);
    const parentLength = relation === 'fork' ? lenA : lenB;
    const childLength = relation === 'fork' ? lenB : lenA;
    const mismatches: number[] = [];
    const n = Math.min(seed, childLength);
    for (let i = 0; i < n; i++) {
      const k = same(i);
      if (k === 0) mismatches.push(i);
      if (firstInexact === null && k !== 2) firstInexact = i;
    }
    return {
      kind: 'fork-seed',
      events: n,
      stopsAt: stopsAt(n),
      identical: firstInexact === null && parentLength >= n,
      firstInexactSeq: firstInexact,
      seedMismatches: mismatches,
      seedBeyondParent: parentLength < seed,
    };
  }
  let n = 0;
  for (let k = same(0); n < lenA && n < lenB && k !== 0; k = same(++n)) if (firstInexact === null && k !== 2) firstInexact = n;
  return { kind: 'equivalent-run', events: n, stopsAt: stopsAt(n), identical: firstInexact === null, firstInexactSeq: firstInexact };
}

// --- per-dispatch facts ------------------------------------------------------

/**
 * What the comparison keeps of one dispatch: its entry and the equivalence
 * keys of its input and output (digests, see `Keys`). The messages and tool
 * outcomes themselves are re-read only for the pairs shown in detail (`Detail`).
 */
interface Facts {
  entry: DispatchEntry;
  ref: DispatchRef;
  headerKey: string;
  contextKey: string;
  /** Key of the sequence of messages sent. */
  messagesKey: string;
  inputKey: string;
  outputKey: string;
  finishKey: string;
  callsKey: string;
  outcomesKey: string;
}

/** The messages and tool calls of a dispatch shown in detail, from its re-read events. */
interface Detail {
  /** Messages sent, with the surface seq each came from. */
  messages: { seq: number; message: unknown; key: string }[];
  toolCalls: ToolCallFact[];
}

function toolResultText(e: SessionEvent | undefined): string | null {
  if (!e) return null;
  const block = resultBlock(e);
  const inner: BlockView[] = Array.isArray(block?.content) ? block.content : [];
  return inner.map((x) => (x?.type === 'text' ? String(x.text ?? '') : `[${String(x?.type)}]`)).join('\n');
}

/** The tool calls an answer's content requests: id, name and arguments (as text). */
function requestedCalls(content: unknown): { id: string; name: string; arguments: string }[] {
  const out: { id: string; name: string; arguments: string }[] = [];
  if (!Array.isArray(content)) return out;
  for (const block of content as BlockView[]) {
    if (block?.type !== 'tool-call') continue;
    out.push({ id: String(block.id), name: String(block.name), arguments: typeof block.arguments === 'string' ? block.arguments : toJson(block.arguments) });
  }
  return out;
}

/** How a tool call ended, from its first appended tool/result (`r`, absent: no result logged). */
function outcomeOf(r: SessionEvent | undefined): Pick<ToolCallFact, 'outcome' | 'errorCode' | 'result'> {
  const isError = Boolean(r && resultBlock(r)?.isError);
  const err = r?.data?.error;
  return { outcome: r ? (isError ? 'error' : 'ok') : 'no result', errorCode: err ? String(err.code ?? err.name ?? 'error') : null, result: toolResultText(r) };
}

/**
 * Equivalence keys (`equivalenceKey`) kept as their SHA-256 digests, shared by
 * both sides: equal keys are equal digests, and a key of any size (a message,
 * a system prompt) costs 32 bytes. Memoized per object (dispatches share header
 * objects; held events are keyed once).
 */
class Keys {
  private readonly objects = new WeakMap<object, string>();
  of(value: unknown): string {
    const isObject = value !== null && typeof value === 'object';
    const cached = isObject ? this.objects.get(value) : undefined;
    if (cached !== undefined) return cached;
    const k = keyDigest(value);
    if (isObject) this.objects.set(value, k);
    return k;
  }
}

/** `digestOf(equivalenceKey(value))`, hashed piece by piece (a value holding a 200 MB text is never serialized whole). */
function keyDigest(value: unknown): string {
  const hash = createHash('sha256');
  for (const piece of jsonText(value, dropVolatile)) hash.update(piece);
  return hash.digest().toString('latin1');
}

/** A fixed-length digest of a text (so that joined digests compare as the sequences they stand for). */
function digestOf(text: string): string {
  return createHash('sha256').update(text).digest().toString('latin1');
}

/** Every surface node seq of a dispatch, without materializing a lazy entry's array. */
function forEachNode(entry: DispatchEntry, visit: (seq: number) => void): void {
  const snap = lazySnapshot(entry);
  if (!snap) {
    for (const s of entry.surfaceNodes) visit(s);
    return;
  }
  const [nodes, length] = snap;
  for (let i = 0; i < length; i++) visit(nodes[i] as number);
}

const NO_EVENTS: readonly SessionEvent[] = [];

/**
 * One object per distinct JSON text, shared by both sides: every dispatch keeps its request header
 * and context, and a long log re-sends the same header (system prompt, tools) tens of thousands of
 * times, each parsed anew from its own event. Values with the same JSON are the same to every view.
 */
class SameJson {
  private readonly byObject = new WeakMap<object, unknown>();
  private readonly byText = new Map<string, unknown>();
  one<T>(value: T): T {
    if (value === null || typeof value !== 'object') return value;
    const seen = this.byObject.get(value);
    if (seen !== undefined) return seen as T;
    const text = digestOf(toJson(value));
    let kept = this.byText.get(text);
    if (kept === undefined) this.byText.set(text, (kept = value));
    this.byObject.set(value, kept);
    return kept as T;
  }
}

/**
 * What the comparison's one pass over a side keeps: the key of every message,
 * of every answer's content and tool calls, of every tool call's first result,
 * where calls and results lie, and (unless given) the dispatch index.
 */
class SideFacts {
  /** seq → key of the message the event contributes (none: no message). */
  readonly messages = new Map<number, string>();
  /** assistant/message seq → keys of its content and requested calls, and the call ids. */
  readonly answers = new Map<number, { outputKey: string; callsKey: string; callIds: string[] }>();
  /** tool-call id → its first appended tool/result: seq and outcome key. */
  readonly results = new Map<string, { seq: number; key: string }>();
  /** tool-call id → tool/call seq. */
  readonly calls = new Map<string, number>();
  private readonly builder: DispatchBuilder | undefined;

  constructor(
    readonly side: DiffSide,
    private readonly keys: Keys,
    private readonly same: SameJson,
  ) {
    this.builder = side.index ? undefined : new DispatchBuilder({ lazy: NO_EVENTS });
  }

  observe(e: SessionEvent): void {
    const b = this.builder;
    if (b) {
      const n = b.out.requests.length;
      b.apply(e);
      if (b.out.requests.length > n) {
        const entry = b.out.requests[n] as DispatchEntry;
        entry.header = this.same.one(entry.header);
        entry.requestContext = this.same.one(entry.requestContext);
      }
    }
    this.side.observe?.(e);
    const keys = this.keys;
    if (e.type === 'user/message' || e.type === 'assistant/message' || e.type === 'tool/result') {
      const m = deriveEventMessage(e);
      if (m !== null && m !== undefined) this.messages.set(e.seq, keys.of(m));
    }
    if (e.type === 'assistant/message') {
      const content = e.data?.message?.content;
      const calls = requestedCalls(content);
      this.answers.set(e.seq, { outputKey: keys.of(content ?? null), callsKey: keys.of(calls.map((t) => [t.name, t.arguments])), callIds: calls.map((t) => t.id) });
    }
    if (e.type === 'tool/result' && e.surfaceOp === 'append') {
      const id = resultBlock(e)?.toolCallId ?? resultCallId(e);
      if (typeof id === 'string' && !this.results.has(id)) {
        const o = outcomeOf(e);
        this.results.set(id, { seq: e.seq, key: keys.of([o.outcome, o.errorCode, o.result]) });
      }
    } else if (e.type === 'tool/call' && typeof e.data?.callId === 'string' && !this.calls.has(e.data.callId)) this.calls.set(e.data.callId, e.seq);
  }

  /** The dispatch index (after the pass). */
  index(): DispatchIndex {
    return this.side.index ?? (this.builder as DispatchBuilder).finish();
  }

  facts(entry: DispatchEntry): Facts {
    const keys = this.keys;
    const sent: string[] = [];
    forEachNode(entry, (seq) => {
      const k = this.messages.get(seq);
      if (k !== undefined) sent.push(k);
    });
    const messagesKey = digestOf(sent.join(''));
    const headerKey = keys.of(entry.header);
    const contextKey = keys.of(entry.requestContext);
    const answer = entry.assistantMessageSeq !== null ? this.answers.get(entry.assistantMessageSeq) : undefined;
    const noResult = outcomeOf(undefined);
    const outcomes = (answer?.callIds ?? []).map((id) => this.results.get(id)?.key ?? keys.of([noResult.outcome, noResult.errorCode, noResult.result]));
    return {
      entry,
      ref: {
        index: entry.index,
        key: entry.key,
        firstChunkSeq: entry.firstChunkSeq,
        model: entry.header?.config?.model ?? entry.requestContext?.model ?? null,
        messageCount: sent.length,
      },
      headerKey,
      contextKey,
      messagesKey,
      inputKey: headerKey + contextKey + messagesKey,
      outputKey: answer?.outputKey ?? keys.of(null),
      finishKey: keys.of(entry.finish),
      callsKey: answer?.callsKey ?? keys.of([]),
      outcomesKey: digestOf(outcomes.join('')),
    };
  }

  /** The seqs `detail(entry)` reads. */
  detailSeqs(entry: DispatchEntry, into: Set<number>): void {
    forEachNode(entry, (seq) => into.add(seq));
    if (entry.assistantMessageSeq === null) return;
    into.add(entry.assistantMessageSeq);
    for (const id of this.answers.get(entry.assistantMessageSeq)?.callIds ?? []) {
      const r = this.results.get(id);
      if (r) into.add(r.seq);
    }
  }

  /** The messages and tool calls of a dispatch, from `events` (holding at least `detailSeqs`). */
  detail(entry: DispatchEntry, events: readonly SessionEvent[]): Detail {
    const messages: Detail['messages'] = [];
    forEachNode(entry, (seq) => {
      const e = events[seq];
      const key = this.messages.get(seq);
      if (!e || key === undefined) return;
      messages.push({ seq, message: deriveEventMessage(e), key });
    });
    const answer = entry.assistantMessageSeq !== null ? events[entry.assistantMessageSeq] : undefined;
    const toolCalls: ToolCallFact[] = requestedCalls(answer?.data?.message?.content).map((call) => {
      const resultSeq = this.results.get(call.id)?.seq ?? null;
      return { ...call, callSeq: this.calls.get(call.id) ?? null, resultSeq, ...outcomeOf(resultSeq !== null ? events[resultSeq] : undefined) };
    });
    return { messages, toolCalls };
  }
}

function usageOf(entry: DispatchEntry): UsageNumbers | null {
  const u = (entry.messageUsage ?? entry.chunkUsage) as Record<string, unknown> | null;
  if (!u || typeof u !== 'object') return null;
  const out: UsageNumbers = {};
  for (const [k, v] of Object.entries(u)) if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  return out;
}

function usageDelta(a: UsageNumbers | null, b: UsageNumbers | null): UsageNumbers | null {
  if (!a && !b) return null;
  const out: UsageNumbers = {};
  for (const k of new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])) out[k] = (b?.[k] ?? 0) - (a?.[k] ?? 0);
  return out;
}

function addUsage(total: UsageNumbers, u: UsageNumbers | null): void {
  if (!u) return;
  for (const [k, v] of Object.entries(u)) total[k] = (total[k] ?? 0) + v;
}

// --- text renderings used as diff units --------------------------------------

/** `out.push(...items)` without the argument-count limit (a text can have millions of lines). */
export function pushAll<T>(out: T[], items: readonly T[]): void {
  for (const x of items) out.push(x);
}

function blockLines(content: unknown): string[] {
  if (typeof content === 'string') return content.split('\n');
  if (!Array.isArray(content)) return [toJson(content) ?? String(content)];
  const out: string[] = [];
  for (const raw of content as unknown[]) {
    const b = (raw ?? {}) as NonNullable<BlockView>;
    switch (b.type) {
      case 'text':
        pushAll(out, String(b.text ?? '').split('\n'));
        break;
      case 'reasoning':
        pushAll(out, String(b.text ?? '').split('\n').map((l) => `(reasoning) ${l}`));
        break;
      case 'tool-call':
        out.push(`→ ${String(b.name)}(${typeof b.arguments === 'string' ? b.arguments : toJson(b.arguments)})`);
        break;
      case 'tool-result':
        out.push(`← result${b.isError ? ' [error]' : ''}`);
        pushAll(out, blockLines(b.content));
        break;
      case 'image':
        out.push('[image]');
        break;
      default:
        out.push(`[${String(b.type)}]`);
    }
  }
  return out;
}

/** A model message as diff lines: a role line, then its content lines (ids left out). */
export function messageLines(message: unknown, seq: number | null): DiffLine[] {
  const m = (message ?? {}) as NonNullable<MessageView>;
  const src = m.source;
  const from = src && typeof src === 'object' && src.kind === 'plugin' ? ` (plugin:${String(src.plugin)})` : src && typeof src === 'object' && src.kind === 'tool' ? ' (tool result)' : '';
  const lines: DiffLine[] = [{ text: `## ${String(m.role ?? '?')}${from}`, seq }];
  for (const t of blockLines(m.content)) lines.push({ text: `  ${t}`, seq });
  return lines;
}

/** The final surface as diff lines (its events re-read). */
async function surfaceLines(side: DiffSide): Promise<DiffLine[]> {
  const nodes = side.surfaceNodes;
  const events = nodes.length > 0 ? await side.fetch(singleRanges(nodes)) : NO_EVENTS;
  const out: DiffLine[] = [];
  for (const seq of nodes) {
    const e = events[seq];
    const m = e ? deriveEventMessage(e) : null;
    if (m === null || m === undefined) continue;
    pushAll(out, messageLines(m, seq));
  }
  return out;
}

function callLines(call: TranscriptToolCall, seq: number): DiffLine[] {
  const out: DiffLine[] = [{ text: `  → ${call.name}(${call.arguments})${call.callSeq === null ? ' (never started)' : ''}`, seq: call.callSeq ?? seq }];
  if (!call.result) out.push({ text: '    ← (no result logged)', seq });
  else {
    const r = call.result;
    const tags = [r.isError ? 'error' : null, r.errorCode, r.synthetic ? 'synthetic' : null].filter(Boolean);
    out.push({ text: `    ←${tags.length ? ` [${tags.join(', ')}]` : ''}`, seq: r.seq });
    for (const l of r.text.split('\n')) out.push({ text: `    ${l}`, seq: r.seq });
  }
  return out;
}

/** The transcript (what the user saw) as diff lines; seqs, ids and times left out of the text. */
export function transcriptLines(entries: readonly TranscriptEntry[]): DiffLine[] {
  const out: DiffLine[] = [];
  for (const e of entries) entryLines(e, out);
  return out;
}

/** Transcript lines in batches of about `TRANSCRIPT_BATCH` lines, as the entries stream in. */
async function* transcriptBatches(entries: AsyncIterable<TranscriptEntry>): AsyncGenerator<DiffLine[]> {
  let out: DiffLine[] = [];
  for await (const e of entries) {
    entryLines(e, out);
    if (out.length >= TRANSCRIPT_BATCH) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}

const TRANSCRIPT_BATCH = 4096;

/** The diff lines of one transcript entry, appended to `out`. */
function entryLines(e: TranscriptEntry, out: DiffLine[]): void {
  switch (e.kind) {
      case 'turn':
        out.push({ text: `=== turn ${e.turn}`, seq: e.seq });
        break;
      case 'turn-end':
        out.push({ text: `=== turn ${e.turn} ended: ${e.reason}${e.detail ? ` (${e.detail})` : ''}${e.synthetic ? ' [synthetic]' : ''}`, seq: e.seq });
        break;
      case 'message': {
        const tags = [e.role === 'user' && e.source !== 'user' ? e.source : null, e.interrupted ? 'interrupted' : null, e.synthetic ? 'synthetic' : null].filter(Boolean);
        out.push({ text: `## ${e.role}${tags.length ? ` [${tags.join(', ')}]` : ''}`, seq: e.seq });
        if (e.reasoning) for (const l of e.reasoning.split('\n')) out.push({ text: `  (reasoning) ${l}`, seq: e.seq });
        if (e.text) for (const l of e.text.split('\n')) out.push({ text: `  ${l}`, seq: e.seq });
        for (const call of e.toolCalls) pushAll(out, callLines(call, e.seq));
        break;
      }
      case 'tool-result':
        out.push({ text: `  ← unpaired result${e.result.isError ? ' [error]' : ''}`, seq: e.seq });
        for (const l of e.result.text.split('\n')) out.push({ text: `    ${l}`, seq: e.seq });
        break;
      case 'compaction':
        out.push({ text: `--- compaction: the model's history before this point was replaced by a summary`, seq: e.seq });
        for (const l of e.summary.split('\n')) out.push({ text: `    ${l}`, seq: e.seq });
        break;
      case 'prune':
        out.push({ text: `--- tool result pruned for the model: ${e.text}`, seq: e.seq });
        break;
      case 'replacement':
        out.push({ text: `--- ${e.type} replaced earlier history for the model: ${e.text}`, seq: e.seq });
        break;
  }
}

// --- dispatch alignment ------------------------------------------------------

/** The first non-blank line of a message's content (memoized per message object: later pairs repeat messages). */
const previews = new WeakMap<object, string>();
function firstLine(msg: NonNullable<MessageView>): string {
  let p = previews.get(msg);
  if (p === undefined) {
    const content = msg.content;
    // Only the first blocks are needed for a preview line; a tool result's text up to its first line.
    let first = '';
    for (const l of blockLines(Array.isArray(content) ? (content as BlockView[]).slice(0, 4).map((b) => (b?.type === 'tool-result' ? { ...b, content: clipBlocks(b.content) } : b)) : content)) {
      if (l.trim().length > 0) {
        first = l;
        break;
      }
    }
    previews.set(msg, (p = first.length > 200 ? first.slice(0, 199) + '…' : first));
  }
  return p;
}

function clipBlocks(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return (content as BlockView[]).slice(0, 2).map((x) => (x?.type === 'text' && typeof x.text === 'string' ? { ...x, text: x.text.slice(0, 400) } : x));
}

function msgRef(m: { seq: number; message: unknown }, position: number, events: readonly SessionEvent[]): MessageRef {
  const msg = (m.message ?? {}) as NonNullable<MessageView>;
  const first = firstLine(msg);
  const src = msg.source;
  const source = src && typeof src === 'object' ? (src.kind === 'plugin' ? `plugin:${String(src.plugin)}` : String(src.kind)) : null;
  return { seq: m.seq, position, type: events[m.seq]?.type ?? '?', role: typeof msg.role === 'string' ? msg.role : null, source, preview: first };
}

function pairDiff(
  fa: Facts | null,
  fb: Facts | null,
  da: Detail | null,
  db: Detail | null,
  ea: readonly SessionEvent[],
  eb: readonly SessionEvent[],
  differs: DivergenceReason[],
  reported: Set<string>,
): PairDiff {
  const am = da?.messages ?? [];
  const bm = db?.messages ?? [];
  const edits = diffSequences(
    am.map((m) => m.key),
    bm.map((m) => m.key),
  );
  const left: MessageRef[] = [];
  const entered: MessageRef[] = [];
  const modified: ModifiedMessage[] = [];
  let kept = 0;
  // Replace blocks: consecutive '-' then '+' runs; pair them in order by role for the text diff.
  let run: { minus: MessageRef[]; plus: MessageRef[] } = { minus: [], plus: [] };
  const flush = () => {
    const plus = [...run.plus];
    for (const l of run.minus) {
      const k = plus.findIndex((p) => p.role === l.role && p.type === l.type && p.source === l.source);
      if (k < 0) continue;
      const p = plus.splice(k, 1)[0] as MessageRef;
      // Each changed message is diffed once, at the first pair that carries it.
      const id = `${l.seq}:${p.seq}`;
      if (reported.has(id)) continue;
      reported.add(id);
      const la = messageLines(am[l.position]?.message, l.seq);
      const lb = messageLines(bm[p.position]?.message, p.seq);
      modified.push({ a: l, b: p, diff: unifiedDiff(la, lb) });
    }
    run = { minus: [], plus: [] };
  };
  for (const e of edits) {
    if (e.op === '=') {
      flush();
      kept++;
    } else if (e.op === '-') {
      const r = msgRef(am[e.a as number] as Detail['messages'][number], e.a as number, ea);
      left.push(r);
      if (run.plus.length) flush();
      run.minus.push(r);
    } else {
      const r = msgRef(bm[e.b as number] as Detail['messages'][number], e.b as number, eb);
      entered.push(r);
      run.plus.push(r);
    }
  }
  flush();
  const ha = fa?.entry.header ?? null;
  const hb = fb?.entry.header ?? null;
  const changes = fa && fb ? headerChanges(ha, hb) : [];
  const sysA = typeof ha?.system === 'string' ? ha.system : undefined;
  const sysB = typeof hb?.system === 'string' ? hb.system : undefined;
  const ua = fa ? usageOf(fa.entry) : null;
  const ub = fb ? usageOf(fb.entry) : null;
  const ansA = fa?.entry.assistantMessageSeq != null ? ea[fa.entry.assistantMessageSeq] : undefined;
  const ansB = fb?.entry.assistantMessageSeq != null ? eb[fb.entry.assistantMessageSeq] : undefined;
  const output =
    fa && fb && fa.outputKey !== fb.outputKey
      ? unifiedDiff(ansA ? messageLines(ansA.data?.message, ansA.seq) : [], ansB ? messageLines(ansB.data?.message, ansB.seq) : [])
      : null;
  return {
    a: fa?.ref ?? null,
    b: fb?.ref ?? null,
    differs,
    messages: { kept, left, entered, modified },
    header: {
      changes,
      aSeq: fa?.entry.headerSeq ?? null,
      bSeq: fb?.entry.headerSeq ?? null,
      system: fa && fb && sysA !== sysB ? unifiedDiff(textLines(sysA), textLines(sysB)) : null,
    },
    requestContext: { changed: Boolean(fa && fb && fa.contextKey !== fb.contextKey), a: fa?.entry.requestContext ?? null, b: fb?.entry.requestContext ?? null },
    usage: { a: ua, b: ub, delta: usageDelta(ua, ub) },
    cost: pairCost(fa?.entry, fb?.entry),
    toolCalls: { a: da?.toolCalls ?? [], b: db?.toolCalls ?? [] },
    finish: { a: fa ? fa.entry.finish : null, b: fb ? fb.entry.finish : null },
    output,
  };
}

function reasonsOf(fa: Facts | null, fb: Facts | null): DivergenceReason[] {
  if (!fa || !fb) return ['unpaired'];
  const out: DivergenceReason[] = [];
  if (fa.messagesKey !== fb.messagesKey) out.push('messages');
  if (fa.headerKey !== fb.headerKey) out.push('header');
  if (fa.contextKey !== fb.contextKey) out.push('context');
  if (fa.outputKey !== fb.outputKey) out.push('output');
  if (fa.finishKey !== fb.finishKey) out.push('finish');
  if (fa.callsKey !== fb.callsKey) out.push('tool-calls');
  else if (fa.outcomesKey !== fb.outcomesKey) out.push('tool-outcomes');
  return out;
}

/**
 * Pair the dispatches of two sessions. By structure (the `turn/step#attempt`
 * keys) when at least half of the smaller side's keys occur on the other
 * side; else by content: dispatches with equivalent inputs anchor the
 * alignment and the dispatches between two anchors are paired in order.
 */
export function alignDispatches(a: readonly Facts[], b: readonly Facts[]): { by: 'structure' | 'content'; pairs: [Facts | null, Facts | null][] } {
  const bKeys = new Set(b.map((f) => f.entry.key));
  const shared = a.filter((f) => bKeys.has(f.entry.key)).length;
  const structure = shared * 2 >= Math.min(a.length, b.length) && (a.length === 0 || b.length === 0 || shared > 0);
  const edits = structure
    ? diffSequences(
        a.map((f) => f.entry.key),
        b.map((f) => f.entry.key),
      )
    : diffSequences(
        a.map((f) => f.inputKey),
        b.map((f) => f.inputKey),
      );
  const pairs: [Facts | null, Facts | null][] = [];
  let minus: Facts[] = [];
  let plus: Facts[] = [];
  const flush = () => {
    if (structure) {
      for (const f of minus) pairs.push([f, null]);
      for (const f of plus) pairs.push([null, f]);
    } else {
      const n = Math.max(minus.length, plus.length);
      for (let i = 0; i < n; i++) pairs.push([minus[i] ?? null, plus[i] ?? null]);
    }
    minus = [];
    plus = [];
  };
  for (const e of edits) {
    if (e.op === '=') {
      flush();
      pairs.push([a[e.a as number] as Facts, b[e.b as number] as Facts]);
    } else if (e.op === '-') minus.push(a[e.a as number] as Facts);
    else plus.push(b[e.b as number] as Facts);
  }
  flush();
  return { by: structure ? 'structure' : 'content', pairs };
}

/** Compare two sessions (each side walked a few times, never held by the comparison). */
export async function diffSessions(a: DiffSide, b: DiffSide): Promise<SessionDiff> {
  const relation = relationOf(a.header, b.header);
  const keys = new Keys();
  const shared = new SameJson();
  const sa = new SideFacts(a, keys, shared);
  const sb = new SideFacts(b, keys, shared);
  const lenA = a.eventCount;
  const lenB = b.eventCount;
  // Position-by-position sameness where the verdicts read it: the fork seed, and up to the first
  // position that is not equivalent (computed once per position, as the two logs are walked together).
  const seedEnd = Math.min(forkSeed(relation, a.header, b.header), relation === 'fork' ? lenB : lenA);
  const memo = new Int8Array(Math.min(lenA, lenB)).fill(-1);
  let firstApart = -1;
  const stops = new Map<number, SharedPrefix['stopsAt']>();
  const stopOf = (e: SessionEvent | undefined): Stop => (e ? { seq: e.seq, type: e.type } : null);
  await lockstep(a.stream(), b.stream(), (x, y, i) => {
    if (x) sa.observe(x);
    if (y) sb.observe(y);
    if (i < memo.length && (i < seedEnd || firstApart < 0)) {
      const k = sameness(x, y);
      memo[i] = k;
      if (k === 0 && firstApart < 0) firstApart = i;
    }
    // Where the shared prefix may stop: the seed's end, the first position apart, or the shorter side's end.
    if (i === seedEnd || i === firstApart || i === memo.length) stops.set(i, { a: stopOf(x), b: stopOf(y) });
  });
  const same = (i: number): 0 | 1 | 2 => (i < memo.length ? (memo[i] as 0 | 1 | 2) : 0);
  const noStop = { a: null, b: null };
  const sharedPrefix = sharedPrefixOf(lenA, lenB, relation, a.header, b.header, same, (at) => stops.get(at) ?? noStop);
  let equivalent = lenA === lenB;
  let identical = equivalent;
  for (let i = 0; equivalent && i < lenA; i++) {
    const k = same(i);
    if (k === 0) equivalent = false;
    else if (k === 1) identical = false;
  }
  identical &&= equivalent;
  const ia = sa.index();
  const ib = sb.index();
  const fa = ia.requests.map((e) => sa.facts(e));
  const fb = ib.requests.map((e) => sb.facts(e));
  const aligned = alignDispatches(fa, fb);
  const pairs: SessionDiff['dispatches']['pairs'] = [];
  let firstDivergent: number | null = null;
  const shown: [Facts | null, Facts | null, DivergenceReason[]][] = [];
  for (const [x, y] of aligned.pairs) {
    const differs = reasonsOf(x, y);
    pairs.push({ a: x?.entry.key ?? null, b: y?.entry.key ?? null, differs });
    if (firstDivergent === null && differs.length > 0) firstDivergent = pairs.length - 1;
    if (firstDivergent !== null) shown.push([x, y, differs]);
  }
  // The divergent pairs in detail, their events re-read a few pairs at a time.
  const divergent: PairDiff[] = [];
  const reported = new Set<string>();
  for (let at = 0; at < shown.length; at += DETAIL_PAIRS) {
    const group = shown.slice(at, at + DETAIL_PAIRS);
    const seqsA = new Set<number>();
    const seqsB = new Set<number>();
    for (const [x, y] of group) {
      if (x) sa.detailSeqs(x.entry, seqsA);
      if (y) sb.detailSeqs(y.entry, seqsB);
    }
    const ea = seqsA.size > 0 ? await a.fetch(singleRanges(seqsA)) : NO_EVENTS;
    const eb = seqsB.size > 0 ? await b.fetch(singleRanges(seqsB)) : NO_EVENTS;
    for (const [x, y, differs] of group) {
      const da = x ? sa.detail(x.entry, ea) : null;
      const db = y ? sb.detail(y.entry, eb) : null;
      divergent.push(pairDiff(x, y, da, db, ea, eb, differs, reported));
    }
  }
  const totalA: UsageNumbers = {};
  const totalB: UsageNumbers = {};
  for (const f of fa) addUsage(totalA, usageOf(f.entry));
  for (const f of fb) addUsage(totalB, usageOf(f.entry));
  const surface = unifiedDiff(await surfaceLines(a), await surfaceLines(b));
  const transcript = await streamedUnifiedDiff(
    () => transcriptBatches(a.transcript()),
    () => transcriptBatches(b.transcript()),
  );
  return {
    a: sideInfo('a', a, ia),
    b: sideInfo('b', b, ib),
    relation,
    sharedPrefix,
    equivalent,
    identical,
    dispatches: { alignedBy: aligned.by, pairs, firstDivergent, divergent },
    usageTotals: { a: totalA, b: totalB, delta: usageDelta(totalA, totalB) ?? {} },
    ...sessionCost(ia.requests, ib.requests),
    surface,
    transcript,
  };
}

/** Divergent pairs whose events are re-read together. */
const DETAIL_PAIRS = 16;

function singleRanges(seqs: Iterable<number>): SeqRange[] {
  return [...seqs].sort((x, y) => x - y).map((s) => [s, s] as const);
}

// --- walking two streams -----------------------------------------------------

/** Walk two streams of batches side by side: `visit(x, y, i)` at every position of the longer one (undefined past a side's end). */
async function lockstep<T>(a: AsyncIterable<readonly T[]>, b: AsyncIterable<readonly T[]>, visit: (x: T | undefined, y: T | undefined, i: number) => void): Promise<void> {
  const ia = a[Symbol.asyncIterator]();
  const ib = b[Symbol.asyncIterator]();
  let ba: readonly T[] = [];
  let bb: readonly T[] = [];
  let pa = 0;
  let pb = 0;
  let doneA = false;
  let doneB = false;
  for (let i = 0; ; ) {
    while (!doneA && pa >= ba.length) {
      const r = await ia.next();
      if (r.done) doneA = true;
      else [ba, pa] = [r.value, 0];
    }
    while (!doneB && pb >= bb.length) {
      const r = await ib.next();
      if (r.done) doneB = true;
      else [bb, pb] = [r.value, 0];
    }
    if (doneA && doneB) return;
    const n = doneA ? bb.length - pb : doneB ? ba.length - pa : Math.min(ba.length - pa, bb.length - pb);
    for (let k = 0; k < n; k++) visit(doneA ? undefined : ba[pa++], doneB ? undefined : bb[pb++], i++);
  }
}

/** A stream of batches without its first `n` items. */
async function* dropFirst<T>(stream: AsyncIterable<readonly T[]>, n: number): AsyncGenerator<readonly T[]> {
  for await (const batch of stream) {
    if (n >= batch.length) {
      n -= batch.length;
      continue;
    }
    yield n > 0 ? batch.slice(n) : batch;
    n = 0;
  }
}

/** Items `from` (inclusive) to `to` (exclusive) of a stream of batches. */
async function itemsBetween<T>(stream: AsyncIterable<readonly T[]>, from: number, to: number): Promise<T[]> {
  const out: T[] = [];
  let i = 0;
  for await (const batch of stream) {
    for (const x of batch) {
      if (i >= from && i < to) out.push(x);
      i++;
    }
    if (i >= to) break;
  }
  return out;
}

/**
 * `unifiedDiff` of two line streams, holding only the lines between their
 * common prefix and common suffix (plus context): one pass finds the prefix
 * (and each side's length), a second the suffix (the sides aligned at their
 * ends), a third takes the lines in between. Equal streams take one pass.
 * The hunks are those of `unifiedDiff` on the whole sequences: its edit script
 * trims the same prefix and suffix and diffs the same middle.
 */
export async function streamedUnifiedDiff(a: () => AsyncIterable<readonly DiffLine[]>, b: () => AsyncIterable<readonly DiffLine[]>, context = 3): Promise<TextDiff> {
  let lenA = 0;
  let lenB = 0;
  let prefix = -1;
  await lockstep(a(), b(), (x, y, i) => {
    if (x) lenA = i + 1;
    if (y) lenB = i + 1;
    if (prefix < 0 && (!x || !y || x.text !== y.text)) prefix = i;
  });
  if (prefix < 0) return { aLines: lenA, bLines: lenB, added: 0, removed: 0, hunks: [] };
  let run = 0;
  await lockstep(dropFirst(a(), Math.max(0, lenA - lenB)), dropFirst(b(), Math.max(0, lenB - lenA)), (x, y) => {
    run = x && y && x.text === y.text ? run + 1 : 0;
  });
  const suffix = Math.min(run, Math.min(lenA, lenB) - prefix);
  const from = prefix - Math.min(context, prefix);
  const after = Math.min(context, suffix);
  const w = unifiedDiff(await itemsBetween(a(), from, lenA - suffix + after), await itemsBetween(b(), from, lenB - suffix + after), context);
  return { aLines: lenA, bLines: lenB, added: w.added, removed: w.removed, hunks: w.hunks.map((h) => ({ ...h, aStart: h.aStart + from, bStart: h.bStart + from })) };
}

function sessionCost(ea: readonly DispatchEntry[], eb: readonly DispatchEntry[]): Pick<SessionDiff, 'cost' | 'costNote'> {
  if (shippedPriceTable() === null) return { cost: null, costNote: 'the price table could not be read: token usage is compared, costs are not' };
  const a = sideCost(ea);
  const b = sideCost(eb);
  const complete = a.cost.unpriced === 0 && b.cost.unpriced === 0;
  const unpriced = a.cost.unpriced + b.cost.unpriced;
  return {
    cost: { currency: 'USD', a: a.cost, b: b.cost, delta: complete ? { amount: Number(b.atto - a.atto) / 1e18, exact: formatAtto(b.atto - a.atto) } : null },
    costNote: complete ? 'USD, data/prices.json at each dispatch\'s first chunk time' : `USD, data/prices.json; ${unpriced} dispatch${unpriced === 1 ? '' : 'es'} unpriced (unknown model or a time outside every price window), so no cost delta`,
  };
}

/** Whether a session comparison found any difference (git's `--exit-code` sense). */
export function sessionsDiffer(d: SessionDiff): boolean {
  return !d.equivalent || d.dispatches.firstDivergent !== null || d.surface.hunks.length > 0 || d.transcript.hunks.length > 0;
}

/** `a → b (±delta)` of the priced dispatches; `-` without a price table. */
export function costText(d: SessionDiff): string {
  if (!d.cost) return '-';
  const { a, b, delta } = d.cost;
  const side = (x: typeof a) => `${x.exact}${x.unpriced > 0 ? ` (+${x.unpriced} unpriced)` : ''}`;
  return `${side(a)} → ${side(b)}${delta ? ` (${delta.exact.startsWith('-') ? '' : '+'}${delta.exact})` : ''}`;
}

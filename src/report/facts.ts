/**
 * The per-event facts of a report page, computed with the library's own
 * rules so the page re-implements none of them: surface labels and trace
 * relations (views/trace.ts `analyzeLog`), one-line previews (views
 * `eventSummary` + `clip`) and where each event's model message is
 * (log/surface.ts `deriveEventMessage`). Stored compactly (see
 * {@link PageEventFacts}): a character per event for labels and messages, a
 * string table for previews, run-length coded citers.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { SessionEvent } from '../log/types.js';
import { deriveEventMessage } from '../log/surface.js';
import { analysisOf, analyzeLog, type FoldLike, type LogAnalysis } from '../views/trace.js';
import { embedJson, TextBatch } from './html.js';
import { clip, eventSummary } from '../views/messages.js';
import type { PageEventFacts } from './page/model.js';
import { ownString } from '../core/text.js';
import type { Citations } from '../views/index-folds.js';

/** Previews are cut here (the events list shows this much; the raw JSON has everything). */
export const PREVIEW_LIMIT = 240;

const LABEL_CHAR = { current: 'c', shadowed: 's', 'log-only': 'l' } as const;

/** No events (a log DSH refuses): empty facts. */
export function emptyFacts(): PageEventFacts {
  return { labels: '', previews: [], preview: [], previewLimit: PREVIEW_LIMIT, message: '', messages: {}, replacedBy: [], replaced: [], derived: [] };
}

/**
 * A column of numbers filled in order and read back once, in order: kept deflated in blocks of
 * {@link PackedColumn.BLOCK} values (a log's label and preview columns repeat a few values), so a
 * long log's columns cost a fraction of a typed array per event.
 */
class PackedColumn<A extends Uint8Array | Uint32Array> {
  static readonly BLOCK = 65536;
  private readonly blocks: Buffer[] = [];
  private block: A;
  private at = 0;
  constructor(private readonly make: (n: number) => A) {
    this.block = make(PackedColumn.BLOCK);
  }
  push(v: number): void {
    this.block[this.at++] = v;
    if (this.at === PackedColumn.BLOCK) {
      this.blocks.push(deflateRawSync(bytesOf(this.block), { level: 1 }));
      this.at = 0;
    }
  }
  /** The values, block by block, in order. */
  *values(): Generator<A> {
    for (const b of this.blocks) {
      const raw = inflateRawSync(b);
      const out = this.make(raw.byteLength / this.block.BYTES_PER_ELEMENT);
      bytesOf(out).set(raw);
      yield out;
    }
    if (this.at > 0) yield this.block.subarray(0, this.at) as A;
  }
}

function bytesOf(a: Uint8Array | Uint32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/** A one-byte-per-event column as latin1 text, in pieces. */
function* latin1Pieces(column: PackedColumn<Uint8Array>): Generator<string> {
  for (const block of column.values()) yield bytesOf(block).toString('latin1');
}

/** Strings appended in order and read back once, in order: kept as deflated JSON arrays of {@link PackedStrings.BLOCK}. */
class PackedStrings {
  static readonly BLOCK = 4096;
  private readonly blocks: Buffer[] = [];
  private block: string[] = [];
  length = 0;
  push(text: string): void {
    this.block.push(text);
    this.length++;
    if (this.block.length === PackedStrings.BLOCK) {
      this.blocks.push(deflateRawSync(JSON.stringify(this.block), { level: 1 }));
      this.block = [];
    }
  }
  *values(): Generator<string> {
    for (const b of this.blocks) yield* JSON.parse(inflateRawSync(b).toString('utf8')) as string[];
    yield* this.block;
  }
}

/**
 * A preview is looked up among the distinct previews of the last stretch of the log: when this many are
 * held, the lookup starts afresh (a preview seen before then gets a new entry in the table), so a log of
 * millions of distinct previews (each chunk's delta) holds a bounded map, not one entry per preview.
 */
export const PREVIEW_WINDOW = 65536;

/** The per-event columns of the facts (labels, messages, previews), one event at a time in log order. */
class EventColumns {
  readonly labels = new PackedColumn((n) => new Uint8Array(n));
  readonly message = new PackedColumn((n) => new Uint8Array(n));
  readonly preview = new PackedColumn((n) => new Uint32Array(n));
  readonly messages: Record<string, unknown> = {};
  readonly previews = new PackedStrings();
  private readonly previewIndex = new Map<string, number>();
  constructor(private readonly a: Pick<LogAnalysis, 'labels'>) {}
  observe(e: SessionEvent): void {
    this.labels.push(LABEL_CHAR[this.a.labels.of(e.seq)].charCodeAt(0));
    const m = deriveEventMessage(e);
    let c: string;
    if (m === null || m === undefined) c = '-';
    else if (m === e.data) c = 'd';
    else if (m === (e.data as { message?: unknown } | undefined)?.message) c = 'm';
    else {
      c = 'x';
      this.messages[String(e.seq)] = m;
    }
    this.message.push(c.charCodeAt(0));
    let p = clip(eventSummary(e), PREVIEW_LIMIT);
    let at = this.previewIndex.get(p);
    if (at === undefined) {
      p = ownString(p);
      at = this.previews.length;
      this.previews.push(p);
      if (this.previewIndex.size === PREVIEW_WINDOW) this.previewIndex.clear();
      this.previewIndex.set(p, at);
    }
    this.preview.push(at);
  }
  labelsText(): string {
    return [...latin1Pieces(this.labels)].join('');
  }
  messageText(): string {
    return [...latin1Pieces(this.message)].join('');
  }
  /** Each event's preview's index in {@link previews}. */
  previewIndexes(): number[] {
    const out: number[] = [];
    for (const block of this.preview.values()) for (const v of block) out.push(v);
    return out;
  }
}

/** The trace relations of a final fold: `[shadowedSeq, replacerSeq, …]` and `[replacerSeq, n, shadowed…, …]`. */
function replacementFacts(a: Pick<LogAnalysis, 'replacedBy' | 'replacedEventSeqs'>): { replacedBy: number[]; replaced: number[] } {
  const replacedBy: number[] = [];
  for (const [s, by] of a.replacedBy) replacedBy.push(s, by);
  const replaced: number[] = [];
  for (const [r, list] of a.replacedEventSeqs) {
    replaced.push(r);
    pushList(replaced, list);
  }
  return { replacedBy, replaced };
}

/** The facts of a loaded log; `fold`: its final surface (the inspection's; refolded when absent). */
export function eventFacts(events: readonly SessionEvent[], fold?: FoldLike): PageEventFacts {
  const a = analyzeLog(events, fold);
  const cols = new EventColumns(a);
  for (const e of events) cols.observe(e);
  const seqs = [...a.derived.keys()].sort((x, y) => x - y);
  const derived: number[] = [];
  for (const run of derivedRuns(seqs.map((s) => [s, s + 1, a.derived.get(s) as number[]] as const))) pushAll(derived, run);
  return {
    labels: cols.labelsText(),
    previews: [...cols.previews.values()],
    preview: cols.previewIndexes(),
    previewLimit: PREVIEW_LIMIT,
    message: cols.messageText(),
    messages: cols.messages,
    ...replacementFacts(a),
    derived,
  };
}

/**
 * Run-length code seq → citers (ascending, disjoint segments `[first, end, citers]`: every seq in
 * `[first, end)` has those citers): consecutive seqs with equal citer lists share one run
 * `[firstSeq, runLength, n, citer₁ … citerₙ]`, yielded one run at a time.
 */
function* derivedRuns(entries: Iterable<readonly [number, number, ArrayLike<number>]>): Generator<number[]> {
  let first = -1;
  let length = 0;
  let list: ArrayLike<number> = [];
  const run = () => {
    const out = [first, length, list.length];
    for (let k = 0; k < list.length; k++) out.push(list[k] as number);
    return out;
  };
  for (const [seq, end, citers] of entries) {
    if (length > 0 && seq === first + length && sameList(citers, list)) {
      length += end - seq;
      continue;
    }
    if (length > 0) yield run();
    first = seq;
    length = end - seq;
    list = citers;
  }
  if (length > 0) yield run();
}

/** Append `list.length`, then the list (no argument spreading: lists can be long). */
function pushList(out: number[], list: readonly number[]): void {
  out.push(list.length);
  pushAll(out, list);
}

function pushAll(out: number[], list: readonly number[]): void {
  for (const x of list) out.push(x);
}

function sameList(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Which earlier events each event cites (analyzeLog's `derived`), counted in a first pass over the
 * log so that {@link StreamedEventFacts} can keep the citers in two typed arrays. `irregular`: a
 * citation that is not a non-negative safe integer (DSH refuses such a log; the facts are then
 * computed from the held events instead).
 */
export class CitationCounts {
  /** Citers per seq; null when only checked (the citers come from the session index's citations). */
  readonly counts: Uint32Array | null;
  citations = 0;
  irregular = false;
  constructor(
    private readonly events: number,
    count = true,
  ) {
    this.counts = count ? new Uint32Array(events) : null;
  }
  observe(e: SessionEvent): void {
    if (!Array.isArray(e.sourceEventSeqs)) return;
    for (const s of e.sourceEventSeqs as unknown[]) {
      if (!((s as number) < e.seq)) continue;
      if (!(Number.isSafeInteger(s) && (s as number) >= 0 && (s as number) < this.events)) {
        this.irregular = true;
        continue;
      }
      if (this.counts) this.counts[s as number]! += 1;
      this.citations++;
    }
  }
}

/** The citers of a log as the session index keeps them: its citations fold, and the closers after it. */
export interface SavedCiters {
  citations: Citations;
  closers: readonly SessionEvent[];
}

/**
 * {@link eventFacts} without holding the events: fed every logical event in order (after a
 * {@link CitationCounts} pass over the same events, or with the session index's citations), it
 * yields the facts' JSON text as `embedJson(eventFacts(events, fold))` would write it.
 */
export class StreamedEventFacts {
  private readonly cols: EventColumns;
  private readonly a: Pick<LogAnalysis, 'labels' | 'replacedBy' | 'replacedEventSeqs'>;
  /** Per cited seq: where its next citer goes (after the pass: where its citers end). */
  private readonly cursor: Uint32Array | null = null;
  private readonly citers: Uint32Array | null = null;
  private readonly saved: SavedCiters | null = null;

  constructor(events: number, fold: FoldLike, citations: CitationCounts | SavedCiters) {
    this.a = analysisOf(fold, new Map());
    this.cols = new EventColumns(this.a);
    if (!(citations instanceof CitationCounts)) {
      this.saved = citations;
      return;
    }
    // Exclusive prefix sums, in place: counts become each seq's first citer slot.
    const c = citations.counts;
    if (!c) throw new Error('StreamedEventFacts needs counted citations');
    let sum = 0;
    for (let i = 0; i < c.length; i++) {
      const n = c[i] as number;
      c[i] = sum;
      sum += n;
    }
    this.cursor = c;
    this.citers = new Uint32Array(citations.citations);
  }

  observe(e: SessionEvent): void {
    this.cols.observe(e);
    const { citers, cursor } = this;
    if (!citers || !cursor || !Array.isArray(e.sourceEventSeqs)) return;
    for (const s of e.sourceEventSeqs as number[]) {
      if (!(s < e.seq)) continue;
      citers[cursor[s]!++] = e.seq;
    }
  }

  /** The facts' JSON text, in pieces (call once, after the last event). */
  *json(): Generator<string> {
    const cols = this.cols;
    yield '{"labels":"';
    yield* embeddedText(cols.labels);
    yield '","previews":[';
    yield* joined(cols.previews.values(), (p) => embedJson(p));
    yield `],"preview":[`;
    yield* joinedNumbers(cols.preview.values());
    yield `],"previewLimit":${PREVIEW_LIMIT},"message":"`;
    yield* embeddedText(cols.message);
    yield `","messages":${embedJson(cols.messages)}`;
    const { replacedBy, replaced } = replacementFacts(this.a);
    yield `,"replacedBy":${embedJson(replacedBy)},"replaced":${embedJson(replaced)},"derived":[`;
    const cursor = this.cursor;
    const citers = this.citers;
    function* lists(): Generator<readonly [number, number, Uint32Array]> {
      if (!cursor || !citers) return;
      for (let s = 0; s < cursor.length; s++) {
        const start = s === 0 ? 0 : (cursor[s - 1] as number);
        const end = cursor[s] as number;
        if (end > start) yield [s, s + 1, citers.subarray(start, end)];
      }
    }
    let first = true;
    let batch: string[] = [];
    for (const run of derivedRuns(this.saved ? this.saved.citations.citedSegments(this.saved.closers) : lists())) {
      batch.push((first ? '' : ',') + run.join(','));
      first = false;
      if (batch.length >= 4096) {
        yield batch.join('');
        batch = [];
      }
    }
    batch.push(']}');
    yield batch.join('');
  }
}

/** A one-byte-per-event column as the inside of its {@link embedJson} string, in pieces (escaping is per character). */
function* embeddedText(column: PackedColumn<Uint8Array>): Generator<string> {
  for (const piece of latin1Pieces(column)) yield embedJson(piece).slice(1, -1);
}

/** The numbers of `blocks` as the inside of a JSON array, a block at a time (no generator step per number). */
function* joinedNumbers(blocks: Iterable<Uint32Array>): Generator<string> {
  let first = true;
  for (const b of blocks) {
    if (b.length === 0) continue;
    yield (first ? '' : ',') + b.join(',');
    first = false;
  }
}

/** `items` as the inside of a JSON array, in pieces of about 1 MiB. */
function* joined<T>(items: Iterable<T>, text: (x: T) => string): Generator<string> {
  const batch = new TextBatch({ separator: ',' });
  for (const x of items) {
    const piece = batch.push(text(x));
    if (piece !== undefined) yield piece;
  }
  if (!batch.empty) yield batch.take();
}

/**
 * The per-event facts of a report page, computed with the library's own
 * rules so the page re-implements none of them: surface labels and trace
 * relations (views/trace.ts `analyzeLog`), one-line previews (views
 * `eventSummary` + `clip`) and where each event's model message is
 * (log/surface.ts `deriveEventMessage`). Stored compactly (see
 * {@link PageEventFacts}): a character per event for labels and messages, a
 * string table for previews, run-length coded citers.
 */
import type { SessionEvent } from '../log/types.js';
import { deriveEventMessage } from '../log/surface.js';
import { analysisOf, analyzeLog, type FoldLike, type LogAnalysis } from '../views/trace.js';
import { embedJson, TextBatch } from './html.js';
import { clip, eventSummary } from '../views/messages.js';
import type { PageEventFacts } from './page/model.js';
import { ownString } from '../core/text.js';

/** Previews are cut here (the events list shows this much; the raw JSON has everything). */
export const PREVIEW_LIMIT = 240;

const LABEL_CHAR = { current: 'c', shadowed: 's', 'log-only': 'l' } as const;

/** No events (a log DSH refuses): empty facts. */
export function emptyFacts(): PageEventFacts {
  return { labels: '', previews: [], preview: [], previewLimit: PREVIEW_LIMIT, message: '', messages: {}, replacedBy: [], replaced: [], derived: [] };
}

/** The per-event columns of the facts (labels, messages, previews), one event at a time in log order. */
class EventColumns {
  readonly labels: Uint8Array;
  readonly message: Uint8Array;
  readonly preview: Uint32Array;
  readonly messages: Record<string, unknown> = {};
  readonly previews: string[] = [];
  private readonly previewIndex = new Map<string, number>();
  private n = 0;
  constructor(private readonly a: Pick<LogAnalysis, 'labels'>, events: number) {
    this.labels = new Uint8Array(events);
    this.message = new Uint8Array(events);
    this.preview = new Uint32Array(events);
  }
  observe(e: SessionEvent): void {
    const i = this.n++;
    this.labels[i] = LABEL_CHAR[this.a.labels.of(e.seq)].charCodeAt(0);
    const m = deriveEventMessage(e);
    let c: string;
    if (m === null || m === undefined) c = '-';
    else if (m === e.data) c = 'd';
    else if (m === (e.data as { message?: unknown } | undefined)?.message) c = 'm';
    else {
      c = 'x';
      this.messages[String(e.seq)] = m;
    }
    this.message[i] = c.charCodeAt(0);
    let p = clip(eventSummary(e), PREVIEW_LIMIT);
    let at = this.previewIndex.get(p);
    if (at === undefined) {
      p = ownString(p);
      at = this.previews.length;
      this.previews.push(p);
      this.previewIndex.set(p, at);
    }
    this.preview[i] = at;
  }
  get count(): number {
    return this.n;
  }
  labelsText(): string {
    return Buffer.from(this.labels.buffer, this.labels.byteOffset, this.n).toString('latin1');
  }
  messageText(): string {
    return Buffer.from(this.message.buffer, this.message.byteOffset, this.n).toString('latin1');
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
  const cols = new EventColumns(a, events.length);
  for (const e of events) cols.observe(e);
  const seqs = [...a.derived.keys()].sort((x, y) => x - y);
  const derived: number[] = [];
  for (const run of derivedRuns(seqs.map((s) => [s, a.derived.get(s) as number[]] as const))) pushAll(derived, run);
  return {
    labels: cols.labelsText(),
    previews: cols.previews,
    preview: Array.from(cols.preview.subarray(0, cols.count)),
    previewLimit: PREVIEW_LIMIT,
    message: cols.messageText(),
    messages: cols.messages,
    ...replacementFacts(a),
    derived,
  };
}

/**
 * Run-length code seq → citers (ascending seqs): consecutive seqs with equal citer lists share one
 * run `[firstSeq, runLength, n, citer₁ … citerₙ]`, yielded one run at a time.
 */
function* derivedRuns(entries: Iterable<readonly [number, ArrayLike<number>]>): Generator<number[]> {
  let first = -1;
  let length = 0;
  let list: ArrayLike<number> = [];
  const run = () => {
    const out = [first, length, list.length];
    for (let k = 0; k < list.length; k++) out.push(list[k] as number);
    return out;
  };
  for (const [seq, citers] of entries) {
    if (length > 0 && seq === first + length && sameList(citers, list)) {
      length++;
      continue;
    }
    if (length > 0) yield run();
    first = seq;
    length = 1;
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
  readonly counts: Uint32Array;
  citations = 0;
  irregular = false;
  constructor(events: number) {
    this.counts = new Uint32Array(events);
  }
  observe(e: SessionEvent): void {
    if (!Array.isArray(e.sourceEventSeqs)) return;
    for (const s of e.sourceEventSeqs as unknown[]) {
      if (!((s as number) < e.seq)) continue;
      if (!(Number.isSafeInteger(s) && (s as number) >= 0 && (s as number) < this.counts.length)) {
        this.irregular = true;
        continue;
      }
      this.counts[s as number]! += 1;
      this.citations++;
    }
  }
}

/**
 * {@link eventFacts} without holding the events: fed every logical event in order (after a
 * {@link CitationCounts} pass over the same events), it yields the facts' JSON text as
 * `embedJson(eventFacts(events, fold))` would write it.
 */
export class StreamedEventFacts {
  private readonly cols: EventColumns;
  private readonly a: Pick<LogAnalysis, 'labels' | 'replacedBy' | 'replacedEventSeqs'>;
  /** Per cited seq: where its next citer goes (after the pass: where its citers end). */
  private readonly cursor: Uint32Array;
  private readonly citers: Uint32Array;

  constructor(events: number, fold: FoldLike, citations: CitationCounts) {
    this.a = analysisOf(fold, new Map());
    this.cols = new EventColumns(this.a, events);
    // Exclusive prefix sums, in place: counts become each seq's first citer slot.
    const c = citations.counts;
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
    if (!Array.isArray(e.sourceEventSeqs)) return;
    for (const s of e.sourceEventSeqs as number[]) {
      if (!(s < e.seq)) continue;
      this.citers[this.cursor[s]!++] = e.seq;
    }
  }

  /** The facts' JSON text, in pieces (call once, after the last event). */
  *json(): Generator<string> {
    const cols = this.cols;
    yield `{"labels":${embedJson(cols.labelsText())},"previews":[`;
    yield* joined(cols.previews, (p) => embedJson(p));
    yield `],"preview":[`;
    yield* joined(cols.preview.subarray(0, cols.count), String);
    yield `],"previewLimit":${PREVIEW_LIMIT},"message":${embedJson(cols.messageText())},"messages":${embedJson(cols.messages)}`;
    const { replacedBy, replaced } = replacementFacts(this.a);
    yield `,"replacedBy":${embedJson(replacedBy)},"replaced":${embedJson(replaced)},"derived":[`;
    const cursor = this.cursor;
    const citers = this.citers;
    function* lists(): Generator<readonly [number, Uint32Array]> {
      for (let s = 0; s < cursor.length; s++) {
        const start = s === 0 ? 0 : (cursor[s - 1] as number);
        const end = cursor[s] as number;
        if (end > start) yield [s, citers.subarray(start, end)];
      }
    }
    let first = true;
    let batch: string[] = [];
    for (const run of derivedRuns(lists())) {
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

/** `items` as the inside of a JSON array, in pieces of about 1 MiB. */
function* joined<T>(items: Iterable<T>, text: (x: T) => string): Generator<string> {
  const batch = new TextBatch({ separator: ',' });
  for (const x of items) {
    const piece = batch.push(text(x));
    if (piece !== undefined) yield piece;
  }
  if (!batch.empty) yield batch.take();
}

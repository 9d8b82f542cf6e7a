/**
 * The human transcript (format.md §6.5): append-origin surface events in log
 * order — what the user saw — with compaction and prune markers for the
 * replacements (which restate history for the model only), tool calls paired
 * with their results, and interrupted / synthetic events flagged.
 */
import type { BlockView, KindView, MessageView, SessionEvent, SessionHeader, View } from '../log/types.js';
import { read } from '../log/payloads.js';
import { resultBlock, resultCallId as toolResultCallId } from './tool-pairs.js';
import { isAppendSurfaceEvent, isReplacementSurfaceEvent } from '../log/surface.js';
import { blocksText, foldSurfaceAt, type LoadedSession } from './messages.js';
import type { Replacement } from '../log/surface.js';
import type { IndexedInspection } from '../log/session.js';
import { toJson } from '../core/json.js';

export interface TranscriptToolResult {
  seq: number;
  text: string;
  isError: boolean;
  /** `data.error` code/name when the harness recorded one (e.g. TOOL_OUTCOME_UNKNOWN). */
  errorCode: string | null;
  synthetic: boolean;
  /** Seq of a later prune that replaced this result's content for the model, if any. */
  prunedBy: number | null;
}

export interface TranscriptToolCall {
  id: string;
  name: string;
  arguments: string;
  /** Seq of the `tool/call` event (the harness started it), if logged. */
  callSeq: number | null;
  result: TranscriptToolResult | null;
}

export type TranscriptEntry =
  | { kind: 'turn'; seq: number; time: number; turn: number }
  | {
      kind: 'message';
      seq: number;
      time: number;
      role: 'user' | 'assistant';
      id: string | null;
      /** `source.kind` (user, plugin, model, session-reference, …) and plugin name when present. */
      source: string;
      text: string;
      reasoning: string | null;
      toolCalls: TranscriptToolCall[];
      interrupted: boolean;
      /** Empty-content assistant message: no visible content (usage only). */
      empty: boolean;
      synthetic: boolean;
      /** Seq of the replacement that shadowed it for the model, if any. */
      shadowedBy: number | null;
    }
  | { kind: 'tool-result'; seq: number; time: number; callId: string; result: TranscriptToolResult }
  | {
      kind: 'compaction';
      seq: number;
      time: number;
      compactionId: string | null;
      summarySeq: number | null;
      summary: string;
      shadowedSeqs: number[];
      synthetic: boolean;
    }
  | { kind: 'prune'; seq: number; time: number; originalSeq: number; callId: string | null; text: string; synthetic: boolean }
  | { kind: 'replacement'; seq: number; time: number; type: string; shadowedSeqs: number[]; text: string; synthetic: boolean }
  | { kind: 'turn-end'; seq: number; time: number; turn: number; reason: string; detail: string | null; synthetic: boolean };

export interface Transcript {
  sessionId: string;
  header: SessionHeader;
  storedEventCount: number;
  eventCount: number;
  entries: TranscriptEntry[];
}

/** A transcript without its entries: what a streamed one knows before its first entry. */
export type TranscriptHead = Omit<Transcript, 'entries'>;

function isCompactSource(src: unknown): boolean {
  return !!src && typeof src === 'object' && (src as KindView)?.kind === 'plugin' && (src as KindView)?.plugin === 'compact';
}

function sourceLabel(src: KindView): string {
  if (!src || typeof src !== 'object') return 'unknown';
  if (src.kind === 'plugin') return `plugin:${String(src.plugin)}`;
  return String(src.kind);
}

function reasonDetail(reason: TurnEndReasonView): string | null {
  if (!reason || typeof reason !== 'object') return null;
  if (reason.kind === 'aborted' && reason.reason) return `${reason.reason.kind}${reason.reason.reason ? `: ${reason.reason.reason}` : ''}`;
  if (reason.kind === 'error' && reason.error) return `${reason.error.code ?? ''}${reason.error.message ? `: ${reason.error.message}` : ''}`;
  return null;
}

function toolResultOf(e: SessionEvent, synthetic: boolean): TranscriptToolResult {
  const block = resultBlock(e);
  const err = (e.data as Reads)?.error;
  return {
    seq: e.seq,
    text: blocksText(block?.content ?? (e.data as Reads)?.message?.content),
    isError: Boolean(block?.isError),
    errorCode: err ? String(err.code ?? err.name ?? 'error') : null,
    synthetic,
    prunedBy: null,
  };
}

/** What the transcript reads of a payload, through the views of what DSH writes. */
type Reads = View<{ message: MessageView; error: View<{ code: unknown; name: unknown }>; source: KindView; content: unknown; summary: unknown; reason: TurnEndReasonView; interrupted: unknown }>;
type TurnEndReasonView = KindView & View<{ reason: KindView; error: View<{ code: unknown; message: unknown }> }>;

/** The entry of an append-origin user/assistant message (its tool calls start without start or result). */
function messageEntry(e: SessionEvent, synthetic: boolean, shadowedBy: number | null): Extract<TranscriptEntry, { kind: 'message' }> {
  const d: NonNullable<Reads> = e.data ?? {};
  const message: MessageView = e.type === 'user/message' ? d : d.message;
  const content: BlockView[] = Array.isArray(message?.content) ? message.content : [];
  const toolCalls: TranscriptToolCall[] = [];
  const reasoning: string[] = [];
  for (const block of content) {
    if (block?.type === 'tool-call') {
      toolCalls.push({
        id: String(block.id),
        name: String(block.name),
        arguments: typeof block.arguments === 'string' ? block.arguments : toJson(block.arguments),
        callSeq: null,
        result: null,
      });
    } else if (block?.type === 'reasoning') reasoning.push(String(block.text ?? ''));
  }
  return {
    kind: 'message',
    seq: e.seq,
    time: e.time,
    role: e.type === 'user/message' ? 'user' : 'assistant',
    id: typeof message?.id === 'string' ? message.id : null,
    source: sourceLabel(message?.source),
    text: blocksText(content.filter((b) => b?.type !== 'tool-call' && b?.type !== 'reasoning')),
    reasoning: reasoning.length > 0 ? reasoning.join('\n') : null,
    toolCalls,
    interrupted: e.type === 'assistant/message' && d.interrupted === true,
    empty: content.length === 0,
    synthetic,
    shadowedBy,
  };
}

/** The tool call id a tool/result answers. */
function resultCallId(e: SessionEvent): string {
  return String(toolResultCallId(e) ?? read(resultBlock(e), 'toolCallId') ?? '');
}

function isCompaction(e: SessionEvent): boolean {
  return e.type === 'user/message' && isCompactSource(e.data?.source);
}

/** The array element `events[s]` reads for a cited value `s` (as JavaScript indexes an array by it), if any. */
function elementIndex(s: unknown): number | undefined {
  if (s !== null && typeof s === 'object' && !Array.isArray(s)) return undefined;
  const key = String(s);
  return /^(0|[1-9]\d*)$/.test(key) && Number(key) < 2 ** 32 - 1 ? Number(key) : undefined;
}

function sourcesOf(e: SessionEvent): unknown[] {
  return Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs : [];
}

function compactionEntry(e: SessionEvent, shadowed: readonly number[], summaryEvent: SessionEvent | undefined, synthetic: boolean): TranscriptEntry {
  // A compaction's replacement: its source is an object (`isCompaction`).
  const d = (e.data ?? {}) as NonNullable<Reads> & { source: NonNullable<KindView> };
  return {
    kind: 'compaction',
    seq: e.seq,
    time: e.time,
    compactionId: d.source.compactionId !== undefined ? String(d.source.compactionId) : null,
    summarySeq: summaryEvent ? summaryEvent.seq : null,
    summary: summaryEvent ? blocksText(summaryEvent.data?.summary) : blocksText(d.content),
    shadowedSeqs: [...shadowed],
    synthetic,
  };
}

function pruneEntry(e: SessionEvent, original: number, pruned: TranscriptToolResult, synthetic: boolean): TranscriptEntry {
  const d: NonNullable<Reads> = e.data ?? {};
  return {
    kind: 'prune',
    seq: e.seq,
    time: e.time,
    originalSeq: original,
    callId: d.message?.source?.callId !== undefined ? String(d.message.source!.callId) : null,
    text: pruned.text,
    synthetic,
  };
}

function replacementEntry(e: SessionEvent, shadowed: readonly number[], synthetic: boolean): TranscriptEntry {
  const d: NonNullable<Reads> = e.data ?? {};
  const message: MessageView = e.type === 'user/message' ? d : d.message;
  return { kind: 'replacement', seq: e.seq, time: e.time, type: e.type, shadowedSeqs: [...shadowed], text: blocksText(message?.content), synthetic };
}

/** The entry of a turn/start or a turn/end worth showing (not completed, or synthetic); null for a completed one. */
function turnEntry(e: SessionEvent, synthetic: boolean): TranscriptEntry | null {
  // `turn` is shown as logged (typed as DSH writes it).
  const d = (e.data ?? {}) as NonNullable<Reads> & { turn: number };
  if (e.type === 'turn/start') return { kind: 'turn', seq: e.seq, time: e.time, turn: d.turn };
  const kind = String(d.reason?.kind ?? 'unknown');
  if (kind !== 'completed' || synthetic) return { kind: 'turn-end', seq: e.seq, time: e.time, turn: d.turn, reason: kind, detail: reasonDetail(d.reason), synthetic };
  return null;
}

/** Shadowed-by and replaced-seqs lookups of the final fold's replacements. */
function replacementMaps(replacements: readonly Replacement[]): { shadowedBy: Map<number, number>; replacedSeqs: Map<number, number[]> } {
  const shadowedBy = new Map<number, number>();
  const replacedSeqs = new Map<number, number[]>();
  for (const r of replacements) {
    replacedSeqs.set(r.seq, r.shadowedSeqs);
    for (const s of r.shadowedSeqs) shadowedBy.set(s, r.seq);
  }
  return { shadowedBy, replacedSeqs };
}

/**
 * Build the human transcript from a loaded session, holding it: the
 * reference the streaming `TranscriptStream` is compared with (and the
 * library's `transcript()`). Later events fill in earlier entries in place.
 */
export function buildTranscript(session: LoadedSession): Transcript {
  const { events, storedEventCount } = session;
  const fold = session.surface ?? foldSurfaceAt(events);
  const { shadowedBy, replacedSeqs } = replacementMaps(fold.replacements);
  const entries: TranscriptEntry[] = [];
  /** Open tool calls by id (the latest assistant message declaring it wins). */
  const calls = new Map<string, TranscriptToolCall>();
  const resultsBySeq = new Map<number, TranscriptToolResult>();

  for (const e of events) {
    const synthetic = e.seq >= storedEventCount;
    const d = e.data ?? {};
    switch (e.type) {
      case 'turn/start':
      case 'turn/end': {
        const t = turnEntry(e, synthetic);
        if (t) entries.push(t);
        continue;
      }
      case 'tool/call': {
        const call = calls.get(String(d.callId));
        if (call) call.callSeq = e.seq;
        continue;
      }
    }
    if (isAppendSurfaceEvent(e)) {
      if (e.type === 'tool/result') {
        const result = toolResultOf(e, synthetic);
        resultsBySeq.set(e.seq, result);
        const callId = resultCallId(e);
        const call = calls.get(callId);
        if (call && call.result === null) call.result = result;
        else entries.push({ kind: 'tool-result', seq: e.seq, time: e.time, callId, result });
        continue;
      }
      const entry = messageEntry(e, synthetic, shadowedBy.get(e.seq) ?? null);
      for (const call of entry.toolCalls) calls.set(call.id, call);
      entries.push(entry);
      continue;
    }
    if (isReplacementSurfaceEvent(e)) {
      const shadowed = replacedSeqs.get(e.seq) ?? [];
      if (isCompaction(e)) {
        const summaryEvent = sourcesOf(e).map((s) => events[s as number]).find((x) => x?.type === 'compaction/summary');
        entries.push(compactionEntry(e, shadowed, summaryEvent, synthetic));
      } else if (e.type === 'tool/result') {
        const original = shadowed[0] ?? -1;
        const prior = resultsBySeq.get(original);
        if (prior) prior.prunedBy = e.seq;
        const pruned = toolResultOf(e, synthetic);
        resultsBySeq.set(e.seq, pruned);
        entries.push(pruneEntry(e, original, pruned, synthetic));
      } else entries.push(replacementEntry(e, shadowed, synthetic));
    }
  }
  return { sessionId: session.sessionId, header: session.header, storedEventCount, eventCount: events.length, entries };
}

/**
 * What the transcript learns only later in the log than the entry it
 * changes, in numbers: for each tool call (in declaration order) the
 * `tool/call` that started it last and the result paired with it; for each
 * result, the last prune that replaced it; the `compaction/summary` events
 * compaction checkpoints cite. Collected by `TranscriptLinker` in a first
 * pass, so `TranscriptStream` can print every entry final as it goes.
 */
export interface TranscriptLinks {
  callSeqs: (number | null)[];
  resultSeqs: (number | null)[];
  prunedBy: Map<number, number>;
  /** Seqs of cited compaction/summary events (their text is fetched before the printing pass). */
  summarySeqs: number[];
}

/** The first pass of a streamed transcript: the same pairing as `buildTranscript`, numbers only. */
export class TranscriptLinker {
  private readonly calls = new Map<string, number>();
  private readonly results = new Set<number>();
  private readonly summaries = new Set<number>();
  private readonly cited = new Set<number>();
  private readonly out: TranscriptLinks = { callSeqs: [], resultSeqs: [], prunedBy: new Map(), summarySeqs: [] };
  private readonly replacedSeqs: Map<number, number[]>;
  private done = false;

  constructor(replacements: readonly Replacement[]) {
    this.replacedSeqs = replacementMaps(replacements).replacedSeqs;
  }

  observe(e: SessionEvent): void {
    if (e.type === 'turn/start' || e.type === 'turn/end') return;
    if (e.type === 'compaction/summary') this.summaries.add(e.seq);
    if (e.type === 'tool/call') {
      const at = this.calls.get(String(e.data?.callId));
      if (at !== undefined) this.out.callSeqs[at] = e.seq;
      return;
    }
    if (isAppendSurfaceEvent(e)) {
      if (e.type === 'tool/result') {
        this.results.add(e.seq);
        const at = this.calls.get(resultCallId(e));
        if (at !== undefined && this.out.resultSeqs[at] === null) this.out.resultSeqs[at] = e.seq;
        return;
      }
      const d: NonNullable<Reads> = e.data ?? {};
      const message: MessageView = e.type === 'user/message' ? d : d.message;
      const content: BlockView[] = Array.isArray(message?.content) ? message.content : [];
      for (const block of content) {
        if (block?.type !== 'tool-call') continue;
        this.calls.set(String(block.id), this.out.callSeqs.length);
        this.out.callSeqs.push(null);
        this.out.resultSeqs.push(null);
      }
      return;
    }
    if (isReplacementSurfaceEvent(e)) {
      if (isCompaction(e)) {
        for (const s of sourcesOf(e)) {
          const at = elementIndex(s);
          if (at !== undefined) this.cited.add(at);
        }
      } else if (e.type === 'tool/result') {
        const original = (this.replacedSeqs.get(e.seq) ?? [])[0] ?? -1;
        if (this.results.has(original)) this.out.prunedBy.set(original, e.seq);
        this.results.add(e.seq);
      }
    }
  }

  /** The links, once every event was observed; the pairing state (one entry per tool call and result) is let go. */
  links(): TranscriptLinks {
    if (this.done) return this.out;
    this.out.summarySeqs = [...this.cited].filter((s) => this.summaries.has(s)).sort((a, b) => a - b);
    this.done = true;
    this.calls.clear();
    this.results.clear();
    this.summaries.clear();
    this.cited.clear();
    this.replacedSeqs.clear();
    return this.out;
  }
}

/**
 * The printing pass of a streamed transcript: fed every logical event in
 * order with the final fold and the links at hand, it hands back each entry
 * once it is final (a message waits only for the results of its own tool
 * calls), so no pass holds the log.
 */
export class TranscriptStream {
  private readonly shadowedBy: Map<number, number>;
  private readonly replacedSeqs: Map<number, number[]>;
  /** Entries not handed out yet, in order; the head waits while `waiting` has its results. */
  private readonly queue: TranscriptEntry[] = [];
  private readonly waiting = new Map<TranscriptEntry, number>();
  private readonly pending = new Map<number, { call: TranscriptToolCall; entry: TranscriptEntry }>();
  private declared = 0;

  constructor(
    private readonly storedEventCount: number,
    replacements: readonly Replacement[],
    private readonly links: TranscriptLinks,
    /** The cited compaction/summary events, by seq (`links.summarySeqs`). */
    private readonly summaries: ReadonlyMap<number, SessionEvent>,
  ) {
    ({ shadowedBy: this.shadowedBy, replacedSeqs: this.replacedSeqs } = replacementMaps(replacements));
  }

  /** Feed one event; the entries that became final. */
  push(e: SessionEvent): TranscriptEntry[] {
    const synthetic = e.seq >= this.storedEventCount;
    if (e.type === 'turn/start' || e.type === 'turn/end') {
      const t = turnEntry(e, synthetic);
      if (t) this.queue.push(t);
    } else if (e.type === 'tool/call') {
      // Its seq is already in the links.
    } else if (isAppendSurfaceEvent(e)) {
      if (e.type === 'tool/result') {
        const result = toolResultOf(e, synthetic);
        result.prunedBy = this.links.prunedBy.get(e.seq) ?? null;
        const owner = this.pending.get(e.seq);
        if (owner) {
          this.pending.delete(e.seq);
          owner.call.result = result;
          const left = (this.waiting.get(owner.entry) as number) - 1;
          if (left === 0) this.waiting.delete(owner.entry);
          else this.waiting.set(owner.entry, left);
        } else this.queue.push({ kind: 'tool-result', seq: e.seq, time: e.time, callId: resultCallId(e), result });
      } else {
        const entry = messageEntry(e, synthetic, this.shadowedBy.get(e.seq) ?? null);
        let waits = 0;
        for (const call of entry.toolCalls) {
          const at = this.declared++;
          call.callSeq = this.links.callSeqs[at] ?? null;
          const resultSeq = this.links.resultSeqs[at] ?? null;
          if (resultSeq !== null) {
            this.pending.set(resultSeq, { call, entry });
            waits++;
          }
        }
        if (waits > 0) this.waiting.set(entry, waits);
        this.queue.push(entry);
      }
    } else if (isReplacementSurfaceEvent(e)) {
      const shadowed = this.replacedSeqs.get(e.seq) ?? [];
      if (isCompaction(e)) {
        const summaryEvent = sourcesOf(e).map((s) => {
          const at = elementIndex(s);
          return at === undefined ? undefined : this.summaries.get(at);
        }).find((x) => x?.type === 'compaction/summary');
        this.queue.push(compactionEntry(e, shadowed, summaryEvent, synthetic));
      } else if (e.type === 'tool/result') this.queue.push(pruneEntry(e, shadowed[0] ?? -1, toolResultOf(e, synthetic), synthetic));
      else this.queue.push(replacementEntry(e, shadowed, synthetic));
    }
    return this.ready();
  }

  private ready(): TranscriptEntry[] {
    let n = 0;
    while (n < this.queue.length && !this.waiting.has(this.queue[n] as TranscriptEntry)) n++;
    return n === 0 ? [] : this.queue.splice(0, n);
  }

  /** After the last event: the rest (every linked result has been seen by then). */
  end(): TranscriptEntry[] {
    this.waiting.clear();
    return this.queue.splice(0);
  }
}

/**
 * The transcript of an accepted, indexed log without holding it: a linking
 * pass over the re-read events (unless `linked` was fed them), then a printing
 * pass that yields each entry final, in order. Output equals `buildTranscript`
 * on the held log.
 */
export async function streamedTranscript(indexed: IndexedInspection, linked?: TranscriptLinker): Promise<{ head: TranscriptHead; entries: AsyncGenerator<TranscriptEntry> }> {
  const r = indexed.inspection;
  if (r.error || !r.meta || !r.surface || !indexed.stream || !indexed.events) throw new Error('streamedTranscript needs an accepted log');
  const replacements = r.surface.replacements;
  // `linked`: a linker the caller already fed every logical event (in a pass of its own), so the linking pass is skipped.
  let linker = linked;
  if (!linker) {
    linker = new TranscriptLinker(replacements);
    for await (const batch of indexed.stream()) for (const e of batch) linker.observe(e);
  }
  const links = linker.links();
  const sparse = links.summarySeqs.length > 0 ? await indexed.events(links.summarySeqs.map((x) => [x, x] as [number, number])) : [];
  const summaries = new Map<number, SessionEvent>();
  for (const seq of links.summarySeqs) if (sparse[seq]) summaries.set(seq, sparse[seq] as SessionEvent);
  const head: TranscriptHead = { sessionId: r.meta.id, header: r.meta, storedEventCount: r.storedEventCount, eventCount: r.storedEventCount + r.closers.length };
  const stream = indexed.stream;
  async function* entries(): AsyncGenerator<TranscriptEntry> {
    const t = new TranscriptStream(r.storedEventCount, replacements, links, summaries);
    for await (const batch of stream()) for (const e of batch) yield* t.push(e);
    yield* t.end();
  }
  return { head, entries: entries() };
}

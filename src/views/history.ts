/**
 * Host history pagination (query-export.md §6.2; api-proxy `paginate`):
 * count append-origin `user/message` / `assistant/message` events backwards
 * from the window tail; each counted message's group starts at
 * `min(seq, ...sourceEventSeqs)`; when the count reaches `maxMessages` the cut
 * is that group's start; otherwise the cut is 0. The page is the contiguous
 * raw range `window[seq >= cut]` (every event type); `hasMore = cut > 0`.
 */
import type { SessionEvent } from '../log/types.js';
import { isAppendSurfaceEvent } from '../log/surface.js';
import { jsonByteLength } from '../core/json.js';

const MESSAGE_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message']);

/** The Host's default page size (also the browser's `PAGE_MESSAGES`). */
export const DEFAULT_MAX_MESSAGES = 50;

/** One page of a Host's history, as DSH serves it. */
export interface HistoryPage {
  beforeSeq: number | null;
  maxMessages: number;
  /** First seq of the page (= the cut when the page is not empty). */
  cut: number;
  hasMore: boolean;
  events: SessionEvent[];
  /** Seqs of the append-origin messages counted, newest first (at most maxMessages). */
  countedMessageSeqs: number[];
  firstSeq: number | null;
  lastSeq: number | null;
  /** Events of the page by type. */
  countsByType: Record<string, number>;
  /** Serialized size of the page's events (JSON text, UTF-8), the response's dominant cost. */
  bytes: number;
  /** Largest single message group on the page (events from its group start to the message). */
  largestGroup: { messageSeq: number; startSeq: number; events: number } | null;
}

/** A counted message's group start: `min(seq, ...sourceEventSeqs)`. */
function groupStartOf(e: SessionEvent): number {
  let groupStart = e.seq;
  if (Array.isArray(e.sourceEventSeqs)) for (const s of e.sourceEventSeqs) if (s < groupStart) groupStart = s;
  return groupStart;
}

/**
 * The append-origin messages of a log as paging counts them (seq and group
 * start), collected event by event: enough to find a page's cut without
 * holding the log, so a streaming reader re-reads only the page.
 */
export class MessageGroups {
  constructor(
    private readonly seqs: number[] = [],
    private readonly starts: number[] = [],
  ) {}
  /** The collected (seq, group start) pairs, for a persistent index. */
  pairs(): { seqs: readonly number[]; starts: readonly number[] } {
    return { seqs: this.seqs, starts: this.starts };
  }
  /** A copy that can observe more events (closers) without changing this one. */
  clone(): MessageGroups {
    return new MessageGroups(this.seqs.slice(), this.starts.slice());
  }
  observe(e: SessionEvent): void {
    if (!MESSAGE_TYPES.has(e.type) || !isAppendSurfaceEvent(e)) return;
    this.seqs.push(e.seq);
    this.starts.push(groupStartOf(e));
  }
  /** `paginate`'s cut for the window before `beforeSeq` (0 when it holds fewer than `maxMessages` messages). */
  cut(beforeSeq: number | undefined, maxMessages: number): number {
    let count = 0;
    for (let i = this.seqs.length - 1; i >= 0; i--) {
      if (beforeSeq !== undefined && (this.seqs[i] as number) >= beforeSeq) continue;
      count++;
      if (count >= maxMessages) return this.starts[i] as number;
    }
    return 0;
  }
}

/** One Host history window (`dsh history`): the messages before `beforeSeq`, at most `maxMessages` of them. */
export function paginate(events: readonly SessionEvent[], beforeSeq: number | undefined, maxMessages: number): HistoryPage {
  // The logical view is contiguous (events[i].seq === i): slice instead of filtering the whole log per page.
  const contiguous = events.length === 0 || ((events[0] as SessionEvent).seq === 0 && (events[events.length - 1] as SessionEvent).seq === events.length - 1);
  const window =
    beforeSeq === undefined ? events : contiguous ? events.slice(0, Math.max(0, Math.min(beforeSeq, events.length))) : events.filter((e) => e.seq < beforeSeq);
  let count = 0;
  let cut = 0;
  const counted: number[] = [];
  let largestGroup: HistoryPage['largestGroup'] = null;
  for (let i = window.length - 1; i >= 0; i--) {
    const e = window[i] as SessionEvent;
    if (!MESSAGE_TYPES.has(e.type) || !isAppendSurfaceEvent(e)) continue;
    count++;
    counted.push(e.seq);
    const groupStart = groupStartOf(e);
    const size = e.seq - groupStart + 1;
    if (!largestGroup || size > largestGroup.events) largestGroup = { messageSeq: e.seq, startSeq: groupStart, events: size };
    if (count >= maxMessages) {
      cut = groupStart;
      break;
    }
  }
  const page = contiguous ? window.slice(Math.min(cut, window.length)) : window.filter((e) => e.seq >= cut);
  const countsByType: Record<string, number> = {};
  let bytes = 0;
  for (const e of page) {
    countsByType[e.type] = (countsByType[e.type] ?? 0) + 1;
    bytes += jsonByteLength(e);
  }
  return {
    beforeSeq: beforeSeq ?? null,
    maxMessages,
    cut,
    hasMore: cut > 0,
    events: page,
    countedMessageSeqs: counted,
    firstSeq: page.length ? (page[0] as SessionEvent).seq : null,
    lastSeq: page.length ? (page[page.length - 1] as SessionEvent).seq : null,
    countsByType,
    bytes,
    largestGroup,
  };
}

/**
 * Walk every page backwards the way the browser's `loadOlder` does: the next
 * request's `beforeSeq` is the current page's first seq; stop when `hasMore`
 * is false (or a page comes back empty).
 */
export function allPages(events: readonly SessionEvent[], beforeSeq: number | undefined, maxMessages: number): HistoryPage[] {
  const pages: HistoryPage[] = [];
  let before = beforeSeq;
  for (;;) {
    const page = paginate(events, before, maxMessages);
    pages.push(page);
    if (!page.hasMore || page.firstSeq === null) break;
    before = page.firstSeq;
  }
  return pages;
}

export interface SizeLimits {
  /** Warn when a page holds more raw events than this per counted message. */
  eventsPerMessage: number;
  /** Warn when a page's serialized events exceed this many bytes. */
  bytes: number;
}

/** DSH's default page-size limits of a Host history window. */
export const DEFAULT_SIZE_LIMITS: SizeLimits = { eventsPerMessage: 1000, bytes: 8 * 1024 * 1024 };

/**
 * The page-size risk (query-export §9 #1): `maxMessages` has no upper bound
 * and only append-origin messages count, so chunks, tool events and log-only
 * records per page are unbounded. Returns warning texts (empty when fine).
 */
export function pageSizeWarnings(page: HistoryPage, limits: SizeLimits = DEFAULT_SIZE_LIMITS): string[] {
  const out: string[] = [];
  const counted = Math.max(1, page.countedMessageSeqs.length);
  const ratio = page.events.length / counted;
  const where = `page seq ${page.firstSeq ?? '-'}..${page.lastSeq ?? '-'}${page.beforeSeq !== null ? ` (beforeSeq ${page.beforeSeq})` : ''}`;
  if (ratio > limits.eventsPerMessage) {
    const g = page.largestGroup;
    out.push(
      `${where}: ${page.events.length} raw events for ${page.countedMessageSeqs.length} counted message(s) (${Math.round(ratio)} per message, limit ${limits.eventsPerMessage}); the Host's maxMessages bounds messages, not events${g ? `; largest message group: seq ${g.startSeq}..${g.messageSeq} (${g.events} events)` : ''}`,
    );
  }
  if (page.bytes > limits.bytes) {
    out.push(`${where}: ${page.bytes} bytes of events (limit ${limits.bytes}); a Host history response this size is not bounded by maxMessages`);
  }
  return out;
}

/**
 * The Host serves cold history and fork only for persisted sessions with a
 * cwd (`inspectApiRemoteSession`); a cwd-less one is `session "<id>" not
 * found` there. dsh still reads it; this is the note to print.
 */
export function hostServableWarning(header: { id: string; cwd?: string }): string | null {
  return header.cwd === undefined
    ? `session "${header.id}" has no cwd: a live Host would answer "session \\"${header.id}\\" not found" for it (cold sessions without cwd are not servable); showing what the rule would give anyway`
    : null;
}

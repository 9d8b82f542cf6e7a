/**
 * Literal event search with session-query's semantics (query-export.md §4.2,
 * §4.3): documents are events with non-empty semantic text
 * (`extractSessionEventText`); the text clause is a literal,
 * whitespace-flexible, case-insensitive (Unicode `iu`) substring match;
 * snippets follow the SQLite provider's `makeSnippet` (≤ 240 code points,
 * whitespace collapsed, the window opening floor(max/3) code points before the
 * first match, `…` on a cut side).
 */
import type { BlockView, CommonPayloadKeys, SessionEvent, View } from '../log/types.js';
import { SessionQueryError } from './messages.js';
import type { Labels, SurfaceLabel } from './labels.js';

/** DSH's default snippet size (`SESSION_QUERY_SQLITE_SNIPPET_CHARS`). */
export const SNIPPET_CHARS = 240;

function joinText(parts: readonly unknown[]): string {
  return parts
    .map((p) => (typeof p === 'string' ? p.trim() : ''))
    .filter((p) => p.length > 0)
    .join('\n');
}

function blockText(value: unknown): unknown[] {
  if (!value || typeof value !== 'object') return [];
  const block = value as NonNullable<BlockView>;
  switch (block.type) {
    case 'text':
      return [block.text];
    case 'tool-call':
      return [block.name, block.arguments];
    case 'tool-result':
      return Array.isArray(block.content) ? block.content.flatMap(blockText) : [];
    default:
      // reasoning, image and unknown blocks contribute nothing.
      return [];
  }
}

function contentText(content: unknown): string {
  return Array.isArray(content) ? joinText(content.flatMap(blockText)) : '';
}

function turnEndText(reason: CommonPayloadKeys['reason']): string {
  switch (reason?.kind) {
    case 'error':
      return joinText(['error', reason.error?.['message']]);
    case 'aborted':
      return 'aborted';
    case 'max-tokens':
    case 'interrupted':
      return reason.kind as string;
    default:
      return '';
  }
}

/** session-query's `extractSessionEventText`: the semantic text of one event ('' = no document). */
export function extractSessionEventText(event: SessionEvent): string {
  const d = event.data ?? {};
  switch (event.type) {
    case 'user/message':
      return contentText(d.content);
    case 'assistant/message':
      return contentText(d.message?.content);
    case 'tool/call':
      return joinText([d.name, d.arguments]);
    case 'tool/result':
      return joinText([contentText(d.message?.content), d.error?.name ?? '', d.error?.code ?? '']);
    case 'todo/write':
      return Array.isArray(d['todos']) ? joinText((d['todos'] as View<{ status: unknown; content: unknown }>[]).flatMap((t) => [t?.status, t?.content])) : '';
    case 'turn/end':
      return turnEndText(d.reason);
    default:
      return '';
  }
}

/** session-query's text clause: trimmed, split on whitespace, each part escaped, joined by `\s+`, flags `iu`. */
export function compileTextFilter(text: string): RegExp {
  const trimmed = text.trim();
  if (trimmed.length === 0) throw new SessionQueryError('session text filter must contain non-whitespace text', 'SESSION_QUERY_INVALID_FILTER');
  const pattern = trimmed
    .split(/\s+/u)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/gu, '\\$&'))
    .join('\\s+');
  return new RegExp(pattern, 'iu');
}

export interface Snippet {
  /** At most `maxChars` code points. */
  text: string;
  /** Highlighted match ranges in the snippet, [start, end) in code points. */
  highlights: [number, number][];
}

const HL_START = '\uFDD0';
const HL_END = '\uFDD1';

/**
 * Snippet of `text` around `matches` (UTF-16 [start, end) ranges; the first
 * one positions the window), with DSH's makeSnippet windowing.
 */
export function snippetOf(text: string, matches: readonly [number, number][], maxChars = SNIPPET_CHARS): Snippet {
  // FTS-side sanitizing (NUL and the highlight noncharacters become U+FFFD), one code point for one.
  const clean = text.replaceAll('\0', '\uFFFD').replaceAll(HL_START, '\uFFFD').replaceAll(HL_END, '\uFFFD');
  const chars: string[] = [];
  const marked: boolean[] = [];
  let matchStart: number | undefined;
  let unit = 0;
  let m = 0;
  for (const ch of clean) {
    while (m < matches.length && (matches[m] as [number, number])[1] <= unit) m++;
    const inMatch = m < matches.length && (matches[m] as [number, number])[0] <= unit;
    if (inMatch && matchStart === undefined) matchStart = chars.length;
    if (/\s/u.test(ch)) {
      if (chars.length > 0 && chars[chars.length - 1] !== ' ') {
        chars.push(' ');
        marked.push(inMatch);
      }
    } else {
      chars.push(ch);
      marked.push(inMatch);
    }
    unit += ch.length;
  }
  if (chars[chars.length - 1] === ' ') {
    chars.pop();
    marked.pop();
  }
  const anchor = matchStart ?? 0;
  let start = 0;
  let end = chars.length;
  let prefix = '';
  let suffix = '';
  if (chars.length > maxChars) {
    if (maxChars === 1) return { text: '…', highlights: [] };
    const at = Math.min(anchor, chars.length - 1);
    start = Math.max(0, at - Math.floor(maxChars / 3));
    prefix = start > 0 ? '…' : '';
    suffix = '…';
    let room = maxChars - prefix.length - suffix.length;
    if (room < 1) {
      start = at;
      suffix = '';
      room = maxChars - prefix.length;
    } else if (at >= start + room) {
      start = at - room + 1;
    }
    end = Math.min(chars.length, start + room);
    if (end === chars.length) {
      suffix = '';
      room = maxChars - prefix.length;
      start = Math.max(0, end - room);
    }
    end = Math.min(chars.length, start + room);
  }
  const highlights: [number, number][] = [];
  const offset = prefix.length;
  for (let i = start; i < end; i++) {
    if (!marked[i]) continue;
    const last = highlights[highlights.length - 1];
    if (last && last[1] === i - start + offset) last[1]++;
    else highlights.push([i - start + offset, i - start + offset + 1]);
  }
  return { text: `${prefix}${chars.slice(start, end).join('')}${suffix}`, highlights };
}

/** All matches of the compiled filter in `text` (UTF-16 ranges). */
export function matchRanges(pattern: RegExp, text: string): [number, number][] {
  const g = new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : pattern.flags + 'g');
  const out: [number, number][] = [];
  for (const m of text.matchAll(g)) {
    if (m[0].length === 0) continue;
    out.push([m.index as number, (m.index as number) + m[0].length]);
  }
  return out;
}

export interface SearchFilters {
  /** Event types; an entry ending in `/` is a prefix. */
  types?: readonly string[];
  labels?: readonly SurfaceLabel[];
  /** Only events with time >= since (epoch ms). */
  since?: number;
  snippetChars?: number;
}

/** One event a literal search matched (`dsh search`). */
export interface SearchHit {
  sessionId: string;
  seq: number;
  type: string;
  time: number;
  label: SurfaceLabel;
  snippet: string;
  highlights: [number, number][];
  matchCount: number;
  /** Seq is a synthetic crash closer (exists only in the logical view). */
  synthetic?: true;
}

/**
 * filterEvents over one session's documents (ascending seq, documents with non-empty text only), event by
 * event: labels come from the final fold, so they are applied at the end.
 */
export function searchFold(sessionId: string, pattern: RegExp, filters: SearchFilters = {}): { observe(e: SessionEvent): void; finish(labels: Labels, storedEventCount: number): SearchHit[] } {
  const found: Omit<SearchHit, 'sessionId' | 'label' | 'synthetic'>[] = [];
  const typeOk = (t: string) => !filters.types || filters.types.some((x) => (x.endsWith('/') ? t.startsWith(x) : t === x));
  return {
    observe(e) {
      if (!typeOk(e.type)) return;
      if (filters.since !== undefined && !(e.time >= filters.since)) return;
      const text = extractSessionEventText(e);
      if (text.length === 0 || !pattern.test(text)) return;
      // Keep what a hit reports (a snippet), not the event or its text.
      const ranges = matchRanges(pattern, text);
      const snip = snippetOf(text, ranges, filters.snippetChars ?? SNIPPET_CHARS);
      found.push({ seq: e.seq, type: e.type, time: e.time, snippet: snip.text, highlights: snip.highlights, matchCount: ranges.length });
    },
    finish(labels, storedEventCount) {
      const hits: SearchHit[] = [];
      for (const f of found) {
        const label = labels.of(f.seq);
        if (filters.labels && !filters.labels.includes(label)) continue;
        hits.push({
          sessionId,
          seq: f.seq,
          type: f.type,
          time: f.time,
          label,
          snippet: f.snippet,
          highlights: f.highlights,
          matchCount: f.matchCount,
          ...(f.seq >= storedEventCount ? { synthetic: true as const } : {}),
        });
      }
      return hits;
    },
  };
}

/** Search a held session (see `searchFold`). */
export function searchSession(
  sessionId: string,
  events: readonly SessionEvent[],
  labels: Labels,
  pattern: RegExp,
  filters: SearchFilters = {},
  storedEventCount = events.length,
): SearchHit[] {
  const fold = searchFold(sessionId, pattern, filters);
  for (const e of events) fold.observe(e);
  return fold.finish(labels, storedEventCount);
}

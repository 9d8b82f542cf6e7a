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
import { analyzeLog, type FoldLike } from '../views/trace.js';
import { clip, eventSummary } from '../views/messages.js';
import type { PageEventFacts } from './page/model.js';

/** Previews are cut here (the events list shows this much; the raw JSON has everything). */
export const PREVIEW_LIMIT = 240;

const LABEL_CHAR = { current: 'c', shadowed: 's', 'log-only': 'l' } as const;

/** No events (a log DSH refuses): empty facts. */
export function emptyFacts(): PageEventFacts {
  return { labels: '', previews: [], preview: [], previewLimit: PREVIEW_LIMIT, message: '', messages: {}, replacedBy: [], replaced: [], derived: [] };
}

/** The facts of a loaded log; `fold`: its final surface (the inspection's; refolded when absent). */
export function eventFacts(events: readonly SessionEvent[], fold?: FoldLike): PageEventFacts {
  const a = analyzeLog(events, fold);
  const labels: string[] = [];
  const message: string[] = [];
  const messages: Record<string, unknown> = {};
  const previews: string[] = [];
  const previewIndex = new Map<string, number>();
  const preview: number[] = [];
  for (const e of events) {
    labels.push(LABEL_CHAR[a.labels.of(e.seq)]);
    const m = deriveEventMessage(e);
    if (m === null || m === undefined) message.push('-');
    else if (m === e.data) message.push('d');
    else if (m === (e.data as { message?: unknown } | undefined)?.message) message.push('m');
    else {
      message.push('x');
      messages[String(e.seq)] = m;
    }
    const p = clip(eventSummary(e), PREVIEW_LIMIT);
    let at = previewIndex.get(p);
    if (at === undefined) {
      at = previews.length;
      previews.push(p);
      previewIndex.set(p, at);
    }
    preview.push(at);
  }
  const replacedBy: number[] = [];
  for (const [s, by] of a.replacedBy) replacedBy.push(s, by);
  const replaced: number[] = [];
  for (const [r, list] of a.replacedEventSeqs) {
    replaced.push(r);
    pushList(replaced, list);
  }
  return { labels: labels.join(''), previews, preview, previewLimit: PREVIEW_LIMIT, message: message.join(''), messages, replacedBy, replaced, derived: derivedRuns(a.derived) };
}

/** Run-length code a seq → citers map: consecutive seqs with equal citer lists share one run. */
function derivedRuns(derived: Map<number, number[]>): number[] {
  const seqs = [...derived.keys()].sort((x, y) => x - y);
  const out: number[] = [];
  let i = 0;
  while (i < seqs.length) {
    const first = seqs[i] as number;
    const list = derived.get(first) as number[];
    let j = i + 1;
    while (j < seqs.length && seqs[j] === first + (j - i) && sameList(derived.get(seqs[j] as number) as number[], list)) j++;
    out.push(first, j - i);
    pushList(out, list);
    i = j;
  }
  return out;
}

/** Append `list.length`, then the list (no argument spreading: lists can be long). */
function pushList(out: number[], list: readonly number[]): void {
  out.push(list.length);
  for (const x of list) out.push(x);
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import { type HistoryPage, EVENT_PREVIEW_WIDTH, eventSummary } from '../../api/views.js';
import { formatCount } from '../../api/log.js';

const n = formatCount;

/** One page: its metadata line, then one line per raw event (pure). */
export function renderHistoryPage(page: HistoryPage, c: ChalkInstance, index: number | null, counted: ReadonlySet<number> = new Set(page.countedMessageSeqs)): string {
  const out: string[] = [];
  const range = page.firstSeq === null ? 'empty' : `seq ${page.firstSeq}..${page.lastSeq}`;
  out.push(
    c.bold(`${index === null ? 'page' : `page ${index + 1}`}`) +
      `  beforeSeq ${page.beforeSeq ?? '(tail)'}  maxMessages ${page.maxMessages}  ${range}  ${n(page.events.length)} events, ${page.countedMessageSeqs.length} counted messages, ${n(page.bytes)} bytes  hasMore ${page.hasMore ? c.yellow('true') : 'false'}`,
  );
  for (const e of page.events) {
    const mark = counted.has(e.seq) ? c.green('*') : ' ';
    out.push(`${mark} ${String(e.seq).padStart(6)}  ${c.cyan(escapeControl(e.type).padEnd(20))} ${preview(eventSummary(e), EVENT_PREVIEW_WIDTH)}`);
  }
  return out.join('\n') + '\n';
}

/**
 * The self-contained HTML of `dsh report`: a fixed template, one inline
 * stylesheet and one inline module script (both allowed by sha256 in a strict
 * Content-Security-Policy; the script is src/report/page/main.ts compiled),
 * and the data as two `application/json` blobs (report document, then the
 * events with their per-event facts). Nothing is fetched: no network, fonts,
 * images or external scripts. Log text only appears inside the JSON blobs,
 * escaped so it cannot end the element; the page renders it with textContent.
 */
import { createHash } from 'node:crypto';
import type { SessionEvent } from '../log/types.js';
import type { ReportData } from './data.js';
import { clientScript } from './client.js';
import type { PageEventFacts } from './page/model.js';
import { REPORT_CSS } from './style.js';
import { jsonText, toJson, toJsonParts } from '../core/json.js';

/** Escape text for an HTML text node or a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] as string);
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>` and `&` as
 * \u escapes (so `</script>` and `<!--` cannot appear), and `://` as
 * `:\u002f\u002f` so the file holds no literal URL even when the log does.
 * Outside JSON strings none of these characters can occur, so the result
 * parses to the same value.
 */
export function embedJson(value: unknown): string {
  return escapeEmbedded(toJson(value) ?? 'null');
}

/**
 * {@link embedJson} as pieces to write one after another: one piece, unless the value holds a long
 * string; then its JSON text's pieces (`jsonText`): a 200 MB message is never serialized or escaped whole.
 */
export function embedJsonPieces(value: unknown): Generator<string> {
  return embedPieces(value === undefined ? ['null'] : jsonText(value));
}

/** {@link embedJson} in pieces (`toJsonParts`): the same text, for a document too long for one string. */
export function embedJsonParts(value: unknown, depth: number): Generator<string> {
  return embedPieces(toJsonParts(value, depth));
}

/**
 * JSON text given in pieces (cut anywhere), escaped as {@link embedJson} escapes it and gathered
 * into pieces of about 1 MiB. A `:` or `:/` ending a gathered piece waits for the next, so no `://`
 * is cut (the other escapes are of single characters).
 */
export function* embedPieces(parts: Iterable<string>): Generator<string> {
  let batch: string[] = [];
  let size = 0;
  for (const part of parts) {
    batch.push(part);
    size += part.length;
    if (size >= 1 << 20) {
      const text = batch.join('');
      const hold = text.endsWith(':/') ? 2 : text.endsWith(':') ? 1 : 0;
      yield escapeEmbedded(text.slice(0, text.length - hold));
      batch = hold > 0 ? [text.slice(text.length - hold)] : [];
      size = hold;
    }
  }
  if (batch.length > 0) yield escapeEmbedded(batch.join(''));
}

function escapeEmbedded(text: string): string {
  return text.replace(/[<>&]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).replace(/:\/\//g, ':\\u002f\\u002f');
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

/** The Content-Security-Policy of every report. */
export function contentSecurityPolicy(): string {
  return [
    "default-src 'none'",
    `script-src 'sha256-${sha256(clientScript())}'`,
    `style-src 'sha256-${sha256(REPORT_CSS)}'`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

const TABS: [string, string][] = [
  ['overview', 'Overview'],
  ['timeline', 'Timeline'],
  ['context', 'Context'],
  ['conversation', 'User vs model'],
  ['compactions', 'Compactions'],
  ['findings', 'Findings'],
  ['events', 'Events'],
  ['search', 'Search'],
];

/** The document start up to `<body>`: CSP, no referrer, generator, title and the inline stylesheet. */
export function pageHead(title: string, csp: string, css: string, version: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dsh ${escapeHtml(version)}">
<title>${escapeHtml(title)}</title>
<style>${css}</style>
</head>
<body>`;
}

/** The page up to the report document's blob (the document's text follows). */
export function reportOpening(data: Pick<ReportData, 'session' | 'tool'>): string {
  const title = `dsh report · ${data.session.id ?? 'unknown session'}`;
  const tabs = TABS.map(([id, label], i) => `<button type="button" id="tab-${id}" data-tab="${id}" aria-selected="false" title="${escapeHtml(label)} (${i + 1})"${id === 'search' ? ' hidden' : ''}>${escapeHtml(label)}</button>`).join('');
  const sections = TABS.map(([id]) => `<section id="s-${id}" aria-labelledby="tab-${id}"${id === 'overview' ? '' : ' hidden'}></section>`).join('\n');
  return `${pageHead(title, contentSecurityPolicy(), REPORT_CSS, data.tool.version)}
<header id="bar">
<h1 id="title">${escapeHtml(title)}</h1>
<span id="status" class="badge"></span>
<nav id="tabs" role="tablist">${tabs}</nav>
<input id="search" type="search" placeholder="Search events ( / )" autocomplete="off" spellcheck="false" aria-label="search events">
<span id="search-status" class="muted"></span>
</header>
<main>
<noscript><p class="empty">This report needs JavaScript (inline, offline; nothing is fetched). The data is in the application/json script elements of this file.</p></noscript>
${sections}
<svg id="svg-ns" width="0" height="0" aria-hidden="true"></svg>
</main>
<aside id="inspector" hidden><button type="button" id="insp-close" title="close (Esc)">×</button><div id="insp-body"></div></aside>
<footer class="muted">Generated offline by dsh ${escapeHtml(data.tool.version)} from ${escapeHtml(data.session.file.split(/[\\/]/).pop() ?? '')}. Keys: / search · j/k move · Enter open · Esc close · 1–8 tabs.</footer>
<script type="application/json" id="dsh-data">`;
}

/** Between the report document's blob and the events blob. */
export const BETWEEN_BLOBS = `</script>
<script type="application/json" id="dsh-events">`;

/** After the events blob: the page script and the end of the page. */
export function reportClosing(): string {
  return `</script>
<script type="module">${clientScript()}</script>
</body>
</html>
`;
}

/**
 * The report as a sequence of string parts (the events blob is produced one
 * event at a time, so no single string holds the whole log).
 */
export function* reportParts(data: ReportData, events: readonly SessionEvent[], facts: PageEventFacts): Generator<string> {
  yield reportOpening(data);
  yield embedJson(data);
  yield BETWEEN_BLOBS;
  yield* eventsBlob(events, facts);
  yield reportClosing();
}

/**
 * The rows of the events blob, one event at a time in log order: an event whose keys are exactly
 * type, seq, time, data (in that order), with seq = its index and an integer time, is the row
 * `[typeIndex, time − previous time, data]`; any other event is its own object verbatim.
 */
export class EventRows {
  private readonly types = new Map<string, number>();
  private prev = 0;
  private i = 0;
  /** `{"rows":[` */
  static readonly OPEN = '{"rows":[';
  /** The next event's row (with its separating comma), in pieces when it holds a long string. */
  *row(e: SessionEvent): Generator<string, void, undefined> {
    const i = this.i++;
    const keys = Object.keys(e);
    const time = e.time;
    const prev = this.prev;
    if (typeof time === 'number') this.prev = time;
    if (keys.length === 4 && keys[0] === 'type' && keys[1] === 'seq' && keys[2] === 'time' && keys[3] === 'data' && e.seq === i && typeof e.type === 'string' && Number.isSafeInteger(time) && Number.isSafeInteger(prev)) {
      let t = this.types.get(e.type);
      if (t === undefined) {
        t = this.types.size;
        this.types.set(e.type, t);
      }
      const head = `${i > 0 ? ',' : ''}[${t},${time - prev},`;
      const data = embedJsonPieces(e.data);
      const first = data.next();
      const second = first.done ? first : data.next();
      // The usual row is one string; a row holding a long string comes in its pieces.
      if (second.done) yield `${head}${first.done ? 'null' : first.value}]`;
      else {
        yield head + (first.value as string);
        yield second.value;
        yield* data;
        yield ']';
      }
      return;
    }
    if (i > 0) yield ',';
    yield* embedJsonPieces(e);
  }
  /** After the last row: the type table, up to the facts' value. */
  close(): string {
    return `],"types":${embedJson([...this.types.keys()])},"facts":`;
  }
}

/**
 * Text gathered into pieces of about 1 MiB, so a streamed document is written in few, large
 * writes. `push` returns the gathered piece once it reaches that size; `take` returns what is
 * gathered (possibly empty) and starts again. With a `separator` (`,` for the inside of a JSON
 * array) it goes between the texts pushed; `start` opens the first piece without counting.
 */
export class TextBatch {
  private parts: string[];
  private size = 0;
  private first = true;
  private readonly separator: string;
  constructor(options: { start?: string; separator?: string } = {}) {
    this.parts = options.start === undefined ? [] : [options.start];
    this.separator = options.separator ?? '';
  }
  push(text: string): string | undefined {
    const t = this.first ? text : this.separator + text;
    this.first = false;
    this.parts.push(t);
    this.size += t.length;
    return this.size >= 1 << 20 ? this.take() : undefined;
  }
  /** Continue the last text pushed (no separator). */
  append(text: string): string | undefined {
    this.parts.push(text);
    this.size += text.length;
    return this.size >= 1 << 20 ? this.take() : undefined;
  }
  get empty(): boolean {
    return this.parts.length === 0;
  }
  take(): string {
    const piece = this.parts.join('');
    this.parts = [];
    this.size = 0;
    return piece;
  }
}

/**
 * The events blob, compactly: `{"rows":[…],"types":[…],"facts":{…}}` (rows: {@link EventRows}).
 * {@link decodeEventsBlob} (and the page script) rebuild objects that stringify identically. The
 * facts (labels, previews, messages, trace relations: src/report/facts.ts) come last, so a writer
 * can compute them while the rows stream out.
 */
export function* eventsBlob(events: readonly SessionEvent[], facts: PageEventFacts): Generator<string> {
  const rows = new EventRows();
  const batch = new TextBatch({ start: EventRows.OPEN });
  for (const e of events) {
    for (const text of rows.row(e)) {
      const piece = batch.push(text);
      if (piece !== undefined) yield piece;
    }
  }
  batch.push(rows.close());
  yield batch.take();
  yield embedJson(facts);
  yield '}';
}

/** Decode {@link eventsBlob} (the page script does the same). */
export function decodeEventsBlob(text: string): SessionEvent[] {
  const blob = JSON.parse(text) as { rows: unknown[]; types: string[] };
  let prev = 0;
  return blob.rows.map((r, i) => {
    if (Array.isArray(r)) {
      prev += r[1] as number;
      return { type: blob.types[r[0] as number] as string, seq: i, time: prev, data: r[2] };
    }
    const e = r as SessionEvent;
    if (typeof e.time === 'number') prev = e.time;
    return e;
  });
}

/** The whole report as one string (tests, small sessions). */
export function renderReportHtml(data: ReportData, events: readonly SessionEvent[], facts: PageEventFacts): string {
  return [...reportParts(data, events, facts)].join('');
}

/**
 * The report page: rendering, navigation and clicks over the two JSON blobs
 * of a report (src/report/html.ts). Every fact it shows (labels, traces,
 * previews, the messages of a dispatch) was computed by the writer with the
 * library's views (src/report/data.ts, src/report/facts.ts); the page only
 * looks them up and lays them out.
 *
 * Compiled by tsconfig.page.json (DOM library, no Node types) and inlined as
 * one module script. Log text is untrusted: it only ever reaches the DOM
 * through `textContent` / `dataset` / CSSOM, never through HTML parsing, and
 * every listener is attached here (no inline handlers).
 */
import type {
  HealthStatus,
  PageContext,
  PageData,
  PageDispatch,
  PageEvent,
  PageEventFacts,
  PageEventsBlob,
  PageRequestHeader,
  PageToolResult,
  PageSurfaceEntry,
  PageTranscriptEntry,
  PageTurn,
  PageUsage,
} from './model.js';

type Child = Node | string | null | undefined | false;
type Label = 'current' | 'shadowed' | 'log-only';

function $(id: string): HTMLElement {
  const n = document.getElementById(id);
  if (!n) throw new Error(`the report page has no #${id}`);
  return n;
}

const D = JSON.parse($('dsh-data').textContent ?? 'null') as PageData;

// ------------------------------------------------------------ DOM helpers
function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, text?: unknown): HTMLElementTagNameMap[K] {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined && text !== null) n.textContent = String(text);
  return n;
}
function add<T extends Node>(parent: T, ...children: Child[]): T {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return parent;
}
/** Append one child and return it. */
function put<T extends Node>(parent: Node, child: T): T {
  parent.appendChild(child);
  return child;
}
function kv(dl: HTMLElement, key: string, value: unknown): HTMLElement {
  add(dl, el('dt', null, key));
  const dd = el('dd');
  if (value instanceof Node) dd.appendChild(value);
  else dd.textContent = value === null || value === undefined ? '-' : String(value);
  dl.appendChild(dd);
  return dd;
}
function seqLink(seq: number, label?: string): HTMLButtonElement {
  const b = el('button', 'seq-link', label === undefined ? `#${seq}` : label);
  b.type = 'button';
  b.dataset['seq'] = String(seq);
  b.title = `open event ${seq}`;
  return b;
}
function badge(text: string, kind?: string | null): HTMLSpanElement {
  return el('span', 'badge' + (kind ? ' b-' + kind : ''), text);
}
function pre(text: string, cls?: string): HTMLPreElement {
  return el('pre', cls ?? 'raw', text);
}
function navItem<T extends HTMLElement>(n: T): T {
  n.classList.add('nav-item');
  if (n.tabIndex < 0) n.tabIndex = 0;
  return n;
}
function closestData(target: EventTarget | null, selector: string): HTMLElement | null {
  return target instanceof Element ? (target.closest(selector) as HTMLElement | null) : null;
}

// ------------------------------------------------------------ layout formatting (display only)
function num(n: unknown): string {
  return typeof n === 'number' ? n.toLocaleString('en-US') : String(n);
}
function iso(ms: unknown): string {
  return typeof ms === 'number' && isFinite(ms) ? new Date(ms).toISOString() : '-';
}
function clock(ms: unknown): string {
  return typeof ms === 'number' && isFinite(ms) ? new Date(ms).toISOString().slice(11, 23) : '';
}
function dur(ms: unknown): string {
  if (typeof ms !== 'number' || !isFinite(ms)) return '-';
  if (ms < 10000) return num(ms) + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
}
/** Shorten text for a narrow cell (the full value is one click away). */
function short(s: unknown, max: number): string {
  const t = String(s).replace(/\s+/g, ' ').trim();
  return t.length <= max ? t : t.slice(0, max - 1) + '\u2026';
}
function json(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}
function usageOf(u: unknown): PageUsage | null {
  return u && typeof u === 'object' ? (u as PageUsage) : null;
}
function usageText(raw: unknown): string {
  const u = usageOf(raw);
  if (!u) return '-';
  const p: string[] = [];
  if (u.inputTokens !== undefined) p.push('in ' + num(u.inputTokens));
  if (u.cacheReadTokens !== undefined) p.push('cache-read ' + num(u.cacheReadTokens));
  if (u.cacheWriteTokens !== undefined) p.push('cache-write ' + num(u.cacheWriteTokens));
  if (u.outputTokens !== undefined) p.push('out ' + num(u.outputTokens));
  if (u.reasoningTokens !== undefined) p.push('reasoning ' + num(u.reasoningTokens));
  return p.length ? p.join(', ') : '-';
}
function band(i: number): string {
  return 'hsl(' + ((i * 67) % 360) + ' 70% 50%)';
}
/** Badge colour of an end reason. */
function reasonKind(r: unknown): string {
  return /^completed|^stop|^tool-calls/.test(String(r)) ? 'ok' : /^open/.test(String(r)) ? 'warn' : 'bad';
}

// ------------------------------------------------------------ events and their facts (decoded on first use)
interface Loaded {
  events: PageEvent[];
  facts: PageEventFacts;
  replacedBy: Map<number, number>;
  replaced: Map<number, number[]>;
  derived: Map<number, number[]>;
}
let L: Loaded | null = null;

function loaded(): Loaded {
  if (L) return L;
  const node = document.getElementById('dsh-events');
  const blob = (node ? JSON.parse(node.textContent ?? 'null') : null) as PageEventsBlob | null;
  const rows = blob ? blob.rows : [];
  const types = blob ? blob.types : [];
  // Compact rows (eventsBlob in html.ts): [typeIndex, timeDelta, data] or the event verbatim.
  const events: PageEvent[] = new Array(rows.length);
  let prev = 0;
  for (let n = 0; n < rows.length; n++) {
    const row = rows[n];
    if (Array.isArray(row)) {
      prev += row[1] as number;
      events[n] = { type: types[row[0] as number] as string, seq: n, time: prev, data: row[2] };
    } else {
      const e = row as PageEvent;
      events[n] = e;
      if (typeof e.time === 'number') prev = e.time;
    }
  }
  const facts: PageEventFacts = blob
    ? blob.facts
    : { labels: '', previews: [], preview: [], previewLimit: 0, message: '', messages: {}, replacedBy: [], replaced: [], derived: [] };
  const replacedBy = new Map<number, number>();
  for (let i = 0; i + 1 < facts.replacedBy.length; i += 2) replacedBy.set(facts.replacedBy[i] as number, facts.replacedBy[i + 1] as number);
  const replaced = new Map<number, number[]>();
  for (let i = 0; i < facts.replaced.length; ) {
    const seq = facts.replaced[i] as number;
    const n = facts.replaced[i + 1] as number;
    replaced.set(seq, facts.replaced.slice(i + 2, i + 2 + n));
    i += 2 + n;
  }
  const derived = new Map<number, number[]>();
  for (let i = 0; i < facts.derived.length; ) {
    const first = facts.derived[i] as number;
    const run = facts.derived[i + 1] as number;
    const n = facts.derived[i + 2] as number;
    const list = facts.derived.slice(i + 3, i + 3 + n);
    for (let k = 0; k < run; k++) derived.set(first + k, list);
    i += 3 + n;
  }
  L = { events, facts, replacedBy, replaced, derived };
  return L;
}
function events(): PageEvent[] {
  return loaded().events;
}
function label(seq: number): Label {
  const c = loaded().facts.labels[seq];
  return c === 'c' ? 'current' : c === 's' ? 'shadowed' : 'log-only';
}
function preview(seq: number): string {
  const f = loaded().facts;
  const at = f.preview[seq];
  return at === undefined ? '' : (f.previews[at] ?? '');
}
/** The model message an event contributes (where the writer found it), or null. */
function messageOf(seq: number): unknown {
  const { events: ev, facts } = loaded();
  const e = ev[seq];
  switch (facts.message[seq]) {
    case 'd':
      return e ? e.data : null;
    case 'm':
      return e && e.data && typeof e.data === 'object' ? (e.data as { message?: unknown }).message : null;
    case 'x':
      return facts.messages[String(seq)] ?? null;
    default:
      return null;
  }
}
interface Trace {
  replacedBy: number | null;
  replacementChain: number[];
  replacedEventSeqs: number[];
  sourceEventSeqs: number[];
  derivedEventSeqs: number[];
}
/** `dsh trace` of one event, from the writer's relations. */
function traceOf(seq: number): Trace {
  const { events: ev, replacedBy, replaced, derived } = loaded();
  const e = ev[seq];
  const chain: number[] = [];
  const guard = new Set([seq]);
  let next = replacedBy.get(seq);
  while (next !== undefined && !guard.has(next)) {
    chain.push(next);
    guard.add(next);
    next = replacedBy.get(next);
  }
  return {
    replacedBy: replacedBy.get(seq) ?? null,
    replacementChain: chain,
    replacedEventSeqs: [...(replaced.get(seq) ?? [])],
    sourceEventSeqs: e && Array.isArray(e.sourceEventSeqs) ? [...(e.sourceEventSeqs as number[])] : [],
    derivedEventSeqs: [...(derived.get(seq) ?? [])],
  };
}
/** The surface node standing for `seq` now: itself if current, else the end of its replacement chain. */
function currentFor(seq: number): number {
  const chain = traceOf(seq).replacementChain;
  return label(seq) === 'current' || chain.length === 0 ? seq : (chain[chain.length - 1] as number);
}

const bandOf = new Map<number, number>();
D.surface.replacements.forEach((r, i) => bandOf.set(r.seq, i));

/** The dispatch owning a seq (its chunk span or its assistant/message). */
function dispatchOf(seq: number): PageDispatch | null {
  const ds = D.dispatches;
  let lo = 0;
  let hi = ds.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((ds[mid] as PageDispatch).first <= seq) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (at >= 0 && seq <= (ds[at] as PageDispatch).last) return ds[at] as PageDispatch;
  for (let i = Math.max(0, at - 2); i < ds.length && i <= at + 1; i++) if (ds[i]?.assistantSeq === seq) return ds[i] as PageDispatch;
  return null;
}
const nodeCache = new Map<number, number[]>();
/** Surface node seqs of dispatch `i` (decoding the delta-coded lists up to it). */
function nodesOf(i: number): number[] {
  const hit = nodeCache.get(i);
  if (hit) return hit;
  let j = i;
  while (j >= 0 && !nodeCache.has(j)) j--;
  let prev = j >= 0 ? (nodeCache.get(j) as number[]) : [];
  for (let k = j + 1; k <= i; k++) {
    const code = (D.dispatches[k] as PageDispatch).nodes;
    const cur = prev.slice(0, code[0]).concat(code.slice(1));
    nodeCache.set(k, cur);
    prev = cur;
  }
  return nodeCache.get(i) as number[];
}
/** The messages dispatch `i` sent (`dsh request`): its surface nodes' messages. */
function messagesOf(i: number): { seq: number; message: unknown }[] {
  const out: { seq: number; message: unknown }[] = [];
  for (const s of nodesOf(i)) {
    const m = messageOf(s);
    if (m !== null && m !== undefined) out.push({ seq: s, message: m });
  }
  return out;
}

// ------------------------------------------------------------ tabs
const TABS = ['overview', 'timeline', 'context', 'conversation', 'compactions', 'findings', 'events', 'search'] as const;
type Tab = (typeof TABS)[number];
const rendered = new Set<Tab>();
let active: Tab = 'overview';
function isTab(t: string | undefined): t is Tab {
  return (TABS as readonly string[]).includes(t ?? '');
}
function show(tab: string | undefined): void {
  if (!isTab(tab)) return;
  active = tab;
  for (const t of TABS) {
    const s = document.getElementById('s-' + t);
    if (s) s.hidden = t !== tab;
    const b = document.querySelector(`#tabs [data-tab="${t}"]`);
    if (b) b.setAttribute('aria-selected', t === tab ? 'true' : 'false');
  }
  render(tab);
  if (tab === 'events') evRender();
}
function render(tab: Tab): void {
  if (rendered.has(tab)) return;
  rendered.add(tab);
  if (tab === 'overview') renderOverview();
  else if (tab === 'timeline') renderTimeline();
  else if (tab === 'context') renderContext();
  else if (tab === 'conversation') renderConversation();
  else if (tab === 'compactions') renderCompactions();
  else if (tab === 'findings') renderFindings();
  else if (tab === 'events') renderEvents();
}

interface Chunked {
  upTo(i: number): void;
  all(): void;
}
/** Chunked list: render items in batches as a sentinel scrolls into view. */
function chunked<T>(container: HTMLElement, items: readonly T[], make: (item: T, i: number) => Node, batch: number): Chunked {
  let at = 0;
  const sentinel = el('div', 'sentinel');
  let io: IntersectionObserver | null = null;
  function more(limit?: number): void {
    if (at >= items.length) return;
    const end = Math.min(items.length, limit === undefined ? at + batch : limit);
    const frag = document.createDocumentFragment();
    for (; at < end; at++) frag.appendChild(make(items[at] as T, at));
    container.insertBefore(frag, sentinel);
    if (at >= items.length) {
      sentinel.remove();
      io?.disconnect();
    }
  }
  container.appendChild(sentinel);
  io = typeof IntersectionObserver === 'function' ? new IntersectionObserver((es) => (es.some((x) => x.isIntersecting) ? more() : undefined), { rootMargin: '800px' }) : null;
  more();
  if (io && at < items.length) io.observe(sentinel);
  return { upTo: (i) => (i >= at ? more(i + 1) : undefined), all: () => more(items.length) };
}

// ------------------------------------------------------------ overview
const HEALTH_TEXT: Record<HealthStatus, string> = {
  ok: 'healthy: DSH loads it unchanged',
  torn: 'torn tail (recoverable; DSH load() would repair it)',
  'needs-repair': 'crash state: DSH load() would append synthetic closers',
  refused: 'REFUSED by DSH',
  corrupt: 'CORRUPT: DSH cannot load it',
};
function renderOverview(): void {
  const root = $('s-overview');
  const S = D.session;
  const H = D.health;
  const Lg = D.lineage;
  const h = S.header ?? {};
  const grid = put(root, el('div', 'cards'));
  const c1 = put(grid, el('div', 'card'));
  add(c1, el('h2', null, 'Session'));
  let dl = put(c1, el('dl'));
  kv(dl, 'id', S.id);
  if (S.title) kv(dl, 'title', S.title);
  kv(dl, 'cwd', h.cwd === undefined ? '(none)' : h.cwd);
  kv(dl, 'created', iso(h.createdAt));
  kv(dl, 'format version', h.version);
  kv(dl, 'delegation depth', h.delegationDepth);
  if (h.agentPreset !== undefined) kv(dl, 'agent preset', h.agentPreset);
  if (h.origin !== undefined) kv(dl, 'origin', h.origin);
  kv(dl, 'time span', S.firstTime === null ? '-' : iso(S.firstTime) + ' \u2192 ' + iso(S.lastTime) + ' (' + dur((S.lastTime ?? 0) - S.firstTime) + ')');

  const c2 = put(grid, el('div', 'card'));
  add(c2, el('h2', null, 'Lineage'));
  dl = put(c2, el('dl'));
  kv(dl, 'parent', Lg.parent === null ? '(root session)' : Lg.parent + (Lg.unresolvedParent ? ' (not found in the root)' : ''));
  if (Lg.seedLength !== null) kv(dl, 'fork boundary', 'seedLength ' + num(Lg.seedLength) + ': events 0..' + (Lg.seedLength - 1) + ' are the parent\u2019s prefix, this session\u2019s own events start at seq ' + Lg.seedLength);
  kv(dl, 'ancestors', Lg.ancestors.length ? Lg.ancestors.map((a) => a.id + ' (' + a.kind + ')').join(' \u2190 ') : '-');
  const kids = el('div');
  if (!Lg.descendants.length) kids.textContent = '-';
  for (const d of Lg.descendants) {
    const row = put(kids, el('div', 'child', '\u2514 ' + d.id + '  ' + d.kind + (d.seedLength !== null ? ', seedLength ' + d.seedLength : '') + '  ' + iso(d.createdAt)));
    row.style.paddingLeft = (d.depth - 1) * 1.2 + 'em';
  }
  kv(dl, 'descendants', kids);
  kv(dl, 'session root', Lg.root === null ? '(not inside a session root)' : Lg.root);
  if (Lg.note) add(c2, el('p', 'note', Lg.note));

  const c3 = put(grid, el('div', 'card'));
  add(c3, el('h2', null, 'Artifact'));
  dl = put(c3, el('dl'));
  kv(dl, 'file', S.file);
  kv(dl, 'encoding', S.encoding + (S.decoder ? ' (decoder ' + S.decoder + ')' : ''));
  kv(dl, 'size', num(S.bytes) + ' bytes');
  kv(dl, 'events', num(S.storedEventCount) + ' stored, ' + num(S.eventCount) + ' logical' + (H.closers.length ? ' (+' + H.closers.length + ' synthetic closers)' : ''));
  kv(dl, 'turns', num(D.turns.length) + ' turns, ' + num(D.dispatches.length) + ' model dispatches');
  kv(dl, 'surface', num(D.surface.nodes.length) + ' current nodes, ' + num(D.surface.replacements.length) + ' replacements');

  const c4 = put(grid, el('div', 'card health h-' + H.status));
  add(c4, el('h2', null, 'Health'));
  add(c4, el('p', 'status', HEALTH_TEXT[H.status]));
  if (H.error) {
    const box = put(c4, el('div', 'error'));
    add(box, el('div', 'err-class', H.error.class));
    add(box, el('pre', 'err-msg', H.error.message));
    if (H.error.cause) add(box, el('div', null, 'cause: ' + H.error.cause));
    const bits: string[] = [];
    if (H.error.stage) bits.push('stage ' + H.error.stage);
    if (H.error.rule) bits.push('rule ' + H.error.rule);
    if (H.error.seq !== undefined) bits.push('seq ' + H.error.seq);
    if (H.error.byteOffset !== undefined) bits.push('byte ' + num(H.error.byteOffset));
    if (bits.length) add(box, el('div', 'muted', bits.join(' \u00b7 ')));
    add(box, el('p', 'muted', 'DSH refuses this log as a whole: no turn, request or surface can be reconstructed from it. The text above is DSH\u2019s own error.'));
  }
  dl = put(c4, el('dl'));
  if (H.torn) {
    const rec = H.torn.recoveredEventSeqs;
    kv(dl, 'torn tail', 'at byte ' + num(H.torn.truncateTo) + ': ' + num(H.torn.tornBytes) + ' bytes after the last complete frame');
    kv(dl, 'recovered', rec.length ? 'seq ' + rec[0] + '..' + rec[rec.length - 1] : 'no events');
    kv(dl, 'lost', num(H.torn.lostPlaintextBytes) + ' decoded bytes of an incomplete record');
  }
  if (H.defect) kv(dl, 'defect', H.defect.message + ' (line ' + H.defect.line + ')');
  if (H.closers.length) {
    const ul = el('ul', 'closers');
    for (const c of H.closers) add(ul, add(el('li'), seqLink(c.seq), ' ' + c.type + ': ' + c.why));
    kv(dl, 'closers', ul);
  }
  const R = H.repair;
  if (R && R.writes) {
    kv(
      dl,
      'load() would',
      (R.truncateTo !== null ? 'truncate to byte ' + num(R.truncateTo) + ' (dropping ' + num(R.truncatedBytes) + ' bytes), then ' : '') +
        'append ' +
        (R.appendAs === 'zstd-frame' ? 'one checksummed zstd frame' : 'lines') +
        ' with ' +
        (R.reappendSeqs.length + R.closerSeqs.length) +
        ' events. dsh never does this.',
    );
  }
  if (H.migratedEvents) kv(dl, 'migrated', H.migratedEvents + ' legacy events normalized');
  if (H.ignorableUnknown.length) kv(dl, 'unknown ignorable', H.ignorableUnknown.join(', '));
  for (const w of H.warnings) add(c4, el('p', 'warn', 'warning: ' + w));

  if (S.countsByType.length) {
    const c5 = put(grid, el('div', 'card'));
    add(c5, el('h2', null, 'Events by type'));
    const t = put(c5, el('table', 'counts'));
    for (const [type, count] of S.countsByType) add(t, add(el('tr'), el('td', null, type), el('td', 'n', num(count))));
  }
  const c6 = put(grid, el('div', 'card'));
  add(c6, el('h2', null, 'Findings (dsh check)'));
  const bySev = new Map<string, number>();
  for (const f of D.findings) bySev.set(f.severity, (bySev.get(f.severity) ?? 0) + 1);
  add(c6, el('p', null, D.findings.length ? [...bySev].map(([k, n]) => n + ' ' + k).join(', ') : 'no findings'));
  const go = put(c6, el('button', 'link', 'show findings'));
  go.type = 'button';
  go.dataset['tab'] = 'findings';
}

// ------------------------------------------------------------ timeline
function renderTimeline(): void {
  const root = $('s-timeline');
  if (!D.turns.length) {
    add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log: no timeline.' : 'No turns.'));
    return;
  }
  add(root, el('p', 'muted', 'Turns and steps with their end reasons; every model dispatch (retries included) opens to its reconstructed request and its diff from the previous dispatch (dsh request).'));
  const list = put(root, el('div', 'turns'));
  chunked(list, D.turns, makeTurn, 200);
}
function makeTurn(t: PageTurn): HTMLElement {
  const d = el('details', 'turn');
  d.dataset['turn'] = String(t.turn);
  const s = navItem(el('summary'));
  let nd = 0;
  let nr = 0;
  let inT = 0;
  let outT = 0;
  for (const st of t.steps) {
    nd += st.dispatches.length;
    nr += st.retries;
    for (const i of st.dispatches) {
      const u = usageOf(D.dispatches[i]?.usage);
      if (u) {
        inT += u.inputTokens ?? 0;
        outT += u.outputTokens ?? 0;
      }
    }
  }
  add(
    s,
    el('span', 'turn-no', 'Turn ' + t.turn),
    ' ',
    badge(t.reason + (t.synthetic ? ' (synthetic closer)' : ''), reasonKind(t.reason)),
    ' ',
    el(
      'span',
      'muted',
      'seq ' + t.startSeq + '..' + (t.endSeq === null ? 'open' : t.endSeq) + ' \u00b7 ' + t.steps.length + ' steps \u00b7 ' + nd + ' dispatches' + (nr ? ' \u00b7 ' + nr + ' retries' : '') + ' \u00b7 ' + dur(t.durationMs) + (inT || outT ? ' \u00b7 in ' + num(inT) + ', out ' + num(outT) : ''),
    ),
  );
  d.appendChild(s);
  let body: HTMLElement | null = null;
  d.addEventListener('toggle', () => {
    if (!d.open || body) return;
    body = put(d, el('div', 'turn-body'));
    add(body, add(el('div', 'muted', 'started ' + iso(t.startTime) + ' \u00b7 turn/start '), seqLink(t.startSeq)));
    for (const st of t.steps) {
      const sd = put(body, el('div', 'step'));
      add(sd, el('div', 'step-head', 'step ' + st.step + ' \u00b7 seq ' + st.startSeq + '..' + (st.endSeq === null ? 'open' : st.endSeq) + ' \u00b7 ends: ' + (st.endReason || (st.endSeq === null ? 'still open' : 'no dispatch')) + ' \u00b7 ' + dur(st.durationMs) + (st.retries ? ' \u00b7 ' + st.retries + ' llm/retry' : '')));
      for (const i of st.dispatches) sd.appendChild(makeDispatch(D.dispatches[i] as PageDispatch));
    }
    if (t.endSeq !== null) add(body, add(el('div', 'muted', 'turn/end '), seqLink(t.endSeq), ' ' + t.reason));
  });
  return d;
}
function makeDispatch(x: PageDispatch): HTMLElement {
  const d = el('details', 'dispatch');
  d.dataset['dispatch'] = x.key;
  const s = navItem(el('summary'));
  add(
    s,
    el('span', 'key', x.key),
    ' ',
    x.attempt > 0 ? badge('retry #' + x.attempt, 'warn') : null,
    ' ',
    badge(x.finish === null ? 'no finish (cancelled or crash)' : x.finish, x.finish === null ? 'bad' : reasonKind(x.finish)),
    ' ',
    el('span', 'muted', 'chunks ' + x.first + '..' + x.last + ' \u00b7 ' + (x.model || '?') + ' \u00b7 ' + x.msgCount + ' messages \u00b7 ' + dur(x.durationMs) + ' \u00b7 ' + usageText(x.usage) + (x.headerChanges.length ? ' \u00b7 header: ' + x.headerChanges.join(', ') : '')),
  );
  d.appendChild(s);
  let body: HTMLElement | null = null;
  d.addEventListener('toggle', () => {
    if (!d.open || body) return;
    body = put(d, el('div', 'dispatch-body'));
    renderRequest(x, body);
  });
  return d;
}
function renderRequest(x: PageDispatch, body: HTMLElement): void {
  const hdr: PageRequestHeader | null = x.headerSeq === null ? null : (D.headers[String(x.headerSeq)] ?? null);
  const sec = put(body, el('div', 'req-sec'));
  add(sec, el('h4', null, 'Header'), ' ', x.headerSeq === null ? el('span', 'muted', '(no request/header before this dispatch)') : add(el('span', 'muted', 'from request/header '), seqLink(x.headerSeq)));
  if (hdr) {
    add(sec, pre(JSON.stringify({ config: hdr.config, adapterDefaults: hdr.adapterDefaults }, null, 2)));
    if (hdr.system !== undefined) {
      const sp = put(sec, el('details', 'sys'));
      add(sp, el('summary', null, 'System prompt (' + num(String(hdr.system).length) + ' characters)'), pre(String(hdr.system), 'raw wrap'));
    }
    if (hdr.tools !== undefined) {
      const tl = put(sec, el('details', 'tools'));
      const tools: unknown[] = Array.isArray(hdr.tools) ? hdr.tools : [];
      add(tl, el('summary', null, 'Tools (' + (Array.isArray(hdr.tools) ? tools.length : json(hdr.tools)) + ')'));
      for (const t of tools) {
        const tool = (t && typeof t === 'object' ? t : {}) as { name?: unknown; description?: unknown };
        const td = put(tl, el('details', 'tool'));
        add(td, el('summary', null, String(tool.name) + ' \u2014 ' + short(tool.description, 140)), pre(JSON.stringify(t, null, 2)));
      }
    }
  }
  if (x.ctxSeq !== null) {
    const cx = put(body, el('div', 'req-sec'));
    add(cx, el('h4', null, 'Request context'), ' ', add(el('span', 'muted', 'from request/context '), seqLink(x.ctxSeq)), pre(JSON.stringify(D.contexts[String(x.ctxSeq)], null, 2)));
  }
  const ms = messagesOf(x.i);
  const mc = put(body, el('div', 'req-sec'));
  add(mc, el('h4', null, 'Messages (' + ms.length + ')'), ' ', el('span', 'muted', 'the surface folded over the ' + num(x.first) + ' events before the first chunk'));
  const ol = put(mc, el('ol', 'messages'));
  for (const m of ms) {
    const msg = (m.message && typeof m.message === 'object' ? m.message : {}) as { role?: unknown; id?: unknown; source?: { kind?: unknown; plugin?: unknown } };
    const li = put(ol, el('li', 'msg'));
    li.dataset['seq'] = String(m.seq);
    const src = msg.source;
    add(
      li,
      add(
        el('div', 'msg-head'),
        el('span', 'role', String(msg.role)),
        ' ',
        el('span', 'msg-id', msg.id !== undefined ? String(msg.id) : ''),
        ' ',
        el('span', 'muted', src && src.kind ? String(src.kind) + (src.plugin ? ':' + String(src.plugin) : '') : ''),
        ' ',
        seqLink(m.seq),
        label(m.seq) === 'shadowed' ? badge('shadowed later', 'warn') : null,
      ),
    );
    add(li, el('div', 'msg-text', preview(m.seq)));
    const jd = put(li, el('details', 'msg-raw'));
    add(jd, el('summary', 'muted', 'message JSON'), pre(JSON.stringify(m.message, null, 2), 'raw msg-json'));
  }
  renderDiff(x, put(body, el('div', 'req-sec diff')));
  add(body, add(el('div', 'muted'), 'first chunk ', seqLink(x.first), x.assistantSeq !== null ? ' \u00b7 produced assistant/message ' : '', x.assistantSeq !== null ? seqLink(x.assistantSeq) : null));
}
function renderDiff(x: PageDispatch, sec: HTMLElement): void {
  const f = x.diff;
  add(sec, el('h4', null, f.from === null ? 'Diff: first dispatch of the session' : 'Diff from ' + f.from));
  const dl = put(sec, el('dl'));
  kv(dl, 'prefix', num(f.prefixEvents.from) + ' \u2192 ' + num(f.prefixEvents.to) + ' events');
  if (f.between.length) {
    const bw = el('span');
    f.between.forEach((b, i) => add(bw, i ? ', ' : '', b.type + ' \u00d7' + b.count + ' (first ', seqLink(b.firstSeq), ')'));
    kv(dl, 'logged between', bw);
  }
  kv(dl, 'header', f.header.changed ? f.header.changes.map((c) => c.field + ': ' + short(json(c.before), 80) + ' \u2192 ' + short(json(c.after), 80)).join('; ') : 'unchanged');
  if (f.requestContext.changed) kv(dl, 'request context', short(json(f.requestContext.from), 100) + ' \u2192 ' + short(json(f.requestContext.to), 100));
  const m = f.messages;
  kv(dl, 'messages', m.fromCount + ' \u2192 ' + m.toCount + ' (kept ' + m.kept + ', added ' + m.added.length + ', removed ' + m.removed.length + (m.transient.length ? ', transient ' + m.transient.length : '') + ')');
  const list = (title: string, items: PageDispatch['diff']['messages']['added'], cls: string): void => {
    if (!items.length) return;
    const ul = el('ul', cls);
    for (const n of items) {
      add(
        ul,
        add(
          el('li'),
          seqLink(n.seq),
          ' ' + n.type + ' ' + (n.role === null ? '' : String(n.role)) + (n.id === null ? '' : ' ' + String(n.id)) + (n.replace ? ' (replaces ' + n.replace.start + '..' + n.replace.end + ')' : ''),
          n.shadowedBy !== undefined && n.shadowedBy !== null ? add(el('span', 'muted'), ' shadowed by ', seqLink(n.shadowedBy)) : null,
        ),
      );
    }
    kv(dl, title, ul);
  };
  list('added', m.added, 'added');
  list('removed', m.removed, 'removed');
  list('transient', m.transient, 'transient');
}

// ------------------------------------------------------------ conversation
let txList: Chunked | null = null;
let sfList: Chunked | null = null;
const txIndex = new Map<number, number>();
const sfIndex = new Map<number, number>();
function renderConversation(): void {
  const root = $('s-conversation');
  if (D.health.error) {
    add(root, el('p', 'empty', 'DSH refuses this log: nothing to show.'));
    return;
  }
  add(root, el('p', 'muted', 'Left: what the user saw (append-origin events in log order). Right: what the model saw at the end of the log (the surface). Coloured bands mark ranges a compaction or prune shadowed for the model; click an entry to find it on the other side, a compaction to see its trace.'));
  const cols = put(root, el('div', 'cols'));
  const left = put(cols, el('div', 'col'));
  const right = put(cols, el('div', 'col'));
  add(left, el('h3', null, 'What the user saw (transcript, ' + num(D.transcript.length) + ' entries)'));
  add(right, el('h3', null, 'What the model saw (surface at seq ' + (D.session.eventCount - 1) + ', ' + num(D.surface.entries.length) + ' nodes)'));
  const lbox = put(left, el('div', 'col-body'));
  const rbox = put(right, el('div', 'col-body'));
  D.transcript.forEach((x, i) => {
    if (!txIndex.has(x.seq)) txIndex.set(x.seq, i);
  });
  D.surface.entries.forEach((x, i) => sfIndex.set(x.seq, i));
  const seed = D.lineage.seedLength;
  const seedAt = seed === null ? -1 : D.transcript.findIndex((x) => x.seq >= seed);
  const tx = chunked(
    lbox,
    D.transcript,
    (x, i) => {
      const n = makeTx(x);
      if (i !== seedAt || seed === null) return n;
      return add(document.createDocumentFragment(), el('div', 'fork-boundary', 'fork boundary: the entries above are the parent\u2019s seed (events 0..' + (seed - 1) + ' of ' + (D.lineage.parent || 'the parent') + ')'), n);
    },
    300,
  );
  const sf = chunked(rbox, D.surface.entries, makeSf, 300);
  txList = tx;
  sfList = sf;
  /** A click in one column marks the entry and finds its counterpart in the other; `open` says when to open the inspector too. */
  const linkColumns = (box: HTMLElement, key: 'tx' | 'sf', other: { box: HTMLElement; key: 'tx' | 'sf'; list: Chunked; index: Map<number, number> }, counterpart: (seq: number) => number, open: (n: HTMLElement, seq: number) => boolean): void => {
    box.addEventListener('click', (ev) => {
      if (closestData(ev.target, '.seq-link, button, summary')) return;
      const n = closestData(ev.target, `[data-${key}]`);
      if (!n) return;
      const seq = Number(n.dataset[key]);
      mark(n);
      const t = counterpart(seq);
      const at = other.index.get(t);
      if (at !== undefined) {
        other.list.upTo(at);
        const m = other.box.querySelector<HTMLElement>(`[data-${other.key}="${t}"]`);
        if (m) {
          mark(m);
          m.scrollIntoView({ block: 'nearest' });
        }
      }
      if (open(n, seq)) openEvent(seq);
    });
  };
  linkColumns(lbox, 'tx', { box: rbox, key: 'sf', list: sf, index: sfIndex }, currentFor, (n) => n.classList.contains('compaction') || n.classList.contains('prune'));
  linkColumns(rbox, 'sf', { box: lbox, key: 'tx', list: tx, index: txIndex }, (seq) => seq, (_n, seq) => loaded().replaced.has(seq));
}
function mark(n: HTMLElement): void {
  const col = n.closest('.col-body');
  const old = col && col.querySelector('.marked');
  if (old) old.classList.remove('marked');
  n.classList.add('marked');
}
function setBand(n: HTMLElement, rep: number | null | undefined): void {
  if (rep === null || rep === undefined) return;
  const i = bandOf.get(rep);
  if (i === undefined) return;
  n.classList.add('banded');
  n.style.setProperty('--band', band(i));
}
function textBlock(text: string, cls?: string): HTMLElement {
  return el('div', 'text ' + (cls ?? ''), text);
}
function makeTx(x: PageTranscriptEntry): HTMLElement {
  const n = navItem(el('div', 'tx tx-' + x.kind));
  n.dataset['tx'] = String(x.seq);
  switch (x.kind) {
    case 'turn':
      add(n, el('div', 'divider', 'Turn ' + x.turn + ' \u00b7 ' + iso(x.time)));
      break;
    case 'turn-end':
      add(n, el('div', 'turn-end', 'turn ' + x.turn + ' ended: ' + x.reason + (x.detail ? ' (' + x.detail + ')' : '') + (x.synthetic ? ' [synthetic closer]' : '')));
      break;
    case 'message': {
      add(
        n,
        add(
          el('div', 'head'),
          el('span', 'role r-' + x.role, x.role),
          ' ',
          el('span', 'muted', x.source + (x.id ? ' \u00b7 ' + x.id : '')),
          ' ',
          seqLink(x.seq),
          x.interrupted ? badge('interrupted', 'bad') : null,
          x.synthetic ? badge('synthetic', 'warn') : null,
          x.empty ? badge('empty (usage only)', 'warn') : null,
          x.shadowedBy !== null ? add(el('span', 'muted shadow-note'), ' hidden from the model by ', seqLink(x.shadowedBy)) : null,
        ),
      );
      if (x.reasoning) {
        const r = put(n, el('details', 'reasoning'));
        add(r, el('summary', null, 'reasoning'), textBlock(x.reasoning));
      }
      if (x.text) add(n, textBlock(x.text));
      for (const c of x.toolCalls) {
        const tc = put(n, el('div', 'toolcall'));
        add(tc, add(el('div', 'call'), '\u2192 ' + c.name + '(' + short(c.arguments, 300) + ')', c.callSeq !== null ? ' ' : '', c.callSeq !== null ? seqLink(c.callSeq) : badge('never started', 'bad')));
        if (c.result) addResult(tc, c.result);
        else add(tc, el('div', 'muted', '(no result)'));
      }
      setBand(n, x.shadowedBy);
      break;
    }
    case 'tool-result':
      addResult(n, x.result);
      break;
    case 'compaction':
      n.classList.add('compaction');
      add(
        n,
        add(
          el('div', 'head'),
          badge('compaction' + (x.compactionId ? ' ' + x.compactionId : ''), 'info'),
          ' checkpoint ',
          seqLink(x.seq),
          x.summarySeq !== null ? ' \u00b7 summary ' : '',
          x.summarySeq !== null ? seqLink(x.summarySeq) : null,
          ' \u00b7 shadowed ' + x.shadowedSeqs.length + ' surface nodes' + (x.shadowedSeqs.length ? ' (' + x.shadowedSeqs[0] + '..' + x.shadowedSeqs[x.shadowedSeqs.length - 1] + ')' : ''),
          x.synthetic ? badge('synthetic', 'warn') : null,
        ),
      );
      add(n, textBlock(x.summary, 'summary'));
      setBand(n, x.seq);
      break;
    case 'prune':
      n.classList.add('prune');
      add(n, add(el('div', 'head'), badge('prune', 'info'), ' ', seqLink(x.seq), ' rewrote tool result ', seqLink(x.originalSeq), ' for the model'), textBlock(short(x.text, 400)));
      setBand(n, x.seq);
      break;
    case 'replacement':
      n.classList.add('compaction');
      add(n, add(el('div', 'head'), badge('replacement', 'info'), ' ' + x.type + ' ', seqLink(x.seq), ' shadowed ' + x.shadowedSeqs.length + ' nodes'), textBlock(x.text));
      setBand(n, x.seq);
      break;
  }
  return n;
}
function addResult(parent: HTMLElement, r: PageToolResult): void {
  const rn = put(parent, el('div', 'result' + (r.isError ? ' is-error' : '')));
  add(
    rn,
    add(
      el('div', 'head'),
      '\u2190 result ',
      seqLink(r.seq),
      r.errorCode ? badge(r.errorCode, 'bad') : null,
      r.synthetic ? badge('synthetic', 'warn') : null,
      r.prunedBy !== null ? add(el('span', 'muted'), ' pruned for the model by ', seqLink(r.prunedBy)) : null,
    ),
  );
  add(rn, textBlock(r.text, 'out'));
  if (r.prunedBy !== null) setBand(rn, r.prunedBy);
}
function makeSf(x: PageSurfaceEntry): HTMLElement {
  const n = navItem(el('div', 'sf'));
  n.dataset['sf'] = String(x.seq);
  add(
    n,
    add(
      el('div', 'head'),
      el('span', 'role r-' + x.role, x.role || x.type),
      ' ',
      el('span', 'muted', x.type + (x.id ? ' \u00b7 ' + x.id : '')),
      ' ',
      seqLink(x.seq),
      x.op === 'replace' ? badge('replaces ' + x.replaced.length + ' (' + x.replaced[0] + '..' + x.replaced[x.replaced.length - 1] + ')', 'info') : null,
      x.interrupted ? badge('interrupted', 'bad') : null,
      x.synthetic ? badge('synthetic', 'warn') : null,
    ),
  );
  add(n, textBlock(x.text));
  if (x.op === 'replace') {
    n.classList.add('compaction');
    setBand(n, x.seq);
  }
  return n;
}

// ------------------------------------------------------------ compactions
function openRowOnClick(t: HTMLElement): void {
  t.addEventListener('click', (ev) => {
    if (closestData(ev.target, '.seq-link')) return;
    const tr = closestData(ev.target, 'tr[data-open]');
    if (tr) openEvent(Number(tr.dataset['open']));
  });
}
function headRow(...titles: string[]): HTMLTableRowElement {
  return add(el('tr'), ...titles.map((t) => el('th', null, t)));
}
function renderCompactions(): void {
  const root = $('s-compactions');
  if (D.audit) renderAudit(root);
  else if (D.auditError) add(root, el('p', 'warn', 'compaction audit failed: ' + D.auditError));
  if (D.audit) add(root, el('h3', null, 'Surface replacements'));
  if (!D.compactions.length) {
    add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log.' : 'No compactions, prunes or other surface replacements.'));
    return;
  }
  add(root, el('p', 'muted', 'Every surface replacement (compaction checkpoints, tool-result prunes, others) and every compaction that never replaced the surface. Click a row for its trace.'));
  const t = put(root, el('table', 'grid'));
  add(t, headRow('replacement', 'kind', 'id', 'shadowed', 'summary', 'start/end', 'tokens', 'turn', 'sources'));
  for (const c of D.compactions) {
    const tr = navItem(put(t, el('tr', 'comp k-' + c.kind)));
    if (c.seq !== null) tr.dataset['open'] = String(c.seq);
    const sw = el('td');
    if (c.seq !== null) {
      const chip = put(sw, el('span', 'chip'));
      chip.style.background = band(bandOf.get(c.seq) ?? 0);
      add(sw, seqLink(c.seq));
    } else sw.textContent = '-';
    add(
      tr,
      sw,
      el('td', null, c.kind + (c.synthetic ? ' (synthetic)' : '') + (c.kind === 'unfinished' ? ': never replaced the surface' : '')),
      el('td', null, c.compactionId || '-'),
      el('td', null, c.shadowedSeqs.length ? c.shadowedSeqs.length + ' nodes (' + c.start + '..' + c.end + ')' : '-'),
      add(el('td'), c.summarySeq !== null ? seqLink(c.summarySeq) : c.pruneSeq !== null ? seqLink(c.pruneSeq, 'prune #' + c.pruneSeq) : '-'),
      add(el('td'), c.startSeq !== null ? seqLink(c.startSeq) : '-', ' / ', c.endSeq !== null ? seqLink(c.endSeq) : '-'),
      el('td', 'n', c.tokens === null ? '-' : num(c.tokens)),
      el('td', null, c.turn === null || c.turn === undefined ? '-' : c.turn),
      el('td', 'n', c.sourceEventSeqs.length),
    );
  }
  openRowOnClick(t);
}
function renderAudit(root: HTMLElement): void {
  const A = D.audit;
  if (!A) return;
  add(root, el('h3', null, 'Compaction audit (dsh compactions)'));
  const c = A.counts;
  add(root, el('p', 'muted', c.compactions + ' compactions (' + c.succeeded + ' succeeded, ' + c.failed + ' failed, ' + c.unclosed + ' unclosed, ' + c.unbracketed + ' unbracketed), ' + c.prunes + ' prunes, ' + c.otherReplacements + ' other replacements, ' + c.notStarted + ' not started; locks: ' + c.activeLocks + ' active, ' + c.staleLocks + ' stale'));
  if (A.foldError) add(root, el('p', 'warn', 'surface fold rejected seq ' + A.foldError.seq + ' (' + A.foldError.rule + '): ' + A.foldError.message));
  if (A.verdicts.length) {
    const vt = put(root, el('table', 'grid verdicts'));
    add(vt, headRow('check', 'verdict', 'detail'));
    for (const v of A.verdicts) {
      add(vt, add(el('tr'), el('td', null, v.title), add(el('td'), badge(v.state, v.state === 'pass' ? 'ok' : v.state === 'warn' ? 'warn' : v.state === 'fail' ? 'bad' : null)), el('td', null, v.detail)));
    }
  }
  if (!A.attempts.length) return;
  const t = put(root, el('table', 'grid attempts'));
  add(t, headRow('#', 'kind', 'outcome', 'trigger', 'events', 'shadowed', 'checks', 'budget', 'next request', 'notes'));
  for (const a of A.attempts) {
    const tr = navItem(put(t, el('tr', 'comp attempt')));
    tr.dataset['open'] = String(a.seqs.replacement !== null ? a.seqs.replacement : a.firstSeq);
    const seqs = el('td');
    const named: [string, number | null][] = [
      ['start', a.seqs.start],
      ['summary', a.seqs.summary],
      ['replacement', a.seqs.replacement],
      ['end', a.seqs.end],
      ['prune', a.seqs.prune],
    ];
    for (const [name, seq] of named) if (seq !== null) add(seqs, el('span', 'muted', name + ' '), seqLink(seq), ' ');
    const checks: string[] = [];
    if (a.coverage) checks.push('coverage ' + (a.coverage.covered ? 'ok' : 'MISSING ' + a.coverage.missing.join(',')) + (a.coverage.declaredMatches === false ? ', declared seqs differ' : ''));
    if (a.pairing) checks.push('tool pairing ' + (a.pairing.ok ? 'ok' : a.pairing.orphanCalls.length + a.pairing.orphanResults.length + ' orphaned'));
    if (a.integrity && !a.integrity.ok) checks.push('missing events ' + a.integrity.missingEvents.join(','));
    if (a.lock) checks.push('lock ' + a.lock.state);
    const b = a.budget;
    const sw = el('td');
    const rep = a.seqs.replacement;
    const bi = rep !== null ? bandOf.get(rep) : undefined;
    if (bi !== undefined) put(sw, el('span', 'chip')).style.background = band(bi);
    add(sw, a.range ? a.range.shadowedSeqs.length + ' nodes (' + a.range.start + '..' + a.range.end + ')' : '-');
    add(
      tr,
      el('td', 'n', a.index),
      el('td', null, a.kind + (a.compactionId ? ' ' + a.compactionId : '')),
      add(el('td'), badge(a.outcome, /^(succeeded|applied)$/.test(a.outcome) ? 'ok' : /^(failed|unclosed)$/.test(a.outcome) ? 'bad' : 'warn'), a.failure ? el('div', 'muted', a.failure.class + ': ' + a.failure.reason) : null),
      add(el('td'), el('div', null, a.trigger.kind), el('div', 'muted small', short(a.trigger.detail, 160))),
      seqs,
      sw,
      el('td', null, checks.join('; ') || '-'),
      el('td', null, b ? 'saved ~' + num(b.savedMessageTokens) + ' tok, net ' + num(b.netGain) + (b.eatenByHeader ? ' (eaten by header)' : '') : '-'),
      el('td', null, a.nextRequest.status + (a.nextRequest.key ? ' ' + a.nextRequest.key : '') + (a.nextRequest.status !== 'ok' ? ': ' + short(a.nextRequest.reason, 120) : '')),
      el('td', 'muted', a.notes.length ? a.notes.join(' \u00b7 ') : ''),
    );
  }
  openRowOnClick(t);
}

// ------------------------------------------------------------ secrets (dsh secrets, masked) and findings
const EXPOSURE_KIND: Record<string, string> = { 'sent-current': 'bad', 'sent-removed': 'warn', 'current-unsent': 'warn', 'log-only': 'info' };
function renderSecrets(root: HTMLElement): void {
  if (!D.secrets) return;
  const sec = put(root, el('div', 'secrets'));
  sec.id = 'secrets';
  add(sec, el('h2', null, 'Secrets'));
  if (!D.secrets.length) {
    add(sec, el('p', 'empty', 'No secret found by the redaction detectors.'));
    return;
  }
  const t = put(sec, el('table', 'grid'));
  add(t, headRow('exposure', 'secret (masked)', 'dispatches', 'events', 'verdict'));
  for (const s of D.secrets) {
    const tr = navItem(put(t, el('tr', 'secret')));
    const evs = el('td');
    const own = s.sessions[0]?.events ?? [];
    own.slice(0, 12).forEach((e, i) => add(evs, i ? ' ' : null, seqLink(e.seq)));
    if (own.length > 12) add(evs, ' \u2026');
    add(tr, add(el('td'), badge(s.exposure, EXPOSURE_KIND[s.exposure])), add(el('td'), el('div', 'code', s.token), el('div', 'muted', s.detector)), el('td', null, String(s.dispatchCount)), evs, el('td', null, s.verdict));
  }
}
/** Behaviour findings (`dsh report --behaviour`): each finding's events linked, and what re-sending cost. */
function renderBehaviour(root: HTMLElement): void {
  const list = D.findings.filter((f) => f.evidence);
  if (!list.length) return;
  const sec = put(root, el('div', 'behaviour'));
  sec.id = 'behaviour';
  add(sec, el('h2', null, 'Agent behaviour'));
  const t = put(sec, el('table', 'grid'));
  add(t, headRow('code', 'events', 'dispatches', 'tokens re-sent', 'cost re-sent (USD, cache miss / hit)'));
  for (const f of list) {
    const ev = f.evidence!;
    const evs = el('td');
    ev.seqs.forEach((s, i) => add(evs, i ? ' ' : null, seqLink(s)));
    const c = ev.carried;
    const cost = !c ? '-' : c.costResent ? c.costResent.cacheMiss + ' / ' + c.costResent.cacheHit : c.unpriced + ' unpriced';
    add(
      navItem(put(t, el('tr', 'finding sev-' + f.severity))),
      el('td', 'code', f.code),
      evs,
      el('td', null, c ? num(c.count) + (c.first ? ' (' + c.first + (c.last !== c.first ? ' to ' + c.last : '') + ')' : '') : '-'),
      el('td', null, c ? num(c.tokensResent) : '-'),
      el('td', null, cost),
    );
  }
}
function renderFindings(): void {
  const root = $('s-findings');
  renderSecrets(root);
  renderBehaviour(root);
  if (!D.findings.length) {
    add(root, el('p', 'empty', 'dsh check found nothing.'));
    return;
  }
  const t = put(root, el('table', 'grid'));
  add(t, headRow('severity', 'code', 'where', 'finding'));
  for (const f of D.findings) {
    const tr = navItem(put(t, el('tr', 'finding sev-' + f.severity)));
    const where = el('td');
    if (f.seq !== undefined) add(where, seqLink(f.seq));
    if (f.byteOffset !== undefined) add(where, (f.seq !== undefined ? ' ' : '') + (f.offsetIn === 'plaintext' ? 'plaintext' : 'byte') + ' ' + num(f.byteOffset));
    if (!where.childNodes.length) where.textContent = '-';
    add(tr, add(el('td'), badge(f.severity, f.severity === 'error' ? 'bad' : f.severity === 'warning' ? 'warn' : 'info')), el('td', 'code', f.code), where, add(el('td'), el('div', null, f.message), el('div', 'muted', f.hint)));
  }
}

// ------------------------------------------------------------ events (virtualized)
const ROW = 22;
let evSel = -1;
function renderEvents(): void {
  const root = $('s-events');
  const ev = events();
  if (!ev.length) {
    add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log: no events.' : 'No events.'));
    return;
  }
  add(root, el('p', 'muted', num(ev.length) + ' logical events. j/k move, Enter opens, / searches.'));
  const vp = put(root, el('div', 'viewport'));
  vp.id = 'ev-viewport';
  const spacer = put(vp, el('div', 'spacer'));
  spacer.style.height = ev.length * ROW + 'px';
  vp.addEventListener('scroll', () => requestAnimationFrame(evRender));
  spacer.addEventListener('click', (e) => {
    if (closestData(e.target, '.seq-link')) return;
    const r = closestData(e.target, '[data-row]');
    if (r) openEvent(Number(r.dataset['row']));
  });
}
function turnStep(e: PageEvent): string {
  const d = (e.data && typeof e.data === 'object' ? e.data : {}) as { turn?: unknown; step?: unknown };
  return d.turn !== undefined ? String(d.turn) + (d.step !== undefined ? '/' + String(d.step) : '') : '';
}
function evRender(): void {
  const vp = document.getElementById('ev-viewport');
  if (!vp || vp.offsetParent === null) return;
  const ev = events();
  const spacer = vp.firstChild as HTMLElement;
  const from = Math.max(0, Math.floor(vp.scrollTop / ROW) - 20);
  const to = Math.min(ev.length, Math.ceil((vp.scrollTop + vp.clientHeight) / ROW) + 20);
  if (spacer.dataset['from'] === String(from) && spacer.dataset['to'] === String(to) && spacer.dataset['sel'] === String(evSel)) return;
  spacer.dataset['from'] = String(from);
  spacer.dataset['to'] = String(to);
  spacer.dataset['sel'] = String(evSel);
  spacer.textContent = '';
  const frag = document.createDocumentFragment();
  const seed = D.lineage.seedLength;
  for (let i = from; i < to; i++) {
    const e = ev[i] as PageEvent;
    const lab = label(e.seq);
    const r = el('div', 'row l-' + lab + (e.seq === evSel ? ' sel' : '') + (e.seq >= D.session.storedEventCount ? ' synthetic' : '') + (seed !== null && e.seq < seed ? ' seed' : ''));
    r.dataset['row'] = String(e.seq);
    r.style.top = i * ROW + 'px';
    add(r, el('span', 'c-seq', e.seq), el('span', 'c-time', clock(e.time)), el('span', 'c-ts', turnStep(e)), el('span', 'c-label', lab), el('span', 'c-type', e.type), el('span', 'c-prev', preview(e.seq)));
    frag.appendChild(r);
  }
  spacer.appendChild(frag);
}
function evScrollTo(seq: number): void {
  const vp = document.getElementById('ev-viewport');
  if (!vp) return;
  const top = seq * ROW;
  if (top < vp.scrollTop || top > vp.scrollTop + vp.clientHeight - ROW) vp.scrollTop = Math.max(0, top - vp.clientHeight / 2);
  evRender();
}

// ------------------------------------------------------------ inspector
const RAW_LIMIT = 200000;
function openEvent(seq: number): void {
  const ev = events();
  const e = ev[seq];
  if (!e) return;
  evSel = seq;
  const box = $('inspector');
  const body = $('insp-body');
  body.textContent = '';
  box.hidden = false;
  box.dataset['seq'] = String(seq);
  add(body, el('h2', null, '#' + seq + ' ' + e.type));
  const dl = put(body, el('dl'));
  kv(dl, 'time', iso(e.time));
  kv(dl, 'surface label', label(seq));
  if (seq >= D.session.storedEventCount) kv(dl, 'synthetic', 'a crash closer DSH adds on load (not in the file)');
  const seed = D.lineage.seedLength;
  if (seed !== null && seq < seed) kv(dl, 'fork seed', 'inherited from the parent ' + (D.lineage.parent || '') + ' (before the fork boundary at seq ' + seed + ')');
  const ts = turnStep(e);
  if (ts) kv(dl, 'turn/step', ts);
  if (e.surfaceOp !== undefined) kv(dl, 'surfaceOp', json(e.surfaceOp));
  const dsp = dispatchOf(seq);
  if (dsp) {
    const b = el('button', 'link', 'dispatch ' + dsp.key);
    b.type = 'button';
    b.dataset['dispatchLink'] = String(dsp.i);
    kv(dl, 'dispatch', b);
  }
  kv(dl, 'summary', preview(seq));
  const t = traceOf(seq);
  add(body, el('h3', null, 'Trace'));
  const tl = put(body, el('dl', 'trace'));
  kv(tl, 'replaced by', t.replacedBy === null ? '-' : seqLink(t.replacedBy));
  if (t.replacementChain.length > 1) kv(tl, 'replacement chain', seqList(t.replacementChain, 'trace-chain'));
  kv(tl, 'replaced', seqList(t.replacedEventSeqs, 'trace-replaced'));
  kv(tl, 'sources', seqList(t.sourceEventSeqs, 'trace-sources'));
  kv(tl, 'cited by', seqList(t.derivedEventSeqs, 'trace-derived'));
  add(body, el('h3', null, 'Raw JSON'));
  const text = JSON.stringify(e, null, 2);
  const p = put(body, pre(text.length > RAW_LIMIT ? text.slice(0, RAW_LIMIT) : text, 'raw wrap event-json'));
  if (text.length > RAW_LIMIT) {
    const more = put(body, el('button', 'link', 'show all ' + num(text.length) + ' characters'));
    more.type = 'button';
    more.addEventListener('click', () => {
      p.textContent = text;
      more.remove();
    });
  }
  if (active === 'events') evScrollTo(seq);
}
function seqList(seqs: readonly number[], cls: string): HTMLElement {
  const ul = el('ul', 'seqs ' + cls);
  if (!seqs.length) {
    ul.appendChild(el('li', 'muted', '-'));
    return ul;
  }
  const ev = events();
  const max = 500;
  for (const s of seqs.slice(0, max)) {
    const li = put(ul, el('li'));
    li.dataset['seq'] = String(s);
    const e = ev[s];
    add(li, seqLink(s), ' ', el('span', 'muted', e ? e.type + ' \u00b7 ' + label(s) : '?'), ' ', e ? preview(s) : '');
  }
  if (seqs.length > max) add(ul, el('li', 'muted', '\u2026 ' + (seqs.length - max) + ' more'));
  return ul;
}
function closeInspector(): void {
  $('inspector').hidden = true;
}
function openDispatch(i: number): void {
  const x = D.dispatches[i];
  if (!x) return;
  show('timeline');
  const turnEl = document.querySelector<HTMLDetailsElement>(`#s-timeline details.turn[data-turn="${x.turn}"]`);
  if (!turnEl) return;
  turnEl.open = true;
  turnEl.dispatchEvent(new Event('toggle'));
  const dEl = turnEl.querySelector<HTMLDetailsElement>(`details.dispatch[data-dispatch="${CSS.escape(x.key)}"]`);
  if (dEl) {
    dEl.open = true;
    dEl.dispatchEvent(new Event('toggle'));
    dEl.scrollIntoView({ block: 'start' });
  }
}

// ------------------------------------------------------------ context (dsh context) and the time axis
/** The SVG namespace, from an empty inline <svg> of the page (the HTML parser gives it; the page spells no URL). */
const SVG_NS = $('svg-ns').namespaceURI ?? '';
function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
  const n = document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K];
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (parent) parent.appendChild(n);
  return n;
}
function svgTitle(n: Element, text: string): void {
  svg('title', {}, n).textContent = text;
}
const CATEGORY_LABEL: Record<string, string> = {
  system: 'system prompt',
  tools: 'tool schemas',
  user: 'user',
  assistantText: 'assistant text',
  assistantReasoning: 'reasoning',
  assistantToolCalls: 'tool calls',
  toolResults: 'tool results',
  compaction: 'compaction summaries',
  other: 'other',
};
/** Chart width: the section's (at least 1,000 px), and 1.5 px per dispatch past that (it then scrolls). */
function chartWidth(root: HTMLElement, n: number): number {
  return Math.max(1000, Math.floor(root.clientWidth || 1360) - 8, Math.ceil(n * 1.5) + 80);
}
function renderContext(): void {
  const root = $('s-context');
  const C = D.context as PageContext | null;
  if (!C || C.rows.length === 0) {
    add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log: no context.' : 'No model dispatches.'));
    return;
  }
  const withTokens = C.rows.filter((r) => r.tokens !== null && r.bytes > 0);
  const unit = withTokens.length > 0 ? 'tokens' : 'bytes';
  const ratio = withTokens.length > 0 ? withTokens.reduce((a, r) => a + (r.tokens as number) / r.bytes, 0) / withTokens.length : 1;
  const scaleOf = (r: PageContext['rows'][number]) => (unit === 'bytes' ? 1 : r.tokens !== null && r.bytes > 0 ? r.tokens / r.bytes : ratio);
  add(
    root,
    el(
      'p',
      'muted',
      `Each bar is one model dispatch's request (dsh context), stacked by what filled it; height in ${unit === 'tokens' ? 'prompt tokens (logged, split in proportion to bytes; a dispatch without usage is estimated from the session\u2019s tokens per byte and drawn pale)' : 'bytes (no usage logged)'}. Dashed red: the context window. Dark overlay: the prompt prefix shared with an earlier dispatch; dot: logged cache-read tokens. Red triangles mark cache breaks, C/P markers compactions and prunes (click for the trace); click a bar for its request.`,
    ),
  );
  const n = C.rows.length;
  const W = chartWidth(root, n);
  const H = 340;
  const left = 70;
  const right = 10;
  // Compaction and prune markers, at the first dispatch after them (stacked where several fall on one).
  const firstAfter = (seq: number) => C.rows.findIndex((r) => (D.dispatches[r.i]?.first ?? -1) > seq);
  const markers: { c: (typeof D.compactions)[number]; j: number; k: number }[] = [];
  const stack = new Map<number, number>();
  for (const c of D.compactions) {
    if (c.seq === null || (c.kind !== 'compaction' && c.kind !== 'prune')) continue;
    const j = firstAfter(c.seq);
    if (j < 0) continue;
    const k = stack.get(j) ?? 0;
    stack.set(j, k + 1);
    markers.push({ c, j, k });
  }
  const top = 28 + 16 * Math.max(0, ...[...stack.values()].map((v) => v - 1));
  const bottom = 30;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  let yMax = 1;
  for (const r of C.rows) {
    yMax = Math.max(yMax, r.bytes * scaleOf(r));
    if (unit === 'tokens' && r.window !== null) yMax = Math.max(yMax, r.window);
  }
  yMax *= 1.05;
  const y = (v: number) => top + plotH - (v / yMax) * plotH;
  const step = plotW / n;
  const bw = Math.max(1, step * 0.8);
  const x = (i: number) => left + i * step;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'ctx-chart', role: 'img', 'aria-label': `context of ${n} dispatches` });
  const wrap = put(root, el('div', 'chart-wrap'));
  wrap.appendChild(chart);
  for (let k = 0; k <= 4; k++) {
    const v = (yMax / 1.05) * (k / 4);
    svg('line', { x1: left, x2: W - right, y1: y(v), y2: y(v), class: 'ctx-grid' }, chart);
    svg('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'ctx-axis' }, chart).textContent = num(Math.round(v));
  }
  svg('text', { x: 4, y: 14, class: 'ctx-axis' }, chart).textContent = unit;
  const bars = svg('g', { class: 'ctx-bars' }, chart);
  let lastTurn = -1;
  for (const [j, r] of C.rows.entries()) {
    const d = D.dispatches[r.i];
    const s = scaleOf(r);
    const g = svg('g', { class: 'ctx-bar' + (r.tokens === null && unit === 'tokens' ? ' est' : ''), 'data-dispatch-link': r.i }, bars);
    let acc = 0;
    for (const [k, cat] of C.categories.entries()) {
      const v = (r.cats[k] ?? 0) * s;
      if (v <= 0) continue;
      svg('rect', { x: x(j), y: y(acc + v), width: bw, height: Math.max(0, y(acc) - y(acc + v)), class: 'cx-' + cat }, g);
      acc += v;
    }
    if (r.shared > 0 && r.prompt > 0) {
      const sharedV = unit === 'tokens' && r.tokens !== null ? (r.tokens * r.shared) / r.prompt : r.bytes * s * (r.shared / r.prompt);
      svg('rect', { x: x(j), y: y(sharedV), width: bw, height: Math.max(0, y(0) - y(sharedV)), class: 'ctx-shared' }, g);
    }
    if (unit === 'tokens' && r.cacheRead !== null && r.cacheRead > 0) svg('circle', { cx: x(j) + bw / 2, cy: y(r.cacheRead), r: Math.min(3, Math.max(1.5, bw / 2)), class: 'ctx-read' }, g);
    const cats = C.categories.map((c, k) => `${CATEGORY_LABEL[c] ?? c} ${num(r.cats[k] ?? 0)} B`).join(', ');
    svgTitle(g, `${d?.key ?? r.i}: ${num(r.bytes)} bytes${r.tokens !== null ? `, ${num(r.tokens)} prompt tokens` : ''}${r.window !== null ? ` of ${num(r.window)}` : ''}; ${cats}; shared prefix ${num(r.shared)} of ${num(r.prompt)} prompt bytes${r.cacheRead !== null ? `, cache-read ${num(r.cacheRead)}` : ''}`);
    if (d && d.turn !== lastTurn) {
      lastTurn = d.turn;
      if (n <= 60 || d.turn % Math.ceil(n / 60) === 0) svg('text', { x: x(j), y: H - bottom + 14, class: 'ctx-axis' }, chart).textContent = String(d.turn);
    }
  }
  svg('text', { x: left, y: H - 4, class: 'ctx-axis' }, chart).textContent = 'turn \u2192';
  // The window, as a step line.
  if (unit === 'tokens') {
    let path = '';
    for (const [j, r] of C.rows.entries()) if (r.window !== null) path += `${path === '' || C.rows[j - 1]?.window === null ? 'M' : 'L'}${x(j)},${y(r.window)} L${x(j) + step},${y(r.window)} `;
    if (path) svgTitle(svg('path', { d: path, class: 'ctx-window' }, chart), 'context window');
  }
  for (const { c, j, k } of markers) {
    const g = svg('g', { class: 'ctx-marker seq-link m-' + c.kind, 'data-seq': c.seq as number }, chart);
    const cy = top - 12 - 16 * k;
    svg('line', { x1: x(j) - 1, x2: x(j) - 1, y1: cy + 7, y2: top + plotH, class: 'ctx-mline' }, g);
    svg('circle', { cx: x(j) - 1, cy, r: 7 }, g);
    svg('text', { x: x(j) - 1, y: cy + 4, 'text-anchor': 'middle' }, g).textContent = c.kind === 'compaction' ? 'C' : 'P';
    svgTitle(g, `${c.kind} seq ${c.seq}${c.kind === 'prune' && c.pruneSeq !== null ? ` (compaction/prune seq ${c.pruneSeq})` : ''}: replaced ${c.shadowedSeqs.length} event(s); click for its trace`);
  }
  for (const b of C.breaks) {
    const j = C.rows.findIndex((r) => r.i === b.i);
    if (j < 0) continue;
    const r = C.rows[j]!;
    const top0 = y(r.bytes * scaleOf(r)) - 3;
    const g = svg('g', { class: 'ctx-break', 'data-dispatch-link': b.i }, chart);
    svg('path', { d: `M${x(j) + bw / 2},${top0} l-5,-8 l10,0 z` }, g);
    svgTitle(g, `cache break at ${b.key}: ${b.cause}${b.causeSeq !== null ? ` (seq ${b.causeSeq})` : ''}: ${b.detail}${b.resentTokens !== null ? `; ${num(b.resentTokens)} tokens re-sent uncached` : ''}`);
  }
  const legend = put(root, el('ul', 'ctx-legend'));
  for (const c of C.categories) add(put(legend, el('li')), el('span', 'sw cx-' + c), ' ' + (CATEGORY_LABEL[c] ?? c));
  add(put(legend, el('li')), el('span', 'sw ctx-shared-sw'), ' shared prefix');
  if (C.breaks.length > 0) {
    add(root, el('h3', null, `Cache breaks (${C.breaks.length})`));
    const ul = put(root, el('ul', 'ctx-breaks'));
    for (const b of C.breaks) {
      const li = put(ul, el('li', 'nav-item'));
      const link = el('button', 'link', D.dispatches[b.i]?.key ?? String(b.i));
      link.type = 'button';
      link.dataset['dispatchLink'] = String(b.i);
      add(li, link, ' ', badge(b.cause, 'bad'), ' ', b.causeSeq !== null ? seqLink(b.causeSeq) : '', ' ', b.detail, b.resentTokens !== null ? ` \u00b7 ${num(b.resentTokens)} tokens re-sent uncached` : '');
    }
  }
  renderTimeAxis(root);
}
/** Turns, steps, dispatches and tool calls as bars on one time axis. */
function renderTimeAxis(root: HTMLElement): void {
  const t0 = D.session.firstTime;
  const t1 = D.session.lastTime;
  if (t0 === null || t1 === null || t1 <= t0) return;
  add(root, el('h3', null, 'Timeline'));
  add(root, el('p', 'muted', `Turns, steps, model dispatches (failed attempts red) and tool calls on a time axis, ${iso(t0)} .. ${iso(t1)} (${dur(t1 - t0)}); synthetic closers and interrupted turns hatched. Click a bar to open it.`));
  const ev = events();
  const lanes = ['turns', 'steps', 'dispatches', 'tool calls'];
  const W = chartWidth(root, 0);
  const left = 80;
  const laneH = 22;
  const H = lanes.length * laneH + 30;
  const plotW = W - left - 10;
  const x = (t: number) => left + ((t - t0) / (t1 - t0)) * plotW;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'tl-chart', role: 'img', 'aria-label': 'timeline' });
  put(root, el('div', 'chart-wrap')).appendChild(chart);
  lanes.forEach((l, k) => (svg('text', { x: 4, y: k * laneH + 15, class: 'ctx-axis' }, chart).textContent = l));
  for (let k = 0; k <= 4; k++) {
    const t = t0 + ((t1 - t0) * k) / 4;
    svg('line', { x1: x(t), x2: x(t), y1: 0, y2: lanes.length * laneH, class: 'ctx-grid' }, chart);
    svg('text', { x: x(t), y: H - 8, 'text-anchor': k === 0 ? 'start' : k === 4 ? 'end' : 'middle', class: 'ctx-axis' }, chart).textContent = clock(t).slice(0, 8);
  }
  const bar = (lane: number, a: number, b: number, cls: string, title: string, attrs: Record<string, string | number>) => {
    const g = svg('g', { ...attrs, class: `tl-bar ${cls} ${attrs['class'] ?? ''}`.trim() }, chart);
    svg('rect', { x: x(a), y: lane * laneH + 3, width: Math.max(1.5, x(b) - x(a)), height: laneH - 6 }, g);
    svgTitle(g, title);
  };
  for (const t of D.turns) {
    if (t.startTime === null) continue;
    const end = t.durationMs !== null ? t.startTime + t.durationMs : t1;
    bar(0, t.startTime, end, (t.synthetic ? 'synthetic ' : '') + 'r-' + t.reason, `turn ${t.turn}: ${t.reason}${t.synthetic ? ' (synthetic closer)' : ''}, ${dur(t.durationMs)}`, { class: 'seq-link', 'data-seq': t.startSeq });
    for (const st of t.steps) {
      const a = ev[st.startSeq]?.time;
      if (a === undefined) continue;
      bar(1, a, st.durationMs !== null ? a + st.durationMs : end, st.endSeq === null ? 'synthetic' : '', `step ${t.turn}/${st.step}: ${st.endReason ?? '-'}, ${dur(st.durationMs)}${st.retries ? `, ${st.retries} retries` : ''}`, { class: 'seq-link', 'data-seq': st.startSeq });
    }
  }
  for (const d of D.dispatches) {
    const a = ev[d.first]?.time;
    if (a === undefined) continue;
    const failed = d.finish !== null && /^error/.test(d.finish);
    bar(2, a, a + d.durationMs, failed ? 'failed' : d.finish === null ? 'synthetic' : '', `${d.key}: ${d.finish ?? 'no finish'}, ${dur(d.durationMs)}`, { 'data-dispatch-link': d.i });
  }
  const open = new Map<string, PageEvent>();
  const callIdOf = (e: PageEvent): string | null => {
    const data = e.data as { callId?: unknown; message?: { content?: { toolCallId?: unknown }[] } } | undefined;
    const id = data?.callId ?? data?.message?.content?.[0]?.toolCallId;
    return typeof id === 'string' ? id : null;
  };
  for (const e of ev) {
    if (!e) continue;
    if (e.type === 'tool/call') {
      const id = callIdOf(e);
      if (id !== null) open.set(id, e);
    } else if (e.type === 'tool/result') {
      const id = callIdOf(e);
      const c = id !== null ? open.get(id) : undefined;
      if (!c) continue;
      open.delete(id as string);
      const name = (c.data as { name?: unknown } | undefined)?.name;
      bar(3, c.time, e.time, e.seq >= D.session.storedEventCount ? 'synthetic' : '', `${typeof name === 'string' ? name : 'tool'} (seq ${c.seq} \u2192 ${e.seq}), ${dur(e.time - c.time)}`, { class: 'seq-link', 'data-seq': c.seq });
    }
  }
  for (const c of open.values()) bar(3, c.time, t1, 'synthetic', `tool call seq ${c.seq}: no result`, { class: 'seq-link', 'data-seq': c.seq });
}

// ------------------------------------------------------------ search
let hay: string[] | null = null;
let results: number[] = [];
let resAt = -1;
let lastQ = '';
function search(query: string): void {
  const q = query.trim().toLowerCase();
  const ev = events();
  const root = $('s-search');
  root.textContent = '';
  $('tab-search').hidden = false;
  lastQ = q;
  results = [];
  resAt = -1;
  if (!q) {
    $('search-status').textContent = '';
    return;
  }
  const h = (hay ??= ev.map((e) => JSON.stringify(e).toLowerCase()));
  for (let i = 0; i < h.length; i++) if ((h[i] as string).indexOf(q) >= 0) results.push(i);
  $('search-status').textContent = num(results.length) + ' events';
  show('search');
  add(root, el('p', 'muted', num(results.length) + ' events contain \u201c' + q + '\u201d (type, payload or raw JSON)' + (results.length > 1000 ? '; the first 1,000 are listed' : '') + '. Enter / n: next, N: previous.'));
  const ul = put(root, el('ul', 'results'));
  for (const s of results.slice(0, 1000)) {
    const li = navItem(put(ul, el('li', 'result-row')));
    li.dataset['open'] = String(s);
    const at = (h[s] as string).indexOf(q);
    const raw = JSON.stringify(ev[s]);
    add(li, seqLink(s), ' ', el('span', 'muted', (ev[s] as PageEvent).type), ' ', el('span', 'snip', short(raw.slice(Math.max(0, at - 60), at + q.length + 100), 200)));
  }
  ul.addEventListener('click', (e) => {
    if (closestData(e.target, '.seq-link')) return;
    const li = closestData(e.target, '[data-open]');
    if (li) openEvent(Number(li.dataset['open']));
  });
}
function nextResult(dir: number): void {
  if (!results.length) return;
  resAt = (resAt + dir + results.length) % results.length;
  openEvent(results[resAt] as number);
  $('search-status').textContent = resAt + 1 + ' / ' + num(results.length);
}

// ------------------------------------------------------------ keyboard
function navItems(): HTMLElement[] {
  const s = document.getElementById('s-' + active);
  if (!s) return [];
  return [...s.querySelectorAll<HTMLElement>('.nav-item')].filter((n) => n.offsetParent !== null);
}
function move(dir: number): void {
  if (active === 'events') {
    const ev = events();
    if (!ev.length) return;
    const next = Math.max(0, Math.min(ev.length - 1, (evSel < 0 ? -1 : evSel) + dir));
    evSel = next;
    evScrollTo(next);
    if (!$('inspector').hidden) openEvent(next);
    return;
  }
  const items = navItems();
  if (!items.length) return;
  let cur = items.indexOf(document.activeElement as HTMLElement);
  if (cur < 0) cur = items.findIndex((n) => n.classList.contains('cur'));
  const i = cur < 0 ? (dir > 0 ? 0 : items.length - 1) : Math.max(0, Math.min(items.length - 1, cur + dir));
  for (const n of items) n.classList.remove('cur');
  const target = items[i] as HTMLElement;
  target.classList.add('cur');
  target.focus({ preventScroll: true });
  target.scrollIntoView({ block: 'nearest' });
}
document.addEventListener('keydown', (e) => {
  const t = e.target instanceof HTMLElement ? e.target : null;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA')) {
    if (e.key === 'Escape') {
      t.blur();
      e.preventDefault();
    } else if (e.key === 'Enter' && t instanceof HTMLInputElement && t.id === 'search') {
      e.preventDefault();
      const q = t.value.trim().toLowerCase();
      if (q && q === lastQ && results.length) nextResult(e.shiftKey ? -1 : 1);
      else search(t.value);
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const box = $('search') as HTMLInputElement;
  if (e.key === '/') {
    e.preventDefault();
    box.focus();
    box.select();
  } else if (e.key === 'Escape') {
    if (!$('inspector').hidden) closeInspector();
    else if (lastQ) {
      box.value = '';
      search('');
      show('overview');
    }
  } else if (e.key === 'j') {
    e.preventDefault();
    move(1);
  } else if (e.key === 'k') {
    e.preventDefault();
    move(-1);
  } else if (e.key === 'n') nextResult(1);
  else if (e.key === 'N') nextResult(-1);
  else if (e.key === 'Enter' && active === 'events' && evSel >= 0) openEvent(evSel);
  else if (e.key === 'Enter' && t && t.classList.contains('nav-item') && t.tagName !== 'SUMMARY') t.click();
  else if (/^[1-8]$/.test(e.key)) show(TABS[Number(e.key) - 1]);
});

// ------------------------------------------------------------ wiring
document.addEventListener('click', (e) => {
  const a = closestData(e.target, '.seq-link');
  if (a) {
    e.preventDefault();
    openEvent(Number(a.dataset['seq']));
    return;
  }
  const tb = closestData(e.target, '[data-tab]');
  if (tb) {
    show(tb.dataset['tab']);
    return;
  }
  const dl = closestData(e.target, '[data-dispatch-link]');
  if (dl) openDispatch(Number(dl.dataset['dispatchLink']));
});
$('insp-close').addEventListener('click', closeInspector);
window.addEventListener('resize', () => requestAnimationFrame(evRender));
window.addEventListener('beforeprint', () => {
  for (const t of ['timeline', 'context', 'conversation', 'compactions', 'findings'] as const) render(t);
  txList?.all();
  sfList?.all();
});
$('title').textContent = 'dsh report \u00b7 ' + (D.session.id || '(unknown session)');
$('status').textContent = D.health.status;
$('status').className = 'badge h-' + D.health.status;
show('overview');
document.documentElement.dataset['ready'] = 'overview';
// Decode the events blob after the first paint.
setTimeout(() => {
  events();
  document.documentElement.dataset['ready'] = 'all';
}, 30);

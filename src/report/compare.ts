/**
 * The compare mode of `dsh report` (`dsh report A --compare B -o x.html`):
 * one self-contained static HTML page laying out a `SessionDiff` — the two
 * dispatch timelines side by side, aligned pair by pair, the first divergent
 * dispatch highlighted (and linked from the summary), each divergent pair's
 * details (context in/out, header, usage, tool calls), then the final surface
 * and transcript diffs. No script at all: a Content-Security-Policy allows
 * only the page's own stylesheet by hash. Log text is HTML-escaped.
 */
import { createHash } from 'node:crypto';
import type { Hunk, PairDiff, SessionDiff, TextDiff, ToolCallFact, UsageNumbers } from '../views/diff.js';
import { costText } from '../views/diff.js';
import { escapeHtml, pageHead } from './html.js';
import { toJson } from '../core/json.js';
import { formatCount } from '../core/text.js';

const COMPARE_CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--mut:#667;--line:#d0d7de;--add:#e6ffec;--del:#ffebe9;--hi:#fff3bf;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mut:#8b949e;--line:#30363d;--add:#12261e;--del:#2d1214;--hi:#3b2e00;--warn:#d29922}}
body{margin:0;padding:1rem 1.5rem;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,sans-serif}
h1{font-size:1.2rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line)}
table{border-collapse:collapse;width:100%}td,th{border:1px solid var(--line);padding:.25rem .45rem;vertical-align:top;text-align:left}
th{font-weight:600}.muted{color:var(--mut)}.warn{color:var(--warn)}
table.summary td:first-child{width:9rem;font-weight:600}
table.timeline td.side{width:42%}table.timeline td.mid{width:16%;text-align:center}
tr.differs td{background:color-mix(in srgb,var(--hi) 35%,transparent)}
tr.first td{background:var(--hi);outline:2px solid var(--warn)}
tr.only td.empty{background:repeating-linear-gradient(45deg,transparent 0 6px,var(--line) 6px 7px)}
tr.detail td{padding:.4rem .8rem}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{margin:.3rem 0;padding:.4rem;border:1px solid var(--line);overflow-x:auto;white-space:pre}
pre .a{background:var(--add)}pre .d{background:var(--del)}pre .h{color:var(--mut)}
ul{margin:.2rem 0;padding-left:1.2rem}
`;

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

/** The compare page's Content-Security-Policy: its stylesheet only, no script, nothing fetched. */
export function compareSecurityPolicy(): string {
  return ["default-src 'none'", `style-src 'sha256-${sha256(COMPARE_CSS)}'`, "base-uri 'none'", "form-action 'none'"].join('; ');
}

const e = (s: unknown) => escapeHtml(String(s));
const n = formatCount;
const LINE_LIMIT = 2000;

function usageText(u: UsageNumbers | null): string {
  if (!u) return '-';
  return Object.entries(u)
    .map(([k, v]) => `${k.replace(/Tokens$/, '')} ${n(v)}`)
    .join(', ');
}

function deltaText(a: UsageNumbers | null, b: UsageNumbers | null, d: UsageNumbers | null): string {
  if (!d) return '-';
  return Object.entries(d)
    .map(([k, v]) => `${k.replace(/Tokens$/, '')} ${n(a?.[k] ?? 0)} → ${n(b?.[k] ?? 0)} (${v >= 0 ? '+' : ''}${n(v)})`)
    .join(', ');
}

function finishText(f: unknown): string {
  if (f === null || f === undefined) return 'none';
  if (typeof f === 'string') return f;
  const o = f as { kind?: unknown; failure?: { code?: unknown } };
  return `${String(o.kind)}${o.failure?.code !== undefined ? ` ${String(o.failure.code)}` : ''}`;
}

function hunksHtml(t: TextDiff): string {
  if (t.hunks.length === 0) return '<p class="muted">no difference</p>';
  const lines: string[] = [];
  for (const h of t.hunks as Hunk[]) {
    lines.push(`<span class="h">${e(`@@ -${h.aStart},${h.aCount} +${h.bStart},${h.bCount} @@`)}</span>`);
    for (const l of h.lines) {
      const text = l.text.length > LINE_LIMIT ? l.text.slice(0, LINE_LIMIT) + '…' : l.text;
      const cls = l.op === '+' ? ' class="a"' : l.op === '-' ? ' class="d"' : '';
      lines.push(`<span${cls}>${e(l.op + text)}</span>`);
    }
  }
  return `<pre>${lines.join('\n')}</pre>`;
}

function callHtml(t: ToolCallFact): string {
  const args = t.arguments.length > 200 ? t.arguments.slice(0, 200) + '…' : t.arguments;
  return `<code>${e(t.name)}(${e(args)})</code> → ${e(t.outcome)}${t.errorCode ? ` ${e(t.errorCode)}` : ''}${t.resultSeq !== null ? ` <span class="muted">seq ${t.resultSeq}</span>` : ''}`;
}

function sideCell(p: PairDiff, side: 'a' | 'b'): string {
  const ref = p[side];
  if (!ref) return '<td class="side empty"></td>';
  const calls = p.toolCalls[side];
  return `<td class="side"><b>${e(ref.key)}</b> <span class="muted">first chunk ${ref.firstChunkSeq} · ${e(ref.model ?? '?')} · ${ref.messageCount} msgs</span><br>finish ${e(finishText(p.finish[side]))} · usage ${e(usageText(p.usage[side]))}${calls.length ? `<ul>${calls.map((t) => `<li>${callHtml(t)}</li>`).join('')}</ul>` : ''}</td>`;
}

function detailHtml(p: PairDiff): string {
  const parts: string[] = [];
  const m = p.messages;
  parts.push(`<p>messages: ${m.kept} equivalent, ${m.left.length} left (a), ${m.entered.length} entered (b)</p>`);
  if (m.left.length || m.entered.length) {
    parts.push(
      `<ul>${m.left.map((x) => `<li class="warn">− a seq ${x.seq} #${x.position} ${e(x.type)} ${e(x.role ?? '')}: ${e(x.preview)}</li>`).join('')}${m.entered
        .map((x) => `<li>+ b seq ${x.seq} #${x.position} ${e(x.type)} ${e(x.role ?? '')}: ${e(x.preview)}</li>`)
        .join('')}</ul>`,
    );
  }
  for (const x of m.modified) parts.push(`<p>a seq ${x.a.seq} → b seq ${x.b.seq} changed:</p>${hunksHtml(x.diff)}`);
  if (p.header.changes.length) {
    parts.push(`<p>header changed (request/header a:${p.header.aSeq ?? '-'} b:${p.header.bSeq ?? '-'}): ${p.header.changes.map((c) => `<code>${e(c.field)}</code>`).join(', ')}</p>`);
    if (p.header.system) parts.push(hunksHtml(p.header.system));
  }
  if (p.requestContext.changed) parts.push(`<p>request context: <code>${e(toJson(p.requestContext.a))}</code> → <code>${e(toJson(p.requestContext.b))}</code></p>`);
  parts.push(`<p>usage: ${e(deltaText(p.usage.a, p.usage.b, p.usage.delta))}</p>`);
  if (p.output) parts.push(`<p>answer differs:</p>${hunksHtml(p.output)}`);
  return parts.join('');
}

/** The compare page. `labels` are the two targets as given. */
export function compareReportHtml(d: SessionDiff, labels: { a: string; b: string }, version: string): string {
  const title = `dsh compare · ${d.a.sessionId} vs ${d.b.sessionId}`;
  const pairs = d.dispatches.pairs;
  const fd = d.dispatches.firstDivergent;
  const details = new Map<number, PairDiff>();
  if (fd !== null) d.dispatches.divergent.forEach((p, i) => details.set(fd + i, p));
  const rows: string[] = [];
  pairs.forEach((pair, i) => {
    const p = details.get(i);
    const cls = [pair.differs.length ? 'differs' : 'same', i === fd ? 'first' : '', !pair.a || !pair.b ? 'only' : ''].filter(Boolean).join(' ');
    const mid = pair.differs.length ? `<span class="warn">${e(pair.differs.join(', '))}</span>` : '<span class="muted">equivalent</span>';
    if (!p) {
      rows.push(`<tr class="${cls}"><td class="side"><b>${e(pair.a ?? '')}</b></td><td class="mid">${mid}</td><td class="side"><b>${e(pair.b ?? '')}</b></td></tr>`);
      return;
    }
    rows.push(`<tr class="${cls}"${i === fd ? ' id="first-divergence"' : ''} data-pair="${i}">${sideCell(p, 'a')}<td class="mid">${i === fd ? '<b>first divergence</b><br>' : ''}${mid}</td>${sideCell(p, 'b')}</tr>`);
    if (p.differs.length) rows.push(`<tr class="detail"><td colspan="3"><details${i === fd ? ' open' : ''}><summary>what differs at ${e(pair.a ?? '-')} ↔ ${e(pair.b ?? '-')}</summary>${detailHtml(p)}</details></td></tr>`);
  });
  const prefix = d.sharedPrefix;
  const stop = (s: 'a' | 'b') => (prefix.stopsAt[s] ? `${s} continues at seq ${prefix.stopsAt[s]!.seq} ${prefix.stopsAt[s]!.type}` : `${s} ends there`);
  const summary: [string, string][] = [
    ['a', `${e(d.a.sessionId)} <span class="muted">${e(labels.a)}</span> · ${n(d.a.events)} events · ${n(d.a.dispatches)} dispatches`],
    ['b', `${e(d.b.sessionId)} <span class="muted">${e(labels.b)}</span> · ${n(d.b.events)} events · ${n(d.b.dispatches)} dispatches`],
    ['relation', e(d.relation)],
    ['shared prefix', `${e(prefix.kind)}: ${n(prefix.events)} events${prefix.identical ? ', identical' : ''}; ${e(stop('a'))}, ${e(stop('b'))}`],
    ['verdict', d.identical ? 'identical events' : d.equivalent ? 'equivalent events (ids and times differ)' : '<span class="warn">the sessions differ</span>'],
    ['first divergence', fd === null ? 'none' : `<a href="#first-divergence">${e(pairs[fd]?.a ?? '(none)')} ↔ ${e(pairs[fd]?.b ?? '(none)')}</a> (${e((pairs[fd]?.differs ?? []).join(', '))})`],
    ['usage', e(deltaText(d.usageTotals.a, d.usageTotals.b, d.usageTotals.delta))],
    ['cost', `${e(costText(d))} <span class="muted">(${e(d.costNote)})</span>`],
  ];
  return `${pageHead(title, compareSecurityPolicy(), COMPARE_CSS, version)}
<h1>${e(title)}</h1>
<table class="summary">${summary.map(([k, v]) => `<tr><td>${e(k)}</td><td>${v}</td></tr>`).join('')}</table>
<h2>Dispatch timelines (aligned by ${e(d.dispatches.alignedBy)})</h2>
<table class="timeline"><tr><th>a · ${e(d.a.sessionId)}</th><th></th><th>b · ${e(d.b.sessionId)}</th></tr>
${rows.join('\n')}
</table>
<h2>Final surface (what the model sees at the end)</h2>
${hunksHtml(d.surface)}
<h2>Transcript (what the user saw)</h2>
${hunksHtml(d.transcript)}
<footer class="muted">Generated offline by dsh ${e(version)}. No script; nothing is fetched.</footer>
</body>
</html>
`;
}

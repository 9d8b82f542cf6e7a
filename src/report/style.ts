/** The report's stylesheet (inlined; allowed by its sha256 in the CSP). System fonts only. */
export const REPORT_CSS = String.raw`
:root { --fg: #1d2430; --muted: #667085; --bg: #fff; --panel: #f6f7f9; --line: #d9dde3; --accent: #2f6feb; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --info: #6639ba; --band: transparent; color-scheme: light; }
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: var(--bg); }
pre, code, .mono, .c-seq, .c-time, .c-ts, .key, .code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
#bar { position: sticky; top: 0; z-index: 5; display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: center; padding: 8px 16px; background: #0f172a; color: #e2e8f0; }
#bar h1 { font-size: 15px; margin: 0; font-weight: 600; max-width: 40vw; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#tabs { display: flex; gap: 2px; flex-wrap: wrap; }
#tabs button { background: transparent; color: #cbd5e1; border: 0; padding: 5px 10px; border-radius: 6px; cursor: pointer; font: inherit; }
#tabs button[aria-selected="true"] { background: #334155; color: #fff; }
#search { margin-left: auto; width: 260px; padding: 5px 8px; border-radius: 6px; border: 1px solid #475569; background: #1e293b; color: #fff; font: inherit; }
#search-status { color: #94a3b8; min-width: 6em; }
main { padding: 14px 16px 40px; }
footer { padding: 8px 16px 20px; font-size: 12px; }
h2 { font-size: 15px; margin: 0 0 8px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
h4 { display: inline; font-size: 13px; margin: 0; }
.muted { color: var(--muted); }
.small { font-size: 12px; }
table.verdicts { margin-bottom: 12px; }
.empty { color: var(--muted); font-style: italic; padding: 20px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; background: var(--bg); min-width: 0; }
.card dl, .trace, #insp-body dl, .diff dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 12px; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.health.h-ok { border-left: 5px solid var(--ok); }
.health.h-torn, .health.h-needs-repair { border-left: 5px solid var(--warn); }
.health.h-refused, .health.h-corrupt { border-left: 5px solid var(--bad); }
.status { font-weight: 600; margin: 0 0 8px; }
.error { border: 1px solid var(--bad); background: #fff5f5; border-radius: 6px; padding: 8px 10px; margin: 0 0 10px; }
.err-class { font-weight: 700; color: var(--bad); }
.err-msg { white-space: pre-wrap; margin: 4px 0; }
.warn { color: var(--warn); }
.note { color: var(--muted); font-size: 13px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; line-height: 18px; background: #eaeef2; color: #24292f; margin-left: 3px; white-space: nowrap; }
.b-ok, .badge.h-ok { background: #dafbe1; color: var(--ok); }
.b-warn, .badge.h-torn, .badge.h-needs-repair { background: #fff8c5; color: var(--warn); }
.b-bad, .badge.h-refused, .badge.h-corrupt { background: #ffebe9; color: var(--bad); }
.b-info { background: #fbefff; color: var(--info); }
button.seq-link, button.link { background: none; border: 0; padding: 0; color: var(--accent); cursor: pointer; font: inherit; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
button.seq-link:hover, button.link:hover { text-decoration: underline; }
table.counts td, table.grid td, table.grid th { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
table.grid { border-collapse: collapse; width: 100%; }
table.grid th { background: var(--panel); position: sticky; top: 48px; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.comp[data-open], tr.finding { cursor: pointer; }
tr.comp:hover, .result-row:hover { background: var(--panel); }
tr.sev-error td.code { color: var(--bad); }
td.code { white-space: nowrap; }
.chip { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.turn, .dispatch { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; background: var(--bg); }
.turn > summary, .dispatch > summary { padding: 6px 10px; cursor: pointer; }
.turn-no { font-weight: 700; }
.turn-body { padding: 4px 12px 10px; }
.step { border-left: 3px solid var(--line); padding: 2px 0 4px 10px; margin: 8px 0; }
.step-head { font-weight: 600; font-size: 13px; }
.dispatch { margin-left: 6px; background: var(--panel); }
.dispatch .key { font-weight: 700; }
.dispatch-body { padding: 4px 12px 12px; background: var(--bg); }
.req-sec { margin: 10px 0; }
pre.raw { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px; overflow: auto; max-height: 420px; margin: 6px 0; white-space: pre; }
pre.wrap { white-space: pre-wrap; overflow-wrap: anywhere; }
ol.messages { padding-left: 26px; }
.msg { margin: 6px 0; }
.msg-head .role { font-weight: 700; }
.msg-json { max-height: 260px; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
.col { min-width: 0; }
.col-body { height: calc(100vh - 150px); overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.msg-text { white-space: pre-wrap; overflow-wrap: anywhere; color: #374151; }
.msg-raw > summary { cursor: pointer; font-size: 12px; }
.col h3 { position: sticky; top: 48px; background: var(--bg); margin: 0; padding: 6px 0; z-index: 2; }
.tx, .sf { padding: 6px 10px 6px 14px; border-bottom: 1px solid #eef0f3; position: relative; cursor: pointer; }
.banded { box-shadow: inset 5px 0 0 var(--band); }
.tx.marked, .sf.marked, .nav-item.cur, .nav-item:focus { outline: 2px solid var(--accent); outline-offset: -2px; }
.tx .head, .sf .head { font-size: 12.5px; margin-bottom: 2px; }
.role { font-weight: 700; text-transform: lowercase; }
.r-user { color: #0969da; }
.r-assistant { color: #8250df; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 18em; overflow: auto; }
.text.out { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; background: var(--panel); padding: 4px 6px; border-radius: 4px; }
.divider { font-weight: 700; border-top: 2px solid var(--fg); padding-top: 4px; margin-top: 8px; }
.turn-end { color: var(--bad); font-weight: 600; }
.toolcall { margin: 4px 0 4px 8px; }
.call { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; color: #57606a; overflow-wrap: anywhere; }
.result { margin-left: 12px; padding-left: 6px; }
.result.is-error .out { background: #fff5f5; }
.tx.compaction, .sf.compaction, .tx.prune { background: #fbf7ff; }
.summary { font-style: italic; }
#s-events .viewport { height: calc(100vh - 140px); overflow: auto; border: 1px solid var(--line); border-radius: 6px; position: relative; }
.spacer { position: relative; }
.row { position: absolute; left: 0; right: 0; height: 22px; line-height: 22px; white-space: nowrap; overflow: hidden; padding: 0 8px; cursor: pointer; font-size: 12.5px; display: flex; gap: 10px; }
.row:hover { background: var(--panel); }
.row.sel { background: #ddf4ff; }
.row.synthetic { font-style: italic; }
.row.seed .c-seq { color: #a0a7b4; }
.fork-boundary { border-top: 3px dashed var(--info); color: var(--info); font-weight: 600; padding: 4px 10px; }
.c-seq { width: 6em; text-align: right; color: var(--muted); flex: none; }
.c-time { width: 7.5em; color: var(--muted); flex: none; }
.c-ts { width: 4em; flex: none; color: var(--muted); }
.c-label { width: 5.5em; flex: none; }
.l-current .c-label { color: var(--ok); }
.l-shadowed .c-label { color: var(--warn); }
.l-log-only .c-label { color: var(--muted); }
.c-type { width: 11em; flex: none; font-weight: 600; overflow: hidden; text-overflow: ellipsis; }
.c-prev { overflow: hidden; text-overflow: ellipsis; flex: 1; }
#inspector { position: fixed; top: 48px; right: 0; bottom: 0; width: min(40vw, 680px); background: var(--bg); border-left: 1px solid var(--line); box-shadow: -6px 0 18px rgba(0,0,0,.08); overflow: auto; padding: 12px 16px; z-index: 6; }
#insp-close { position: sticky; top: 0; float: right; font-size: 20px; border: 0; background: none; cursor: pointer; }
ul.seqs { list-style: none; margin: 0; padding: 0; }
ul.seqs li { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
ul.results { list-style: none; padding: 0; }
.result-row { padding: 3px 6px; border-bottom: 1px solid #eef0f3; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.snip { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
@media (max-width: 900px) { .cols { grid-template-columns: 1fr; } #inspector { width: 100vw; } }
@media print {
  #bar, #inspector, #s-events, #s-search, footer, .sentinel { display: none !important; }
  section[hidden] { display: block !important; }
  section { break-before: page; }
  section:first-of-type { break-before: auto; }
  body { font-size: 10.5pt; }
  .cols { grid-template-columns: 1fr 1fr; }
  .col-body { height: auto; overflow: visible; border: 0; }
  .text, pre.raw { max-height: none; overflow: visible; white-space: pre-wrap; }
  .card, .turn, .tx, .sf, tr { break-inside: avoid; }
  table.grid th, .col h3 { position: static; }
  a, button.seq-link { color: inherit; }
}
.chart-wrap { overflow-x: auto; margin: 6px 0 10px; }
.ctx-chart, .tl-chart { display: block; font: 11px system-ui, sans-serif; }
.ctx-grid { stroke: #e5e7eb; stroke-width: 1; }
.ctx-axis { fill: var(--muted); font-size: 11px; }
.ctx-bar, .ctx-break, .ctx-marker, .tl-bar { cursor: pointer; }
.ctx-bar.est { opacity: .45; }
.ctx-bar:hover rect { opacity: .8; }
.cx-system { fill: #6366f1; background: #6366f1; }
.cx-tools { fill: #a78bfa; background: #a78bfa; }
.cx-user { fill: #0ea5e9; background: #0ea5e9; }
.cx-assistantText { fill: #22c55e; background: #22c55e; }
.cx-assistantReasoning { fill: #86efac; background: #86efac; }
.cx-assistantToolCalls { fill: #15803d; background: #15803d; }
.cx-toolResults { fill: #f59e0b; background: #f59e0b; }
.cx-compaction { fill: #ec4899; background: #ec4899; }
.cx-other { fill: #cbd5e1; background: #cbd5e1; }
.ctx-shared { fill: #0f172a; opacity: .18; }
.ctx-shared-sw { background: rgba(15, 23, 42, .3); }
.ctx-read { fill: #0f172a; }
.ctx-window { fill: none; stroke: var(--bad); stroke-width: 1.5; stroke-dasharray: 5 3; }
.ctx-marker .ctx-mline { stroke: #334155; stroke-dasharray: 2 2; }
.ctx-marker circle { fill: #fff; stroke: #334155; }
.ctx-marker.m-compaction circle { stroke: #ec4899; }
.ctx-marker text, .ctx-marker line { font-size: 10px; font-weight: 700; fill: #334155; pointer-events: none; }
.ctx-break path { fill: var(--bad); }
.ctx-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; padding: 0; margin: 0 0 8px; font-size: 12px; }
.ctx-legend .sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; vertical-align: -1px; }
.ctx-breaks { padding-left: 18px; }
.tl-bar rect { fill: #94a3b8; }
.tl-bar.r-completed rect { fill: #64748b; }
.tl-bar.failed rect { fill: var(--bad); }
.tl-bar.synthetic rect, .tl-bar.r-interrupted rect { fill: #fbbf24; stroke: #b45309; stroke-dasharray: 3 2; }
`;

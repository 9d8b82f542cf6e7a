/**
 * The report page's script, as a string (it is inlined into the HTML and
 * allowed by its sha256 in the Content-Security-Policy). Plain ES2020, no
 * dependencies. Log text is untrusted: it only ever reaches the DOM through
 * `textContent` / `dataset` / CSSOM, never through HTML parsing, and every
 * listener is attached here (no inline handlers).
 *
 * Written with String.raw and without template substitutions or backticks.
 */
export const CLIENT_SCRIPT = String.raw`(function () {
'use strict';
var D = JSON.parse(document.getElementById('dsh-data').textContent);
var E = null;
var IDX = null;
var $ = function (id) { return document.getElementById(id); };

// ------------------------------------------------------------ helpers
function el(tag, cls, text) {
  var n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined && text !== null) n.textContent = String(text);
  return n;
}
function add(parent) {
  for (var i = 1; i < arguments.length; i++) {
    var c = arguments[i];
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return parent;
}
// Append one child and return it.
function put(parent, child) { parent.appendChild(child); return child; }
function num(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : String(n); }
function iso(ms) { return typeof ms === 'number' && isFinite(ms) ? new Date(ms).toISOString() : '-'; }
function clock(ms) { return typeof ms === 'number' && isFinite(ms) ? new Date(ms).toISOString().slice(11, 23) : ''; }
function dur(ms) {
  if (typeof ms !== 'number' || !isFinite(ms)) return '-';
  if (ms < 10000) return num(ms) + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
}
function clip(s, max) {
  s = String(s).replace(/\s+/g, ' ').trim();
  return s.length <= max ? s : s.slice(0, max - 1) + '\u2026';
}
function json(v) { try { var s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch (e) { return String(v); } }
function usageText(u) {
  if (!u || typeof u !== 'object') return '-';
  var p = [];
  if (u.inputTokens !== undefined) p.push('in ' + num(u.inputTokens));
  if (u.cacheReadTokens !== undefined) p.push('cache-read ' + num(u.cacheReadTokens));
  if (u.cacheWriteTokens !== undefined) p.push('cache-write ' + num(u.cacheWriteTokens));
  if (u.outputTokens !== undefined) p.push('out ' + num(u.outputTokens));
  if (u.reasoningTokens !== undefined) p.push('reasoning ' + num(u.reasoningTokens));
  return p.length ? p.join(', ') : '-';
}
function seqLink(seq, label) {
  var b = el('button', 'seq-link', label === undefined ? '#' + seq : label);
  b.type = 'button';
  b.dataset.seq = String(seq);
  b.title = 'open event ' + seq;
  return b;
}
function badge(text, kind) { return el('span', 'badge' + (kind ? ' b-' + kind : ''), text); }
function kv(dl, key, value) {
  add(dl, el('dt', null, key));
  var dd = el('dd');
  if (value instanceof Node) dd.appendChild(value); else dd.textContent = value === null || value === undefined ? '-' : String(value);
  dl.appendChild(dd);
  return dd;
}
function pre(text, cls) { return el('pre', cls || 'raw', text); }
function band(i) { return 'hsl(' + ((i * 67) % 360) + ' 70% 50%)'; }
function navItem(n) { n.classList.add('nav-item'); if (n.tabIndex < 0) n.tabIndex = 0; return n; }
function reasonKind(r) { return /^completed|^stop|^tool-calls/.test(String(r)) ? 'ok' : /^open/.test(String(r)) ? 'warn' : 'bad'; }

// Content blocks as visible text (dsh's blocksText).
function blocksText(c) {
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  var parts = [];
  for (var i = 0; i < c.length; i++) {
    var b = c[i];
    if (!b || typeof b !== 'object') continue;
    switch (b.type) {
      case 'text': parts.push(String(b.text === undefined || b.text === null ? '' : b.text)); break;
      case 'reasoning': break;
      case 'tool-call': parts.push(String(b.name) + '(' + (typeof b.arguments === 'string' ? b.arguments : json(b.arguments)) + ')'); break;
      case 'tool-result': parts.push(blocksText(b.content)); break;
      case 'image': parts.push('[image]'); break;
      default: parts.push('[' + String(b.type) + ']');
    }
  }
  return parts.filter(function (p) { return p.length > 0; }).join(' ');
}
// DSH deriveEventMessage: the model message an event contributes.
function deriveMessage(e) {
  if (!e) return null;
  var d = e.data || {};
  if (e.type === 'user/message') return e.data;
  if (e.type === 'assistant/message') return d.message && Array.isArray(d.message.content) && d.message.content.length === 0 ? null : d.message;
  if (e.type === 'tool/result') return d.message;
  return null;
}
function summary(e) {
  var d = e.data || {};
  switch (e.type) {
    case 'user/message': {
      var s = d.source || {};
      var tag = s.kind === 'plugin' ? '[' + s.plugin + (s.compactionId ? ' ' + s.compactionId : '') + '] ' : s.kind && s.kind !== 'user' ? '[' + s.kind + '] ' : '';
      return tag + blocksText(d.content);
    }
    case 'assistant/message': {
      var c = d.message && d.message.content;
      if (Array.isArray(c) && c.length === 0) return '(empty response: usage only)';
      return (d.interrupted ? '[interrupted] ' : '') + blocksText(c);
    }
    case 'tool/result': return (d.error ? '[' + (d.error.code || d.error.name) + '] ' : '') + blocksText(d.message && d.message.content);
    case 'tool/call': return d.name + '(' + (typeof d.arguments === 'string' ? d.arguments : json(d.arguments)) + ')';
    case 'assistant/chunk': {
      var k = d.chunk || {};
      if (k.type === 'text-delta' || k.type === 'reasoning-delta') return k.type + ' ' + json(k.text);
      if (k.type === 'tool-call-delta') return 'tool-call-delta ' + (k.name ? k.name + ' ' : '') + json(k.argumentsDelta);
      if (k.type === 'finish') return 'finish ' + (typeof k.reason === 'string' ? k.reason : json(k.reason));
      if (k.type === 'usage') return 'usage ' + json(k.usage);
      return String(k.type);
    }
    case 'compaction/summary': return (d.compactionId || '') + ': ' + blocksText(d.summary);
    case 'compaction/start': case 'compaction/end': return String(d.compactionId || '');
    case 'compaction/prune': return 'pruned ' + (Array.isArray(d.shadowedSeqs) ? d.shadowedSeqs.join(', ') : '?') + (d.shadowedTokenCount !== undefined ? ' (~' + d.shadowedTokenCount + ' tokens)' : '');
    case 'turn/start': return 'turn ' + d.turn;
    case 'turn/end': return 'turn ' + d.turn + ' ' + (d.reason && d.reason.kind ? d.reason.kind : json(d.reason));
    case 'step/start': case 'step/end': return 'turn ' + d.turn + ' step ' + d.step;
    case 'session/title': return String(d.title || '');
    default: return json(e.data);
  }
}

// ------------------------------------------------------------ data indexes
var current = new Set(D.surface.nodes);
var replacedBy = new Map();
var replacedSeqs = new Map();
D.surface.replacements.forEach(function (r, i) {
  replacedSeqs.set(r.seq, r.shadowedSeqs);
  r.shadowedSeqs.forEach(function (s) { replacedBy.set(s, r.seq); });
});
var bandOf = new Map();
D.surface.replacements.forEach(function (r, i) { bandOf.set(r.seq, i); });
function label(seq) { return current.has(seq) ? 'current' : replacedBy.has(seq) ? 'shadowed' : 'log-only'; }

function events() {
  if (E) return E;
  var node = $('dsh-events');
  // Compact rows (see eventsBlob in html.ts): [typeIndex, timeDelta, data] or the event verbatim.
  var blob = node ? JSON.parse(node.textContent) : { rows: [], types: [] };
  var rows = blob.rows, prev = 0;
  E = new Array(rows.length);
  for (var n = 0; n < rows.length; n++) {
    var row = rows[n];
    if (Array.isArray(row)) { prev += row[1]; E[n] = { type: blob.types[row[0]], seq: n, time: prev, data: row[2] }; }
    else { E[n] = row; if (typeof row.time === 'number') prev = row.time; }
  }
  blob = rows = null;
  var derived = new Map();
  for (var i = 0; i < E.length; i++) {
    var e = E[i];
    var src = Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs : [];
    for (var j = 0; j < src.length; j++) {
      var s = src[j];
      if (s >= e.seq) continue;
      var l = derived.get(s);
      if (l) l.push(e.seq); else derived.set(s, [e.seq]);
    }
  }
  IDX = { derived: derived };
  return E;
}
function traceOf(seq) {
  var ev = events();
  var e = ev[seq];
  var chain = [];
  var guard = new Set([seq]);
  var next = replacedBy.get(seq);
  while (next !== undefined && !guard.has(next)) { chain.push(next); guard.add(next); next = replacedBy.get(next); }
  return {
    replacedBy: replacedBy.has(seq) ? replacedBy.get(seq) : null,
    replacementChain: chain,
    replacedEventSeqs: (replacedSeqs.get(seq) || []).slice(),
    sourceEventSeqs: e && Array.isArray(e.sourceEventSeqs) ? e.sourceEventSeqs.slice() : [],
    derivedEventSeqs: (IDX.derived.get(seq) || []).slice()
  };
}
// Dispatch owning a seq (chunk span or its assistant/message).
function dispatchOf(seq) {
  var ds = D.dispatches, lo = 0, hi = ds.length - 1, at = -1;
  while (lo <= hi) { var mid = (lo + hi) >> 1; if (ds[mid].first <= seq) { at = mid; lo = mid + 1; } else hi = mid - 1; }
  if (at >= 0 && seq <= ds[at].last) return ds[at];
  for (var i = Math.max(0, at - 2); i < ds.length && i <= at + 1; i++) if (ds[i] && ds[i].assistantSeq === seq) return ds[i];
  return null;
}
var nodeCache = new Map();
function nodesOf(i) {
  if (nodeCache.has(i)) return nodeCache.get(i);
  var j = i;
  while (j >= 0 && !nodeCache.has(j)) j--;
  var prev = j >= 0 ? nodeCache.get(j) : [];
  for (var k = j + 1; k <= i; k++) {
    var code = D.dispatches[k].nodes;
    var cur = prev.slice(0, code[0]).concat(code.slice(1));
    nodeCache.set(k, cur);
    prev = cur;
  }
  return nodeCache.get(i);
}
function messagesOf(i) {
  var ev = events();
  var out = [];
  nodesOf(i).forEach(function (s) { var m = deriveMessage(ev[s]); if (m !== null && m !== undefined) out.push({ seq: s, message: m }); });
  return out;
}

// ------------------------------------------------------------ tabs
var TABS = ['overview', 'timeline', 'conversation', 'compactions', 'findings', 'events', 'search'];
var rendered = {};
var active = 'overview';
function show(tab) {
  if (TABS.indexOf(tab) < 0) return;
  active = tab;
  TABS.forEach(function (t) {
    var s = $('s-' + t);
    if (s) s.hidden = t !== tab;
    var b = document.querySelector('#tabs [data-tab="' + t + '"]');
    if (b) b.setAttribute('aria-selected', t === tab ? 'true' : 'false');
  });
  render(tab);
  if (tab === 'events') evRender();
}
function render(tab) {
  if (rendered[tab]) return;
  rendered[tab] = true;
  if (tab === 'overview') renderOverview();
  else if (tab === 'timeline') renderTimeline();
  else if (tab === 'conversation') renderConversation();
  else if (tab === 'compactions') renderCompactions();
  else if (tab === 'findings') renderFindings();
  else if (tab === 'events') renderEvents();
}

// Chunked list: render items in batches as a sentinel scrolls into view.
function chunked(container, items, make, batch) {
  var at = 0;
  var sentinel = el('div', 'sentinel');
  function more(limit) {
    if (at >= items.length) return;
    var end = Math.min(items.length, limit === undefined ? at + batch : limit);
    var frag = document.createDocumentFragment();
    for (; at < end; at++) frag.appendChild(make(items[at], at));
    container.insertBefore(frag, sentinel);
    if (at >= items.length) { sentinel.remove(); if (io) io.disconnect(); }
  }
  container.appendChild(sentinel);
  var io = typeof IntersectionObserver === 'function' ? new IntersectionObserver(function (es) { if (es.some(function (x) { return x.isIntersecting; })) more(); }, { rootMargin: '800px' }) : null;
  more();
  if (io && at < items.length) io.observe(sentinel);
  return { upTo: function (i) { if (i >= at) more(i + 1); }, all: function () { more(items.length); } };
}

// ------------------------------------------------------------ overview
function renderOverview() {
  var root = $('s-overview');
  var S = D.session, H = D.health, L = D.lineage, h = S.header || {};
  var grid = put(root, el('div', 'cards'));
  var c1 = put(grid, el('div', 'card'));
  add(c1, el('h2', null, 'Session'));
  var dl = put(c1, el('dl'));
  kv(dl, 'id', S.id);
  if (S.title) kv(dl, 'title', S.title);
  kv(dl, 'cwd', h.cwd === undefined ? '(none)' : h.cwd);
  kv(dl, 'created', iso(h.createdAt));
  kv(dl, 'format version', h.version);
  kv(dl, 'delegation depth', h.delegationDepth);
  if (h.agentPreset !== undefined) kv(dl, 'agent preset', h.agentPreset);
  if (h.origin !== undefined) kv(dl, 'origin', h.origin);
  kv(dl, 'time span', S.firstTime === null ? '-' : iso(S.firstTime) + ' \u2192 ' + iso(S.lastTime) + ' (' + dur(S.lastTime - S.firstTime) + ')');

  var c2 = put(grid, el('div', 'card'));
  add(c2, el('h2', null, 'Lineage'));
  dl = put(c2, el('dl'));
  kv(dl, 'parent', L.parent === null ? '(root session)' : L.parent + (L.unresolvedParent ? ' (not found in the root)' : ''));
  if (L.seedLength !== null) kv(dl, 'fork boundary', 'seedLength ' + num(L.seedLength) + ': events 0..' + (L.seedLength - 1) + ' are the parent\u2019s prefix, this session\u2019s own events start at seq ' + L.seedLength);
  kv(dl, 'ancestors', L.ancestors.length ? L.ancestors.map(function (a) { return a.id + ' (' + a.kind + ')'; }).join(' \u2190 ') : '-');
  var kids = el('div');
  if (!L.descendants.length) kids.textContent = '-';
  L.descendants.forEach(function (d) {
    var row = put(kids, el('div', 'child', '\u2514 ' + d.id + '  ' + d.kind + (d.seedLength !== null ? ', seedLength ' + d.seedLength : '') + '  ' + iso(d.createdAt)));
    row.style.paddingLeft = (d.depth - 1) * 1.2 + 'em';
  });
  kv(dl, 'descendants', kids);
  kv(dl, 'session root', L.root === null ? '(not inside a session root)' : L.root);
  if (L.note) add(c2, el('p', 'note', L.note));

  var c3 = put(grid, el('div', 'card'));
  add(c3, el('h2', null, 'Artifact'));
  dl = put(c3, el('dl'));
  kv(dl, 'file', S.file);
  kv(dl, 'encoding', S.encoding + (S.decoder ? ' (decoder ' + S.decoder + ')' : ''));
  kv(dl, 'size', num(S.bytes) + ' bytes');
  kv(dl, 'events', num(S.storedEventCount) + ' stored, ' + num(S.eventCount) + ' logical' + (H.closers.length ? ' (+' + H.closers.length + ' synthetic closers)' : ''));
  kv(dl, 'turns', num(D.turns.length) + ' turns, ' + num(D.dispatches.length) + ' model dispatches');
  kv(dl, 'surface', num(D.surface.nodes.length) + ' current nodes, ' + num(D.surface.replacements.length) + ' replacements');

  var c4 = put(grid, el('div', 'card health h-' + H.status));
  add(c4, el('h2', null, 'Health'));
  var st = { ok: 'healthy: DSH loads it unchanged', torn: 'torn tail (recoverable; DSH load() would repair it)', 'needs-repair': 'crash state: DSH load() would append synthetic closers', refused: 'REFUSED by DSH', corrupt: 'CORRUPT: DSH cannot load it' }[H.status];
  add(c4, el('p', 'status', st));
  if (H.error) {
    var box = put(c4, el('div', 'error'));
    add(box, el('div', 'err-class', H.error.class));
    add(box, el('pre', 'err-msg', H.error.message));
    if (H.error.cause) add(box, el('div', null, 'cause: ' + H.error.cause));
    var bits = [];
    if (H.error.stage) bits.push('stage ' + H.error.stage);
    if (H.error.rule) bits.push('rule ' + H.error.rule);
    if (H.error.seq !== undefined) bits.push('seq ' + H.error.seq);
    if (H.error.byteOffset !== undefined) bits.push('byte ' + num(H.error.byteOffset));
    if (bits.length) add(box, el('div', 'muted', bits.join(' \u00b7 ')));
    add(box, el('p', 'muted', 'DSH refuses this log as a whole: no turn, request or surface can be reconstructed from it. The text above is DSH\u2019s own error.'));
  }
  dl = put(c4, el('dl'));
  if (H.torn) {
    kv(dl, 'torn tail', 'at byte ' + num(H.torn.truncateTo) + ': ' + num(H.torn.tornBytes) + ' bytes after the last complete frame');
    kv(dl, 'recovered', H.torn.recoveredEventSeqs.length ? 'seq ' + H.torn.recoveredEventSeqs[0] + '..' + H.torn.recoveredEventSeqs[H.torn.recoveredEventSeqs.length - 1] : 'no events');
    kv(dl, 'lost', num(H.torn.lostPlaintextBytes) + ' decoded bytes of an incomplete record');
  }
  if (H.defect) kv(dl, 'defect', H.defect.message + ' (line ' + H.defect.line + ')');
  if (H.closers.length) {
    var ul = el('ul', 'closers');
    H.closers.forEach(function (c) { add(ul, add(el('li'), seqLink(c.seq), ' ' + c.type + ': ' + c.why)); });
    kv(dl, 'closers', ul);
  }
  if (H.repair && H.repair.writes) {
    kv(dl, 'load() would', (H.repair.truncateTo !== null ? 'truncate to byte ' + num(H.repair.truncateTo) + ' (dropping ' + num(H.repair.truncatedBytes) + ' bytes), then ' : '') + 'append ' + (H.repair.appendAs === 'zstd-frame' ? 'one checksummed zstd frame' : 'lines') + ' with ' + (H.repair.reappendSeqs.length + H.repair.closerSeqs.length) + ' events. dsh never does this.');
  }
  if (H.migratedEvents) kv(dl, 'migrated', H.migratedEvents + ' legacy events normalized');
  if (H.ignorableUnknown.length) kv(dl, 'unknown ignorable', H.ignorableUnknown.join(', '));
  H.warnings.forEach(function (w) { add(c4, el('p', 'warn', 'warning: ' + w)); });

  if (S.countsByType.length) {
    var c5 = put(grid, el('div', 'card'));
    add(c5, el('h2', null, 'Events by type'));
    var t = put(c5, el('table', 'counts'));
    S.countsByType.forEach(function (p) { add(t, add(el('tr'), el('td', null, p[0]), el('td', 'n', num(p[1])))); });
  }
  var c6 = put(grid, el('div', 'card'));
  add(c6, el('h2', null, 'Findings (dsh check)'));
  var bySev = {};
  D.findings.forEach(function (f) { bySev[f.severity] = (bySev[f.severity] || 0) + 1; });
  add(c6, el('p', null, D.findings.length ? Object.keys(bySev).map(function (k) { return bySev[k] + ' ' + k; }).join(', ') : 'no findings'));
  var go = put(c6, el('button', 'link', 'show findings'));
  go.type = 'button'; go.dataset.tab = 'findings';
}

// ------------------------------------------------------------ timeline
function renderTimeline() {
  var root = $('s-timeline');
  if (!D.turns.length) { add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log: no timeline.' : 'No turns.')); return; }
  add(root, el('p', 'muted', 'Turns and steps with their end reasons; every model dispatch (retries included) opens to its reconstructed request and its diff from the previous dispatch (dsh request).'));
  var list = put(root, el('div', 'turns'));
  chunked(list, D.turns, makeTurn, 200);
}
function makeTurn(t) {
  var d = el('details', 'turn');
  d.dataset.turn = String(t.turn);
  var s = navItem(el('summary'));
  var nd = 0, nr = 0, inT = 0, outT = 0;
  t.steps.forEach(function (st) {
    nd += st.dispatches.length; nr += st.retries;
    st.dispatches.forEach(function (i) { var u = D.dispatches[i].usage; if (u) { inT += u.inputTokens || 0; outT += u.outputTokens || 0; } });
  });
  add(s, el('span', 'turn-no', 'Turn ' + t.turn), ' ', badge(t.reason + (t.synthetic ? ' (synthetic closer)' : ''), reasonKind(t.reason)), ' ',
    el('span', 'muted', 'seq ' + t.startSeq + '..' + (t.endSeq === null ? 'open' : t.endSeq) + ' \u00b7 ' + t.steps.length + ' steps \u00b7 ' + nd + ' dispatches' + (nr ? ' \u00b7 ' + nr + ' retries' : '') + ' \u00b7 ' + dur(t.durationMs) + (inT || outT ? ' \u00b7 in ' + num(inT) + ', out ' + num(outT) : '')));
  d.appendChild(s);
  var body = null;
  d.addEventListener('toggle', function () {
    if (!d.open || body) return;
    body = put(d, el('div', 'turn-body'));
    add(body, el('div', 'muted', 'started ' + iso(t.startTime) + ' \u00b7 turn/start ', seqLink(t.startSeq)));
    t.steps.forEach(function (st) {
      var sd = put(body, el('div', 'step'));
      add(sd, el('div', 'step-head', 'step ' + st.step + ' \u00b7 seq ' + st.startSeq + '..' + (st.endSeq === null ? 'open' : st.endSeq) + ' \u00b7 ends: ' + (st.endReason || (st.endSeq === null ? 'still open' : 'no dispatch')) + ' \u00b7 ' + dur(st.durationMs) + (st.retries ? ' \u00b7 ' + st.retries + ' llm/retry' : '')));
      st.dispatches.forEach(function (i) { sd.appendChild(makeDispatch(D.dispatches[i])); });
    });
    if (t.endSeq !== null) add(body, el('div', 'muted', 'turn/end ', seqLink(t.endSeq), ' ' + t.reason));
  });
  return d;
}
function makeDispatch(x) {
  var d = el('details', 'dispatch');
  d.dataset.dispatch = x.key;
  var s = navItem(el('summary'));
  add(s, el('span', 'key', x.key), ' ', x.attempt > 0 ? badge('retry #' + x.attempt, 'warn') : null, ' ', badge(x.finish === null ? 'no finish (cancelled or crash)' : x.finish, x.finish === null ? 'bad' : reasonKind(x.finish)), ' ',
    el('span', 'muted', 'chunks ' + x.first + '..' + x.last + ' \u00b7 ' + (x.model || '?') + ' \u00b7 ' + x.msgCount + ' messages \u00b7 ' + dur(x.durationMs) + ' \u00b7 ' + usageText(x.usage) + (x.headerChanges.length ? ' \u00b7 header: ' + x.headerChanges.join(', ') : '')));
  d.appendChild(s);
  var body = null;
  d.addEventListener('toggle', function () {
    if (!d.open || body) return;
    body = put(d, el('div', 'dispatch-body'));
    renderRequest(x, body);
  });
  return d;
}
function renderRequest(x, body) {
  var hdr = x.headerSeq === null ? null : D.headers[String(x.headerSeq)];
  var sec = put(body, el('div', 'req-sec'));
  add(sec, el('h4', null, 'Header'), ' ', x.headerSeq === null ? el('span', 'muted', '(no request/header before this dispatch)') : add(el('span', 'muted', 'from request/header '), seqLink(x.headerSeq)));
  if (hdr) {
    add(sec, pre(JSON.stringify({ config: hdr.config, adapterDefaults: hdr.adapterDefaults }, null, 2)));
    if (hdr.system !== undefined) {
      var sp = put(sec, el('details', 'sys'));
      add(sp, el('summary', null, 'System prompt (' + num(String(hdr.system).length) + ' characters)'), pre(String(hdr.system), 'raw wrap'));
    }
    if (hdr.tools !== undefined) {
      var tl = put(sec, el('details', 'tools'));
      var tools = Array.isArray(hdr.tools) ? hdr.tools : [];
      add(tl, el('summary', null, 'Tools (' + (Array.isArray(hdr.tools) ? tools.length : json(hdr.tools)) + ')'));
      tools.forEach(function (t) {
        var td = put(tl, el('details', 'tool'));
        add(td, el('summary', null, String(t && t.name) + ' \u2014 ' + clip(String(t && t.description), 140)), pre(JSON.stringify(t, null, 2)));
      });
    }
  }
  if (x.ctxSeq !== null) {
    var cx = put(body, el('div', 'req-sec'));
    add(cx, el('h4', null, 'Request context'), ' ', add(el('span', 'muted', 'from request/context '), seqLink(x.ctxSeq)), pre(JSON.stringify(D.contexts[String(x.ctxSeq)], null, 2)));
  }
  var ms = messagesOf(x.i);
  var mc = put(body, el('div', 'req-sec'));
  add(mc, el('h4', null, 'Messages (' + ms.length + ')'), ' ', el('span', 'muted', 'the surface folded over the ' + num(x.first) + ' events before the first chunk'));
  var ol = put(mc, el('ol', 'messages'));
  ms.forEach(function (m) {
    var li = put(ol, el('li', 'msg'));
    li.dataset.seq = String(m.seq);
    var src = m.message && m.message.source;
    add(li, add(el('div', 'msg-head'), el('span', 'role', String(m.message && m.message.role)), ' ', el('span', 'msg-id', m.message && m.message.id !== undefined ? String(m.message.id) : ''), ' ', el('span', 'muted', src && src.kind ? src.kind + (src.plugin ? ':' + src.plugin : '') : ''), ' ', seqLink(m.seq), label(m.seq) === 'shadowed' ? badge('shadowed later', 'warn') : null));
    add(li, el('div', 'msg-text', clip(blocksText(m.message && m.message.content), 400)));
    var jd = put(li, el('details', 'msg-raw'));
    add(jd, el('summary', 'muted', 'message JSON'), pre(JSON.stringify(m.message, null, 2), 'raw msg-json'));
  });
  renderDiff(x, add(body, el('div', 'req-sec diff')));
  add(body, add(el('div', 'muted'), 'first chunk ', seqLink(x.first), x.assistantSeq !== null ? ' \u00b7 produced assistant/message ' : '', x.assistantSeq !== null ? seqLink(x.assistantSeq) : null));
}
function renderDiff(x, sec) {
  var f = x.diff;
  add(sec, el('h4', null, f.from === null ? 'Diff: first dispatch of the session' : 'Diff from ' + f.from));
  var dl = put(sec, el('dl'));
  kv(dl, 'prefix', num(f.prefixEvents.from) + ' \u2192 ' + num(f.prefixEvents.to) + ' events');
  if (f.between.length) {
    var bw = el('span');
    f.between.forEach(function (b, i) { add(bw, i ? ', ' : '', b.type + ' \u00d7' + b.count + ' (first ', seqLink(b.firstSeq), ')'); });
    kv(dl, 'logged between', bw);
  }
  kv(dl, 'header', f.header.changed ? f.header.changes.map(function (c) { return c.field + ': ' + clip(json(c.before), 80) + ' \u2192 ' + clip(json(c.after), 80); }).join('; ') : 'unchanged');
  if (f.requestContext.changed) kv(dl, 'request context', clip(json(f.requestContext.from), 100) + ' \u2192 ' + clip(json(f.requestContext.to), 100));
  kv(dl, 'messages', f.messages.fromCount + ' \u2192 ' + f.messages.toCount + ' (kept ' + f.messages.kept + ', added ' + f.messages.added.length + ', removed ' + f.messages.removed.length + (f.messages.transient.length ? ', transient ' + f.messages.transient.length : '') + ')');
  function list(title, items, cls) {
    if (!items.length) return;
    var ul = el('ul', cls);
    items.forEach(function (m) {
      add(ul, add(el('li'), seqLink(m.seq), ' ' + m.type + ' ' + (m.role === null ? '' : m.role) + (m.id === null ? '' : ' ' + m.id) + (m.replace ? ' (replaces ' + m.replace.start + '..' + m.replace.end + ')' : ''),
        m.shadowedBy !== undefined && m.shadowedBy !== null ? add(el('span', 'muted'), ' shadowed by ', seqLink(m.shadowedBy)) : null));
    });
    kv(dl, title, ul);
  }
  list('added', f.messages.added, 'added');
  list('removed', f.messages.removed, 'removed');
  list('transient', f.messages.transient, 'transient');
}

// ------------------------------------------------------------ conversation
var txList = null, sfList = null;
var txIndex = new Map(), sfIndex = new Map();
function renderConversation() {
  var root = $('s-conversation');
  if (D.health.error) { add(root, el('p', 'empty', 'DSH refuses this log: nothing to show.')); return; }
  add(root, el('p', 'muted', 'Left: what the user saw (append-origin events in log order). Right: what the model saw at the end of the log (the surface). Coloured bands mark ranges a compaction or prune shadowed for the model; click an entry to find it on the other side, a compaction to see its trace.'));
  var cols = put(root, el('div', 'cols'));
  var left = put(cols, el('div', 'col'));
  var right = put(cols, el('div', 'col'));
  add(left, el('h3', null, 'What the user saw (transcript, ' + num(D.transcript.length) + ' entries)'));
  add(right, el('h3', null, 'What the model saw (surface at seq ' + (D.session.eventCount - 1) + ', ' + num(D.surface.entries.length) + ' nodes)'));
  var lbox = put(left, el('div', 'col-body'));
  var rbox = put(right, el('div', 'col-body'));
  D.transcript.forEach(function (x, i) { if (!txIndex.has(x.seq)) txIndex.set(x.seq, i); });
  D.surface.entries.forEach(function (x, i) { sfIndex.set(x.seq, i); });
  var seedAt = -1;
  if (D.lineage.seedLength !== null) seedAt = D.transcript.findIndex(function (x) { return x.seq >= D.lineage.seedLength; });
  txList = chunked(lbox, D.transcript, function (x, i) {
    var n = makeTx(x);
    if (i !== seedAt) return n;
    var f = document.createDocumentFragment();
    add(f, el('div', 'fork-boundary', 'fork boundary: the entries above are the parent’s seed (events 0..' + (D.lineage.seedLength - 1) + ' of ' + (D.lineage.parent || 'the parent') + ')'), n);
    return f;
  }, 300);
  sfList = chunked(rbox, D.surface.entries, makeSf, 300);
  lbox.addEventListener('click', function (ev) {
    if (ev.target.closest('.seq-link, button, summary')) return;
    var n = ev.target.closest('[data-tx]');
    if (!n) return;
    var seq = Number(n.dataset.tx);
    mark(n);
    var t = seq;
    while (!current.has(t) && replacedBy.has(t)) t = replacedBy.get(t);
    if (sfIndex.has(t)) { sfList.upTo(sfIndex.get(t)); var r = rbox.querySelector('[data-sf="' + t + '"]'); if (r) { mark(r); r.scrollIntoView({ block: 'nearest' }); } }
    if (n.classList.contains('compaction') || n.classList.contains('prune')) openEvent(seq);
  });
  rbox.addEventListener('click', function (ev) {
    if (ev.target.closest('.seq-link, button, summary')) return;
    var n = ev.target.closest('[data-sf]');
    if (!n) return;
    var seq = Number(n.dataset.sf);
    mark(n);
    if (txIndex.has(seq)) { txList.upTo(txIndex.get(seq)); var l = lbox.querySelector('[data-tx="' + seq + '"]'); if (l) { mark(l); l.scrollIntoView({ block: 'nearest' }); } }
    if (replacedSeqs.has(seq)) openEvent(seq);
  });
}
function mark(n) {
  var col = n.closest('.col-body');
  var old = col && col.querySelector('.marked');
  if (old) old.classList.remove('marked');
  n.classList.add('marked');
}
function setBand(n, rep) {
  if (rep === null || rep === undefined || !bandOf.has(rep)) return;
  n.classList.add('banded');
  n.style.setProperty('--band', band(bandOf.get(rep)));
}
function textBlock(text, cls) { return el('div', 'text ' + (cls || ''), text); }
function makeTx(x) {
  var n = navItem(el('div', 'tx tx-' + x.kind));
  n.dataset.tx = String(x.seq);
  switch (x.kind) {
    case 'turn': add(n, el('div', 'divider', 'Turn ' + x.turn + ' \u00b7 ' + iso(x.time))); break;
    case 'turn-end': add(n, el('div', 'turn-end', 'turn ' + x.turn + ' ended: ' + x.reason + (x.detail ? ' (' + x.detail + ')' : '') + (x.synthetic ? ' [synthetic closer]' : ''))); break;
    case 'message': {
      add(n, add(el('div', 'head'), el('span', 'role r-' + x.role, x.role), ' ', el('span', 'muted', x.source + (x.id ? ' \u00b7 ' + x.id : '')), ' ', seqLink(x.seq),
        x.interrupted ? badge('interrupted', 'bad') : null, x.synthetic ? badge('synthetic', 'warn') : null, x.empty ? badge('empty (usage only)', 'warn') : null,
        x.shadowedBy !== null ? add(el('span', 'muted shadow-note'), ' hidden from the model by ', seqLink(x.shadowedBy)) : null));
      if (x.reasoning) { var r = put(n, el('details', 'reasoning')); add(r, el('summary', null, 'reasoning'), textBlock(x.reasoning)); }
      if (x.text) add(n, textBlock(x.text));
      x.toolCalls.forEach(function (c) {
        var tc = put(n, el('div', 'toolcall'));
        add(tc, add(el('div', 'call'), '\u2192 ' + c.name + '(' + clip(c.arguments, 300) + ')', c.callSeq !== null ? ' ' : '', c.callSeq !== null ? seqLink(c.callSeq) : badge('never started', 'bad')));
        if (c.result) addResult(tc, c.result);
        else add(tc, el('div', 'muted', '(no result)'));
      });
      setBand(n, x.shadowedBy);
      break;
    }
    case 'tool-result': addResult(n, x.result); break;
    case 'compaction':
      n.classList.add('compaction');
      add(n, add(el('div', 'head'), badge('compaction' + (x.compactionId ? ' ' + x.compactionId : ''), 'info'), ' checkpoint ', seqLink(x.seq), x.summarySeq !== null ? ' \u00b7 summary ' : '', x.summarySeq !== null ? seqLink(x.summarySeq) : null, ' \u00b7 shadowed ' + x.shadowedSeqs.length + ' surface nodes' + (x.shadowedSeqs.length ? ' (' + x.shadowedSeqs[0] + '..' + x.shadowedSeqs[x.shadowedSeqs.length - 1] + ')' : ''), x.synthetic ? badge('synthetic', 'warn') : null));
      add(n, textBlock(x.summary, 'summary'));
      setBand(n, x.seq);
      break;
    case 'prune':
      n.classList.add('prune');
      add(n, add(el('div', 'head'), badge('prune', 'info'), ' ', seqLink(x.seq), ' rewrote tool result ', seqLink(x.originalSeq), ' for the model'), textBlock(clip(x.text, 400)));
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
function addResult(parent, r) {
  var rn = put(parent, el('div', 'result' + (r.isError ? ' is-error' : '')));
  add(rn, add(el('div', 'head'), '\u2190 result ', seqLink(r.seq), r.errorCode ? badge(r.errorCode, 'bad') : null, r.synthetic ? badge('synthetic', 'warn') : null, r.prunedBy !== null ? add(el('span', 'muted'), ' pruned for the model by ', seqLink(r.prunedBy)) : null));
  add(rn, textBlock(r.text, 'out'));
  if (r.prunedBy !== null) setBand(rn, r.prunedBy);
}
function makeSf(x) {
  var n = navItem(el('div', 'sf'));
  n.dataset.sf = String(x.seq);
  add(n, add(el('div', 'head'), el('span', 'role r-' + x.role, x.role || x.type), ' ', el('span', 'muted', x.type + (x.id ? ' \u00b7 ' + x.id : '')), ' ', seqLink(x.seq),
    x.op === 'replace' ? badge('replaces ' + x.replaced.length + ' (' + x.replaced[0] + '..' + x.replaced[x.replaced.length - 1] + ')', 'info') : null,
    x.interrupted ? badge('interrupted', 'bad') : null, x.synthetic ? badge('synthetic', 'warn') : null));
  add(n, textBlock(x.text));
  if (x.op === 'replace') { n.classList.add('compaction'); setBand(n, x.seq); }
  return n;
}

// ------------------------------------------------------------ compactions
function renderCompactions() {
  var root = $('s-compactions');
  if (D.audit) renderAudit(root);
  else if (D.auditError) add(root, el('p', 'warn', 'compaction audit failed: ' + D.auditError));
  if (D.audit) { add(root, el('h3', null, 'Surface replacements')); }
  if (!D.compactions.length) { add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log.' : 'No compactions, prunes or other surface replacements.')); return; }
  add(root, el('p', 'muted', 'Every surface replacement (compaction checkpoints, tool-result prunes, others) and every compaction that never replaced the surface. Click a row for its trace.'));
  var t = put(root, el('table', 'grid'));
  add(t, add(el('tr'), el('th', null, 'replacement'), el('th', null, 'kind'), el('th', null, 'id'), el('th', null, 'shadowed'), el('th', null, 'summary'), el('th', null, 'start/end'), el('th', null, 'tokens'), el('th', null, 'turn'), el('th', null, 'sources')));
  D.compactions.forEach(function (c) {
    var tr = navItem(put(t, el('tr', 'comp k-' + c.kind)));
    if (c.seq !== null) tr.dataset.open = String(c.seq);
    var sw = el('td');
    if (c.seq !== null) { var chip = put(sw, el('span', 'chip')); chip.style.background = band(bandOf.get(c.seq) || 0); add(sw, seqLink(c.seq)); } else sw.textContent = '-';
    add(tr, sw, el('td', null, c.kind + (c.synthetic ? ' (synthetic)' : '') + (c.kind === 'unfinished' ? ': never replaced the surface' : '')), el('td', null, c.compactionId || '-'),
      el('td', null, c.shadowedSeqs.length ? c.shadowedSeqs.length + ' nodes (' + c.start + '..' + c.end + ')' : '-'),
      add(el('td'), c.summarySeq !== null ? seqLink(c.summarySeq) : c.pruneSeq !== null ? seqLink(c.pruneSeq, 'prune #' + c.pruneSeq) : '-'),
      add(el('td'), c.startSeq !== null ? seqLink(c.startSeq) : '-', ' / ', c.endSeq !== null ? seqLink(c.endSeq) : '-'),
      el('td', 'n', c.tokens === null ? '-' : num(c.tokens)), el('td', null, c.turn === null || c.turn === undefined ? '-' : c.turn), el('td', 'n', c.sourceEventSeqs.length));
  });
  t.addEventListener('click', function (ev) {
    if (ev.target.closest('.seq-link')) return;
    var tr = ev.target.closest('tr[data-open]');
    if (tr) openEvent(Number(tr.dataset.open));
  });
}

function renderAudit(root) {
  var A = D.audit;
  add(root, el('h3', null, 'Compaction audit (dsh compactions)'));
  var c = A.counts;
  add(root, el('p', 'muted', c.compactions + ' compactions (' + c.succeeded + ' succeeded, ' + c.failed + ' failed, ' + c.unclosed + ' unclosed, ' + c.unbracketed + ' unbracketed), ' + c.prunes + ' prunes, ' + c.otherReplacements + ' other replacements, ' + c.notStarted + ' not started; locks: ' + c.activeLocks + ' active, ' + c.staleLocks + ' stale'));
  if (A.foldError) add(root, el('p', 'warn', 'surface fold rejected seq ' + A.foldError.seq + ' (' + A.foldError.rule + '): ' + A.foldError.message));
  if (A.verdicts.length) {
    var vt = put(root, el('table', 'grid verdicts'));
    add(vt, add(el('tr'), el('th', null, 'check'), el('th', null, 'verdict'), el('th', null, 'detail')));
    A.verdicts.forEach(function (v) {
      add(vt, add(el('tr'), el('td', null, v.title), add(el('td'), badge(v.state, v.state === 'pass' ? 'ok' : v.state === 'warn' ? 'warn' : v.state === 'fail' ? 'bad' : null)), el('td', null, v.detail)));
    });
  }
  if (!A.attempts.length) return;
  var t = put(root, el('table', 'grid attempts'));
  add(t, add(el('tr'), el('th', null, '#'), el('th', null, 'kind'), el('th', null, 'outcome'), el('th', null, 'trigger'), el('th', null, 'events'), el('th', null, 'shadowed'), el('th', null, 'checks'), el('th', null, 'budget'), el('th', null, 'next request'), el('th', null, 'notes')));
  A.attempts.forEach(function (a) {
    var tr = navItem(put(t, el('tr', 'comp attempt')));
    var open = a.seqs.replacement !== null ? a.seqs.replacement : a.firstSeq;
    tr.dataset.open = String(open);
    var seqs = el('td');
    [['start', a.seqs.start], ['summary', a.seqs.summary], ['replacement', a.seqs.replacement], ['end', a.seqs.end], ['prune', a.seqs.prune]].forEach(function (p) {
      if (p[1] === null) return;
      add(seqs, el('span', 'muted', p[0] + ' '), seqLink(p[1]), ' ');
    });
    var checks = [];
    if (a.coverage) checks.push('coverage ' + (a.coverage.covered ? 'ok' : 'MISSING ' + a.coverage.missing.join(',')) + (a.coverage.declaredMatches === false ? ', declared seqs differ' : ''));
    if (a.pairing) checks.push('tool pairing ' + (a.pairing.ok ? 'ok' : (a.pairing.orphanCalls.length + a.pairing.orphanResults.length) + ' orphaned'));
    if (a.integrity && !a.integrity.ok) checks.push('missing events ' + a.integrity.missingEvents.join(','));
    if (a.lock) checks.push('lock ' + a.lock.state);
    var b = a.budget;
    var sw = el('td');
    if (a.seqs.replacement !== null && bandOf.has(a.seqs.replacement)) { var chip = put(sw, el('span', 'chip')); chip.style.background = band(bandOf.get(a.seqs.replacement)); }
    add(sw, a.range ? a.range.shadowedSeqs.length + ' nodes (' + a.range.start + '..' + a.range.end + ')' : '-');
    add(tr, el('td', 'n', a.index), el('td', null, a.kind + (a.compactionId ? ' ' + a.compactionId : '')),
      add(el('td'), badge(a.outcome, /^(succeeded|applied)$/.test(a.outcome) ? 'ok' : /^(failed|unclosed)$/.test(a.outcome) ? 'bad' : 'warn'), a.failure ? el('div', 'muted', a.failure.class + ': ' + a.failure.reason) : null),
      add(el('td'), el('div', null, a.trigger.kind), el('div', 'muted small', clip(a.trigger.detail, 160))),
      seqs, sw, el('td', null, checks.join('; ') || '-'),
      el('td', null, b ? 'saved ~' + num(b.savedMessageTokens) + ' tok, net ' + num(b.netGain) + (b.eatenByHeader ? ' (eaten by header)' : '') : '-'),
      el('td', null, a.nextRequest.status + (a.nextRequest.key ? ' ' + a.nextRequest.key : '') + (a.nextRequest.status !== 'ok' ? ': ' + clip(a.nextRequest.reason, 120) : '')),
      el('td', 'muted', a.notes.length ? a.notes.join(' · ') : ''));
  });
  t.addEventListener('click', function (ev) {
    if (ev.target.closest('.seq-link')) return;
    var tr = ev.target.closest('tr[data-open]');
    if (tr) openEvent(Number(tr.dataset.open));
  });
}

// ------------------------------------------------------------ secrets (dsh secrets, masked)
function renderSecrets(root) {
  if (!D.secrets) return;
  var sec = put(root, el('div', 'secrets'));
  sec.id = 'secrets';
  add(sec, el('h2', null, 'Secrets'));
  if (!D.secrets.length) { add(sec, el('p', 'empty', 'No secret found by the redaction detectors.')); return; }
  var t = put(sec, el('table', 'grid'));
  add(t, add(el('tr'), el('th', null, 'exposure'), el('th', null, 'secret (masked)'), el('th', null, 'dispatches'), el('th', null, 'events'), el('th', null, 'verdict')));
  var kinds = { 'sent-current': 'bad', 'sent-removed': 'warn', 'current-unsent': 'warn', 'log-only': 'info' };
  D.secrets.forEach(function (s) {
    var tr = navItem(put(t, el('tr', 'secret')));
    var evs = el('td');
    s.sessions[0].events.slice(0, 12).forEach(function (e, i) { if (i) add(evs, ' '); add(evs, seqLink(e.seq)); });
    if (s.sessions[0].events.length > 12) add(evs, ' \u2026');
    add(tr, add(el('td'), badge(s.exposure, kinds[s.exposure])), add(el('td'), el('div', 'code', s.token), el('div', 'muted', s.detector)), el('td', null, String(s.dispatchCount)), evs, el('td', null, s.verdict));
  });
}

// ------------------------------------------------------------ findings
function renderFindings() {
  var root = $('s-findings');
  renderSecrets(root);
  if (!D.findings.length) { add(root, el('p', 'empty', 'dsh check found nothing.')); return; }
  var t = put(root, el('table', 'grid'));
  add(t, add(el('tr'), el('th', null, 'severity'), el('th', null, 'code'), el('th', null, 'where'), el('th', null, 'finding')));
  D.findings.forEach(function (f) {
    var tr = navItem(put(t, el('tr', 'finding sev-' + f.severity)));
    var where = el('td');
    if (f.seq !== undefined) add(where, seqLink(f.seq));
    if (f.byteOffset !== undefined) add(where, (f.seq !== undefined ? ' ' : '') + (f.offsetIn === 'plaintext' ? 'plaintext' : 'byte') + ' ' + num(f.byteOffset));
    if (!where.childNodes.length) where.textContent = '-';
    add(tr, add(el('td'), badge(f.severity, f.severity === 'error' ? 'bad' : f.severity === 'warning' ? 'warn' : 'info')), el('td', 'code', f.code), where, add(el('td'), el('div', null, f.message), el('div', 'muted', f.hint)));
  });
}

// ------------------------------------------------------------ events (virtualized)
var ROW = 22;
var evSel = -1;
function renderEvents() {
  var root = $('s-events');
  var ev = events();
  if (!ev.length) { add(root, el('p', 'empty', D.health.error ? 'DSH refuses this log: no events.' : 'No events.')); return; }
  add(root, el('p', 'muted', num(ev.length) + ' logical events. j/k move, Enter opens, / searches.'));
  var vp = put(root, el('div', 'viewport'));
  vp.id = 'ev-viewport';
  var spacer = put(vp, el('div', 'spacer'));
  spacer.style.height = ev.length * ROW + 'px';
  vp.addEventListener('scroll', function () { requestAnimationFrame(evRender); });
  spacer.addEventListener('click', function (e) {
    if (e.target.closest('.seq-link')) return;
    var r = e.target.closest('[data-row]');
    if (r) openEvent(Number(r.dataset.row));
  });
}
function evRender() {
  var vp = $('ev-viewport');
  if (!vp || vp.offsetParent === null) return;
  var ev = events();
  var spacer = vp.firstChild;
  var from = Math.max(0, Math.floor(vp.scrollTop / ROW) - 20);
  var to = Math.min(ev.length, Math.ceil((vp.scrollTop + vp.clientHeight) / ROW) + 20);
  if (spacer.dataset.from === String(from) && spacer.dataset.to === String(to) && spacer.dataset.sel === String(evSel)) return;
  spacer.dataset.from = String(from); spacer.dataset.to = String(to); spacer.dataset.sel = String(evSel);
  spacer.textContent = '';
  var frag = document.createDocumentFragment();
  for (var i = from; i < to; i++) {
    var e = ev[i];
    var lab = label(e.seq);
    var r = el('div', 'row l-' + lab + (e.seq === evSel ? ' sel' : '') + (e.seq >= D.session.storedEventCount ? ' synthetic' : '') + (D.lineage.seedLength !== null && e.seq < D.lineage.seedLength ? ' seed' : ''));
    r.dataset.row = String(e.seq);
    r.style.top = i * ROW + 'px';
    var ts = e.data && e.data.turn !== undefined ? String(e.data.turn) + (e.data.step !== undefined ? '/' + e.data.step : '') : '';
    add(r, el('span', 'c-seq', e.seq), el('span', 'c-time', clock(e.time)), el('span', 'c-ts', ts), el('span', 'c-label', lab), el('span', 'c-type', e.type), el('span', 'c-prev', clip(summary(e), 240)));
    frag.appendChild(r);
  }
  spacer.appendChild(frag);
}
function evScrollTo(seq) {
  var vp = $('ev-viewport');
  if (!vp) return;
  var top = seq * ROW;
  if (top < vp.scrollTop || top > vp.scrollTop + vp.clientHeight - ROW) vp.scrollTop = Math.max(0, top - vp.clientHeight / 2);
  evRender();
}

// ------------------------------------------------------------ inspector
function openEvent(seq) {
  var ev = events();
  var e = ev[seq];
  if (!e) return;
  evSel = seq;
  var box = $('inspector');
  var body = $('insp-body');
  body.textContent = '';
  box.hidden = false;
  box.dataset.seq = String(seq);
  add(body, el('h2', null, '#' + seq + ' ' + e.type));
  var dl = put(body, el('dl'));
  kv(dl, 'time', iso(e.time));
  kv(dl, 'surface label', label(seq));
  if (seq >= D.session.storedEventCount) kv(dl, 'synthetic', 'a crash closer DSH adds on load (not in the file)');
  if (D.lineage.seedLength !== null && seq < D.lineage.seedLength) kv(dl, 'fork seed', 'inherited from the parent ' + (D.lineage.parent || '') + ' (before the fork boundary at seq ' + D.lineage.seedLength + ')');
  if (e.data && e.data.turn !== undefined) kv(dl, 'turn/step', String(e.data.turn) + (e.data.step !== undefined ? '/' + e.data.step : ''));
  if (e.surfaceOp !== undefined) kv(dl, 'surfaceOp', json(e.surfaceOp));
  var dsp = dispatchOf(seq);
  if (dsp) { var b = el('button', 'link', 'dispatch ' + dsp.key); b.type = 'button'; b.dataset.dispatchLink = String(dsp.i); kv(dl, 'dispatch', b); }
  kv(dl, 'summary', clip(summary(e), 300));
  var t = traceOf(seq);
  add(body, el('h3', null, 'Trace'));
  var tl = put(body, el('dl', 'trace'));
  kv(tl, 'replaced by', t.replacedBy === null ? '-' : seqLink(t.replacedBy));
  if (t.replacementChain.length > 1) kv(tl, 'replacement chain', seqList(t.replacementChain, 'trace-chain'));
  kv(tl, 'replaced', seqList(t.replacedEventSeqs, 'trace-replaced'));
  kv(tl, 'sources', seqList(t.sourceEventSeqs, 'trace-sources'));
  kv(tl, 'cited by', seqList(t.derivedEventSeqs, 'trace-derived'));
  add(body, el('h3', null, 'Raw JSON'));
  var text = JSON.stringify(e, null, 2);
  var LIM = 200000;
  var p = put(body, pre(text.length > LIM ? text.slice(0, LIM) : text, 'raw wrap event-json'));
  if (text.length > LIM) {
    var more = put(body, el('button', 'link', 'show all ' + num(text.length) + ' characters'));
    more.type = 'button';
    more.addEventListener('click', function () { p.textContent = text; more.remove(); });
  }
  if (active === 'events') evScrollTo(seq);
}
function seqList(seqs, cls) {
  var ul = el('ul', 'seqs ' + cls);
  if (!seqs.length) { ul.appendChild(el('li', 'muted', '-')); return ul; }
  var ev = events();
  var max = 500;
  seqs.slice(0, max).forEach(function (s) {
    var li = put(ul, el('li'));
    li.dataset.seq = String(s);
    add(li, seqLink(s), ' ', el('span', 'muted', ev[s] ? ev[s].type + ' \u00b7 ' + label(s) : '?'), ' ', ev[s] ? clip(summary(ev[s]), 120) : '');
  });
  if (seqs.length > max) add(ul, el('li', 'muted', '\u2026 ' + (seqs.length - max) + ' more'));
  return ul;
}
function closeInspector() { $('inspector').hidden = true; }
function openDispatch(i) {
  var x = D.dispatches[i];
  show('timeline');
  var turnEl = document.querySelector('#s-timeline details.turn[data-turn="' + x.turn + '"]');
  if (!turnEl) return;
  turnEl.open = true;
  turnEl.dispatchEvent(new Event('toggle'));
  var dEl = turnEl.querySelector('details.dispatch[data-dispatch="' + CSS.escape(x.key) + '"]');
  if (dEl) { dEl.open = true; dEl.dispatchEvent(new Event('toggle')); dEl.scrollIntoView({ block: 'start' }); }
}

// ------------------------------------------------------------ search
var hay = null, results = [], resAt = -1, lastQ = '';
function search(q) {
  q = q.trim().toLowerCase();
  var ev = events();
  var root = $('s-search');
  root.textContent = '';
  $('tab-search').hidden = false;
  lastQ = q;
  results = []; resAt = -1;
  if (!q) { $('search-status').textContent = ''; return; }
  if (!hay) hay = ev.map(function (e) { return JSON.stringify(e).toLowerCase(); });
  for (var i = 0; i < hay.length; i++) if (hay[i].indexOf(q) >= 0) results.push(i);
  $('search-status').textContent = num(results.length) + ' events';
  show('search');
  add(root, el('p', 'muted', num(results.length) + ' events contain \u201c' + q + '\u201d (type, payload or raw JSON)' + (results.length > 1000 ? '; the first 1,000 are listed' : '') + '. Enter / n: next, N: previous.'));
  var ul = put(root, el('ul', 'results'));
  results.slice(0, 1000).forEach(function (s) {
    var li = navItem(put(ul, el('li', 'result-row')));
    li.dataset.open = String(s);
    var h = hay[s], at = h.indexOf(q);
    var raw = JSON.stringify(ev[s]);
    add(li, seqLink(s), ' ', el('span', 'muted', ev[s].type), ' ', el('span', 'snip', clip(raw.slice(Math.max(0, at - 60), at + q.length + 100), 200)));
  });
  ul.addEventListener('click', function (e) {
    if (e.target.closest('.seq-link')) return;
    var li = e.target.closest('[data-open]');
    if (li) openEvent(Number(li.dataset.open));
  });
}
function nextResult(dir) {
  if (!results.length) return;
  resAt = (resAt + dir + results.length) % results.length;
  openEvent(results[resAt]);
  $('search-status').textContent = (resAt + 1) + ' / ' + num(results.length);
}

// ------------------------------------------------------------ keyboard
function navItems() {
  var s = $('s-' + active);
  if (!s) return [];
  return Array.prototype.filter.call(s.querySelectorAll('.nav-item'), function (n) { return n.offsetParent !== null; });
}
function move(dir) {
  if (active === 'events') {
    var ev = events();
    if (!ev.length) return;
    var next = Math.max(0, Math.min(ev.length - 1, (evSel < 0 ? -1 : evSel) + dir));
    evSel = next;
    evScrollTo(next);
    if (!$('inspector').hidden) openEvent(next);
    return;
  }
  var items = navItems();
  if (!items.length) return;
  var cur = items.indexOf(document.activeElement);
  if (cur < 0) cur = items.findIndex(function (n) { return n.classList.contains('cur'); });
  var i = cur < 0 ? (dir > 0 ? 0 : items.length - 1) : Math.max(0, Math.min(items.length - 1, cur + dir));
  items.forEach(function (n) { n.classList.remove('cur'); });
  items[i].classList.add('cur');
  items[i].focus({ preventScroll: true });
  items[i].scrollIntoView({ block: 'nearest' });
}
document.addEventListener('keydown', function (e) {
  var t = e.target;
  var typing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA');
  if (typing) {
    if (e.key === 'Escape') { t.blur(); e.preventDefault(); }
    else if (e.key === 'Enter' && t.id === 'search') {
      e.preventDefault();
      var q = t.value.trim().toLowerCase();
      if (q && q === lastQ && results.length) nextResult(e.shiftKey ? -1 : 1); else search(t.value);
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '/') { e.preventDefault(); $('search').focus(); $('search').select(); }
  else if (e.key === 'Escape') { if (!$('inspector').hidden) closeInspector(); else if (lastQ) { $('search').value = ''; search(''); show('overview'); } }
  else if (e.key === 'j') { e.preventDefault(); move(1); }
  else if (e.key === 'k') { e.preventDefault(); move(-1); }
  else if (e.key === 'n') nextResult(1);
  else if (e.key === 'N') nextResult(-1);
  else if (e.key === 'Enter' && active === 'events' && evSel >= 0) openEvent(evSel);
  else if (e.key === 'Enter' && t && t.classList && t.classList.contains('nav-item') && t.tagName !== 'SUMMARY') { t.click(); }
  else if (/^[1-7]$/.test(e.key)) show(TABS[Number(e.key) - 1]);
});

// ------------------------------------------------------------ wiring
document.addEventListener('click', function (e) {
  var a = e.target.closest('.seq-link');
  if (a) { e.preventDefault(); openEvent(Number(a.dataset.seq)); return; }
  var tb = e.target.closest('[data-tab]');
  if (tb) { show(tb.dataset.tab); return; }
  var dl = e.target.closest('[data-dispatch-link]');
  if (dl) { openDispatch(Number(dl.dataset.dispatchLink)); return; }
});
$('insp-close').addEventListener('click', closeInspector);
window.addEventListener('resize', function () { requestAnimationFrame(evRender); });
window.addEventListener('beforeprint', function () {
  ['timeline', 'conversation', 'compactions', 'findings'].forEach(render);
  if (txList) txList.all();
  if (sfList) sfList.all();
});
$('title').textContent = 'dsh report \u00b7 ' + (D.session.id || '(unknown session)');
$('status').textContent = D.health.status;
$('status').className = 'badge h-' + D.health.status;
show('overview');
document.documentElement.dataset.ready = 'overview';
// Parse the events blob after the first paint.
setTimeout(function () { events(); document.documentElement.dataset.ready = 'all'; }, 30);
})();
`;

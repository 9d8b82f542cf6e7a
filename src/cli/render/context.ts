import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import { formatCount } from '../../api/log.js';
import type { CacheBreak, ContextChange, ContextRow, ContextTurnRow, ContextView, CategoryBytes } from '../../index.js';

const n = (x: number | null | undefined) => (x === null || x === undefined ? '-' : formatCount(x));
const pct = (x: number | null) => (x === null ? '-' : `${x.toFixed(1)}%`);
const hhmmss = (t: number) => (Number.isFinite(t) ? new Date(t).toISOString().slice(11, 19) : '-');

/** Short column heads of the categories, in CONTEXT_CATEGORIES order. */
const HEADS: [keyof CategoryBytes, string][] = [
  ['system', 'system'],
  ['tools', 'tools'],
  ['user', 'user'],
  ['assistantText', 'asst'],
  ['assistantReasoning', 'reason'],
  ['assistantToolCalls', 'calls'],
  ['toolResults', 'results'],
  ['compaction', 'compact'],
  ['other', 'other'],
];

export const BAR_WIDTH = 20;

/** A fill bar: `percent` of `width` cells (capped), coloured by pressure. */
export function fillBar(percent: number, c: ChalkInstance, width = BAR_WIDTH): string {
  const full = Math.max(0, Math.min(width, Math.round((percent / 100) * width)));
  const colour = percent >= 80 ? c.red : percent >= 50 ? c.yellow : c.green;
  return colour('█'.repeat(full)) + c.dim('░'.repeat(width - full)) + (percent > 100 ? c.red('>') : ' ');
}

/** A left-aligned cell that draws a fill bar before `suffix` (its colour codes added after padding). */
function barCell(percent: number | null, suffix: string, c: ChalkInstance): Cell {
  if (percent === null) return { text: suffix, left: true };
  const bar = fillBar(percent, c);
  return { text: ' '.repeat(BAR_WIDTH + 1) + ' ' + suffix, left: true, style: (padded) => bar + padded.slice(BAR_WIDTH + 1) };
}

interface Cell {
  text: string;
  left?: boolean;
  style?: (s: string) => string;
}

function grid(head: string[], rows: Cell[][], c: ChalkInstance): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i]?.text ?? '').length)));
  const line = (cells: Cell[]) =>
    cells
      .map((x, i) => {
        const t = x.left ? x.text.padEnd(widths[i]!) : x.text.padStart(widths[i]!);
        return x.style ? x.style(t) : t;
      })
      .join('  ')
      .trimEnd();
  return [c.bold(line(head.map((h, i) => ({ text: h, left: i === 0 || h === 'fill' || h === 'cache' })))), ...rows.map(line)];
}

function changeText(ch: ContextChange): string {
  const size = `${ch.addedBytes > 0 ? `+${n(ch.addedBytes)}` : ''}${ch.removedBytes > 0 ? `${ch.addedBytes > 0 ? ' ' : ''}-${n(ch.removedBytes)}` : ''} B`;
  switch (ch.kind) {
    case 'compaction':
      return `compaction checkpoint seq ${ch.seq} replaced ${ch.replaced?.length ?? 0} message(s) (${size})${(ch.via ?? []).map((x) => (x.kind === 'prune' ? `; seq ${x.shadowed} pruned at seq ${x.pruneSeq} first` : `; seq ${x.shadowed} rewritten at seq ${x.seq} first`)).join('')}`;
    case 'prune':
      return `pruned at seq ${ch.pruneSeq}: tool result seq ${ch.replaced?.join(', ')} replaced by seq ${ch.seq} (${size})`;
    case 'rewrite':
      return `seq ${ch.seq} ${escapeControl(ch.type)} rewrote seq ${ch.replaced?.join(', ')} (${size})`;
    case 'removed':
      return `left the context: seq ${ch.replaced?.join(', ')} (${size})`;
    case 'header':
      return `request/header seq ${ch.seq}: ${escapeControl((ch.fields ?? []).join(', '))}${ch.addedBytes || ch.removedBytes ? ` (${size})` : ''}`;
    default:
      return `entered seq ${ch.seq} ${escapeControl(ch.type)} (${size})`;
  }
}

function breakText(b: CacheBreak): string {
  const tokens = b.resentTokens === null ? `${n(b.resentBytes)} B` : `${n(b.resentTokens)} tokens (${n(b.resentBytes)} B)`;
  const cost = b.cost === null ? '' : b.cost.priced ? `, ${b.cost.currency} ${b.cost.uncached} uncached (+${b.cost.extra} over a cache hit)` : `, unpriced: ${escapeControl(b.cost.reason)}`;
  return `cache break ${b.cause}${b.causeSeq !== null ? ` @${b.causeSeq}` : ''}: ${escapeControl(b.detail)}; re-sent ${tokens}${cost}`;
}

function headLines(v: ContextView, c: ChalkInstance): string[] {
  const t = v.totals;
  return [
    `${c.bold('context')} ${c.cyan(escapeControl(v.sessionId ?? '?'))}  ${n(t.dispatches)} model dispatches, ${n(t.breaks)} cache break(s)`,
    c.dim(`bytes: the request dsh request --json rebuilds, by category; tokens: ${v.tokens} (logged prompt tokens split by bytes); cache: prompt prefix shared with an earlier dispatch`),
  ];
}

/** The per-dispatch table with a fill bar, and the changes and breaks under each row. */
export function renderContext(v: ContextView, c: ChalkInstance, options: { changes?: boolean } = {}): string {
  const out = headLines(v, c);
  const maxBytes = Math.max(1, v.totals.maxBytes);
  const head = ['key', 'seq', 'time', 'bytes', ...HEADS.map(([, h]) => h), 'prompt tok', 'cache-read', 'shared tok', 'fill', 'cache'];
  const rows: Cell[][] = [];
  const notes: string[][] = [];
  for (const r of v.dispatches) {
    const cache = r.break !== null ? 'BREAK' : r.cache.extendsPrevious === null ? '' : 'extends';
    rows.push([
      { text: escapeControl(r.key), left: true },
      { text: String(r.firstChunkSeq) },
      { text: hhmmss(r.time) },
      { text: n(r.bytes) },
      ...HEADS.map(([k]) => ({ text: r.byCategory[k] ? n(r.byCategory[k]) : '-' })),
      { text: n(r.promptTokens) },
      { text: n(r.cache.cacheReadTokens) },
      { text: n(r.cache.sharedTokens) },
      r.fillPercent !== null ? barCell(r.fillPercent, pct(r.fillPercent), c) : barCell((r.bytes / maxBytes) * 100, 'of largest', c),
      { text: cache, left: true, style: r.break !== null ? c.red : c.dim },
    ]);
    const lines: string[] = [];
    if (options.changes !== false) for (const ch of r.changes) if (ch.kind !== 'entered') lines.push(c.dim(`    ${changeText(ch)}`));
    if (r.break !== null) lines.push(c.red(`    ${breakText(v.breaks[r.break]!)}`));
    notes.push(lines);
  }
  const lines = grid(head, rows, c);
  out.push(lines[0]!);
  rows.forEach((_r, i) => {
    out.push(lines[i + 1]!);
    out.push(...notes[i]!);
  });
  out.push(totalsLine(v, c));
  return out.join('\n') + '\n';
}

function totalsLine(v: ContextView, c: ChalkInstance): string {
  const t = v.totals;
  const cost = t.breakCost ? `, ${t.breakCost.currency} +${t.breakCost.extra} over cache hits` : '';
  return `${c.bold('total')}  prompt ${n(t.promptTokens)} tokens, cache-read ${n(t.cacheReadTokens)}; largest request ${n(t.maxBytes)} B${t.maxFillPercent !== null ? `, max fill ${pct(t.maxFillPercent)}` : ''}; ${n(t.breaks)} cache break(s) re-sent ${n(t.resentTokens)} tokens${cost}`;
}

/** `--by turn`: one row per turn (its largest request, summed tokens, breaks). */
export function renderContextByTurn(v: ContextView, turns: readonly ContextTurnRow[], c: ChalkInstance): string {
  const out = headLines(v, c);
  const head = ['turn', 'dispatches', 'keys', 'largest', ...HEADS.map(([, h]) => h), 'prompt tok', 'cache-read', 'fill', 'breaks', 're-sent tok'];
  const rows: Cell[][] = turns.map((t) => [
    { text: String(t.turn), left: true },
    { text: String(t.dispatches) },
    { text: escapeControl(t.firstKey === t.lastKey ? t.firstKey : `${t.firstKey}..${t.lastKey}`) },
    { text: n(t.bytes) },
    ...HEADS.map(([k]) => ({ text: t.byCategory[k] ? n(t.byCategory[k]) : '-' })),
    { text: n(t.promptTokens) },
    { text: n(t.cacheReadTokens) },
    barCell(t.maxFillPercent, pct(t.maxFillPercent), c),
    { text: String(t.breaks), style: t.breaks > 0 ? c.red : (s) => s },
    { text: n(t.resentTokens) },
  ]);
  out.push(...grid(head, rows, c), totalsLine(v, c));
  return out.join('\n') + '\n';
}

/** `--breaks`: every cache break. */
export function renderBreaks(v: ContextView, c: ChalkInstance): string {
  const out = headLines(v, c);
  if (v.breaks.length === 0) out.push('no cache breaks: every request extends the one before it');
  for (const b of v.breaks) {
    const at = b.at.element === 'message' ? `message ${b.at.position} (seq ${b.at.seq}, ${escapeControl(b.at.role ?? '?')})` : b.at.element;
    out.push(`${c.red(escapeControl(b.key))} first chunk ${b.firstChunkSeq} ${hhmmss(b.time)}  after ${escapeControl(b.previous)}: first differing element ${at}`);
    out.push(`    ${breakText(b)}`);
  }
  out.push(totalsLine(v, c));
  return out.join('\n') + '\n';
}

/** One row of a root's summary. */
export interface ContextRootRow {
  sessionId: string;
  path: string;
  dispatches?: number;
  maxBytes?: number;
  maxFillPercent?: number | null;
  promptTokens?: number;
  cacheReadTokens?: number;
  breaks?: number;
  resentTokens?: number;
  breakCost?: { currency: string; extra: string } | null;
  error?: { class: string; message: string };
}

export function renderContextRoot(rows: readonly ContextRootRow[], c: ChalkInstance): string {
  const head = ['session', 'dispatches', 'largest B', 'max fill', 'prompt tok', 'cache-read', 'breaks', 're-sent tok', 'break cost'];
  const cells: Cell[][] = rows.map((r) =>
    r.error
      ? [{ text: escapeControl(r.sessionId), left: true }, { text: `${escapeControl(r.error.class)}: ${escapeControl(r.error.message)}`.slice(0, 80), left: true, style: c.red }]
      : [
          { text: escapeControl(r.sessionId), left: true },
          { text: n(r.dispatches) },
          { text: n(r.maxBytes) },
          { text: pct(r.maxFillPercent ?? null) },
          { text: n(r.promptTokens) },
          { text: n(r.cacheReadTokens) },
          { text: n(r.breaks), style: r.breaks ? c.red : (s) => s },
          { text: n(r.resentTokens) },
          { text: r.breakCost ? `${r.breakCost.currency} ${r.breakCost.extra}` : '-' },
        ],
  );
  return [...grid(head, cells, c), `${rows.length} session(s)`].join('\n') + '\n';
}

export type { ContextRow };

import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { QueryResult } from '../../api/dataset.js';
import { toJson } from '../../api/log.js';

function text(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return toJson(v);
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL)/;

/** An aligned text table (numbers right-aligned), cells escaped and capped at `maxWidth` characters. */
export function renderTable(r: QueryResult, c: ChalkInstance, maxWidth = 60): string {
  const cap = (s: string) => {
    const chars = Array.from(escapeControl(s));
    return chars.length <= maxWidth ? chars.join('') : chars.slice(0, maxWidth - 1).join('') + '…';
  };
  const head = r.columns.map(cap);
  const body = r.rows.map((row) => row.map((v) => cap(text(v))));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => Array.from(row[i] ?? '').length)));
  const right = r.types.map((t) => NUMERIC.test(t));
  const pad = (s: string, i: number) => {
    const fill = ' '.repeat(Math.max(0, widths[i]! - Array.from(s).length));
    return right[i] ? fill + s : s + fill;
  };
  const lines = [c.bold(head.map(pad).join('  ').trimEnd()), ...body.map((row) => row.map((v, i) => (v === 'NULL' && r.rows.length > 0 ? c.dim(pad(v, i)) : pad(v, i))).join('  ').trimEnd())];
  lines.push(c.dim(`(${r.rows.length} row${r.rows.length === 1 ? '' : 's'})`));
  return lines.join('\n') + '\n';
}

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = text(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** RFC 4180 CSV: a header line, CRLF line ends, NULL as an empty field. */
export function renderCsv(r: QueryResult): string {
  return [r.columns.map(csvCell).join(','), ...r.rows.map((row) => row.map(csvCell).join(','))].join('\r\n') + '\r\n';
}

/** NDJSON: one object per row, keyed by column name. */
export function renderNdjson(r: QueryResult): string {
  return r.rows.map((row) => toJson(Object.fromEntries(r.columns.map((name, i) => [name, row[i] ?? null])))).join('\n') + (r.rows.length ? '\n' : '');
}

/** Unified-diff hunks as terminal lines (shared by `diff` and `request --diff`). Pure. */
import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import { pushAll, type Hunk, type TextDiff } from '../../api/views.js';
import { formatCount } from '../../api/log.js';

const n = formatCount;
/** A run of added or removed lines longer than this is folded (head and tail kept). */
const FOLD_RUN = 12;
const FOLD_HEAD = 8;
const FOLD_TAIL = 2;
/** Lines are cut here unless --full. */
const LINE_WIDTH = 240;

function line(text: string, full: boolean): string {
  const t = escapeControl(text);
  if (full) return t;
  const chars = Array.from(t);
  return chars.length <= LINE_WIDTH ? t : chars.slice(0, LINE_WIDTH - 1).join('') + '…';
}

function seqSpan(s: [number, number] | null): string {
  return s === null ? '-' : s[0] === s[1] ? `seq ${s[0]}` : `seq ${s[0]}..${s[1]}`;
}

/** Unified hunks, `+`/`-` coloured, long runs folded with a count of hidden lines. */
export function renderHunks(d: TextDiff, c: ChalkInstance, full: boolean, indent = ''): string[] {
  const out: string[] = [];
  for (const h of d.hunks) pushAll(out, hunkLines(h, c, full, indent));
  return out;
}

function hunkLines(h: Hunk, c: ChalkInstance, full: boolean, indent: string): string[] {
  const seqs = h.aSeqs || h.bSeqs ? ` ${c.dim(`a ${seqSpan(h.aSeqs)} · b ${seqSpan(h.bSeqs)}`)}` : '';
  const out = [`${indent}${c.cyan(`@@ -${h.aStart},${h.aCount} +${h.bStart},${h.bCount} @@`)}${seqs}`];
  let i = 0;
  while (i < h.lines.length) {
    const op = (h.lines[i] as Hunk['lines'][number]).op;
    let j = i;
    while (j < h.lines.length && (h.lines[j] as Hunk['lines'][number]).op === op) j++;
    const run = h.lines.slice(i, j);
    const paint = (s: string) => (op === '+' ? c.green(s) : op === '-' ? c.red(s) : s);
    const emit = (l: Hunk['lines'][number]) => out.push(`${indent}${paint(`${op}${line(l.text, full)}`)}`);
    if (!full && op !== ' ' && run.length > FOLD_RUN) {
      run.slice(0, FOLD_HEAD).forEach(emit);
      out.push(`${indent}${c.dim(`${op}… ${n(run.length - FOLD_HEAD - FOLD_TAIL)} more ${op === '+' ? 'added' : 'removed'} lines hidden (--full shows them)`)}`);
      run.slice(run.length - FOLD_TAIL).forEach(emit);
    } else run.forEach(emit);
    i = j;
  }
  return out;
}


import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { ProvenanceNode, TraceExplanation, SurfaceLabel } from '../../api/views.js';

function list(xs: readonly number[]): string {
  return xs.length > 0 ? xs.join(', ') : 'none';
}

/** Ascending seqs with runs of 3+ written as `a..b`. */
export function ranges(xs: readonly number[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < xs.length) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    if (j - i >= 2) out.push(`${xs[i]}..${xs[j]}`);
    else for (let k = i; k <= j; k++) out.push(String(xs[k]));
    i = j + 1;
  }
  return out.join(', ');
}

function label(l: SurfaceLabel, c: ChalkInstance): string {
  return l === 'current' ? c.green(l) : l === 'shadowed' ? c.yellow(l) : c.dim(l);
}

function nodeLine(n: ProvenanceNode, c: ChalkInstance): string {
  const rel = n.relation === 'replaced' ? c.yellow('replaced') : n.relation === 'source' ? c.dim('cites   ') : '';
  const parts = [
    rel,
    `${c.bold(String(n.seq))}`,
    c.cyan(escapeControl(n.type)),
    label(n.label, c),
    n.synthetic ? c.magenta('[synthetic]') : '',
    n.replaced.length > 0 ? c.yellow(`(replaced ${n.replaced.length}: ${n.replaced.join(', ')})`) : '',
    n.preview ? `"${escapeControl(n.preview)}"` : '',
    n.seen ? c.dim('(expanded above)') : '',
    n.truncated ? c.dim(`(cites ${n.truncated.join(', ')}; deeper with --depth/--all)`) : '',
  ];
  return parts.filter((p) => p.length > 0).join(' ');
}

type Row = { kind: 'node'; node: ProvenanceNode } | { kind: 'chunks'; nodes: ProvenanceNode[] };

/** Runs of 3+ contiguous, unexpanded `assistant/chunk` sources collapse into one row (JSON keeps them all). */
function rows(children: readonly ProvenanceNode[]): Row[] {
  const out: Row[] = [];
  let run: ProvenanceNode[] = [];
  const flush = () => {
    if (run.length >= 3) out.push({ kind: 'chunks', nodes: run });
    else for (const n of run) out.push({ kind: 'node', node: n });
    run = [];
  };
  for (const n of children) {
    const chunk = n.type === 'assistant/chunk' && n.relation === 'source' && n.children.length === 0 && !n.truncated;
    if (chunk && (run.length === 0 || run[run.length - 1]!.seq + 1 === n.seq)) {
      run.push(n);
      continue;
    }
    flush();
    if (chunk) run.push(n);
    else out.push({ kind: 'node', node: n });
  }
  flush();
  return out;
}

function chunkRunLine(nodes: ProvenanceNode[], c: ChalkInstance): string {
  const first = nodes[0]!;
  const last = nodes[nodes.length - 1]!;
  const deltas = nodes.filter((n) => n.preview.startsWith('text-delta ') || n.preview.startsWith('reasoning-delta ') || n.preview.startsWith('tool-call-delta ')).length;
  const end = nodes.find((n) => n.preview.startsWith('block-end '));
  return [
    c.dim('cites   '),
    c.bold(`${first.seq}..${last.seq}`),
    c.cyan('assistant/chunk'),
    c.dim(`x${nodes.length}`),
    label(first.label, c),
    c.dim(`(${deltas} deltas${end ? `; ${escapeControl(end.preview)}` : ''})`),
  ].join(' ');
}

/** The provenance tree as indented ASCII (`|--` / `` `-- ``). */
export function renderTree(root: ProvenanceNode, c: ChalkInstance): string[] {
  const out: string[] = [nodeLine(root, c)];
  // Iterative pre-order with explicit prefixes (no recursion limit).
  const stack: { row: Row; prefix: string; last: boolean }[] = [];
  const push = (children: readonly ProvenanceNode[], prefix: string) => {
    const rs = rows(children);
    for (let i = rs.length - 1; i >= 0; i--) stack.push({ row: rs[i]!, prefix, last: i === rs.length - 1 });
  };
  push(root.children, '');
  while (stack.length > 0) {
    const { row, prefix, last } = stack.pop()!;
    const branch = `${prefix}${last ? '`-- ' : '|-- '}`;
    if (row.kind === 'chunks') {
      out.push(branch + chunkRunLine(row.nodes, c));
      continue;
    }
    out.push(branch + nodeLine(row.node, c));
    push(row.node.children, prefix + (last ? '    ' : '|   '));
  }
  return out;
}

/** `dsh trace`: the direct trace (session-query fields) then the provenance tree. */
export function renderTrace(x: TraceExplanation, depthText: string, c: ChalkInstance): string {
  const t = x.trace;
  const out: string[] = [];
  out.push(
    `${c.bold('Target:')} seq ${t.target.seq} | ${escapeControl(t.target.type)} | ${label(t.target.surface, c)} | ${new Date(t.target.time).toISOString()}${x.tree.synthetic ? c.magenta(' | synthetic closer (not on disk)') : ''}`,
  );
  if (x.tree.preview) out.push(`        "${escapeControl(x.tree.preview)}"`);
  out.push(`${c.bold('Replaced by:')} ${t.replacedBy ?? 'none'}`);
  out.push(`${c.bold('Replacement chain:')} ${list(t.replacementChain)}${x.finalReplacement !== null ? c.dim(`  (its surface position now holds seq ${x.finalReplacement})`) : ''}`);
  out.push(`${c.bold('Events replaced by target:')} ${list(t.replacedEventSeqs)}`);
  out.push(`${c.bold('Events cited directly as sources:')} ${list(t.sourceEventSeqs)}`);
  out.push(`${c.bold('Direct derived events:')} ${list(t.derivedEventSeqs)}`);
  out.push('');
  out.push(c.bold(`Provenance (${depthText}):`));
  out.push(...renderTree(x.tree, c));
  if (x.origins.length > 0) {
    out.push('');
    out.push(`${c.bold('Origins reached')} ${c.dim('(events that cite nothing: prompts, chunks, tool calls, compaction records)')}: ${ranges(x.origins)}`);
  }
  return out.join('\n') + '\n';
}

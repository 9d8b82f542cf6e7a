import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import { type LineageNode, type LineageTrace, sessionKind, type SessionRecord } from '../../api/views.js';

function describe(r: SessionRecord, c: ChalkInstance): string {
  const h = r.header;
  const kind = sessionKind(h);
  const tags: string[] = [kind === 'subagent' ? c.magenta('subagent') : kind === 'fork' ? c.yellow('fork') : c.green('root')];
  if (h.seedLength !== undefined) tags.push(`seedLength ${h.seedLength}`);
  if ((h.delegationDepth ?? 0) > 0) tags.push(`depth ${h.delegationDepth}`);
  if (h.agentPreset !== undefined) tags.push(`preset ${escapeControl(h.agentPreset)}`);
  return `${c.cyan(escapeControl(h.id))}  ${tags.join(', ')}  ${c.dim(new Date(h.createdAt).toISOString())}`;
}

/**
 * The lineage as an ASCII graph: the ancestor chain from the outermost
 * ancestor down to the target (marked `*`), then the target's descendant
 * forest (pre-order, siblings by createdAt then id).
 */
export function renderLineage(t: LineageTrace, c: ChalkInstance): string {
  const out: string[] = [];
  const chain = [...t.ancestors].reverse();
  let depth = 0;
  if (!t.complete) {
    out.push(`${c.red('?')} ${c.red(escapeControl(t.unresolvedParentId))}  ${c.dim('(parent not found in this root: lineage incomplete)')}`);
    depth = 1;
  }
  for (const a of chain) {
    out.push(`${'    '.repeat(Math.max(0, depth - 1))}${depth > 0 ? '`-- ' : ''}${c.dim('o')} ${describe(a, c)}`);
    depth += 1;
  }
  out.push(`${'    '.repeat(Math.max(0, depth - 1))}${depth > 0 ? '`-- ' : ''}${c.bold('*')} ${describe(t.target, c)}  ${c.bold('<- target')}`);
  const base = '    '.repeat(depth);
  const stack: { node: LineageNode; prefix: string; last: boolean }[] = [];
  const push = (nodes: LineageNode[], prefix: string) => {
    for (let i = nodes.length - 1; i >= 0; i--) stack.push({ node: nodes[i]!, prefix, last: i === nodes.length - 1 });
  };
  push(t.descendants, base);
  while (stack.length > 0) {
    const { node, prefix, last } = stack.pop()!;
    out.push(`${prefix}${last ? '`-- ' : '|-- '}${c.dim('o')} ${describe(node.session, c)}`);
    push(node.descendants, prefix + (last ? '    ' : '|   '));
  }
  out.push('');
  const count = (nodes: LineageNode[]): number => {
    let n = 0;
    const s = [...nodes];
    while (s.length > 0) {
      const x = s.pop()!;
      n += 1;
      s.push(...x.descendants);
    }
    return n;
  };
  out.push(
    c.dim(
      `${t.ancestors.length} ancestor${t.ancestors.length === 1 ? '' : 's'}, ${count(t.descendants)} descendant${count(t.descendants) === 1 ? '' : 's'}; ${
        t.complete ? `complete, root ${escapeControl(t.root.header.id)}` : `incomplete: parent "${escapeControl(t.unresolvedParentId)}" is not in this root`
      }`,
    ),
  );
  return out.join('\n') + '\n';
}

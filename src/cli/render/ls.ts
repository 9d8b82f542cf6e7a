import type { ChalkInstance } from 'chalk';
import { escapeControl, preview } from '../io.js';
import type { Listing, ListedSession, Health } from '../../api/views.js';

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

function healthText(h: Health | null, c: ChalkInstance): string {
  switch (h) {
    case null:
      return c.dim('-');
    case 'ok':
      return c.green(h);
    case 'torn':
    case 'needs-repair':
      return c.yellow(h);
    default:
      return c.red(h);
  }
}

/** The `--json` document: one object per session (no absolute header copy beyond what `ls` shows). */
export function lsJson(l: Listing): unknown[] {
  return l.sessions.map((s: ListedSession) => ({
    id: s.id,
    cwd: s.cwd,
    createdAt: s.createdAt,
    kind: s.kind,
    parentSession: s.parentSession,
    title: s.title,
    size: s.size,
    encoding: s.encoding,
    health: s.health,
    ...(s.error ? { error: s.error } : {}),
    path: s.path,
    header: s.header,
  }));
}

/** A table, newest first; the visible width of cells is computed before colouring. */
export function renderLs(l: Listing, c: ChalkInstance, width = 120): string {
  const out: string[] = [];
  out.push(`${c.bold('root')} ${escapeControl(l.root)}  ${l.sessions.length} session${l.sessions.length === 1 ? '' : 's'}`);
  if (l.sessions.length === 0) {
    out.push(c.dim('(no sessions match)'));
  } else {
    const rows = l.sessions.map((s) => ({
      created: new Date(s.createdAt).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
      id: escapeControl(s.id),
      kind: s.kind,
      health: s.health,
      size: size(s.size),
      enc: s.encoding === 'zstd' ? 'zstd' : 'raw',
      title: s.title,
      cwd: s.cwd === null ? '(no cwd)' : escapeControl(s.cwd),
      parent: s.parentSession,
    }));
    const w = (k: 'id' | 'size') => Math.max(k === 'id' ? 2 : 4, ...rows.map((r) => r[k].length));
    const idW = w('id');
    const sizeW = w('size');
    out.push(c.dim(`${'CREATED'.padEnd(20)}  ${'ID'.padEnd(idW)}  ${'KIND'.padEnd(8)}  ${'HEALTH'.padEnd(12)}  ${'SIZE'.padStart(sizeW)}  ENC   TITLE / CWD`));
    const titleW = Math.max(20, width - (20 + idW + 8 + 12 + sizeW + 6 + 12));
    for (const r of rows) {
      const healthPad = ' '.repeat(Math.max(0, 12 - (r.health ?? '-').length));
      const title = r.title !== null ? preview(r.title, titleW) : c.dim('(untitled)');
      out.push(
        `${r.created.padEnd(20)}  ${c.cyan(r.id.padEnd(idW))}  ${r.kind.padEnd(8)}  ${healthText(r.health, c)}${healthPad}  ${r.size.padStart(sizeW)}  ${r.enc.padEnd(4)}  ${title}  ${c.dim(r.cwd)}${r.parent !== null ? c.dim(` ← ${escapeControl(r.parent)}`) : ''}`,
      );
    }
  }
  for (const s of l.sessions) {
    if (s.error) out.push(c.red(`${escapeControl(s.id)}: ${escapeControl(s.error.class)}: ${escapeControl(s.error.message)}`));
  }
  for (const p of l.problems) out.push(c.yellow(`warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}`));
  return out.join('\n') + '\n';
}

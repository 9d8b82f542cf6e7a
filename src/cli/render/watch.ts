import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { SessionSummary, FollowState } from '../../api/views.js';
import { formatCount } from '../../api/log.js';

export interface WatchView {
  sessionId: string | null;
  path: string;
  encoding: string | null;
  state: FollowState;
  summary: SessionSummary;
  lastType: string | null;
  notice: string | null;
}

/** The `inspect --watch` document (one NDJSON record per change). */
export function watchJson(v: WatchView): Record<string, unknown> {
  const s = v.state;
  const open = v.summary.turns.find((t) => t.endSeq === null) ?? null;
  return {
    sessionId: v.sessionId,
    path: v.path,
    encoding: v.encoding,
    bytes: s.size,
    committedBytes: s.committed,
    tornTailBytes: s.pending,
    events: s.events,
    turns: v.summary.turns.length,
    turnInFlight: open ? { turn: open.turn, startSeq: open.startSeq, steps: open.steps } : null,
    openToolCalls: s.openToolCalls,
    compactions: s.compactions,
    lastEventType: v.lastType,
    lastEventTime: v.summary.lastTime,
    removed: s.gone,
    notice: v.notice,
  };
}

/** The incident summary of a live log, redrawn as it grows. */
export function renderWatch(v: WatchView, c: ChalkInstance): string {
  const s = v.state;
  const open = v.summary.turns.find((t) => t.endSeq === null);
  const last = v.summary.turns.filter((t) => t.endSeq !== null).pop();
  const lines = [
    `${c.bold('session')}  ${escapeControl(v.sessionId ?? '(no header yet)')}  ${c.dim('watching, Ctrl-C to stop')}`,
    `file     ${escapeControl(v.path)}`,
    `encoding ${v.encoding ?? '-'}  ${formatCount(s.size)} bytes, ${formatCount(s.committed)} committed`,
    `events   ${formatCount(s.events)} committed${v.lastType ? `, last ${escapeControl(v.lastType)}` : ''}${v.summary.lastTime !== null ? ` at ${new Date(v.summary.lastTime).toISOString()}` : ''}`,
    `turns    ${v.summary.turns.length}${last ? ` (turn ${last.turn} ${last.reason})` : ''}`,
    `in flight ${open ? c.yellow(`turn ${open.turn} since seq ${open.startSeq}, ${open.steps} step(s)`) : 'no turn open'}`,
    `tools    ${s.openToolCalls > 0 ? c.yellow(`${s.openToolCalls} call(s) without a result yet`) : 'no open tool calls'}`,
    `tail     ${s.pending > 0 ? c.yellow(`${formatCount(s.pending)} bytes being written`) : 'clean (everything committed)'}`,
    `compact  ${s.compactions} compaction(s)/prune(s) so far`,
  ];
  if (s.gone) lines.push(c.red('removed  the log is gone; waiting for it to come back'));
  if (v.notice) lines.push(c.dim(`note     ${escapeControl(v.notice)}`));
  return lines.join('\n') + '\n';
}

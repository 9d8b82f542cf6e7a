import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import type { Buckets, StatsView } from '../../views/stats.js';
import { billedInput, cacheHitPercent } from '../../views/stats.js';

const n = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toLocaleString('en-US'));
const pct = (s: string | null) => (s === null ? '-' : `${s}%`);

/** Right-aligned text table (first column left-aligned). */
export function table(head: string[], rows: string[][], c: ChalkInstance): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ');
  return [c.bold(line(head)), ...rows.map(line)];
}

function usageCells(b: Buckets): string[] {
  return [n(b.uncachedInputTokens), n(b.cacheReadTokens), n(b.cacheWriteTokens), n(b.outputTokens), pct(cacheHitPercent(b))];
}
const USAGE_HEAD = ['input', 'cache-read', 'cache-write', 'output', 'cache%'];

export type StatsBy = 'turn' | 'step' | 'model' | 'tool';

/** One session's figures (pure). */
export function renderStats(v: StatsView, c: ChalkInstance, by: readonly StatsBy[]): string {
  const out: string[] = [];
  const label = (s: string) => c.bold(s.padEnd(11));
  const u = v.tokenUsage;
  out.push(`${label('session')}${c.cyan(escapeControl(v.sessionId))}  ${n(v.events)} events${v.syntheticEvents ? c.yellow(` (${v.syntheticEvents} synthetic closers)`) : ''}`);
  out.push(`${label('tokens')}input ${n(u.uncachedInputTokens)} uncached + ${n(u.cacheReadTokens)} cache-read + ${n(u.cacheWriteTokens)} cache-write = ${n(billedInput(u))} billed; output ${n(u.outputTokens)}`);
  out.push(`${label('cache hit')}${pct(v.cacheHitPercent)}  ${c.dim(`(${v.usageSamples} usage samples, ${v.replacedSamples} replaced a previous sample of the same step)`)}`);
  const p = v.contextPressure;
  out.push(`${label('context')}${p.pressureTokens === null ? 'no usage sample' : `${n(p.pressureTokens)} prompt tokens in the latest sample`}${p.contextWindow !== null ? ` of a ${n(p.contextWindow)} window${p.percent !== null ? ` (${p.percent}%)` : ''}` : ' (no context window logged)'}`);
  const s = v.sessionStats;
  out.push(
    `${label('steps')}${n(s.steps)} steps in ${n(s.turns)} turns; llm ${n(s.llmMs)}ms, ttft ${s.ttftSteps ? `${Math.round(s.ttftMs / s.ttftSteps)}ms avg over ${s.ttftSteps} steps` : '-'}, decode ${n(s.decodeMs)}ms for ${n(s.decodeTokens)} output tokens, tools ${n(s.toolMs)}ms`,
  );
  const reasons = Object.entries(v.turnEndReasons);
  out.push(`${label('turn ends')}${reasons.length ? reasons.map(([k, x]) => `${escapeControl(k)} ${x}`).join(', ') : '-'}`);
  out.push(`${label('retries')}${v.retries.failedAttempts} failed attempt(s), ${v.retries.llmRetryEvents} llm/retry event(s)`);
  if (v.compaction.summaries || v.compaction.prunes) {
    const a = v.compaction.auxiliaryUsage;
    out.push(`${label('compaction')}${v.compaction.summaries} summaries, ${v.compaction.prunes} prunes; summary calls used input ${n(a.uncachedInputTokens)}, output ${n(a.outputTokens)} ${c.dim('(not in the totals)')}`);
  }
  for (const b of by) {
    out.push('');
    if (b === 'model') {
      out.push(c.bold('by model'));
      out.push(...table(['provider/model', 'steps', ...USAGE_HEAD], v.byModel.map((m) => [escapeControl(`${m.provider ?? '?'}/${m.model ?? '?'}`), n(m.steps), ...usageCells(m.usage)]), c));
    } else if (b === 'turn') {
      out.push(c.bold('by turn'));
      out.push(...table(['turn', 'steps', 'tools', 'llm-ms', ...USAGE_HEAD, 'end'], v.byTurn.map((t) => [String(t.turn), n(t.steps), n(t.toolCalls), n(t.llmMs), ...usageCells(t.usage), escapeControl(t.endReason ?? 'open')]), c));
    } else if (b === 'step') {
      out.push(c.bold('by step'));
      out.push(
        ...table(
          ['step', 'model', 'attempts', 'failed', 'llm-ms', 'ttft-ms', ...USAGE_HEAD, 'context'],
          v.byStep.map((r) => [
            `${r.turn}/${r.step}`,
            escapeControl(r.model ?? '-'),
            n(r.attempts),
            n(r.failedAttempts),
            n(r.llmMs),
            n(r.ttftMs),
            ...usageCells(r.usage),
            r.pressureTokens === null ? '-' : r.contextWindow ? `${n(r.pressureTokens)}/${n(r.contextWindow)} (${Math.round((r.pressureTokens / r.contextWindow) * 1000) / 10}%)` : n(r.pressureTokens),
          ]),
          c,
        ),
      );
    } else if (b === 'tool') {
      out.push(c.bold('by tool'));
      out.push(
        ...table(
          ['tool', 'calls', 'results', 'errors', 'error%', 'unmatched', 'total-ms', 'mean-ms', 'max-ms'],
          v.byTool.map((t) => [
            escapeControl(t.name),
            n(t.calls),
            n(t.results),
            n(t.errors),
            t.errorRate === null ? '-' : `${Math.round(t.errorRate * 1000) / 10}%`,
            n(t.unmatched),
            n(t.totalMs),
            t.meanMs === null ? '-' : n(Math.round(t.meanMs)),
            n(t.maxMs),
          ]),
          c,
        ),
      );
      if (v.byTool.length === 0) out.push(c.dim('(no tool calls)'));
    }
  }
  return out.join('\n') + '\n';
}

export interface RootRow {
  sessionId: string;
  path: string;
  createdAt: number | null;
  stats?: StatsView;
  error?: { class: string; message: string };
}

export const SORT_KEYS = ['created', 'id', 'turns', 'steps', 'input', 'output', 'cache-read', 'cache-write', 'cache', 'tools', 'tool-errors', 'llm-ms'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export function sortValue(r: RootRow, key: SortKey): number | string {
  const s = r.stats;
  switch (key) {
    case 'id':
      return r.sessionId;
    case 'created':
      return r.createdAt ?? -1;
    case 'turns':
      return s?.sessionStats.turns ?? -1;
    case 'steps':
      return s?.sessionStats.steps ?? -1;
    case 'input':
      return s ? billedInput(s.tokenUsage) : -1;
    case 'output':
      return s?.tokenUsage.outputTokens ?? -1;
    case 'cache-read':
      return s?.tokenUsage.cacheReadTokens ?? -1;
    case 'cache-write':
      return s?.tokenUsage.cacheWriteTokens ?? -1;
    case 'cache': {
      if (!s) return -1;
      const d = billedInput(s.tokenUsage);
      return d === 0 ? -1 : s.tokenUsage.cacheReadTokens / d;
    }
    case 'tools':
      return s ? s.byTool.reduce((a, t) => a + t.calls, 0) : -1;
    case 'tool-errors':
      return s ? s.byTool.reduce((a, t) => a + t.errors, 0) : -1;
    case 'llm-ms':
      return s?.sessionStats.llmMs ?? -1;
  }
}

/** Root table + totals (pure). */
export function renderRootStats(rows: readonly RootRow[], totals: { tokenUsage: Buckets; turns: number; steps: number; llmMs: number; toolCalls: number; toolErrors: number; sessions: number; failed: number }, c: ChalkInstance): string {
  const out: string[] = [];
  out.push(
    ...table(
      ['session', 'turns', 'steps', 'input', 'cache-read', 'cache-write', 'output', 'cache%', 'tools', 'errors', 'llm-ms'],
      rows.map((r) => {
        if (!r.stats) return [escapeControl(r.sessionId), c.red(`${r.error?.class ?? 'Error'}`), '', '', '', '', '', '', '', '', ''];
        const s = r.stats;
        return [
          escapeControl(r.sessionId),
          n(s.sessionStats.turns),
          n(s.sessionStats.steps),
          n(s.tokenUsage.uncachedInputTokens),
          n(s.tokenUsage.cacheReadTokens),
          n(s.tokenUsage.cacheWriteTokens),
          n(s.tokenUsage.outputTokens),
          pct(s.cacheHitPercent),
          n(s.byTool.reduce((a, t) => a + t.calls, 0)),
          n(s.byTool.reduce((a, t) => a + t.errors, 0)),
          n(s.sessionStats.llmMs),
        ];
      }),
      c,
    ),
  );
  const t = totals.tokenUsage;
  out.push('');
  out.push(
    `${c.bold('total')}  ${totals.sessions} sessions${totals.failed ? c.red(` (${totals.failed} unreadable)`) : ''}; ${n(totals.turns)} turns, ${n(totals.steps)} steps; input ${n(t.uncachedInputTokens)} + cache-read ${n(t.cacheReadTokens)} + cache-write ${n(t.cacheWriteTokens)}, output ${n(t.outputTokens)}, cache hit ${pct(cacheHitPercent(t))}; ${n(totals.toolCalls)} tool calls (${n(totals.toolErrors)} errors); llm ${n(totals.llmMs)}ms`,
  );
  return out.join('\n') + '\n';
}

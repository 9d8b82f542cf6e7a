import type { ChalkInstance } from 'chalk';
import { escapeControl } from '../io.js';
import { type Buckets, type StatsView, billedInput, cacheHitPercent, type Cost, type ExplainRow, type Ledger, type LedgerSession, type Usage } from '../../api/views.js';
import { formatCount, placeText, stepKey, type ErrorObject } from '../../api/log.js';

const n = (x: number | null | undefined) => (x === null || x === undefined ? '-' : formatCount(x));
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
    out.push(`${label('compaction')}${v.compaction.summaries} summaries, ${v.compaction.prunes} prunes; summary calls used input ${n(a.uncachedInputTokens)}, output ${n(a.outputTokens)} ${c.dim('(not in tokenUsage; billed below)')}`);
  }
  out.push(`${label('billed')}${'tokenUsage (DSH)'.padEnd(20)}${usageText(v.billed.tokenUsage)}`);
  out.push(`${label('')}${'failed attempts'.padEnd(20)}${usageText(v.billed.failedAttempts)} ${c.dim('(replaced by a retry under DSH rule)')}`);
  out.push(`${label('')}${'summary calls'.padEnd(20)}${usageText(v.billed.summaryCalls)}`);
  out.push(`${label('')}${'total billed'.padEnd(20)}${usageText(v.billed.total)}`);
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
            stepKey(r.turn, r.step),
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
  error?: ErrorObject;
  ledger?: LedgerSession;
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
export function renderRootStats(
  rows: readonly RootRow[],
  totals: { tokenUsage: Buckets; turns: number; steps: number; llmMs: number; toolCalls: number; toolErrors: number; sessions: number; failed: number },
  ledger: Ledger,
  c: ChalkInstance,
): string {
  const out: string[] = [];
  out.push(
    ...table(
      ['session', 'turns', 'steps', 'input', 'cache-read', 'cache-write', 'output', 'cache%', 'tools', 'errors', 'llm-ms', 'inherited-in', 'inherited-out', 'owned-cost'],
      rows.map((r) => {
        if (!r.stats) return [escapeControl(r.sessionId), c.red(`${r.error?.class ?? 'Error'}`), '', '', '', '', '', '', '', '', '', '', '', ''];
        const led = r.ledger;
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
          led ? n(billedInput(led.inherited.billed)) : '-',
          led ? n(led.inherited.billed.outputTokens) : '-',
          led ? escapeControl(costText(led.cost.owned, true)) : '-',
        ];
      }),
      c,
    ),
  );
  const t = totals.tokenUsage;
  out.push('');
  out.push(
    `${c.bold('total')}  ${totals.sessions} sessions${totals.failed ? c.red(` (${totals.failed} unreadable)`) : ''}; ${n(totals.turns)} turns, ${n(totals.steps)} steps; ${n(totals.toolCalls)} tool calls (${n(totals.toolErrors)} errors); llm ${n(totals.llmMs)}ms`,
  );
  const lt = ledger.totals;
  const label = (x: string) => c.bold(x.padEnd(13));
  out.push(`${label('counted once')}${'tokenUsage (DSH)'.padEnd(20)}${usageText(lt.counted.tokenUsage)}, cache hit ${pct(cacheHitPercent(lt.counted.tokenUsage))}`);
  out.push(`${label('')}${'failed attempts'.padEnd(20)}${usageText(lt.counted.failedAttempts)}`);
  out.push(`${label('')}${'summary calls'.padEnd(20)}${usageText(lt.counted.summaryCalls)}`);
  out.push(`${label('')}${'total billed'.padEnd(20)}${usageText(lt.counted.billed)}  cost ${escapeControl(costText(lt.cost.counted))}`);
  if (billedInput(lt.unattributed.billed) + lt.unattributed.billed.outputTokens > 0) {
    out.push(`${label('')}${'of which unattrib.'.padEnd(20)}${usageText(lt.unattributed.billed)} ${c.yellow('(inherited by forks whose parent is missing)')}`);
  }
  out.push(
    `${label('naive sum')}${'per-session sum'.padEnd(20)}${usageText(lt.naive.billed)}  cost ${escapeControl(costText(lt.cost.naive))}; ${c.yellow('would add')} ${usageText(lt.inherited.billed)} (inherited fork seeds), cost ${escapeControl(costText(lt.cost.inherited))}`,
  );
  out.push(`${label('')}${c.dim(`DSH tokenUsage summed per session (as each session shows it): input ${n(t.uncachedInputTokens)} + cache-read ${n(t.cacheReadTokens)} + cache-write ${n(t.cacheWriteTokens)}, output ${n(t.outputTokens)}`)}`);
  if (lt.byModel.length) {
    out.push('');
    out.push(c.bold('by model (each call once)'));
    out.push(...table(['provider/model', ...USAGE_HEAD, 'billed-in', 'billed-out', 'cost'], lt.byModel.map((m) => [escapeControl(`${m.provider ?? '?'}/${m.model ?? '?'}`), ...usageCells(m.counted.tokenUsage), n(billedInput(m.counted.billed)), n(m.counted.billed.outputTokens), escapeControl(costText(m.cost, true))]), c));
  }
  return out.join('\n') + '\n';
}

/** Compact usage text: `input U + cache-read R + cache-write W, output O`. */
export function usageText(b: Buckets): string {
  return `input ${n(b.uncachedInputTokens)} + cache-read ${n(b.cacheReadTokens)} + cache-write ${n(b.cacheWriteTokens)}, output ${n(b.outputTokens)}`;
}

/** A cost: the exact amount and currency; unpriced parts named, never shown as zero. */
export function costText(cost: Cost, short = false): string {
  const amount = cost.exact === null ? 'unpriced' : `${cost.exact} ${cost.currency}`;
  if (cost.complete) return amount;
  if (short) return `${amount}${cost.exact === null ? '' : ' + unpriced'}`;
  const parts = cost.unpriced.map((u) => `${u.provider ?? '?'}/${u.model ?? '?'}: ${n(billedInput(u.usage))} in, ${n(u.usage.outputTokens)} out (${u.reason})`);
  return `${cost.exact === null ? 'unpriced' : `${amount} + unpriced`}: ${parts.join('; ')}`;
}

/**
 * The ledger figures of one session, explicit, for --json. Without
 * `descendantsRead` (one session read without --tree) the roll-ups are null:
 * not computed, never a zero.
 */
function usageLine(u: Usage): string {
  return `${usageText(u.billed)}${u.failedAttempts.outputTokens + billedInput(u.failedAttempts) + u.summaryCalls.outputTokens + billedInput(u.summaryCalls) > 0 ? ` (tokenUsage ${n(billedInput(u.tokenUsage))} in / ${n(u.tokenUsage.outputTokens)} out)` : ''}`;
}

/** Own vs inherited, roll-ups, seed verification and cost of one session (pure). */
export function renderLedger(row: LedgerSession, c: ChalkInstance, tree: readonly LedgerSession[] | null): string {
  const out: string[] = [''];
  const label = (x: string) => c.bold(x.padEnd(11));
  const sub = (x: string) => x.padEnd(22);
  out.push(`${label('ledger')}${sub('owned')}${usageLine(row.owned)}  cost ${escapeControl(costText(row.cost.owned))}`);
  const from = row.inherited.from.map((f) => `"${escapeControl(f.sessionId)}"`).join(', ');
  out.push(`${label('')}${sub('inherited')}${usageLine(row.inherited)}${from ? ` from ${from}` : ''}  cost ${escapeControl(costText(row.cost.inherited))}`);
  if (billedInput(row.unattributed.billed) + row.unattributed.billed.outputTokens > 0 || row.seed?.parentMissing) {
    out.push(`${label('')}${sub('unattributed')}${usageLine(row.unattributed)} ${c.yellow(`(parent "${escapeControl(row.parentSession ?? '?')}" missing: counted here, once)`)}  cost ${escapeControl(costText(row.cost.unattributed))}`);
  }
  out.push(`${label('')}${sub('whole log (naive)')}${usageLine(row.naive)}  cost ${escapeControl(costText(row.cost.naive))}`);
  out.push(`${label('')}${sub('subagents (rolled up)')}${tree ? usageLine(row.rolledUp.subagents) : c.dim('not read: --tree reads the descendants')}`);
  if (row.seed) {
    const s = row.seed;
    const text =
      s.parentMissing ? c.yellow(`seedLength ${row.seedLength}: parent "${escapeControl(row.parentSession ?? '?')}" not found; the seed's usage is unattributed`)
      : s.verified ? `seedLength ${row.seedLength}: verified equal to parent "${escapeControl(row.parentSession ?? '?')}" (its usage is inherited)`
      : c.red(`seedLength ${row.seedLength}: differs from parent "${escapeControl(row.parentSession ?? '?')}"${s.firstDifferingSeq !== null ? ` from seq ${s.firstDifferingSeq}` : ''} (check DSH-L1); from there the seed counts as this session's own`);
    out.push(`${label('seed')}${text}`);
  }
  if (tree) {
    out.push('');
    out.push(c.bold('tree (each call once)'));
    out.push(
      ...table(
        ['session', 'kind', 'billed-in', 'billed-out', 'cost'],
        [row, ...tree].map((s) => [escapeControl(s.sessionId), s.error ? c.red(s.error.class) : s.kind ?? '-', n(billedInput(s.owned.billed) + billedInput(s.unattributed.billed)), n(s.owned.billed.outputTokens + s.unattributed.billed.outputTokens), escapeControl(costText(s.cost.owned, true))]),
        c,
      ),
    );
    out.push(`${label('tree total')}${usageLine(row.tree)}  cost ${escapeControl(costText(row.cost.tree))}`);
  }
  if (row.byModel.length) {
    out.push('');
    out.push(c.bold('cost by model (owned)'));
    out.push(...table(['provider/model', 'billed-in', 'billed-out', 'cost'], row.byModel.map((m) => [escapeControl(`${m.provider ?? '?'}/${m.model ?? '?'}`), n(billedInput(m.owned.billed)), n(m.owned.billed.outputTokens), escapeControl(costText(m.cost))]), c));
  }
  if (row.byTurn.length) {
    out.push('');
    out.push(c.bold('cost by turn'));
    out.push(
      ...table(
        ['turn', 'standing', 'billed-in', 'billed-out', 'cost'],
        row.byTurn.map((t) => [t.turn === null ? '-' : String(t.turn), t.standing === 'inherited' ? `inherited from ${escapeControl(t.holder)}` : t.standing, n(billedInput(t.usage.billed)), n(t.usage.billed.outputTokens), escapeControl(costText(t.cost, true))]),
        c,
      ),
    );
  }
  return out.join('\n') + '\n';
}

/** Every usage sample and summary call of a session: where it was counted, and why (pure). */
export function renderExplain(row: LedgerSession, rows: readonly ExplainRow[], c: ChalkInstance): string {
  const out: string[] = [c.bold(`explain ${escapeControl(row.sessionId)}: ${rows.length} usage record(s)`)];
  for (const r of rows) {
    const place = placeText(r.turn, r.step, r.attempt);
    const where = place === '' ? '' : ` ${place}`;
    out.push(`  seq ${String(r.seq).padStart(6)}  ${r.event}${where}  ${escapeControl(`${r.provider ?? '?'}/${r.model ?? '?'}`)}  ${usageText(r.usage)}`);
    out.push(`  ${''.padStart(10)}  ${r.category ? c.cyan(`[${r.category}${r.standing ? `, ${r.standing}` : ''}]`) : c.dim('[not counted]')} ${escapeControl(r.why)}`);
  }
  return out.join('\n') + '\n';
}

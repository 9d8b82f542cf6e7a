import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, isRootDir, addExamples } from '../shared.js';
import { failureObject, UsageError, toJson } from '../../api/log.js';
import { STATS_EXPLAIN, zero, buildLedger, filterExplain, ledgerJson, loadPriceTable, readRootUsage, sessionStatsReport, type Ledger, type SessionInput } from '../../api/views.js';
import { renderExplain, renderLedger, renderRootStats, renderStats, SORT_KEYS, sortValue, type RootRow, type SortKey, type StatsBy } from '../render/stats.js';
import { reportLoadFailure } from './replay.js';

interface StatsOptions extends CommonOptions {
  by?: StatsBy[];
  explain?: boolean;
  figure?: string;
  sort?: SortKey;
  asc?: boolean;
  desc?: boolean;
  tree?: boolean;
  prices?: string;
  currency: string;
}


export function registerStats(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('stats')
    .description(
      "token usage (DSH's tokenUsage rule) and every billed call, owned vs inherited across forks and subagents, cost, cache hit, context pressure, session-stats timings, per turn/step/model/tool; over a root: each call counted once, and what a naive per-session sum would add",
    )
    .argument('<target>', 'session file, directory, id, -, or a session root')
    .addOption(new Option('--by <dims...>', 'tables to show (default: model tool)').choices(['turn', 'step', 'model', 'tool']))
    .option('--tree', 'the session with all its descendants (forks and subagents) rolled up')
    .option('--explain', 'print the counting rules, and for every usage sample and summary call whether and where it was counted')
    .option('--figure <name>', 'with --explain: only the rows behind one figure: tokenUsage, failedAttempts, summaryCalls, owned, inherited, unattributed, turn:N, model:NAME')
    .option('--prices <file>', 'price table (JSON, the shipped data/prices.json format) instead of the shipped one')
    .option('--currency <code>', 'currency of the cost figures (a currency of the price table)', 'USD')
    .addOption(new Option('--sort <key>', 'root table order (default created, newest first)').choices([...SORT_KEYS]))
    .option('--asc', 'ascending order (default for --sort id)')
    .option('--desc', 'descending order (default for every other key)');
  addCommon(cmd, { json: 'print the figures as JSON (root: {totals, sessions}); owned, inherited, unattributed, rolledUp, naive and cost explicit' });
  addExamples(
    cmd,
    'dsh stats session-incident-1 --root fixtures/incident --by turn tool',
    'dsh stats fixtures/incident --json',
    'dsh stats session-incident-1 --root fixtures/incident --explain --figure tokenUsage',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: StatsOptions) => {
      const env = envFor(io, opts);
      if (opts.figure !== undefined && !opts.explain) throw new UsageError('--figure needs --explain');
      if (!/^[A-Za-z]{3}$/.test(opts.currency)) throw new UsageError(`--currency must be a three-letter currency code, got ${toJson(opts.currency)}`);
      const currency = opts.currency.toUpperCase();
      const prices = loadPriceTable(opts.prices ?? undefined);
      if (!prices.entries.some((e) => e.currency === currency)) io.stderr.write(`dsh: warning: the price table ${escapeControl(prices.file)} has no ${currency} prices: every cost is unpriced\n`);
      const ledgerOf = (inputs: SessionInput[]): Ledger => buildLedger(inputs, { prices, currency });
      if (opts.explain && !opts.json) await writeOut(io.stdout, STATS_EXPLAIN + '\n');

      if (target !== '-' && isRootDir(target)) {
        const read = await readRootUsage(target, { decoder: decoderFor(opts) });
        for (const p of read.problems) io.stderr.write(`dsh: warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}\n`);
        const ledger = ledgerOf(read.inputs);
        const rows: RootRow[] = read.reads.map((x, i) => {
          const led = ledger.sessions[i]!;
          if (!x.view || !x.r.meta) {
            const e = failureObject(x.r.error);
            if (!opts.json) io.stderr.write(`dsh: ${escapeControl(x.path)}: ${e.class}: ${escapeControl(e.message)}\n`);
            return { sessionId: x.id, path: x.path, createdAt: x.r.artifact.meta?.createdAt ?? null, error: e, ledger: led };
          }
          return { sessionId: x.r.meta.id, path: x.path, createdAt: x.r.meta.createdAt, stats: x.view, ledger: led };
        });
        const key: SortKey = opts.sort ?? 'created';
        const desc = opts.desc ? true : opts.asc ? false : key !== 'id';
        rows.sort((a, b) => {
          const x = sortValue(a, key);
          const y = sortValue(b, key);
          const cmp = typeof x === 'string' || typeof y === 'string' ? String(x).localeCompare(String(y)) : x - y;
          return (desc ? -cmp : cmp) || a.sessionId.localeCompare(b.sessionId);
        });
        const totals = { tokenUsage: zero(), turns: 0, steps: 0, llmMs: 0, toolCalls: 0, toolErrors: 0, sessions: rows.length, failed: 0 };
        for (const r of rows) {
          if (!r.stats) {
            totals.failed++;
            continue;
          }
          const u = r.stats.tokenUsage;
          totals.tokenUsage.uncachedInputTokens += u.uncachedInputTokens;
          totals.tokenUsage.outputTokens += u.outputTokens;
          totals.tokenUsage.cacheReadTokens += u.cacheReadTokens;
          totals.tokenUsage.cacheWriteTokens += u.cacheWriteTokens;
          totals.turns += r.stats.sessionStats.turns;
          totals.steps += r.stats.sessionStats.steps;
          totals.llmMs += r.stats.sessionStats.llmMs;
          for (const t of r.stats.byTool) {
            totals.toolCalls += t.calls;
            totals.toolErrors += t.errors;
          }
        }
        const lt = ledger.totals;
        if (opts.json) {
          const doc = {
            root: read.root,
            currency,
            prices: prices.file,
            totals: { ...totals, counted: lt.counted, naive: lt.naive, inherited: lt.inherited, unattributed: lt.unattributed, cost: lt.cost, byModel: lt.byModel },
            sessions: rows.map(({ ledger: led, ...r }) => ({ ...r, ...(led ? ledgerJson(led, false) : {}), ...(opts.explain && led ? { explainRows: filterExplain(led.explain, opts.figure) } : {}) })),
            ...(opts.explain ? { explain: STATS_EXPLAIN } : {}),
          };
          await writeOut(io.stdout, toJson(doc) + '\n');
        } else {
          let text = renderRootStats(rows, totals, ledger, env.c);
          if (opts.explain) for (const r of rows) if (r.ledger && r.ledger.explain.length) text += '\n' + renderExplain(r.ledger, filterExplain(r.ledger.explain, opts.figure), env.c);
          await writeOut(io.stdout, text);
        }
        return totals.failed > 0 ? EXIT.failed : EXIT.ok;
      }

      const t = await resolveCli(target, opts);
      const report = await sessionStatsReport(t, { decoder: decoderFor(opts), prices, currency, ...(opts.tree ? { tree: true } : {}), ...(opts.explain ? { explain: true } : {}), ...(opts.figure !== undefined ? { figure: opts.figure } : {}) });
      if (!report.ok) return reportLoadFailure(io, opts, report.inspection.error);
      for (const w of report.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
      if (opts.json) await writeOut(io.stdout, toJson(report.document) + '\n');
      else {
        let text = renderStats(report.view, env.c, opts.by ?? ['model', 'tool']);
        text += renderLedger(report.ledger, env.c, opts.tree ? report.descendants : null);
        if (opts.explain) text += '\n' + renderExplain(report.ledger, report.explainRows, env.c);
        await writeOut(io.stdout, text);
      }
      return EXIT.ok;
    }),
  );
}

import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, isRootDir } from '../shared.js';
import { inspectTarget } from '../../log/session.js';
import { resolveTarget, scanRoot } from '../../log/target.js';
import { statsFold, STATS_EXPLAIN, zero, type StatsView } from '../../views/stats.js';
import { renderRootStats, renderStats, SORT_KEYS, sortValue, type RootRow, type SortKey, type StatsBy } from '../render/stats.js';
import { guardedConsumer } from '../stream.js';
import { reportLoadFailure } from './replay.js';
import type { ResolvedTarget } from '../../log/target.js';
import type { SessionInspection } from '../../log/session.js';
import type { SessionEvent } from '../../log/types.js';
import type { FrameDecoder } from '../../physical/decoders.js';

/** One session's stats in one streaming pass (memory bounded by the fold's tables, not the log). */
async function streamStats(t: ResolvedTarget, decoder: FrameDecoder | undefined): Promise<{ r: SessionInspection; view?: StatsView }> {
  let fold: ReturnType<typeof statsFold> | undefined;
  const consumer = guardedConsumer((e: SessionEvent) => fold?.observe(e));
  const r = await inspectTarget(t, {
    ...(decoder ? { decoder } : {}),
    collect: false,
    skipArtifact: true,
    onMeta: (meta) => {
      fold = statsFold(meta.id, { createdAt: meta.createdAt });
    },
    onLogical: consumer.observe,
  });
  if (r.error || !r.meta || !fold) return { r };
  consumer.rethrow();
  fold.storedEventCount(r.storedEventCount);
  for (const c of r.closers) fold.observe(c);
  return { r, view: fold.finish(r.storedEventCount + r.closers.length) };
}

interface StatsOptions extends CommonOptions {
  by?: StatsBy[];
  explain?: boolean;
  sort?: SortKey;
  asc?: boolean;
  desc?: boolean;
}


export function registerStats(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('stats')
    .description("token usage (DSH's tokenUsage rule), cache hit, context pressure, session-stats timings, per turn/step/model/tool; over a root: totals and a per-session table")
    .argument('<target>', 'session file, directory, id, -, or a session root')
    .addOption(new Option('--by <dims...>', 'tables to show (default: model tool)').choices(['turn', 'step', 'model', 'tool']))
    .option('--explain', 'print the counting rules (how each figure is derived)')
    .addOption(new Option('--sort <key>', 'root table order (default created, newest first)').choices([...SORT_KEYS]))
    .option('--asc', 'ascending order (default for --sort id)')
    .option('--desc', 'descending order (default for every other key)');
  addCommon(cmd, { json: 'print the figures as JSON (root: {totals, sessions})' });
  cmd.action(
    action(io, setExit, async (target: string, opts: StatsOptions) => {
      const env = envFor(io, opts);
      if (opts.explain && !opts.json) await writeOut(io.stdout, STATS_EXPLAIN + '\n');
      if (target !== '-' && isRootDir(target)) {
        const scan = scanRoot(target);
        for (const p of scan.problems) io.stderr.write(`dsh: warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}\n`);
        const rows: RootRow[] = [];
        for (const s of scan.sessions) {
          const t = resolveTarget(s.path);
          t.root = scan.root;
          const { r, view } = await streamStats(t, decoderFor(opts));
          if (!view || !r.meta) {
            const e = r.error ?? { class: 'Error', message: 'session events were not collected' };
            rows.push({ sessionId: r.artifact.meta?.id ?? s.id, path: s.path, createdAt: r.artifact.meta?.createdAt ?? null, error: { class: e.class, message: e.message } });
            if (!opts.json) io.stderr.write(`dsh: ${escapeControl(s.path)}: ${e.class}: ${escapeControl(e.message)}\n`);
            continue;
          }
          rows.push({ sessionId: r.meta.id, path: s.path, createdAt: r.meta.createdAt, stats: view });
        }
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
        if (opts.json) await writeOut(io.stdout, JSON.stringify({ root: scan.root, totals, sessions: rows }) + '\n');
        else await writeOut(io.stdout, renderRootStats(rows, totals, env.c));
        return totals.failed > 0 ? EXIT.failed : EXIT.ok;
      }
      const { r, view } = await streamStats(await resolveCli(target, opts), decoderFor(opts));
      if (!view) {
        return reportLoadFailure(io, opts, r.error);
      }
      for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
      if (opts.json) await writeOut(io.stdout, JSON.stringify(opts.explain ? { ...view, explain: STATS_EXPLAIN } : view) + '\n');
      else await writeOut(io.stdout, renderStats(view, env.c, opts.by ?? ['model', 'tool']));
      return EXIT.ok;
    }),
  );
}

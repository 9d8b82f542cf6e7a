import type { Command } from 'commander';
import type { Io } from '../io.js';
import { progressOption } from '../progress.js';
import { escapeControl, writeOut } from '../io.js';
import { addCommon, decoderFor, envFor, indexUseFor, resolveCli, EXIT, type CommonOptions, speculativeAction, addExamples } from '../shared.js';
import { UsageError, heldBytesBudget, inspectTargetIndexed, type SessionEvent, toJson } from '../../api/log.js';
import { CITATIONS, foldOf, analysisOf, explainEvent, provenanceSources, type TraceExplanation } from '../../api/views.js';
import { renderTrace } from '../render/trace.js';
import { failureJson, renderFailure } from '../render/surface.js';
import { queryError, seqArg } from './surface.js';

/**
 * Events a provenance tree may reach (`DSH_TRACE_MAX_EVENTS`, else one per KiB of the held-bytes
 * budget, at least 1,000): each is read and held whole, with its tree node, its preview and its share
 * of the printed document (`--all` of the 2 GB bench log's last summary reached millions, and V8 ran
 * out of memory after two minutes).
 */
function provenanceBudget(env: NodeJS.ProcessEnv): number {
  const fromEnv = Number(env['DSH_TRACE_MAX_EVENTS']);
  if (Number.isSafeInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return Math.max(1000, Math.floor(heldBytesBudget(env) / 1024));
}

interface TraceOptions extends CommonOptions {
  depth?: string;
  all?: boolean;
}

export function registerTrace(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('trace')
    .description('explain one event: what it replaced, what replaced it, what it cites and what cites it (session-query traceEvent), then its provenance tree')
    .argument('<target>', 'session file, directory, id (under --root), or -')
    .argument('<seq>', 'the event to trace')
    .option('--depth <n>', 'expand sources transitively n levels (default 1)')
    .option('--all', 'expand sources all the way back to the events that cite nothing');
  addCommon(cmd, { json: "print session-query's traceEvent object; with --depth/--all also `provenance` and `origins`" });
  addExamples(
    cmd,
    'dsh trace session-incident-1 36 --root fixtures/incident',
    'dsh trace session-incident-1 36 --root fixtures/incident --all --json',
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, seqText: string, opts: TraceOptions) => {
      const env = envFor(io, opts);
      const seq = seqArg('<seq>', seqText) as number;
      if (opts.all && opts.depth !== undefined) throw new UsageError('use either --depth or --all, not both');
      const depthArg = seqArg('--depth', opts.depth);
      const depth = opts.all ? Infinity : (depthArg ?? 1);
      const resolved = await resolveCli(target, opts);
      // One validating pass (or the saved session index) gives the fold, an index of the log and
      // who cites <seq>; then only the events of the provenance tree are re-read.
      const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, [CITATIONS]));
      let x: TraceExplanation;
      try {
        const r = indexed.inspection;
        if (r.error) {
          if (opts.json) await writeOut(io.stdout, failureJson(r.error));
          else io.stderr.write(renderFailure(r.error));
          return EXIT.failed;
        }
        if (!opts.json) for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
        const sessionId = r.meta!.id;
        try {
          const derived = foldOf(indexed.folds, CITATIONS).derivedOf([seq], r.closers);
          const fetch = indexed.events!;
          const events = await fetch([[seq, seq]]);
          // Breadth-first: every event within `depth` citations of the target (a superset of what the tree shows).
          let frontier = events[seq] ? [seq] : [];
          const have = new Set<number>(frontier);
          const budget = provenanceBudget(io.env);
          for (let level = 0; level < depth && frontier.length > 0; level++) {
            const next: number[] = [];
            for (const s of frontier) {
              for (const src of provenanceSources(events[s] as SessionEvent)) {
                if (have.has(src)) continue;
                have.add(src);
                next.push(src);
              }
            }
            if (have.size > budget) {
              const fewer = level > 0 ? `; --depth ${level} stays within it` : '';
              throw new UsageError(
                `trace: the provenance of seq ${seq} reaches more than ${budget} events within ${level + 1} level${level > 0 ? 's' : ''}, more than this command holds (it reads and holds every event of the tree; DSH_TRACE_MAX_EVENTS, or DSH_MAX_HELD_BYTES and a larger heap, raise it)${fewer}`,
              );
            }
            if (next.length > 0) await fetch(next.map((s) => [s, s] as [number, number]), events);
            frontier = next;
          }
          x = explainEvent(sessionId, events, seq, { depth, storedEventCount: r.storedEventCount }, analysisOf(r.surface!, derived));
        } catch (error) {
          throw queryError(error);
        }
      } finally {
        indexed.close();
      }
      if (opts.json) {
        const doc = opts.all || opts.depth !== undefined ? { ...x.trace, provenance: x.tree, origins: x.origins } : x.trace;
        await writeOut(io.stdout, toJson(doc) + '\n');
      } else {
        await writeOut(io.stdout, renderTrace(x, opts.all ? 'all levels' : `depth ${depth}`, env.c));
      }
      return EXIT.ok;
    }),
  );
}

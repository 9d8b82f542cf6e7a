import type { Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { addCommon, envFor, EXIT, type CommonOptions, speculativeAction, addExamples } from '../shared.js';
import { UsageError, heldBytesBudget, toJson } from '../../api/log.js';
import type { TraceExplanation } from '../../index.js';
import { renderTrace } from '../render/trace.js';
import { answer, sessionFor } from '../session.js';
import { seqArg } from './surface.js';

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
      const session = await sessionFor(io, target, opts, { maxTraceEvents: provenanceBudget(io.env) });
      let x: TraceExplanation;
      try {
        const answered = await answer(io, opts, session, await session.trace(seq, { depth }));
        if (typeof answered === 'number') return answered;
        x = answered.value;
      } finally {
        session.close();
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

import type { Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, envFor, EXIT, type CommonOptions } from '../shared.js';
import { UsageError } from '../../log/errors.js';
import { explainEvent } from '../../views/trace.js';
import { renderTrace } from '../render/trace.js';
import { loadForQuery, queryError, seqArg } from './surface.js';

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
  cmd.action(
    action(io, setExit, async (target: string, seqText: string, opts: TraceOptions) => {
      const env = envFor(io, opts);
      const seq = seqArg('<seq>', seqText) as number;
      if (opts.all && opts.depth !== undefined) throw new UsageError('use either --depth or --all, not both');
      const depthArg = seqArg('--depth', opts.depth);
      const depth = opts.all ? Infinity : (depthArg ?? 1);
      const s = await loadForQuery(target, opts, io);
      if (!s) return EXIT.failed;
      let x;
      try {
        x = explainEvent(s.sessionId, s.events, seq, { depth, storedEventCount: s.storedEventCount }, s.surface);
      } catch (error) {
        throw queryError(error);
      }
      if (opts.json) {
        const doc = opts.all || opts.depth !== undefined ? { ...x.trace, provenance: x.tree, origins: x.origins } : x.trace;
        await writeOut(io.stdout, JSON.stringify(doc) + '\n');
      } else {
        await writeOut(io.stdout, renderTrace(x, opts.all ? 'all levels' : `depth ${depth}`, env.c));
      }
      return EXIT.ok;
    }),
  );
}

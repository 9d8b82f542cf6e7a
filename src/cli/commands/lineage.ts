import type { Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut, escapeControl } from '../io.js';
import { action, addCommon, envFor, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { toJson } from '../../api/log.js';
import { callFailure, sessionFor } from '../session.js';
import { renderLineage } from '../render/lineage.js';
import { failureJson } from '../render/surface.js';

export function registerLineage(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('lineage')
    .description('ancestors (nearest first) and descendants (forks and subagents) of a session among the sessions of its root (session-query traceSession)')
    .argument('<target>', 'session file, directory, id (under --root), or -');
  addCommon(cmd, { json: "print session-query's traceSession object" });
  addExamples(
    cmd,
    'dsh lineage session-incident-1-fork-1 --root fixtures/incident',
    'dsh lineage session-incident-1 --root fixtures/incident --json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: CommonOptions) => {
      const env = envFor(io, opts);
      const session = await sessionFor(io, target, opts);
      const result = await session.lineage(opts.root !== undefined ? { root: opts.root } : {});
      const root = opts.root ?? session.root;
      if (!result.ok) {
        const e = result.error;
        // A log without a header: its reason, as DSH's listing gives it.
        if (e.verdict) {
          if (opts.json) await writeOut(io.stdout, failureJson(e));
          else io.stderr.write(`dsh: ${escapeControl(e.message)}\n`);
          return EXIT.failed;
        }
        // A lineage session-query cannot follow (a cycle): its own error, exit 1.
        if (e.class === 'SessionQueryError' && e.kind !== 'usage' && opts.json) {
          await writeOut(io.stdout, failureJson({ class: 'SessionQueryError', message: e.message }));
          return EXIT.failed;
        }
        throw callFailure(e);
      }
      const { trace, problems } = result.value;
      if (opts.json) await writeOut(io.stdout, toJson(trace) + '\n');
      else {
        await writeOut(io.stdout, renderLineage(trace, env.c));
        for (const p of problems) io.stderr.write(`dsh: warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}\n`);
        if (root === undefined) io.stderr.write('dsh: warning: the target is not inside a session root; pass --root to search one for parents and children\n');
      }
      return EXIT.ok;
    }),
  );
}

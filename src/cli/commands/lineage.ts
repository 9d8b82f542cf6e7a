import type { Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut, escapeControl } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { LogError, toJson } from '../../api/log.js';
import { readHeaderFromSource, type ListingProblem, lineageOf } from '../../api/views.js';
import { renderLineage } from '../render/lineage.js';
import { failureJson } from '../render/surface.js';
import { queryError } from './surface.js';

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
      const resolved = await resolveCli(target, opts);
      const decoder = decoderFor(opts);
      const source = resolved.open();
      let read;
      try {
        read = await readHeaderFromSource(source, undefined, decoder);
      } finally {
        source.close();
      }
      if (!read.header) {
        const error = { class: 'Error', message: `${resolved.path}: ${read.reason}` };
        if (opts.json) await writeOut(io.stdout, failureJson(error));
        else io.stderr.write(`dsh: ${escapeControl(error.message)}\n`);
        return EXIT.failed;
      }
      const header = read.header;
      const root = opts.root ?? resolved.root;
      let trace;
      let problems: ListingProblem[] = [];
      try {
        ({ trace, problems } = await lineageOf(header, root, decoder));
      } catch (error) {
        const e = queryError(error);
        if (e instanceof LogError && opts.json) {
          await writeOut(io.stdout, failureJson({ class: 'SessionQueryError', message: e.message }));
          return EXIT.failed;
        }
        throw e;
      }
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

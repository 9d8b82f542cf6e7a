import type { Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { addCommon, envFor, intOption, EXIT, type CommonOptions, speculativeAction, addExamples } from '../shared.js';
import { LogError, UsageError, toJson } from '../../api/log.js';
import { SessionQueryError } from '../../api/views.js';
import type { SurfaceView } from '../../index.js';
import { answer, sessionFor } from '../session.js';
import { renderSurface } from '../render/surface.js';

/** Parse a seq argument (non-negative integer) or fail with a usage error. */
export const seqArg = intOption;

/** Map a session-query error to the CLI's categories: a bad seq is usage (2), a bad log is a failure (1). */
export function queryError(error: unknown): unknown {
  if (!(error instanceof SessionQueryError)) return error;
  if (error.code === 'SESSION_QUERY_EVENT_NOT_FOUND' || error.code === 'SESSION_QUERY_SESSION_NOT_FOUND') return new UsageError(error.message);
  return new LogError(error.message, { kind: 'corrupt' });
}

interface SurfaceOptions extends CommonOptions {
  at?: string;
}

export function registerSurface(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('surface')
    .description("what the model saw: the current surface (DSH deriveMessages), message by message, at the end or as of any seq")
    .argument('<target>', 'session file, directory, id (under --root), or -')
    .option('--at <seq>', 'fold only events 0..seq (inclusive): the context as of that moment');
  addCommon(cmd, { json: 'print the model message array (DSH deriveMessages) as JSON' });
  addExamples(
    cmd,
    'dsh surface session-incident-1 --root fixtures/incident',
    'dsh surface session-incident-1 --root fixtures/incident --at 300 --json',
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, opts: SurfaceOptions) => {
      const env = envFor(io, opts);
      const at = seqArg('--at', opts.at);
      const session = await sessionFor(io, target, opts);
      let view: SurfaceView;
      try {
        const answered = await answer(io, opts, session, await session.surface(at !== undefined ? { at } : {}));
        if (typeof answered === 'number') return answered;
        view = answered.value;
      } finally {
        session.close();
      }
      if (opts.json) await writeOut(io.stdout, toJson(view.messages) + '\n');
      else await writeOut(io.stdout, renderSurface(view, env.c, Math.max(40, (io.stdout.columns ?? 120) - 20)));
      return EXIT.ok;
    }),
  );
}

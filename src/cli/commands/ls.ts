import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut, escapeControl } from '../io.js';
import { action, addCommon, decoderFor, envFor, jobsFor, parseSince, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { UsageError, defaultRoot, toJson } from '../../api/log.js';
import { listSessions, type SessionKind } from '../../api/views.js';
import { lsJson, renderLs } from '../render/ls.js';

interface LsOptions extends CommonOptions {
  cwd?: string;
  kind?: SessionKind[];
  since?: string;
  health: boolean;
}

export function registerLs(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('ls')
    .description('list the sessions of a root, newest first (session-query listSessions order), with kind, title, size, encoding and health')
    .argument('[root]', 'session root (default: --root, else $DSH_HOME/sessions, else ~/.dsh/sessions)')
    .option('--cwd <dir>', 'only sessions whose header cwd equals this path')
    .addOption(new Option('--kind <kinds...>', 'only these kinds').choices(['root', 'fork', 'subagent']))
    .option('--since <time>', 'only sessions created at or after this ISO time or epoch-ms')
    .option('--no-health', 'headers only: skip the full read per session (no health, no title)');
  addCommon(cmd, { json: 'print a JSON array, one object per session' });
  addExamples(
    cmd,
    'dsh ls fixtures/incident',
    'dsh ls fixtures/incident --kind fork --json',
    'dsh ls --since 2026-01-01 --no-health',
  );
  cmd.action(
    action(io, setExit, async (rootArg: string | undefined, opts: LsOptions) => {
      const env = envFor(io, opts);
      let since: number | undefined;
      if (opts.since !== undefined) {
        since = parseSince(opts.since);
        if (since === undefined) throw new UsageError(`--since must be an ISO date/time or epoch milliseconds, got ${toJson(opts.since)}`);
      }
      const jobs = jobsFor(opts, io.env);
      const root = rootArg ?? opts.root ?? defaultRoot(io.env);
      const listing = await listSessions(root, {
        health: opts.health,
        decoder: decoderFor(opts),
        jobs,
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        ...(opts.kind ? { kind: opts.kind } : {}),
        ...(since !== undefined ? { since } : {}),
      });
      if (opts.json) {
        await writeOut(io.stdout, toJson(lsJson(listing)) + '\n');
        for (const p of listing.problems) io.stderr.write(`dsh: warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}\n`);
      }
      else await writeOut(io.stdout, renderLs(listing, env.c, io.stdout.columns ?? 160));
      return EXIT.ok;
    }),
  );
}

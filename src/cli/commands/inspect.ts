import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, intOption, resolveCli, EXIT, type CommandEnv, type CommonOptions, addExamples } from '../shared.js';
import { UsageError, type ResolvedTarget, inspectDocument, toJson } from '../../api/log.js';
import { callFailure, sessionFor } from '../session.js';
import { failureJson } from '../render/surface.js';
import { Summarizer } from '../../api/views.js';
import { renderInspect } from '../render/inspect.js';
import { Output } from '../stream.js';
import { escapeControl } from '../io.js';

interface InspectOptions extends CommonOptions {
  streamPassBytes?: string;
  view: 'artifact' | 'stored' | 'logical';
  watch?: boolean;
  interval?: string;
  followStall?: string;
}

/** The `--json` document (the library's `inspect` view). */
export const inspectJson = inspectDocument;

export function registerInspect(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('inspect')
    .description('incident-review summary of one session log (header, health, turns, torn tail, closers, what load() would write)')
    .argument('<target>', 'session.jsonl[.zstd] file, session directory, session id (under --root), or - for stdin')
    .addOption(new Option('--view <view>', 'which view: artifact (verbatim text), stored (committed prefix), logical (DSH inspect)').choices(['artifact', 'stored', 'logical']).default('logical'))
    .option('-w, --watch', 'follow a live log (read-only polling): redraw the summary on a terminal as it grows (turn in flight, open tool calls, torn tail being written, compactions); NDJSON states with --json; Ctrl-C stops (exit 0)')
    .option('--interval <ms>', 'with --watch: poll interval (fs.watch wakes it sooner)', '100');
  addCommon(cmd);
  // Test hooks, not settings: logs of at least this many bytes take the two passes (default 4 MiB);
  // with --watch, a torn tail unchanged this many ms is reported as stalled (default 5 s).
  cmd.addOption(new Option('--stream-pass-bytes <n>').hideHelp());
  cmd.addOption(new Option('--follow-stall <ms>').hideHelp());
  addExamples(
    cmd,
    'dsh inspect session-incident-1 --root fixtures/incident',
    'dsh inspect fixtures/raw-sample/--home-dev-acme-web--/session-raw-1/session.jsonl --json',
    'dsh inspect ~/.dsh/sessions/--home-me-proj--/session-1 --watch',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: InspectOptions) => {
      const env = envFor(io, opts);
      if (opts.watch) return watchInspect(io, env, await resolveCli(target, opts), opts);
      const session = await sessionFor(io, target, opts);
      if (opts.json && opts.view === 'logical') {
        // The document is streamed: events are written as they are delivered, never built into one string.
        const out = new Output(io.stdout);
        const written = await session.writeInspect(out, { streamPassBytes: intOption('--stream-pass-bytes', opts.streamPassBytes) });
        if (written.ok) return EXIT.ok;
        if (!written.error.verdict) throw callFailure(written.error);
        await writeOut(io.stdout, failureJson(written.error));
        return EXIT.failed;
      }
      // Human output needs only a streaming summary; other views hold what they print.
      const reviewed = await session.review({ view: opts.view, events: Boolean(opts.json), hint: !opts.json });
      if (!reviewed.ok) throw callFailure(reviewed.error);
      const { inspection: r, summary, failed, hint } = reviewed.value;
      if (opts.json) await writeOut(io.stdout, toJson(inspectDocument(r, opts.view)) + '\n');
      else {
        let text = renderInspect(r, env.c, summary);
        if (hint !== undefined) text += env.c.cyan(`hint     ${escapeControl(hint)}`) + '\n';
        await writeOut(io.stdout, text);
      }
      return failed ? EXIT.failed : EXIT.ok;
    }),
  );
}

async function watchInspect(io: Io, env: CommandEnv, resolved: ResolvedTarget, opts: InspectOptions): Promise<number> {
  if (opts.view !== 'logical') throw new UsageError('--watch shows the logical view; --view does not apply');
  const { followLoop, intervalOption, noticeText, stallOption } = await import('../follow.js');
  const { renderWatch, watchJson } = await import('../render/watch.js');
  const intervalMs = intervalOption(opts.interval);
  const stallMs = stallOption(opts.followStall);
  let summarizer = new Summarizer();
  let sessionId: string | null = null;
  let encoding: string | null = null;
  let lastType: string | null = null;
  let notice: string | null = null;
  const tty = Boolean(io.stdout.isTTY) && !opts.json;
  const out = new Output(io.stdout);
  return followLoop(
    io,
    env,
    resolved,
    {
      onMeta: (meta, enc) => {
        sessionId = meta.id;
        encoding = enc;
      },
      onEvent: (e) => {
        summarizer.observe(e);
        lastType = e.type;
      },
      onNotice: (n) => {
        notice = noticeText(n);
        if (n.kind === 'replaced') {
          summarizer = new Summarizer();
          lastType = null;
        }
      },
    },
    {
      intervalMs,
      ...(stallMs !== undefined ? { stallMs } : {}),
      decoder: decoderFor(opts),
      flush: () => out.flush(),
      onChange: (follower) => {
        const view = { sessionId, path: resolved.path, encoding, state: follower.state, summary: summarizer.result(), lastType, notice };
        if (opts.json) out.push(toJson(watchJson(view)) + '\n');
        else out.push((tty ? '\x1b[H\x1b[2J' : '') + renderWatch(view, env.c) + (tty ? '' : '\n'));
      },
    },
  );
}

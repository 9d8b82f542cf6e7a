import { progressOption } from '../progress.js';
import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, cacheFor, decoderFor, envFor, intOption, resolveCli, EXIT, type CommandEnv, type CommonOptions, addExamples } from '../shared.js';
import { UsageError, type ResolvedTarget, type SessionEvent, type SessionInspection, inspectDocument, inspectTarget, toJson } from '../../api/log.js';
import { Summarizer } from '../../api/views.js';
import { salvageMayHelp, salvageWouldRecoverMore } from '../../api/salvage.js';
import { renderInspect } from '../render/inspect.js';
import { forEachLogicalEvent, logicalEventJson, Output, streamPassBytes, streamValidated, targetBytes } from '../stream.js';
import { escapeControl } from '../io.js';

interface InspectOptions extends CommonOptions {
  streamPassBytes?: string;
  view: 'artifact' | 'stored' | 'logical';
  watch?: boolean;
  interval?: string;
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
  // A test hook, not a setting: logs of at least this many bytes take the two passes (default 4 MiB).
  cmd.addOption(new Option('--stream-pass-bytes <n>').hideHelp());
  addExamples(
    cmd,
    'dsh inspect session-incident-1 --root fixtures/incident',
    'dsh inspect fixtures/raw-sample/--home-dev-acme-web--/session-raw-1/session.jsonl --json',
    'dsh inspect ~/.dsh/sessions/--home-me-proj--/session-1 --watch',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: InspectOptions) => {
      const env = envFor(io, opts);
      const resolved = await resolveCli(target, opts);
      if (opts.watch) return watchInspect(io, env, resolved, opts);
      if (opts.json && opts.view === 'logical') {
        // Stream the document: events are written as they are delivered, never
        // built into one string (bounded memory for large logs).
        const out = new Output(io.stdout);
        let first = true;
        const open = (valid: SessionInspection) =>
          out.push(`{"meta":${toJson(valid.meta)},"encoding":${toJson(valid.encoding)},"storedEventCount":${valid.storedEventCount},"events":[`);
        const onEvent = (e: SessionEvent, text: string | undefined) => {
          if (!first) out.push(',');
          out.push(logicalEventJson(e, text));
          first = false;
        };
        // A large log: validated first, then each line's bytes copied out where they are its event's JSON.
        const streamed =
          targetBytes(resolved) >= streamPassBytes(intOption('--stream-pass-bytes', opts.streamPassBytes))
            ? await streamValidated(
                resolved,
                { decoder: decoderFor(opts) },
                cacheFor(io, opts),
                (valid) => {
                  open(valid);
                  return {
                    verbatim: (_head, line) => {
                      if (!first) out.pushAscii(',');
                      out.pushBytes(line);
                      first = false;
                    },
                    chunk: (_seq, _time, json) => {
                      out.push(first ? json : ',' + json);
                      first = false;
                    },
                    chunkBytes: (_seq, _time, member) => {
                      if (!first) out.pushAscii(',');
                      out.pushRowMember(member);
                      first = false;
                    },
                    event: onEvent,
                  };
                },
                out,
              )
            : undefined;
        const r =
          streamed ??
          (await forEachLogicalEvent(
            resolved,
            { decoder: decoderFor(opts) },
            (valid) => {
              open(valid);
              return onEvent;
            },
            out,
          ));
        if (r.error) {
          await writeOut(io.stdout, toJson(inspectDocument(r, 'logical')) + '\n');
          return EXIT.failed;
        }
        const torn = r.torn ? { truncateTo: r.torn.truncateTo, recoveredEventSeqs: r.torn.recoveredEventSeqs } : null;
        out.push(`],"closers":${toJson(r.closers)},"torn":${toJson(torn)},"repairPlan":${toJson(r.repairPlan)}}\n`);
        await out.flush();
        return EXIT.ok;
      }
      // Human output needs only a streaming summary; other views hold what they print.
      const summarizer = new Summarizer();
      const r = await inspectTarget(resolved, {
        decoder: decoderFor(opts),
        ...progressOption(io, opts),
        collect: Boolean(opts.json),
        collectStored: opts.view === 'stored',
        keepReplacements: true,
        // The artifact view's sha256 is only reported by --view artifact.
        skipArtifact: opts.view !== 'artifact',
        // The summary reads only what pruned events carry (type, seq, time, turn): workers may parse.
        pruned: true,
        onLogical: (e) => summarizer.observe(e),
      });
      for (const closer of r.closers) summarizer.observe(closer);
      summarizer.setCloserStart(r.storedEventCount);
      const failed = opts.view === 'artifact' ? r.artifact.error !== undefined : r.error !== undefined;
      if (opts.json) await writeOut(io.stdout, toJson(inspectDocument(r, opts.view)) + '\n');
      else {
        let text = renderInspect(r, env.c, summarizer.result());
        // DSH refuses a damaged log outright; say when dsh salvage would keep more of it.
        if (salvageMayHelp(r) && opts.view !== 'artifact') {
          const source = resolved.open();
          try {
            const hint = await salvageWouldRecoverMore(source, r, { decoder: decoderFor(opts), target: resolved.path });
            if (hint?.more) text += env.c.cyan(`hint     ${escapeControl(hint.suggestion)}`) + '\n';
          } catch {
            // The hint is best effort; the verdict above stands.
          } finally {
            source.close();
          }
        }
        await writeOut(io.stdout, text);
      }
      return failed ? EXIT.failed : EXIT.ok;
    }),
  );
}

async function watchInspect(io: Io, env: CommandEnv, resolved: ResolvedTarget, opts: InspectOptions): Promise<number> {
  if (opts.view !== 'logical') throw new UsageError('--watch shows the logical view; --view does not apply');
  const { followLoop, intervalOption, noticeText } = await import('../follow.js');
  const { renderWatch, watchJson } = await import('../render/watch.js');
  const intervalMs = intervalOption(opts.interval);
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

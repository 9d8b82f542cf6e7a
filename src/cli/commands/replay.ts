import type { Command } from 'commander';
import type { Io } from '../io.js';
import { LineWriter, writeOut } from '../io.js';
import { action, addCommon, envFor, intOption, parseStepSpec, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { failureObject, UsageError, toJson } from '../../api/log.js';
import { answer, sessionFor } from '../session.js';
import { attemptHeading, ChunkGaps, chunkText, gapScale, replayFootLines, replayHeadLines, scaledGap, StepHeadings } from '../render/replay.js';
import { failureJson, renderFailure } from '../render/surface.js';

interface ReplayOptions extends CommonOptions {
  step?: string;
  followTiming?: boolean;
  forceTiming?: boolean;
  maxDelay?: string;
  chunks?: boolean;
}

/** Print why a log could not be read (`{error}` on stdout with --json, else stderr); the exit code (1). */
export async function reportLoadFailure(io: Io, opts: CommonOptions, error: Parameters<typeof failureJson>[0] | undefined): Promise<number> {
  const e = failureObject(error);
  if (opts.json) await writeOut(io.stdout, failureJson(e));
  else io.stderr.write(renderFailure(e));
  return EXIT.failed;
}


const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function registerReplay(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('replay')
    .description('stream replay: every model attempt reassembled from its assistant/chunk events (BlockAssembler rules), failed retries included, checked against the assistant/message citing it')
    .argument('<target>', 'session file, directory, id, or -')
    .option('--step <T/S>', 'only the attempts of turn T step S')
    .option('--follow-timing', 'print the chunks at their recorded pace (only when stdout is a terminal, unless --force-timing)')
    .option('--force-timing', 'with --follow-timing: pace the output even when stdout is not a terminal')
    .option('--max-delay <ms>', 'cap on the total delay of a timed replay (default 10000); each gap is also capped at 2000', '10000')
    .option('--chunks', 'with --json: include every attempt\'s raw chunks');
  addCommon(cmd, { json: 'print the replay document (attempts, assembled blocks, checks) as JSON' });
  addExamples(
    cmd,
    'dsh replay session-incident-1 --root fixtures/incident',
    'dsh replay session-incident-1 --root fixtures/incident --step 2/1 --json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: ReplayOptions) => {
      const env = envFor(io, opts);
      const step = opts.step !== undefined ? parseStepSpec(opts.step) : undefined;
      if (opts.step !== undefined && !step) throw new UsageError(`--step must be T/S (turn/step numbers), got ${toJson(opts.step)}`);
      const maxDelay = intOption('--max-delay', opts.maxDelay) ?? 10_000;
      const timed = Boolean(opts.followTiming) && !opts.json;
      // The session plans the attempts (numbers only, saved with the index), then each pass re-reads
      // the log to stream them (text takes two, its summary coming first).
      const session = await sessionFor(io, target, opts);
      try {
        const answered = await answer(io, opts, session, await session.replayAttempts({ ...(step ? { step } : {}), chunks: timed || Boolean(opts.chunks) }), { warningsAlways: true });
        if (typeof answered === 'number') return answered;
        const replay = answered.value;
        const out = new LineWriter(io.stdout);
        if (opts.json) {
          // `{sessionId, attempts, summary}`, written attempt by attempt.
          await out.text(toJson({ sessionId: replay.sessionId, attempts: [] }).slice(0, -2));
          let n = 0;
          const summary = await replay.play((a) => out.text(`${n++ > 0 ? ',' : ''}${toJson(a)}`));
          await out.text(`],"summary":${toJson(summary)}}\n`);
          await out.flush();
          return EXIT.ok;
        }
        if (timed) {
          const paced = Boolean(io.stdout.isTTY) || Boolean(opts.forceTiming);
          if (!paced) io.stderr.write('dsh: --follow-timing ignored: stdout is not a terminal (add --force-timing to pace anyway)\n');
          // The recorded gaps are scaled to the whole replay's total.
          const k = gapScale(replay.gapTotal, maxDelay);
          const played = new ChunkGaps();
          await replay.play(async (a) => {
            let first = true;
            for (const c of a.chunks ?? []) {
              const delay = scaledGap(played.gap(c.time), k);
              if (paced && delay > 0) await sleep(delay);
              if (first) {
                first = false;
                await writeOut(io.stdout, `\n${env.c.bold(`turn ${a.turn} step ${a.step}`)}\n${attemptHeading(a, env.c)}\n`);
              }
              const text = chunkText(c.chunk, env.c);
              if (text) await writeOut(io.stdout, text);
            }
          });
          await writeOut(io.stdout, '\n');
          return EXIT.ok;
        }
        // The summary heads the text: one pass counts it, the next prints the attempts.
        const summary = await replay.play(() => undefined);
        for (const line of replayHeadLines(replay.sessionId, summary, env.c)) await out.line(line);
        const steps = new StepHeadings(env.c);
        let n = 0;
        await replay.play(async (a) => {
          n++;
          for (const line of steps.lines(a)) await out.line(line);
        });
        for (const line of replayFootLines(n, env.c)) await out.line(line);
        await out.flush();
        return EXIT.ok;
      } finally {
        session.close();
      }
    }),
  );
}

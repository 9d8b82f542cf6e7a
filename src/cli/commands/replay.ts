import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, LineWriter, writeOut } from '../io.js';
import { progressOption } from '../progress.js';
import { action, addCommon, decoderFor, envFor, indexUseFor, intOption, parseStepSpec, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { failureObject, inspectTarget, inspectTargetIndexed, type SessionInspection, UsageError, type SessionEvent, type SessionHeader, toJson, stepKey } from '../../api/log.js';
import { planReplay, REPLAY_PLAN, replayGapTotal, streamReplay, type ReplayAttempt, type ReplayPlan } from '../../api/views.js';
import { attemptHeading, ChunkGaps, chunkText, gapScale, replayFootLines, replayHeadLines, scaledGap, StepHeadings } from '../render/replay.js';
import { failureJson, renderFailure } from '../render/surface.js';

interface ReplayOptions extends CommonOptions {
  step?: string;
  followTiming?: boolean;
  forceTiming?: boolean;
  maxDelay?: string;
  chunks?: boolean;
}

export type Loaded = { ok: true; r: SessionInspection; events: SessionEvent[]; header: SessionHeader } | { ok: false; code: number };

/**
 * Inspect one target (logical view). On a log DSH cannot read, print DSH's
 * error (stderr, or `{error}` on stdout with --json) and return exit 1.
 */
export async function loadTarget(io: Io, target: string, opts: CommonOptions): Promise<Loaded> {
  const resolved = await resolveCli(target, opts);
  const r = await inspectTarget(resolved, { decoder: decoderFor(opts), collect: true, keepReplacements: true });
  if (r.error || !r.events || !r.meta) {
    return { ok: false, code: await reportLoadFailure(io, opts, r.error) };
  }
  for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
  return { ok: true, r, events: r.events, header: r.meta };
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
      // One validating pass (or the saved index) plans the attempts (numbers only), then the log is
      // re-read once to stream them (twice for text, whose summary comes first).
      const resolved = await resolveCli(target, opts);
      const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, [REPLAY_PLAN]));
      try {
        const r = indexed.inspection;
        if (r.error || !r.meta || !indexed.stream) return await reportLoadFailure(io, opts, r.error);
        for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
        const stream = indexed.stream;
        // The plan comes with the index (built on its validating pass), else from a re-read.
        const plan = (indexed.folds.get(REPLAY_PLAN.tag) as ReplayPlan | null | undefined) ?? (await planReplay(stream()));
        const wanted = (a: { turn: unknown; step: unknown }) => !step || (a.turn === step.turn && a.step === step.step);
        if (step && !plan.attempts.some(wanted)) {
          const steps = [...new Set(plan.attempts.map((a) => stepKey(a.turn, a.step)))];
          throw new UsageError(`no model attempt in turn ${step.turn} step ${step.step}${steps.length ? `; steps with attempts: ${steps.slice(0, 20).join(', ')}${steps.length > 20 ? ', …' : ''}` : '; the log has no model attempts'}`);
        }
        const keepChunks = timed || Boolean(opts.chunks);
        /** One streaming pass: `emit` gets the attempts asked for; the summary (of all of them) is returned. */
        const pass = (emit: (a: ReplayAttempt) => void | Promise<void>) => streamReplay(plan, stream(), (a) => (wanted(a) ? emit(a) : undefined), { keepChunks });
        const out = new LineWriter(io.stdout);
        if (opts.json) {
          // `{sessionId, attempts, summary}`, written attempt by attempt.
          await out.text(toJson({ sessionId: r.meta.id, attempts: [] }).slice(0, -2));
          let n = 0;
          const summary = await pass((a) => out.text(`${n++ > 0 ? ',' : ''}${toJson(a)}`));
          await out.text(`],"summary":${toJson(summary)}}\n`);
          await out.flush();
          return EXIT.ok;
        }
        if (timed) {
          const paced = Boolean(io.stdout.isTTY) || Boolean(opts.forceTiming);
          if (!paced) io.stderr.write('dsh: --follow-timing ignored: stdout is not a terminal (add --force-timing to pace anyway)\n');
          // The recorded gaps are scaled to the whole replay's total, which the plan knows.
          const k = gapScale(replayGapTotal(plan, wanted), maxDelay);
          const played = new ChunkGaps();
          await pass(async (a) => {
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
        const summary = await pass(() => undefined);
        for (const line of replayHeadLines(r.meta.id, summary, env.c)) await out.line(line);
        const steps = new StepHeadings(env.c);
        let n = 0;
        await pass(async (a) => {
          n++;
          for (const line of steps.lines(a)) await out.line(line);
        });
        for (const line of replayFootLines(n, env.c)) await out.line(line);
        await out.flush();
        return EXIT.ok;
      } finally {
        indexed.close();
      }
    }),
  );
}

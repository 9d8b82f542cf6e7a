import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { progressOption } from '../progress.js';
import { addCommon, decoderFor, envFor, indexUseFor, resolveCli, EXIT, type CommonOptions, speculativeAction } from '../shared.js';
import { errorDocument, inspectTargetIndexed, UsageError, toJson } from '../../api/log.js';
import { type DiffSide, type SessionDiff, diffSessions, indexedDiffSide, sessionsDiffer, diffDispatches, dispatchesDiffer } from '../../api/views.js';
import { renderDiff } from '../render/request.js';
import { renderFailure } from '../render/surface.js';
import { renderDispatchStat, renderSessionDiff, renderSessionStat } from '../render/diff.js';
import { REQUEST_STYLE } from './request.js';
import { answer, sessionFor } from '../session.js';
import { queryError } from './surface.js';

interface DiffOptions extends CommonOptions {
  request?: string[];
  full?: boolean;
  stat?: boolean;
  exitCode?: boolean;
}

type Side = 'a' | 'b';

/** One side of a session comparison, re-read from its file (the caller must `close()` it). */
export interface OpenedSide {
  side: DiffSide;
  close(): void;
}

/**
 * Open one side: one validating pass (or the saved session index), the log kept on disk, not in
 * memory. DSH's error for that side (and exit 1) when it cannot be read.
 */
export async function openSide(io: Io, side: Side, target: string, opts: CommonOptions): Promise<OpenedSide | number> {
  let resolved;
  try {
    resolved = await resolveCli(target, opts);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`side ${side} (${target}): ${error.message}`, error.kind === 'io' ? 'io' : 'usage');
    throw error;
  }
  const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, []));
  const r = indexed.inspection;
  if (r.error || !r.meta || !r.surface || !indexed.stream) {
    indexed.close();
    const e = r.error ?? { class: 'Error', message: 'the log could not be read' };
    if (opts.json) await writeOut(io.stdout, toJson({ error: { ...errorDocument(e).error, side, target } }) + '\n');
    else io.stderr.write(renderFailure(e, `side ${side} (${escapeControl(target)}): `));
    return EXIT.failed;
  }
  for (const w of r.warnings) io.stderr.write(`dsh: side ${side}: warning: ${escapeControl(w)}\n`);
  // The comparison reads none of the index's folds: a cold pass's (already saved) are let go, not kept for both sides.
  indexed.folds = new Map();
  return { side: indexedDiffSide(indexed), close: () => indexed.close() };
}

/** Compare two sessions, each re-read from its file; `use` gets the comparison, then both sides are closed. */
export async function compareSides<T>(io: Io, a: string, b: string, opts: CommonOptions, use: (d: SessionDiff) => Promise<T>): Promise<T | number> {
  const sa = await openSide(io, 'a', a, opts);
  if (typeof sa === 'number') return sa;
  try {
    const sb = await openSide(io, 'b', b, opts);
    if (typeof sb === 'number') return sb;
    try {
      let d: SessionDiff;
      try {
        d = await diffSessions(sa.side, sb.side);
      } catch (error) {
        throw queryError(error);
      }
      return await use(d);
    } finally {
      sb.close();
    }
  } finally {
    sa.close();
  }
}

async function diffTwoDispatches(io: Io, target: string, first: string, second: string, opts: DiffOptions): Promise<number> {
  const env = envFor(io, opts);
  const session = await sessionFor(io, target, opts);
  try {
    const answered = await answer(io, opts, session, await session.dispatchPair(first, second), REQUEST_STYLE);
    if (typeof answered === 'number') return answered;
    const { a, b, events } = answered.value;
    const diff = diffDispatches(a, b, events);
    if (opts.json) await writeOut(io.stdout, toJson(diff) + '\n');
    else if (opts.stat) await writeOut(io.stdout, renderDispatchStat(diff, env.c));
    else await writeOut(io.stdout, renderDiff(diff, events, env.c, { full: Boolean(opts.full) }));
    return opts.exitCode && dispatchesDiffer(diff) ? EXIT.failed : EXIT.ok;
  } finally {
    session.close();
  }
}

export function registerDiff(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('diff')
    .description('compare two sessions (shared prefix, aligned dispatches, what entered or left the model context, header and usage changes, tool calls, final surface and transcript), or two dispatches of one session')
    .argument('<a>', 'the first session (file, directory, id under --root, export ZIP, or -)')
    .argument('[b]', 'the second session; or, with a third argument, the first dispatch of <a> (a seq or turn/step[#attempt])')
    .argument('[c]', 'the second dispatch of <a> (two dispatches of one session)')
    .option('--request <A B...>', 'two dispatches of <a> (seqs or turn/step[#attempt]): same as dsh diff <a> <A> <B>')
    .option('--full', 'print every line and every later dispatch (no folding)')
    .option('--stat', 'print only the summary')
    .option('--exit-code', "exit 1 when the two sides differ (git's convention); default: exit 0 whenever the comparison succeeded");
  addCommon(cmd, { json: 'print the comparison as one JSON document (the same structure the text shows)' });
  cmd.addHelpText(
    'after',
    `
Two sessions: events, messages and dispatches are compared with ids and times set aside (reruns draw fresh
ids and clocks). A fork is compared with its parent through its seed (the child's first seedLength events).
Dispatches are aligned by turn/step#attempt when the sessions share that structure, else by their inputs.
The first divergent dispatch and each later one show the messages that left (a's seqs) or entered (b's seqs)
the model context, header changes, usage deltas, tool calls with outcomes and finish reasons; then the
final surface and the transcript as unified diffs. Costs from the ledger price table (data/prices.json).

Two dispatches of one session (<a> <A> <B> or --request A B) print what request --diff prints, for any pair.

Exit codes: 0 compared (with --exit-code: no difference), 1 a side DSH cannot read (its error is named by
side), or with --exit-code the sides differ; 2 usage or I/O error.

Examples:
  dsh diff parent.jsonl.zstd child/session.jsonl.zstd
  dsh diff run-1 run-2 --root ~/.dsh/sessions --stat
  dsh diff session.jsonl.zstd 14 52`,
  );
  cmd.action(
    speculativeAction(io, setExit, async (a: string, b: string | undefined, third: string | undefined, opts: DiffOptions) => {
      const env = envFor(io, opts);
      if (opts.stat && opts.full) throw new UsageError('--stat prints only the summary; drop --full (or --stat)');
      if (opts.stat && opts.json) throw new UsageError('--json prints the whole comparison; drop --stat (or --json)');
      if (opts.request !== undefined) {
        if (opts.request.length !== 2) throw new UsageError(`--request wants two dispatches (seqs or turn/step[#attempt]), got ${opts.request.length}`);
        if (b !== undefined) throw new UsageError('--request compares two dispatches of one session: give only <a>');
        return diffTwoDispatches(io, a, opts.request[0] as string, opts.request[1] as string, opts);
      }
      if (third !== undefined) return diffTwoDispatches(io, a, b as string, third, opts);
      if (b === undefined) throw new UsageError('give two sessions (dsh diff <a> <b>), or one session and two dispatches (dsh diff <a> <seqA> <seqB>)');
      if (a === '-' && b === '-') throw new UsageError('only one side can be read from stdin');
      return compareSides(io, a, b, opts, async (d) => {
        const labels = { a, b };
        if (opts.json) await writeOut(io.stdout, toJson(d) + '\n');
        else if (opts.stat) await writeOut(io.stdout, renderSessionStat(d, env.c, { labels }).join('\n') + '\n');
        else await writeOut(io.stdout, renderSessionDiff(d, env.c, { labels, full: Boolean(opts.full) }));
        return opts.exitCode && sessionsDiffer(d) ? EXIT.failed : EXIT.ok;
      });
    }),
  );
}

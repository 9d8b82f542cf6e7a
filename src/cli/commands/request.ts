import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { addCommon, envFor, EXIT, type CommonOptions, speculativeAction } from '../shared.js';
import { diffDispatches, messagesOf, requestJson, summarizeDispatch, BodyError, deepseekBody } from '../../api/views.js';
import { UsageError, toJson } from '../../api/log.js';
import type { DispatchDetail, SessionVerdict } from '../../index.js';
import { answer, sessionFor } from '../session.js';
import { renderDiff, renderList, renderRequest, renderBody, type RequestView } from '../render/request.js';

interface RequestOptions extends CommonOptions {
  step?: string;
  list?: boolean;
  diff?: boolean;
  body?: 'deepseek';
  full?: boolean;
}

export function registerRequest(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('request')
    .description('reproduce the exact input of a model dispatch (header, system prompt, tools, messages), list every dispatch, diff consecutive ones, or map one to a DeepSeek API body')
    .argument('<target>', 'session.jsonl[.zstd] file, session directory, session id (under --root), or - for stdin')
    .argument('[seq]', 'an event seq: a dispatch\'s first chunk, any chunk of it, the assistant/message it produced, a tool/call it requested or that call\'s tool/result')
    .option('--step <turn/step[#attempt]>', 'pick by step (default: the step\'s last attempt)')
    .option('--list', 'list every dispatch (key, first chunk, model, messages, header changes, finish, usage, duration)')
    .option('--diff', 'what changed from the previous dispatch (messages added, shadowed by compaction, header fields)')
    .addOption(new Option('--body <api>', 'print the request body a provider API would receive').choices(['deepseek']))
    .option('--full', 'human output: print message texts in full instead of previews');
  addCommon(cmd);
  cmd.addHelpText(
    'after',
    `
A dispatch is one model call: within a (turn, step), assistant/chunk events are split at every finish chunk and
at turn/step changes (failed attempts that were retried are dispatches too). Its input is the log prefix before
its first chunk: messages = the surface folded over that prefix, header = the last request/header in it.
Keys are turn/step#attempt, the attempt counted from 0 within the step.

Examples:
  dsh request session.jsonl.zstd --list
  dsh request session.jsonl.zstd --step 2/1 --diff
  dsh request session.jsonl.zstd 14 --body deepseek`,
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, seqArg: string | undefined, opts: RequestOptions) => {
      const env = envFor(io, opts);
      const picks = (seqArg !== undefined ? 1 : 0) + (opts.step !== undefined ? 1 : 0);
      if (opts.list && picks > 0) throw new UsageError('--list lists every dispatch; drop <seq>/--step (or drop --list)');
      if (!opts.list && picks === 0) throw new UsageError('give an event <seq>, --step <turn>/<step>[#attempt], or --list');
      if (picks > 1) throw new UsageError('give either <seq> or --step, not both');
      if (opts.list && (opts.diff || opts.body)) throw new UsageError('--list does not combine with --diff or --body');
      if (opts.diff && opts.body) throw new UsageError('--diff and --body are separate views; pick one');
      const session = await sessionFor(io, target, opts);
      try {
        if (opts.list) {
          const answered = await answer(io, opts, session, await session.requests(), REQUEST_STYLE);
          if (typeof answered === 'number') return answered;
          const rows = answered.value;
          const verdict = await session.verdict();
          const sessionId = verdict.header?.id ?? null;
          if (opts.json) await writeOut(io.stdout, toJson({ sessionId, requests: rows }) + '\n');
          else await writeOut(io.stdout, renderList(rows, { sessionId, closers: verdict.closers.length, torn: verdict.torn }, env.c));
          return EXIT.ok;
        }
        const at = opts.step !== undefined ? { step: opts.step } : (seqArg as string);
        const answered = await answer(io, opts, session, await session.dispatch(at, { diff: Boolean(opts.diff), around: !opts.json && !opts.body }), REQUEST_STYLE);
        if (typeof answered === 'number') return answered;
        return await show(io, opts, answered.value, await session.verdict());
      } finally {
        session.close();
      }
    }),
  );
}

/** `request` and `diff` print the log's warnings first, under --json too, and say why nothing follows DSH's verdict. */
export const REQUEST_STYLE = { warningsAlways: true, warningsFirst: true, refusedNote: 'DSH refuses this log, so no request can be reconstructed from it (see: dsh inspect)' } as const;

async function show(io: Io, opts: RequestOptions, d: DispatchDetail, r: SessionVerdict): Promise<number> {
  const env = envFor(io, opts);
  const { entry, events } = d;
  if (opts.diff) {
    const diff = diffDispatches(d.previous, entry, events);
    if (opts.json) await writeOut(io.stdout, toJson(diff) + '\n');
    else await writeOut(io.stdout, renderDiff(diff, events, env.c, { full: Boolean(opts.full) }));
    return EXIT.ok;
  }
  const messages = messagesOf(entry, events);
  if (opts.body) {
    let result;
    try {
      result = deepseekBody(entry.header, messages);
    } catch (error) {
      if (error instanceof BodyError) {
        io.stderr.write(`dsh: ${entry.key} (first chunk seq ${entry.firstChunkSeq}): ${escapeControl(error.message)}\n`);
        return EXIT.failed;
      }
      throw error;
    }
    for (const note of result.notes) io.stderr.write(`dsh: note: ${escapeControl(note)}\n`);
    if (opts.json) await writeOut(io.stdout, toJson(result.body) + '\n');
    else await writeOut(io.stdout, renderBody(result.body));
    return EXIT.ok;
  }
  if (opts.json) {
    await writeOut(io.stdout, toJson(requestJson(entry, messages)) + '\n');
    return EXIT.ok;
  }
  const next = d.next;
  const view: RequestView = {
    sessionId: r.header?.id ?? null,
    entry,
    messages,
    total: d.total,
    from: d.from,
    via: d.via,
    retriedBy: next && next.turn === entry.turn && next.step === entry.step ? next.key : null,
    usage: summarizeDispatch(entry, null).usage,
    nextFirstChunkSeq: next ? next.firstChunkSeq : null,
    closers: r.closers.length > 0 ? r.storedEventCount : null,
  };
  await writeOut(io.stdout, renderRequest(view, events, env.c, { full: Boolean(opts.full) }));
  return EXIT.ok;
}

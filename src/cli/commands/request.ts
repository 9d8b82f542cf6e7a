import { progressOption } from '../progress.js';
import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { addCommon, decoderFor, envFor, indexUseFor, resolveCli, EXIT, type CommonOptions, speculativeAction } from '../shared.js';
import { DISPATCHES, foldOf, diffDispatches, messagesOf, pickDispatch, requestJson, summarizeDispatch, type DispatchEntry, type DispatchIndex, BodyError, deepseekBody } from '../../api/views.js';
import { inspectTargetIndexed, type SessionInspection, type SessionEvent, UsageError, toJson } from '../../api/log.js';

export { pickDispatch, requestJson };
import { renderDiff, renderList, renderRequest, renderBody, type RequestView } from '../render/request.js';
import { failureJson, renderFailure } from '../render/surface.js';

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
      const opened = await openDispatchIndex(io, target, opts, '', { hydrateAll: false });
      if (typeof opened === 'number') return opened;
      const { index, fetch, r, hydrate } = opened;
      try {
        const sessionId = r.meta?.id ?? null;
        if (opts.list) {
          await hydrate(index.requests);
          const rows = index.requests.map((e, i) => summarizeDispatch(e, i > 0 ? (index.requests[i - 1] as DispatchEntry) : null));
          if (opts.json) await writeOut(io.stdout, toJson({ sessionId, requests: rows }) + '\n');
          else await writeOut(io.stdout, renderList(rows, { sessionId, closers: r.closers.length, torn: r.torn !== null }, env.c));
          return EXIT.ok;
        }
        const asked = seqArg !== undefined && /^\d+$/.test(seqArg.trim()) ? Number(seqArg.trim()) : undefined;
        let sparse: SessionEvent[] = asked !== undefined ? await fetch([[asked, asked]]) : [];
        const picked = pickDispatch(index, sparse, seqArg, opts.step);
        const at = picked.entry.index;
        await hydrate([index.requests[at - 1], picked.entry, index.requests[at + 1]]);
        sparse = await fetch(neededRanges(index, picked.entry, { asked, diff: Boolean(opts.diff), human: !opts.json && !opts.body }));
        return await show(io, opts, picked, index, sparse, r, sessionId);
      } finally {
        opened.close();
      }
    }),
  );
}

/** A session's dispatch index from one validating pass (or the saved session index), and a re-reader for the few events a view shows. */
export interface OpenedDispatchIndex {
  index: DispatchIndex;
  fetch: (ranges: readonly [number, number][], into?: SessionEvent[]) => Promise<SessionEvent[]>;
  /** Fill the text-valued fields (header, context, finish, usage) of entries a view shows; see `Dispatches.hydrate`. */
  hydrate: (entries: readonly (DispatchEntry | null | undefined)[]) => Promise<void>;
  r: SessionInspection;
  close(): void;
}

/**
 * Index the dispatches of a target without holding its events. A log DSH
 * refuses: DSH's error on stderr (each line prefixed with `label`, when given)
 * and the exit code (1) instead. Every entry is complete unless
 * `hydrateAll: false` (the caller then hydrates the entries it shows).
 */
export async function openDispatchIndex(
  io: Io,
  target: string,
  opts: CommonOptions,
  label = '',
  how: { hydrateAll?: boolean } = {},
): Promise<OpenedDispatchIndex | number> {
  const resolved = await resolveCli(target, opts);
  // One validating pass (or the saved session index) keeps the dispatch index and a log index, not
  // the events; then only the events a view shows are re-read (the log can be far larger than memory).
  const held: { events: SessionEvent[] } = { events: [] };
  const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, [DISPATCHES]));
  const r: SessionInspection = indexed.inspection;
  const reread = indexed.events;
  try {
    for (const w of r.warnings) io.stderr.write(`dsh: ${label}warning: ${escapeControl(w)}\n`);
    if (r.error || !reread) {
      const e = r.error ?? { class: 'Error', message: 'the log could not be read' };
      if (opts.json) await writeOut(io.stdout, failureJson(e));
      else {
        io.stderr.write(renderFailure(e, label));
        io.stderr.write(`dsh: ${label}DSH refuses this log, so no request can be reconstructed from it (see: dsh inspect)\n`);
      }
      indexed.close();
      return EXIT.failed;
    }
    const dispatches = foldOf(indexed.folds, DISPATCHES);
    dispatches.useEvents(() => held.events);
    const index = dispatches.index;
    const fetch = async (ranges: readonly [number, number][], into?: SessionEvent[]) => (held.events = await reread(ranges, into));
    const hydrate = (entries: readonly (DispatchEntry | null | undefined)[]) => dispatches.hydrate(entries, (ranges) => reread(ranges));
    if (how.hydrateAll !== false) await hydrate(index.requests);
    return { index, fetch, hydrate, r, close: () => indexed.close() };
  } catch (error) {
    indexed.close();
    throw error;
  }
}

/** Seq ranges `diffDispatches(from, to)` reads. */
export function diffRanges(from: DispatchEntry | null, to: DispatchEntry): [number, number][] {
  const ranges: [number, number][] = to.surfaceNodes.map((s) => [s, s]);
  if (from) for (const s of from.surfaceNodes) ranges.push([s, s]);
  ranges.push([from?.prefixEventCount ?? 0, to.prefixEventCount - 1]);
  if (from) ranges.push([from.lastChunkSeq + 1, to.firstChunkSeq - 1]);
  return ranges;
}

/** Seq ranges a request view reads: the input surface, plus what the human and diff views show. */
function neededRanges(index: DispatchIndex, entry: DispatchEntry, what: { asked: number | undefined; diff: boolean; human: boolean }): [number, number][] {
  const ranges: [number, number][] = entry.surfaceNodes.map((s) => [s, s]);
  if (what.asked !== undefined) ranges.push([what.asked, what.asked]);
  if (entry.assistantMessageSeq !== null) ranges.push([entry.assistantMessageSeq, entry.assistantMessageSeq]);
  const next = entry.index + 1 < index.requests.length ? (index.requests[entry.index + 1] as DispatchEntry).firstChunkSeq : null;
  if (what.human) {
    ranges.push([entry.firstChunkSeq, entry.lastChunkSeq]);
    ranges.push([entry.lastChunkSeq + 1, (next ?? entry.lastChunkSeq + 9) - 1]);
  }
  if (what.diff) ranges.push(...diffRanges(entry.index > 0 ? (index.requests[entry.index - 1] as DispatchEntry) : null, entry));
  return ranges;
}

async function show(
  io: Io,
  opts: RequestOptions,
  picked: ReturnType<typeof pickDispatch>,
  index: DispatchIndex,
  events: readonly SessionEvent[],
  r: SessionInspection,
  sessionId: string | null,
): Promise<number> {
  const env = envFor(io, opts);
  const { entry, resolution, from } = picked;
  if (opts.diff) {
    const prev = entry.index > 0 ? (index.requests[entry.index - 1] as DispatchEntry) : null;
    const diff = diffDispatches(prev, entry, events);
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
  const next = entry.index + 1 < index.requests.length ? (index.requests[entry.index + 1] as DispatchEntry) : null;
  const view: RequestView = {
    sessionId,
    entry,
    messages,
    total: index.requests.length,
    from,
    via: resolution.via,
    retriedBy: next && next.turn === entry.turn && next.step === entry.step ? next.key : null,
    usage: summarizeDispatch(entry, null).usage,
    nextFirstChunkSeq: next ? next.firstChunkSeq : null,
    closers: r.closers.length > 0 ? r.storedEventCount : null,
  };
  await writeOut(io.stdout, renderRequest(view, events, env.c, { full: Boolean(opts.full) }));
  return EXIT.ok;
}

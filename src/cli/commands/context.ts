import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, addExamples, decoderFor, envFor, EXIT, isRootDir, type CommonOptions } from '../shared.js';
import { UsageError, toJson } from '../../api/log.js';
import { listSessions } from '../../api/views.js';
import { contextByTurn, errorDocument, openSession, type ContextView } from '../../index.js';
import { answer, sessionFor } from '../session.js';
import { cacheFor } from '../shared.js';
import { renderBreaks, renderContext, renderContextByTurn, renderContextRoot, type ContextRootRow } from '../render/context.js';

interface ContextOptions extends CommonOptions {
  by?: 'turn';
  breaks?: boolean;
  prices?: string;
  currency: string;
}

/** `context` prints the log's warnings first, under --json too, as `request` does. */
const CONTEXT_STYLE = { warningsAlways: true, warningsFirst: true, refusedNote: 'DSH refuses this log, so no request can be reconstructed from it (see: dsh inspect)' } as const;

export function registerContext(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('context')
    .description(
      'where the context went: every model dispatch\'s request bytes by category (system prompt, tools, user, assistant text/reasoning/tool calls, tool results, compaction summaries), prompt tokens split in proportion, window fill, what entered or left since the dispatch before, and prompt-cache breaks with their cause and cost; over a root, one row per session',
    )
    .argument('<target>', 'session file, directory, id, -, or a session root')
    .addOption(new Option('--by <dim>', 'one row per turn instead of per dispatch').choices(['turn']))
    .option('--breaks', 'list the cache breaks only: where each request stops repeating the one before it, why, and what it cost')
    .option('--prices <file>', 'price table (JSON, the shipped data/prices.json format) instead of the shipped one')
    .option('--currency <code>', 'currency of the cost figures (a currency of the price table)', 'USD');
  addCommon(cmd, { json: 'print the view as JSON: {sessionId, tokens, dispatches, breaks, totals, explain} (--by turn: turns; --breaks: breaks; a root: {root, sessions})' });
  cmd.addHelpText(
    'after',
    `
Bytes are exact: the request dsh request --json rebuilds, split so the categories sum to it. Tokens are the
dispatch's logged prompt tokens (input + cache read + cache write) split in proportion to bytes ("tokens":
"proportional"): no DeepSeek V4 tokenizer ships offline as a well-kept npm package. The prompt cache is compared
on the DeepSeek body (dsh request --body deepseek) in chat-template order: system, tools, messages. A cache break
is a request that does not repeat the whole prompt of the dispatch before it.`,
  );
  addExamples(
    cmd,
    'dsh context session-incident-1 --root fixtures/incident',
    'dsh context session-incident-1 --root fixtures/incident --breaks',
    'dsh context fixtures/incident --json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: ContextOptions) => {
      const env = envFor(io, opts);
      if (!/^[A-Za-z]{3}$/.test(opts.currency)) throw new UsageError(`--currency must be a three-letter currency code, got ${toJson(opts.currency)}`);
      if (opts.by && opts.breaks) throw new UsageError('--by turn and --breaks are separate views; pick one');
      const options = { currency: opts.currency, ...(opts.prices !== undefined ? { prices: opts.prices } : {}) };
      if (target !== '-' && isRootDir(target)) return root(io, target, opts, options);
      const session = await sessionFor(io, target, opts);
      try {
        const answered = await answer(io, opts, session, await session.context(options), CONTEXT_STYLE);
        if (typeof answered === 'number') return answered;
        const v = answered.value;
        if (opts.json) {
          const doc = opts.by === 'turn' ? { sessionId: v.sessionId, tokens: v.tokens, turns: contextByTurn(v), totals: v.totals } : opts.breaks ? { sessionId: v.sessionId, tokens: v.tokens, breaks: v.breaks, totals: v.totals } : v;
          await writeOut(io.stdout, toJson(doc) + '\n');
        } else if (opts.by === 'turn') await writeOut(io.stdout, renderContextByTurn(v, contextByTurn(v), env.c));
        else if (opts.breaks) await writeOut(io.stdout, renderBreaks(v, env.c));
        else await writeOut(io.stdout, renderContext(v, env.c));
        return EXIT.ok;
      } finally {
        session.close();
      }
    }),
  );
}

/** Over a root: one summary row per session (a session DSH refuses gets its verdict in the row). */
async function root(io: Io, dir: string, opts: ContextOptions, options: { currency: string; prices?: string }): Promise<number> {
  const env = envFor(io, opts);
  if (opts.by || opts.breaks) throw new UsageError('over a root, context prints one row per session; give one session for --by turn or --breaks');
  const listing = await listSessions(dir, { health: false, decoder: decoderFor(opts) });
  for (const p of listing.problems) io.stderr.write(`dsh: warning: ${escapeControl(p.path)}: ${escapeControl(p.message)}\n`);
  const rows: ContextRootRow[] = [];
  let failed = false;
  for (const s of listing.sessions) {
    const opened = await openSession(s.path, { cache: cacheFor(io, opts), ...(opts.decoder ? { decoder: opts.decoder } : {}) });
    if (!opened.ok) {
      rows.push({ sessionId: s.id, path: s.path, error: errorDocument(opened.error).error });
      failed = true;
      continue;
    }
    try {
      const r = await opened.value.context(options);
      if (!r.ok) {
        if (!r.error.verdict && r.error.kind === 'usage') throw new UsageError(r.error.message);
        rows.push({ sessionId: s.id, path: s.path, error: errorDocument(r.error).error });
        failed = true;
        continue;
      }
      rows.push({ sessionId: s.id, path: s.path, ...summary(r.value) });
    } finally {
      opened.value.close();
    }
  }
  if (opts.json) await writeOut(io.stdout, toJson({ root: dir, sessions: rows }) + '\n');
  else await writeOut(io.stdout, renderContextRoot(rows, env.c));
  return failed ? EXIT.failed : EXIT.ok;
}

function summary(v: ContextView): Omit<ContextRootRow, 'sessionId' | 'path'> {
  const t = v.totals;
  return { dispatches: t.dispatches, maxBytes: t.maxBytes, maxFillPercent: t.maxFillPercent, promptTokens: t.promptTokens, cacheReadTokens: t.cacheReadTokens, breaks: t.breaks, resentTokens: t.resentTokens, breakCost: t.breakCost };
}

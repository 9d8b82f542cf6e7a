import type { Command } from 'commander';
import type { Io } from '../io.js';
import { progressOption } from '../progress.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, indexUseFor, intOption, resolveCli, EXIT, type CommonOptions } from '../shared.js';
import { foldOf, MESSAGE_GROUPS } from '../../views/index-folds.js';
import { allPages, DEFAULT_MAX_MESSAGES, DEFAULT_SIZE_LIMITS, hostServableWarning, pageSizeWarnings, paginate, type HistoryPage } from '../../views/history.js';
import { inspectTargetIndexed } from '../../log/session.js';
import type { SessionEvent, SessionHeader } from '../../log/types.js';
import { renderHistoryPage } from '../render/history.js';
import { loadTarget, reportLoadFailure } from './replay.js';
import { toJson } from '../../core/json.js';

interface HistoryOptions extends CommonOptions {
  maxMessages?: string;
  beforeSeq?: string;
  allPages?: boolean;
  warnEventsPerMessage?: string;
  warnBytes?: string;
}

export function registerHistory(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('history')
    .description("the Host's session.history page: a contiguous raw event window holding the last N append-origin user/assistant messages (never cut inside a message's chunk group)")
    .argument('<target>', 'session file, directory, id, or -')
    .option('--max-messages <n>', `messages per page (Host default ${DEFAULT_MAX_MESSAGES}; the Host sets no upper bound)`, String(DEFAULT_MAX_MESSAGES))
    .option('--before-seq <seq>', 'page of events strictly before this seq (omit: the tail page)')
    .option('--all-pages', 'walk every page backwards from the tail (or from --before-seq), as the browser loads older history')
    .option('--warn-events-per-message <n>', 'warn (stderr) when a page holds more raw events per counted message', String(DEFAULT_SIZE_LIMITS.eventsPerMessage))
    .option('--warn-bytes <n>', 'warn (stderr) when a page serializes to more bytes', String(DEFAULT_SIZE_LIMITS.bytes));
  addCommon(cmd, { json: 'print the page(s) as JSON: {sessionId, pages:[{events, hasMore, cut, …}]}' });
  cmd.action(
    action(io, setExit, async (target: string, opts: HistoryOptions) => {
      const env = envFor(io, opts);
      const maxMessages = intOption('--max-messages', opts.maxMessages, 1) ?? DEFAULT_MAX_MESSAGES;
      const beforeSeq = intOption('--before-seq', opts.beforeSeq, 0);
      const limits = {
        eventsPerMessage: intOption('--warn-events-per-message', opts.warnEventsPerMessage, 1) ?? DEFAULT_SIZE_LIMITS.eventsPerMessage,
        bytes: intOption('--warn-bytes', opts.warnBytes, 1) ?? DEFAULT_SIZE_LIMITS.bytes,
      };
      let header: SessionHeader;
      let pages: HistoryPage[];
      if (opts.allPages) {
        // Every page together is the whole log: hold it.
        const loaded = await loadTarget(io, target, opts);
        if (!loaded.ok) return loaded.code;
        header = loaded.header;
        pages = allPages(loaded.events, beforeSeq, maxMessages);
      } else {
        // One page: a streaming pass finds its cut, then only the page is re-read.
        const one = await streamedPage(io, target, opts, beforeSeq, maxMessages);
        if (!one.ok) return one.code;
        header = one.header;
        pages = [one.page];
      }
      const servable = hostServableWarning(header);
      if (servable) io.stderr.write(`dsh: note: ${escapeControl(servable)}\n`);
      const warnings = pages.flatMap((page) => pageSizeWarnings(page, limits));
      for (const w of warnings.slice(0, 3)) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
      if (warnings.length > 3) io.stderr.write(`dsh: warning: … ${warnings.length - 3} more page-size warning(s) (see --json pages[].bytes / events)\n`);
      if (opts.json) {
        await writeOut(io.stdout, toJson({ sessionId: header.id, pages }) + '\n');
        return EXIT.ok;
      }
      const text = pages.map((p, i) => renderHistoryPage(p, env.c, opts.allPages ? i : null)).join('\n');
      await writeOut(io.stdout, text + env.c.dim('* = counted append-origin message\n'));
      return EXIT.ok;
    }),
  );
}

/** The one history page a command line asks for, read in one streaming pass plus a re-read of the page. */
async function streamedPage(
  io: Io,
  target: string,
  opts: HistoryOptions,
  beforeSeq: number | undefined,
  maxMessages: number,
): Promise<{ ok: true; header: SessionHeader; page: HistoryPage } | { ok: false; code: number }> {
  const resolved = await resolveCli(target, opts);
  const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, [MESSAGE_GROUPS]));
  try {
    const r = indexed.inspection;
    if (r.error || !r.meta) {
      return { ok: false, code: await reportLoadFailure(io, opts, r.error) };
    }
    for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
    const groups = foldOf(indexed.folds, MESSAGE_GROUPS).clone();
    for (const c of r.closers) groups.observe(c);
    const total = r.storedEventCount + r.closers.length;
    const end = beforeSeq === undefined ? total : Math.min(beforeSeq, total);
    const cut = groups.cut(beforeSeq, maxMessages);
    const sparse = await indexed.events!([[cut, end - 1]]);
    const events: SessionEvent[] = [];
    for (let s = cut; s < end; s++) events.push(sparse[s] as SessionEvent);
    // The page's events alone hold every message paginate counts, so it finds the same cut on them.
    return { ok: true, header: r.meta, page: paginate(events, beforeSeq, maxMessages) };
  } finally {
    indexed.close();
  }
}

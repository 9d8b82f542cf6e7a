import type { Command } from 'commander';
import type { Io } from '../io.js';
import { progressOption } from '../progress.js';
import { escapeControl, LineWriter } from '../io.js';
import { addCommon, decoderFor, envFor, indexUseFor, intOption, resolveCli, EXIT, type CommonOptions, speculativeAction, addExamples } from '../shared.js';
import { foldOf, MESSAGE_GROUPS, DEFAULT_MAX_MESSAGES, DEFAULT_SIZE_LIMITS, hostServableWarning, pageSizeWarnings, paginate, type HistoryPage } from '../../api/views.js';
import { inspectTargetIndexed, type IndexedInspection, type SessionEvent, toJson, jsonText } from '../../api/log.js';
import { renderHistoryPage } from '../render/history.js';
import { reportLoadFailure } from './replay.js';

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
  addExamples(
    cmd,
    'dsh history session-incident-1 --root fixtures/incident --max-messages 5',
    'dsh history session-incident-1 --root fixtures/incident --max-messages 2 --all-pages --json',
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, opts: HistoryOptions) => {
      const env = envFor(io, opts);
      const maxMessages = intOption('--max-messages', opts.maxMessages, 1) ?? DEFAULT_MAX_MESSAGES;
      const beforeSeq = intOption('--before-seq', opts.beforeSeq, 0);
      const limits = {
        eventsPerMessage: intOption('--warn-events-per-message', opts.warnEventsPerMessage, 1) ?? DEFAULT_SIZE_LIMITS.eventsPerMessage,
        bytes: intOption('--warn-bytes', opts.warnBytes, 1) ?? DEFAULT_SIZE_LIMITS.bytes,
      };
      // A streaming pass (or the saved index) gives every page's cut; each page is re-read in turn and
      // printed, so `--all-pages` holds one page at a time, never the log.
      const resolved = await resolveCli(target, opts);
      const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, [MESSAGE_GROUPS]));
      try {
        const r = indexed.inspection;
        if (r.error || !r.meta) return await reportLoadFailure(io, opts, r.error);
        for (const w of r.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
        const header = r.meta;
        const servable = hostServableWarning(header);
        if (servable) io.stderr.write(`dsh: note: ${escapeControl(servable)}\n`);
        const out = new LineWriter(io.stdout);
        let warned = 0;
        let i = 0;
        if (opts.json) await out.text(toJson({ sessionId: header.id, pages: [] }).slice(0, -2));
        for await (const p of pagesOf(indexed, beforeSeq, maxMessages, Boolean(opts.allPages))) {
          for (const w of pageSizeWarnings(p, limits)) if (warned++ < 3) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
          if (opts.json) {
            // In pieces: a page may hold a message of hundreds of MB, never copied whole into the output.
            if (i > 0) await out.text(',');
            for (const piece of jsonText(p)) await out.text(piece);
          }
          else await out.text(`${i > 0 ? '\n' : ''}${renderHistoryPage(p, env.c, opts.allPages ? i : null)}`);
          i++;
        }
        if (warned > 3) io.stderr.write(`dsh: warning: … ${warned - 3} more page-size warning(s) (see --json pages[].bytes / events)\n`);
        await out.text(opts.json ? ']}\n' : env.c.dim('* = counted append-origin message\n'));
        await out.flush();
        return EXIT.ok;
      } finally {
        indexed.close();
      }
    }),
  );
}

/**
 * The pages a command line asks for (the tail page or the one before `--before-seq`; with `all`,
 * every page walking back as the browser's `loadOlder` does, like `allPages`), each re-read on demand:
 * the message groups find each cut without the log, then only the page's events are read.
 */
async function* pagesOf(indexed: IndexedInspection, beforeSeq: number | undefined, maxMessages: number, all: boolean): AsyncGenerator<HistoryPage> {
  const r = indexed.inspection;
  const groups = foldOf(indexed.folds, MESSAGE_GROUPS).clone();
  for (const c of r.closers) groups.observe(c);
  const total = r.storedEventCount + r.closers.length;
  let before = beforeSeq;
  for (;;) {
    const end = before === undefined ? total : Math.min(before, total);
    const cut = groups.cut(before, maxMessages);
    const sparse = await indexed.events!([[cut, end - 1]]);
    const events: SessionEvent[] = [];
    for (let s = cut; s < end; s++) events.push(sparse[s] as SessionEvent);
    // The page's events alone hold every message paginate counts, so it finds the same cut on them.
    const page = paginate(events, before, maxMessages);
    yield page;
    if (!all || !page.hasMore || page.firstSeq === null) return;
    before = page.firstSeq;
  }
}

import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, envFor, EXIT, type CommonOptions } from '../shared.js';
import { allPages, DEFAULT_MAX_MESSAGES, DEFAULT_SIZE_LIMITS, hostServableWarning, pageSizeWarnings, paginate } from '../../views/history.js';
import { renderHistoryPage } from '../render/history.js';
import { intOption, loadTarget } from './replay.js';

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
      const loaded = await loadTarget(io, target, opts);
      if (!loaded.ok) return loaded.code;
      const servable = hostServableWarning(loaded.header);
      if (servable) io.stderr.write(`dsh: note: ${escapeControl(servable)}\n`);
      const pages = opts.allPages ? allPages(loaded.events, beforeSeq, maxMessages) : [paginate(loaded.events, beforeSeq, maxMessages)];
      const warnings = pages.flatMap((page) => pageSizeWarnings(page, limits));
      for (const w of warnings.slice(0, 3)) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
      if (warnings.length > 3) io.stderr.write(`dsh: warning: … ${warnings.length - 3} more page-size warning(s) (see --json pages[].bytes / events)\n`);
      if (opts.json) {
        await writeOut(io.stdout, JSON.stringify({ sessionId: loaded.header.id, pages }) + '\n');
        return EXIT.ok;
      }
      const text = pages.map((p, i) => renderHistoryPage(p, env.c, opts.allPages ? i : null)).join('\n');
      await writeOut(io.stdout, text + env.c.dim('* = counted append-origin message\n'));
      return EXIT.ok;
    }),
  );
}

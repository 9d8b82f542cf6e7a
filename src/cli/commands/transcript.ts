import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { LineWriter } from '../io.js';
import { addCommon, envFor, EXIT, type CommonOptions, speculativeAction, addExamples } from '../shared.js';
import { toJson } from '../../api/log.js';
import { answer, sessionFor } from '../session.js';
import { BlankLineCollapser, transcriptMarkdownEntry, transcriptMarkdownHead, transcriptTextEntryPieces, transcriptTextHead } from '../render/transcript.js';

interface TranscriptOptions extends CommonOptions {
  format: 'text' | 'markdown' | 'json';
}

export function registerTranscript(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('transcript')
    .description('what the user saw: append-origin messages in log order, tool calls with results, compaction/prune markers, interrupted and synthetic events flagged')
    .argument('<target>', 'session file, directory, id (under --root), or -')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'markdown', 'json']).default('text'));
  addCommon(cmd, { json: 'same as --format json' });
  addExamples(
    cmd,
    'dsh transcript session-incident-1 --root fixtures/incident',
    'dsh transcript fixtures/raw-sample/--home-dev-acme-web--/session-raw-1/session.jsonl --format markdown',
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, opts: TranscriptOptions) => {
      const env = envFor(io, opts);
      const format = opts.json ? 'json' : opts.format;
      const shown = { ...opts, json: format === 'json' };
      // The session re-reads the log for the entries, printed as each is final, never holding it.
      const session = await sessionFor(io, target, shown);
      try {
        const answered = await answer(io, shown, session, await session.transcriptEntries());
        if (typeof answered === 'number') return answered;
        const { head, entries } = answered.value;
        const out = new LineWriter(io.stdout);
        if (format === 'json') {
          const open = toJson(head);
          await out.text(`${open.slice(0, -1)},"entries":[`);
          let first = true;
          for await (const e of entries) {
            await out.text(first ? toJson(e) : `,${toJson(e)}`);
            first = false;
          }
          await out.text(']}\n');
        } else if (format === 'markdown') {
          const md = new BlankLineCollapser();
          await out.text(md.push(transcriptMarkdownHead(head)));
          for await (const e of entries) await out.text(md.push(`\n${transcriptMarkdownEntry(e)}`));
          await out.text(`${md.end()}\n`);
        } else {
          const width = Math.max(40, (io.stdout.columns ?? 120) - 16);
          await out.text(transcriptTextHead(head, env.c));
          for await (const e of entries) {
            await out.text('\n');
            for (const piece of transcriptTextEntryPieces(e, env.c, width)) await out.text(piece);
          }
          await out.text('\n');
        }
        await out.flush();
        return EXIT.ok;
      } finally {
        session.close();
      }
    }),
  );
}

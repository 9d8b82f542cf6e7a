import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, envFor, EXIT, type CommonOptions } from '../shared.js';
import { buildTranscript } from '../../views/transcript.js';
import { renderTranscriptMarkdown, renderTranscriptText } from '../render/transcript.js';
import { loadForQuery, queryError } from './surface.js';
import { toJson } from '../../core/json.js';

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
  cmd.action(
    action(io, setExit, async (target: string, opts: TranscriptOptions) => {
      const env = envFor(io, opts);
      const format = opts.json ? 'json' : opts.format;
      const s = await loadForQuery(target, { ...opts, json: format === 'json' }, io);
      if (!s) return EXIT.failed;
      let t;
      try {
        t = buildTranscript(s);
      } catch (error) {
        throw queryError(error);
      }
      if (format === 'json') await writeOut(io.stdout, toJson(t) + '\n');
      else if (format === 'markdown') await writeOut(io.stdout, renderTranscriptMarkdown(t));
      else await writeOut(io.stdout, renderTranscriptText(t, env.c, Math.max(40, (io.stdout.columns ?? 120) - 16)));
      return EXIT.ok;
    }),
  );
}

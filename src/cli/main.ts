import { Command, Option } from 'commander';
import type { Io } from './io.js';
import { handleError } from './fail.js';
import { commandsFor } from './commands/index.js';
import { EXIT } from './exit.js';
import { parallelStats, VERSION } from '../api/log.js';


export { VERSION };

/** Run the CLI; resolves to the exit code. Never throws for bad input. */
export async function main(argv: string[], io: Io = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  let exitCode = EXIT.ok;
  const program = new Command();
  program
    .name('dsh')
    .description('Offline, read-only forensics for DeepSeek Harness session logs')
    .version(VERSION, '-V, --version')
    .showSuggestionAfterError(true)
    // A test hook, not a setting: say last on stderr whether reads ran on worker threads (tests prove the parallel path ran).
    .addOption(new Option('--debug-parallel').hideHelp())
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .addHelpText(
      'after',
      `
Exit codes: 0 success, 1 the log failed (corrupt, refused, or check findings), 2 usage or I/O error.
Nothing dsh does writes to, locks, truncates or repairs an input log.

Examples:
  dsh inspect ~/.dsh/sessions/--home-me-proj--/session-1/session.jsonl.zstd
  dsh events session-1 --type tool/result --json
  dsh frames broken/session.jsonl.zstd`,
    );
  for (const register of await commandsFor(argv)) {
    register(program, io, (code: number) => {
      exitCode = Math.max(exitCode, code) as typeof exitCode;
    });
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    return handleError(error, io);
  } finally {
    if (program.opts()['debugParallel'] === true) {
      const s = parallelStats();
      io.stderr.write(`dsh: parallel reads ${s.reads}, worker threads ${s.workers}, groups decoded on workers ${s.groups}\n`);
    }
  }
  return exitCode;
}


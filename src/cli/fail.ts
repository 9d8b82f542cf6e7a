import { CommanderError } from 'commander';
import type { Io } from './io.js';
import { BrokenPipe, escapeControl } from './io.js';
import { LogError, UsageError } from '../log/errors.js';
import { EXIT } from './exit.js';

/** Map any failure to a message on stderr and a documented exit code. */
export function handleError(error: unknown, io: Io): number {
  if (error instanceof CommanderError) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return EXIT.ok;
    return EXIT.usage;
  }
  if (error instanceof BrokenPipe || (error as NodeJS.ErrnoException)?.code === 'EPIPE') return EXIT.ok;
  if (error instanceof UsageError) {
    io.stderr.write(`dsh: ${escapeControl(error.message, true)}\n`);
    return EXIT.usage;
  }
  if (error instanceof LogError) {
    io.stderr.write(`dsh: ${escapeControl(error.message, true)}\n`);
    return EXIT.failed;
  }
  const e = error as NodeJS.ErrnoException;
  if (e && typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) {
    io.stderr.write(`dsh: ${escapeControl(e.message, true)}\n`);
    return EXIT.usage;
  }
  io.stderr.write(`dsh: internal error (a bug in dsh, please report): ${escapeControl(e?.stack ?? String(error), true)}\n`);
  return EXIT.internal;
}

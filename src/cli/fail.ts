import { CommanderError } from 'commander';
import type { Io } from './io.js';
import { BrokenPipe, escapeControl } from './io.js';
import { LogError, UsageError, errorDocument, toJson } from '../api/log.js';
import { EXIT } from './exit.js';

/** The `--json` failure document: errorDocument's `{error}` on stdout, never plain text on stderr. */
function jsonFailure(io: Io, error: Parameters<typeof errorDocument>[0]): void {
  io.stdout.write(toJson(errorDocument(error)) + '\n');
}

/** The message on stderr, then dsh's own observation beside it, if any. */
function textFailure(io: Io, error: { message: string; note?: string }): void {
  io.stderr.write(`dsh: ${escapeControl(error.message, true)}\n`);
  if (error.note !== undefined) io.stderr.write(`dsh: note: ${escapeControl(error.note, true)}\n`);
}

const noteOf = (error: { note?: string }) => (error.note !== undefined ? { note: error.note } : {});

/**
 * Map any failure to a message on stderr (the `{error}` object on stdout
 * under `--json`) and a documented exit code.
 */
export function handleError(error: unknown, io: Io, options: { json?: boolean } = {}): number {
  if (error instanceof CommanderError) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return EXIT.ok;
    return EXIT.usage;
  }
  if (error instanceof BrokenPipe || (error as NodeJS.ErrnoException)?.code === 'EPIPE') return EXIT.ok;
  const json = options.json === true;
  if (error instanceof UsageError) {
    if (json) jsonFailure(io, { class: error.dshClass ?? 'UsageError', message: error.message, kind: error.kind, ...noteOf(error) });
    else textFailure(io, error);
    return EXIT.usage;
  }
  if (error instanceof LogError) {
    if (json) jsonFailure(io, { class: error.dshClass, message: error.message, rule: error.rule, cause: error.detail, kind: error.kind, ...noteOf(error) });
    else textFailure(io, error);
    return error.kind === 'io' ? EXIT.usage : EXIT.failed;
  }
  const e = error as NodeJS.ErrnoException;
  if (e && typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) {
    if (json) jsonFailure(io, { class: 'Error', message: e.message, code: e.code });
    else io.stderr.write(`dsh: ${escapeControl(e.message, true)}\n`);
    return EXIT.usage;
  }
  io.stderr.write(`dsh: internal error (a bug in dsh, please report): ${escapeControl(e?.stack ?? String(error), true)}\n`);
  return EXIT.internal;
}

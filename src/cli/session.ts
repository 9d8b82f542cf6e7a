/**
 * How a command line opens a session and reads a view's answer: the library's `openSession` with the
 * command's options, and a failed `Result` turned into what the CLI prints (DSH's verdict on the log,
 * exit 1) or throws (a failure of the call, classified by `handleError`).
 */
import { openSession, type DshError, type DshErrorClass, type OpenOptions, type Result, type Session } from '../index.js';
import { LogError, UsageError, readStdin } from '../api/log.js';
import type { Io } from './io.js';
import { escapeControl, writeOut } from './io.js';
import { cacheFor, type CommonOptions } from './shared.js';
import { progressFor } from './progress.js';
import { failureJson, renderFailure } from './render/surface.js';
import { EXIT } from './exit.js';

/** The failure of a call (not DSH's verdict on the log), thrown as the CLI classifies it. */
export function callFailure(e: DshError): Error {
  // A failure of the call (UsageError), or one DSH answers with its own class (a session its backend does not find).
  if (e.class === 'UsageError' || ((e.kind === 'io' || e.kind === 'usage') && e.class === 'Error' && e.code === undefined && e.rule === undefined && e.cause === undefined)) {
    const u = new UsageError(e.message, e.kind === 'io' ? 'io' : 'usage', e.class === 'UsageError' ? undefined : e.class);
    if (e.note !== undefined) u.note = e.note;
    return u;
  }
  // A system error (ENOENT…): thrown as the system error it was.
  if (e.class === 'Error' && e.code !== undefined && /^E[A-Z]+$/.test(e.code)) return Object.assign(new Error(e.message), { code: e.code });
  // session-query's own errors: a bad seq is usage (2), a bad log a failure (1).
  if (e.class === 'SessionQueryError') return e.kind === 'usage' ? new UsageError(e.message) : new LogError(e.message, { kind: 'corrupt' });
  const l = new LogError(e.message, {
    dshClass: e.class as DshErrorClass,
    kind: e.kind,
    ...(e.rule !== undefined ? { rule: e.rule } : {}),
    ...(e.cause !== undefined ? { cause: e.cause } : {}),
  });
  if (e.note !== undefined) l.note = e.note;
  return l;
}

/** Open `target` as the command line says (`-` reads stdin); a target that cannot be opened is thrown. */
export async function sessionFor(io: Io, target: string, opts: CommonOptions, extra: Pick<OpenOptions, 'maxTraceEvents'> = {}): Promise<Session> {
  const stdin = target === '-' ? await readStdin() : undefined;
  const onProgress = progressFor(io, opts);
  const opened = await openSession(target, {
    ...(opts.root ? { root: opts.root } : {}),
    ...(stdin ? { stdin } : {}),
    ...(opts.encoding ? { encoding: opts.encoding === 'zstd' ? 'zstd' : 'none' } : {}),
    ...(opts.compression ? { compression: opts.compression } : {}),
    ...(opts.decoder ? { decoder: opts.decoder } : {}),
    cache: cacheFor(io, opts),
    ...(onProgress ? { onProgress } : {}),
    // A command whose output is held until the index is verified may be answered before the hash is done.
    ...(io.speculation ? { speculation: io.speculation } : {}),
    ...extra,
  });
  if (!opened.ok) throw callFailure(opened.error);
  return opened.value;
}

/** How a command shows DSH's verdict and the log's layout warnings around a view's answer. */
export interface AnswerStyle {
  /** Prefix of every stderr line (`side a: `). */
  label?: string;
  /** Print the warnings under --json too (default: text only). */
  warningsAlways?: boolean;
  /** Print the warnings before DSH's verdict (default: only when the log is accepted). */
  warningsFirst?: boolean;
  /** A line after DSH's verdict in text mode. */
  refusedNote?: string;
}

/**
 * A view's value; or, when DSH refuses the log, its verdict printed (`{error}` on stdout under --json,
 * else on stderr) and exit 1 returned; any other failure is thrown for `handleError`. The log's layout
 * warnings go to stderr as `style` says.
 */
export async function answer<T>(io: Io, opts: CommonOptions, session: Session, result: Result<T>, style: AnswerStyle = {}): Promise<{ value: T } | number> {
  const label = style.label ?? '';
  // The log could not be read at all (nothing was validated): the failure alone.
  if (!result.ok && !session.opened) throw callFailure(result.error);
  const verdict = await session.verdict();
  const warn = () => {
    if (opts.json && !style.warningsAlways) return;
    for (const w of verdict.warnings) io.stderr.write(`dsh: ${label}warning: ${escapeControl(w)}\n`);
  };
  if (style.warningsFirst) warn();
  if (!result.ok && result.error.verdict) {
    if (opts.json) await writeOut(io.stdout, failureJson(result.error));
    else {
      io.stderr.write(renderFailure(result.error, label));
      if (style.refusedNote !== undefined) io.stderr.write(`dsh: ${label}${style.refusedNote}\n`);
    }
    return EXIT.failed;
  }
  if (!style.warningsFirst) warn();
  if (!result.ok) throw callFailure(result.error);
  return { value: result.value };
}

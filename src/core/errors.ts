/**
 * Error classes mirroring DSH's own classification. `class` is the DSH class
 * name a caller compares against (`Error`, `SessionFormatUnsupportedError`,
 * `SessionPersistenceCorruptionError`); `kind` is dsh's exit-code category.
 */

import type { RuleCode } from './rules.js';

export type { RuleCode } from './rules.js';

export type DshErrorClass = 'Error' | 'TypeError' | 'SessionFormatUnsupportedError' | 'SessionPersistenceCorruptionError';

/** What went wrong, for exit codes and `check`: the log is corrupt, refused, or dsh could not read it at all. */
export type FailureKind = 'corrupt' | 'refused' | 'io' | 'usage';

export interface ErrorLocation {
  kind: 'jsonl';
  path: string;
}

export interface SerializedError {
  name: string;
  class: string;
  message: string;
  location?: ErrorLocation;
  cause?: SerializedError & { code?: string };
  /** dsh's own observation beside DSH's verdict (a file whose name and bytes disagree); never part of DSH's text. */
  note?: string;
}

/** An error reproduced with DSH's class and exact text. */
export class LogError extends Error {
  readonly dshClass: DshErrorClass;
  readonly kind: FailureKind;
  readonly location?: ErrorLocation;
  /** Byte offset in the artifact (physical errors) when known. */
  readonly byteOffset?: number;
  /** Event seq the error is about, when known. */
  readonly seq?: number;
  /** The rule the detector found broken (its `dsh check` code). */
  readonly rule?: RuleCode;
  readonly detail?: SerializedError & { code?: string };
  /** dsh's own observation beside DSH's verdict (a hint such as the flag that opens the log); never part of DSH's text. */
  note?: string;

  constructor(
    message: string,
    options: {
      dshClass?: DshErrorClass;
      kind?: FailureKind;
      location?: ErrorLocation;
      byteOffset?: number;
      seq?: number;
      rule?: RuleCode;
      cause?: SerializedError & { code?: string };
    } = {},
  ) {
    super(message);
    this.name = options.dshClass ?? 'Error';
    this.dshClass = options.dshClass ?? 'Error';
    this.kind = options.kind ?? (options.dshClass === 'SessionFormatUnsupportedError' ? 'refused' : 'corrupt');
    if (options.location !== undefined) this.location = options.location;
    if (options.byteOffset !== undefined) this.byteOffset = options.byteOffset;
    if (options.seq !== undefined) this.seq = options.seq;
    if (options.rule !== undefined) this.rule = options.rule;
    if (options.cause !== undefined) this.detail = options.cause;
  }

  toJSON(): SerializedError {
    return serializeError(this);
  }
}

/**
 * A DSH check that failed, thrown with DSH's plain `Error` text by a
 * validation helper and wrapped into a LogError by the stage that ran it.
 */
export class RuleError extends Error {
  constructor(
    message: string,
    readonly rule: RuleCode,
  ) {
    super(message);
    this.name = 'Error';
  }
}

/** A usage or I/O problem: not a verdict about the log (exit code 2). */
export class UsageError extends Error {
  readonly kind: FailureKind;
  /**
   * DSH's class when the answer is DSH's own (a session its backend does not
   * find: `Error`); the failure is reported under it instead of `UsageError`.
   */
  readonly dshClass?: DshErrorClass;
  /** dsh's observation beside the answer (see LogError.note). */
  note?: string;
  constructor(message: string, kind: 'usage' | 'io' = 'usage', dshClass?: DshErrorClass) {
    super(message);
    this.name = 'UsageError';
    this.kind = kind;
    if (dshClass !== undefined) this.dshClass = dshClass;
  }
}

/** DSH's backend finds no session of this id (DSH's `Error`, text as DSH's coordinator gives it; exit 2). */
export function sessionNotFound(id: string): UsageError {
  return new UsageError(`session "${id}" not found`, 'io', 'Error');
}

/**
 * A command that must hold the whole logical log in memory met a log larger
 * than the V8 heap allows: a clear answer (exit 2) instead of an out-of-memory crash.
 */
export class ResourceLimit extends UsageError {
  constructor(message: string) {
    super(message, 'io');
    this.name = 'ResourceLimit';
  }
}

export function corrupt(message: string, extra: { byteOffset?: number; seq?: number; rule?: RuleCode; cause?: SerializedError & { code?: string } } = {}): LogError {
  return new LogError(message, { dshClass: 'Error', kind: 'corrupt', ...extra });
}

export function refused(message: string, location?: ErrorLocation, seq?: number, rule?: RuleCode): LogError {
  return new LogError(message, {
    dshClass: 'SessionFormatUnsupportedError',
    kind: 'refused',
    ...(rule !== undefined ? { rule } : {}),
    ...(location ? { location } : {}),
    ...(seq !== undefined ? { seq } : {}),
  });
}

/** Wrap a coordinator/restore failure the way DSH's prepareCore does. */
export function wrapCorruption(id: string, inner: LogError): LogError {
  return new LogError(`stored session "${id}" failed validation: ${inner.dshClass}: ${inner.message}`, {
    dshClass: 'SessionPersistenceCorruptionError',
    kind: 'corrupt',
    cause: serializeError(inner),
    ...(inner.seq !== undefined ? { seq: inner.seq } : {}),
    ...(inner.rule !== undefined ? { rule: inner.rule } : {}),
  });
}

export function serializeError(error: LogError): SerializedError {
  const out: SerializedError = { name: error.dshClass, class: error.dshClass, message: error.message };
  if (error.location) out.location = error.location;
  if (error.detail) out.cause = error.detail;
  if (error.note !== undefined) out.note = error.note;
  return out;
}

/**
 * The `{error}` object every `--json` failure prints, in one key order:
 * `class`, `message`, `rule` (the `dsh check` code, where the detector knows
 * it), `cause` (DSH's wrapped inner failure), `kind` (a usage or I/O failure:
 * `usage`/`io`), `code` (a system error's code such as `ENOENT`, or
 * `fork-unavailable`), then `note` (dsh's own observation, never DSH's text).
 */
export interface ErrorObject {
  class: string;
  message: string;
  /** The rule code of the failure (see `RULE_CODES`), when the detector knows it. */
  rule?: RuleCode;
  /** The inner failure DSH wraps (e.g. the decoder's checksum error), when there is one. */
  cause?: SerializedError & { code?: string };
  /** A failure about the call rather than the log: `usage` or `io` (never `corrupt`/`refused`). */
  kind?: 'usage' | 'io';
  /** A system error's code (`ENOENT`) or DSH Host's API error code (`fork-unavailable`). */
  code?: string;
  /** dsh's own observation beside DSH's verdict (never DSH's wording). */
  note?: string;
}

type Maybe<T> = { [K in keyof T]?: T[K] | undefined };

/** What a failed read left when it kept no error of its own (its events were not collected). */
const NOT_COLLECTED = { class: 'Error', message: 'session events were not collected' } as const;

/**
 * A session's failure inside a wider document (a row of `ls`, root-wide `stats` or `compactions`,
 * the ledger, an OTLP run, `secrets`): the same object as that session's own `{error}` document,
 * rule and cause included; a read that kept no error says its events were not collected.
 */
export function failureObject(e: Parameters<typeof errorDocument>[0] | undefined): ErrorObject {
  return errorDocument(e ?? NOT_COLLECTED).error;
}

/** The one `{error}` document of a failure (`inspect --json` and every other command), keys in {@link ErrorObject}'s order. */
export function errorDocument(e: { class: string; message: string; kind?: FailureKind | undefined } & Maybe<Omit<ErrorObject, 'class' | 'message' | 'kind'>>): { error: ErrorObject } {
  return {
    error: {
      class: e.class,
      message: e.message,
      ...(e.rule !== undefined ? { rule: e.rule } : {}),
      ...(e.cause ? { cause: e.cause } : {}),
      // A verdict about the log (corrupt, refused) is said by its class; only a failure about the call says its kind.
      ...(e.kind === 'usage' || e.kind === 'io' ? { kind: e.kind } : {}),
      ...(e.code !== undefined ? { code: e.code } : {}),
      ...(e.note !== undefined ? { note: e.note } : {}),
    },
  };
}

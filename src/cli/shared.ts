import type { Command } from 'commander';
import { Option } from 'commander';
import type { ChalkInstance } from 'chalk';
import { colorFor, type ColorMode, type Io } from './io.js';
import { statSync } from 'node:fs';
import { looksLikeRoot, resolveTarget, readStdin, type ResolvedTarget, type ResolveOptions, createDecoder, type DecoderName, UsageError, cacheConfig, type CacheConfig, type IndexUse, type PersistentFold, toJson, defaultJobs, defaultReadThreads, PARALLEL_MIN_BYTES, setReadJobs, setReadTuning } from '../api/log.js';
import { SESSION_FOLDS } from '../api/views.js';
import { clearProgress } from './progress.js';

export interface CommonOptions {
  json?: boolean;
  color?: ColorMode;
  root?: string;
  decoder?: DecoderName | 'auto';
  /** False with `--no-cache`: read and write no session index. */
  cache?: boolean;
  /** `--encoding raw|zstd` (fork's own `--encoding` names the child's and is not this). */
  encoding?: 'raw' | 'zstd' | 'none';
  /** `--compression zstd|none`: the compression DSH's backend is configured for, for targets given by id. */
  compression?: 'zstd' | 'none';
  /** `-j, --jobs <n>`: threads (see `jobsFor`). */
  jobs?: string;
  /** Hidden test hooks (`ReadTuning`): workers on logs from this size, decode groups of this many compressed bytes. */
  parallelMinBytes?: string;
  groupBytes?: string;
  /** Hidden test hook: draw progress once a pass has run this many ms (default `PROGRESS_AFTER_MS`). */
  progressAfter?: string;
  /** Hidden test hook: a warm read peeks at the one entry of its log's size (and may speculate) from this size (`CacheConfig.peekMinBytes`, default `WORKER_MIN_BYTES`). */
  peekMinBytes?: string;
  /** False with the hidden `--no-speculation`: a warm read waits for the hash (the paired bench runs compare the two). */
  speculation?: boolean;
  /** Hidden test hook: hold at most this many bytes of output while a speculation is open (default `HELD_BYTES`). */
  speculationHoldBytes?: string;
  /** Hidden test hook: say last on stderr how a speculation ended. */
  debugSpeculation?: boolean;
}

export function addCommon(cmd: Command, opts: { json?: string | false; encoding?: false } = {}): Command {
  if (opts.json !== false) cmd.option('--json', opts.json ?? 'print machine-readable JSON on stdout');
  cmd.addOption(new Option('--color <when>', 'colour output').choices(['auto', 'always', 'never']).default('auto'));
  cmd.option('--root <dir>', 'session root for ids (default $DSH_HOME/sessions, else ~/.dsh/sessions)');
  cmd.option('--no-cache', 'read and write no session index (also DSH_NO_CACHE=1): nothing is written anywhere');
  cmd.addOption(new Option('--decoder <name>', 'zstd decoder').choices(['auto', 'node-zlib', 'mongodb-js']).default('auto').hideHelp());
  cmd.option(
    '-j, --jobs <n>',
    `threads: on a zstd log of ${PARALLEL_MIN_BYTES >> 20} MiB or more, N-1 workers decode it to text while the main thread parses and folds it (default DSH_JOBS, else ${defaultReadThreads()}: the cores from 4 up, else 1); over many files, one file per worker (default DSH_JOBS, else ${defaultJobs()}); 1 = one thread`,
  );
  // Test hooks, not settings: workers on small logs, one frame per decode group, progress drawn at once.
  cmd.addOption(new Option('--parallel-min-bytes <n>').hideHelp());
  cmd.addOption(new Option('--group-bytes <n>').hideHelp());
  cmd.addOption(new Option('--progress-after <ms>').hideHelp());
  // Held-output speculation (speculativeAction): from which log size, off, how much is held, how it ended.
  cmd.addOption(new Option('--peek-min-bytes <n>').hideHelp());
  cmd.addOption(new Option('--no-speculation').hideHelp());
  cmd.addOption(new Option('--speculation-hold-bytes <n>').hideHelp());
  cmd.addOption(new Option('--debug-speculation').hideHelp());
  if (opts.encoding !== false) cmd.addOption(new Option('--encoding <enc>', "read the bytes as this encoding whatever the file name says (DSH goes by the name)").choices(['raw', 'zstd']));
  cmd.addOption(
    new Option('--compression <mode>', "for a session given by id: the compression DSH's backend is configured for (it reads only that encoding and refuses a root holding the other)")
      .choices(['zstd', 'none'])
      .default('zstd'),
  );
  return cmd;
}

export interface CommandEnv {
  io: Io;
  c: ChalkInstance;
  opts: CommonOptions;
}

/**
 * Ends a command's --help with an "Examples:" section: two or three `dsh` lines, each runnable on the bundled
 * fixtures (run from the repository) or plainly generic. test/cli-help.test.ts holds every command to this.
 */
export function addExamples(cmd: Command, ...lines: string[]): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  ${l}`).join('\n')}`);
}

export function envFor(io: Io, opts: CommonOptions): CommandEnv {
  // Every read of one log this command makes uses the chosen thread count.
  setReadJobs(explicitJobs(opts, io.env) ?? defaultReadThreads());
  const parallelMinBytes = intOption('--parallel-min-bytes', opts.parallelMinBytes);
  const groupBytes = intOption('--group-bytes', opts.groupBytes, 1);
  setReadTuning({ ...(parallelMinBytes !== undefined ? { parallelMinBytes } : {}), ...(groupBytes !== undefined ? { groupBytes } : {}) });
  return { io, c: colorFor(opts.color ?? 'auto', io.stdout, io.env), opts };
}

export async function resolveCli(target: string, opts: CommonOptions): Promise<ResolvedTarget> {
  const stdin = target === '-' ? await readStdin() : undefined;
  return resolveTarget(target, resolveOptionsFor(opts, stdin));
}

/** The target-resolution options a command line gives (--root, --encoding, --compression, stdin bytes). */
export function resolveOptionsFor(opts: CommonOptions, stdin?: Buffer): ResolveOptions {
  return {
    ...(opts.root ? { root: opts.root } : {}),
    ...(stdin ? { stdin } : {}),
    ...(opts.encoding ? { encoding: opts.encoding === 'zstd' ? 'zstd' : 'none' } : {}),
    ...(opts.compression ? { compression: opts.compression } : {}),
  };
}

export function decoderFor(opts: CommonOptions) {
  return createDecoder(opts.decoder ?? 'auto');
}

export { EXIT } from './exit.js';

/** `-j`, else `DSH_JOBS` (0 counts as 1), else undefined. */
function explicitJobs(opts: CommonOptions, env: NodeJS.ProcessEnv): number | undefined {
  const n = intOption('--jobs', opts.jobs) ?? intOption('DSH_JOBS', env['DSH_JOBS']?.trim() || undefined);
  return n === undefined ? undefined : Math.max(1, n);
}

/** Workers over many files (`check`, `ls`, `dataset`): `-j`, else `DSH_JOBS`, else the machine's available parallelism. */
export function jobsFor(opts: CommonOptions, env: NodeJS.ProcessEnv): number {
  return explicitJobs(opts, env) ?? defaultJobs();
}
/** The cache directory as this command line configures it (notes and warnings go to stderr). */
export function cacheFor(io: Io, opts: CommonOptions): CacheConfig {
  const peekMinBytes = intOption('--peek-min-bytes', opts.peekMinBytes);
  return {
    ...cacheConfig(io.env, { noCache: opts.cache === false, note: (text) => io.stderr.write(`dsh: ${text}\n`) }),
    ...(peekMinBytes !== undefined ? { peekMinBytes } : {}),
  };
}

/** The persistent session index for an indexed view: every fold a later command may load, and the ones this view reads. */
export function indexUseFor(io: Io, opts: CommonOptions, needs?: readonly PersistentFold[]): IndexUse {
  return { cache: cacheFor(io, opts), folds: SESSION_FOLDS, ...(needs ? { needs } : {}), ...(io.speculation ? { speculation: io.speculation } : {}) };
}


/**
 * Parse an integer option or argument (`--from`, `<seq>`, `--jobs`, `--limit`…) of at least `min`;
 * a usage error (exit 2) otherwise. The one integer parser of every command.
 */
export function intOption(name: string, v: string | undefined, min = 0): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v.trim());
  if (!/^\d+$/.test(v.trim()) || n < min || !Number.isSafeInteger(n)) {
    throw new UsageError(`${name} must be ${min === 0 ? 'a non-negative integer' : `an integer >= ${min}`}, got ${toJson(v)}`);
  }
  return n;
}

/**
 * Wrap a command action: the body returns its exit code; a thrown failure is
 * classified (usage/I/O 2, log failure 1) with a message on stderr.
 */
export function action<A extends unknown[]>(
  io: Io,
  setExit: (code: number) => void,
  body: (...args: A) => Promise<number>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      setExit(await body(...args));
    } catch (error) {
      clearProgress(io);
      const { handleError } = await import('./fail.js');
      // Commander passes (...arguments, options, command): --json (or --format json) asks for the {error} object.
      const command = args[args.length - 1] as { opts?: () => Record<string, unknown> } | undefined;
      const opts = typeof command?.opts === 'function' ? command.opts() : {};
      setExit(handleError(error, io, { json: opts['json'] === true || opts['format'] === 'json' }));
    } finally {
      clearProgress(io);
    }
  };
}

/**
 * `action` for a command whose whole output is stdout and stderr: its warm reads of a big log answer
 * while the log's hash is computed, its output held until the index is verified (see
 * `OutputGate`); when one is not, the command runs again as `action` runs it. Hidden options (test
 * hooks, and the off switch the paired bench runs use): `--no-speculation`, `--speculation-hold-bytes
 * <n>` (how much output is held at most, default 16 MiB), `--debug-speculation`.
 */
export function speculativeAction<A extends unknown[]>(
  io: Io,
  setExit: (code: number) => void,
  body: (...args: A) => Promise<number>,
): (...args: A) => Promise<void> {
  const plain = action(io, setExit, body);
  return async (...args: A) => {
    // Commander passes (...arguments, options, command).
    const command = args[args.length - 1] as { opts?: () => CommonOptions } | undefined;
    const opts: CommonOptions = typeof command?.opts === 'function' ? command.opts() : {};
    if (opts.speculation === false || io.speculation) return plain(...args);
    const { OutputGate, heldBytesFor } = await import('./speculation.js');
    const gate = new OutputGate(io.stdout, io.stderr, heldBytesFor(opts.speculationHoldBytes));
    const real = { stdout: io.stdout, stderr: io.stderr };
    const codes: number[] = [];
    io.stdout = gate.stdout;
    io.stderr = gate.stderr;
    io.speculation = gate;
    try {
      await action(io, (code) => codes.push(code), body)(...args);
    } finally {
      io.stdout = real.stdout;
      io.stderr = real.stderr;
      delete io.speculation;
    }
    const bets = gate.bets;
    const won = await gate.settle();
    gate.detach();
    if (won) for (const code of codes) setExit(code);
    else await plain(...args);
    // --debug-speculation: say last how a speculation ended (tests prove which path ran).
    if (bets > 0 && opts.debugSpeculation === true) io.stderr.write(`dsh: speculation ${won ? 'won' : 'lost'} (${bets} bet${bets === 1 ? '' : 's'})\n`);
  };
}

/** A directory that is a session root (sessions under it, no artifact in it): commands that also take a root. */
export function isRootDir(p: string): boolean {
  try {
    return statSync(p).isDirectory() && looksLikeRoot(p);
  } catch {
    return false;
  }
}

/** A required non-negative integer option (the same parser as `intOption`). */
export function parseCount(value: string, flag: string): number {
  return intOption(flag, value) as number;
}

/** Parse `--since`: an ISO date/time or epoch milliseconds. */
export function parseSince(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/** Parse `--step T/S` (also `T:S`). */
export function parseStepSpec(spec: string): { turn: number; step: number } | null {
  const m = /^\s*(\d+)\s*[/:]\s*(\d+)\s*$/.exec(spec);
  if (!m) return null;
  return { turn: Number(m[1]), step: Number(m[2]) };
}

import { watch, type FSWatcher } from 'node:fs';
import type { Io } from './io.js';
import { escapeControl, writeOut } from './io.js';
import { EXIT, type CommandEnv } from './shared.js';
import { LogFollower, type FollowNotice, type FollowSink } from '../api/views.js';
import { errorDocument, type LogError, UsageError, type ResolvedTarget, type FrameDecoder, toJson } from '../api/log.js';

/** What a live log's state change means, for a human. */
export function noticeText(n: FollowNotice): string {
  switch (n.kind) {
    case 'torn':
      return `tail being written: ${n.bytes} byte(s) after the last committed ${'frame or line'} (not corruption while the writer runs)`;
    case 'torn-complete':
      return 'tail committed';
    case 'repaired':
      return `the log was repaired (as DSH's load() does after a crash): the ${n.droppedBytes}-byte torn tail after byte ${n.truncatedTo} was truncated and new data appended; continuing from the repaired log`;
    case 'replaced':
      return `the log was replaced (${n.why}); following the new file from its start`;
    case 'stalled':
      return `the ${n.bytes}-byte tail has not changed for ${Math.round(n.ms / 1000)} s: if DSH has stopped, it is a torn tail that DSH's load() would truncate (dsh inspect shows what it would write); still following`;
    case 'removed':
      return 'the log was removed; waiting for it to come back (Ctrl-C to stop)';
  }
}

export interface FollowLoopOptions {
  intervalMs: number;
  /** How long a torn tail stays unchanged before it is reported as stalled (default 5 s; tests pass less). */
  stallMs?: number;
  decoder: FrameDecoder;
  /** Called after each poll that changed something (and once after the first). */
  onChange?: (follower: LogFollower) => Promise<void> | void;
  flush: () => Promise<void>;
}

/**
 * Poll a log until SIGINT/SIGTERM (exit 0) or until it becomes unreadable
 * (exit 1). Read-only: the follower opens the file O_RDONLY per poll;
 * `fs.watch` only wakes the loop early, the poll interval is the fallback.
 */
export async function followLoop(io: Io, env: CommandEnv, target: ResolvedTarget, sink: FollowSink, options: FollowLoopOptions): Promise<number> {
  if (target.path === '-' || target.rawPath.includes('.zip:') || target.path.endsWith('.zip')) throw new UsageError('--follow needs a session file on disk (not stdin or an export archive)');
  const follower = new LogFollower(target.path, {
    ...sink,
    onNotice: (n) => {
      sink.onNotice?.(n);
      io.stderr.write(env.c.yellow(`dsh: ${noticeText(n)}`) + '\n');
    },
  }, options.decoder, options.stallMs ?? STALL_MS);
  let stop = false;
  let wake: (() => void) | undefined;
  const onSignal = () => {
    stop = true;
    wake?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(target.path, { persistent: false }, () => wake?.());
    watcher.on('error', () => undefined);
  } catch {
    watcher = undefined; // polling alone
  }
  let lastKey = '';
  try {
    while (!stop) {
      try {
        await follower.poll();
      } catch (error) {
        await options.flush();
        const e = error as { message: string } & Partial<Pick<LogError, 'dshClass' | 'rule' | 'detail'>>;
        if (env.opts.json) await writeOut(io.stdout, toJson(errorDocument({ class: e.dshClass ?? 'Error', message: e.message, rule: e.rule, cause: e.detail })) + '\n');
        io.stderr.write(`dsh: the log became unreadable: ${escapeControl(e.message)}\n`);
        return EXIT.failed;
      }
      const s = follower.state;
      const key = `${s.events}/${s.size}/${s.pending}/${s.gone}`;
      if (key !== lastKey) {
        lastKey = key;
        await options.onChange?.(follower);
        await options.flush();
      }
      if (stop) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, options.intervalMs);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      wake = undefined;
    }
    await options.flush();
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    watcher?.close();
  }
}

/** A torn tail unchanged this long is reported as stalled. */
export const STALL_MS = 5_000;

/** The hidden `--follow-stall <ms>` (a test hook, not a setting), parsed: undefined when not given. */
export function stallOption(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || !Number.isSafeInteger(n)) throw new UsageError(`--follow-stall must be an integer >= 1 (ms), got ${toJson(v)}`);
  return n;
}

export function intervalOption(v: string | undefined): number {
  const n = Number(v ?? '100');
  if (!/^\d+$/.test(String(v ?? '100')) || n < 10 || n > 60_000) throw new UsageError(`--interval must be an integer 10-60000 (ms), got ${toJson(v)}`);
  return n;
}

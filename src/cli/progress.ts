/**
 * Progress of a long reading pass on stderr: only when stderr is a terminal and the output is
 * not --json, only once a pass has taken about a second, redrawn at most a few times a second,
 * and erased when the pass ends (and, for safety, when the command ends).
 */
import type { ReadProgress } from '../api/log.js';
import { renderProgress } from './render/progress.js';
import type { Io } from './io.js';

/** A pass shorter than this shows nothing (the hidden `--progress-after <ms>` overrides it, for tests). */
export const PROGRESS_AFTER_MS = 1000;
const REDRAW_MS = 200;
const CLEAR = '\r\x1b[2K';

/** What a command's options say about progress: `--json`, and the hidden test hook `--progress-after <ms>`. */
export interface ProgressOptions {
  json?: boolean;
  progressAfter?: string;
}

const shown = new WeakMap<Io, { clear(): void }>();

/** A progress callback for a reading pass, or undefined where none may be drawn (pipes, files, --json). */
export function progressFor(io: Io, opts: ProgressOptions, now: () => number = Date.now): ((p: ReadProgress) => void) | undefined {
  if (!io.stderr.isTTY || opts.json || io.env['TERM'] === 'dumb') return undefined;
  const given = opts.progressAfter === undefined ? NaN : Number(opts.progressAfter);
  const after = Number.isFinite(given) && given >= 0 ? given : PROGRESS_AFTER_MS;
  let start: number | undefined;
  let startBytes = 0;
  let last = 0;
  let drawn = false;
  const clear = () => {
    if (drawn) io.stderr.write(CLEAR);
    drawn = false;
  };
  shown.set(io, { clear });
  return (p) => {
    const t = now();
    if (start === undefined || p.bytes < startBytes) {
      start = t;
      startBytes = p.bytes;
    }
    if (p.done) {
      clear();
      start = undefined;
      return;
    }
    if (t - start < after || t - last < REDRAW_MS) return;
    last = t;
    const rate = (p.bytes - startBytes) / (t - start);
    const eta = rate > 0 ? (p.totalBytes - p.bytes) / rate / 1000 : undefined;
    io.stderr.write(CLEAR + renderProgress(p, eta));
    drawn = true;
  };
}

/** Erase a progress line still on screen (the command ended, or failed, mid-pass). */
export function clearProgress(io: Io): void {
  shown.get(io)?.clear();
}

/** `{ onProgress }` for a command's read options, or nothing where no progress may be drawn. */
export function progressOption(io: Io, opts: ProgressOptions): { onProgress?: (p: ReadProgress) => void } {
  const onProgress = progressFor(io, opts);
  return onProgress ? { onProgress } : {};
}

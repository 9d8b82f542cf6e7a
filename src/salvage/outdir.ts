import { mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { isInside, outputRefusal, realish } from '../log/target.js';

/**
 * Check and create a NEW output directory for salvage/redact output:
 * refuse when it exists and is not an empty directory, when it is the input's
 * directory, or when it lies inside the input's session directory (the
 * directory holding the artifact) — output must never land beside or inside
 * the evidence. `inputPath` is the artifact path (`-` / `zip:` for none).
 */
export function prepareOutputDir(out: string, inputPath: string | undefined): string {
  const abs = path.resolve(out);
  // Plain artifact files only (not stdin `-`, not `archive.zip:entry`).
  if (inputPath && inputPath !== '-' && path.isAbsolute(inputPath) && !/\.zip:/i.test(inputPath)) {
    const sessionDir = realish(path.dirname(inputPath));
    const target = realish(abs);
    if (isInside(target, sessionDir)) {
      throw new UsageError(`refusing to write into the input's session directory ${sessionDir}: choose an output directory outside it`);
    }
    const why = outputRefusal(abs, inputPath);
    if (why) throw new UsageError(why);
  }
  let st;
  try {
    st = statSync(abs);
  } catch {
    st = undefined;
  }
  if (st) {
    if (!st.isDirectory()) throw new UsageError(`output ${abs} exists and is not a directory`, 'io');
    if (readdirSync(abs).length > 0) throw new UsageError(`output directory ${abs} exists and is not empty; refusing to overwrite`, 'io');
  } else {
    mkdirSync(abs, { recursive: true, mode: 0o700 });
  }
  return abs;
}

import { mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { outputRefusal, type OutputInput } from '../export/new-file.js';

/**
 * Check and create a NEW output directory for salvage/redact output: refuse when it exists and is
 * not an empty directory, or where {@link outputRefusal} (directory rules) refuses it: the input's
 * directory, inside it, or inside the input's root — output must never land beside or inside the
 * evidence. `input` is the artifact (`-` / `zip:` restrict nothing).
 */
export function prepareOutputDir(out: string, input: OutputInput | undefined): string {
  const abs = path.resolve(out);
  const why = input !== undefined ? outputRefusal(abs, [input], { directory: true }) : undefined;
  if (why) throw new UsageError(why, 'io');
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

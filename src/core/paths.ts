/**
 * Where a path lies, in the terms the write-safety rule needs (src/core/publish.ts) and the target
 * resolver uses (src/log/target.ts): DSH's artifact names and layout, real paths, containment.
 * File-system look-ups only (realpath); nothing here reads a log.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';

/** The file names of a session artifact in DSH's layout: zstd first, then plain JSONL. */
export const ARTIFACT_NAMES = ['session.jsonl.zstd', 'session.jsonl'] as const;

/** Whether an artifact path sits in DSH's layout: `<root>/--<project>--/<session>/session.jsonl[.zstd]`. */
export function inDshLayout(abs: string): boolean {
  const projectName = path.basename(path.dirname(path.dirname(abs)));
  const projectLike = projectName === '_no-cwd' || (projectName.startsWith('--') && projectName.endsWith('--') && projectName.length >= 4);
  return projectLike && (ARTIFACT_NAMES as readonly string[]).includes(path.basename(abs));
}

/** Resolve symlinks of the longest existing prefix of `p`, then re-append the rest. */
export function realish(p: string): string {
  const abs = path.resolve(p);
  const rest: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      const real = realpathSync(cur);
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return abs;
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

/** Whether `child` is `parent` or lies beneath it (paths compared as given). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

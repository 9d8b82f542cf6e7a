/**
 * Opening a session by id under a root, as DSH's JSONL backend does for a
 * Host's `inspect(id)` (format.md §1.2-1.4): the backend is configured for one
 * compression and reads only that encoding's artifacts.
 *
 * Before any id is looked up, the whole root must belong to the configured
 * encoding: every project directory (in directory order) is listed, a flat
 * `*.jsonl`/`*.jsonl.zstd` file in one refuses the root, and a session
 * directory holding the other encoding's artifact refuses it too. Then every
 * project directory is searched for the id: a flat artifact named after it, or
 * the other encoding in its session directory, refuses; the configured
 * artifact there is a match; two matches are a duplicate id. Only real
 * directories count (a symlinked project or session directory is not listed),
 * while a symlinked session file is followed. "Exists" means "opens": a
 * directory in place of the file is found here and fails when read (EISDIR).
 */
import { closeSync, constants, openSync, readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { encodeSegment, artifactFileName } from './layout.js';
import { LogError, UsageError, sessionNotFound } from './errors.js';
import type { Encoding } from './types.js';
import { toJson } from '../core/json.js';

/** `--compression`: how DSH's backend is configured (DSH's default is zstd). */
export type Compression = 'zstd' | 'none';
export const DEFAULT_COMPRESSION: Compression = 'zstd';

const suffix = (c: Encoding) => (c === 'zstd' ? '.jsonl.zstd' : '.jsonl');
const opposite = (c: Encoding): Encoding => (c === 'zstd' ? 'none' : 'zstd');

function isEnoent(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'ENOENT';
}

/** DSH's `exists`: the path opens for reading (non-blocking, so a FIFO answers at once); only ENOENT is absence. */
function opens(p: string): boolean {
  try {
    closeSync(openSync(p, constants.O_RDONLY | constants.O_NONBLOCK));
    return true;
  } catch (error) {
    if (isEnoent(error)) return false;
    throw error;
  }
}

function layoutRefusal(message: string): LogError {
  return new LogError(message, { kind: 'corrupt', rule: 'DSH-A11' });
}

function encodingMismatch(p: string, compression: Encoding): LogError {
  return layoutRefusal(
    `session artifact ${toJson(p)} uses ${suffix(opposite(compression))}, but this backend is configured for compression ${toJson(compression)}; use a separate root or select the matching compression mode`,
  );
}

function legacyLayout(p: string): LogError {
  return layoutRefusal(`session artifact ${toJson(p)} uses the unsupported flat-file layout; use a separate root or move it into a project/session directory before loading`);
}

function listProjectDirs(root: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch (error) {
    if (isEnoent(error)) return [];
    throw error;
  }
  return entries.filter((e) => e.isDirectory()).map((e) => path.join(root, e.name));
}

function listSessionDirs(project: string): string[] {
  const entries = readdirSync(project, { withFileTypes: true });
  const legacy = entries.find((e) => e.isFile() && (e.name.endsWith('.jsonl') || e.name.endsWith('.jsonl.zstd')));
  if (legacy !== undefined) throw legacyLayout(path.join(project, legacy.name));
  return entries.filter((e) => e.isDirectory()).map((e) => path.join(project, e.name));
}

/** The root-wide encoding check DSH runs before its first read. */
function checkRootEncoding(root: string, compression: Encoding): void {
  for (const project of listProjectDirs(root)) {
    for (const dir of listSessionDirs(project)) {
      const incompatible = path.join(dir, `session${suffix(opposite(compression))}`);
      if (opens(incompatible)) throw encodingMismatch(incompatible, compression);
    }
  }
}

/**
 * The artifact DSH's backend (configured for `compression`) reads for `id`
 * under `root`, or its refusal: a LogError (exit 1) for a layout it rejects, a
 * UsageError (exit 2) with DSH's text for an id it does not find.
 */
export function findSessionById(rootDir: string, id: string, compression: Compression = DEFAULT_COMPRESSION): string {
  const root = path.resolve(rootDir);
  checkRootEncoding(root, compression);
  const matches: string[] = [];
  for (const project of listProjectDirs(root)) {
    let encoded: string;
    try {
      encoded = encodeSegment(id);
    } catch (error) {
      // DSH's lookup fails here with encodeSegment's own Error; an id is the caller's argument (exit 2).
      throw new UsageError((error as Error).message, 'usage', 'Error');
    }
    for (const c of ['zstd', 'none'] as const) {
      const flat = path.join(project, encoded + suffix(c));
      if (opens(flat)) throw legacyLayout(flat);
    }
    const dir = path.join(project, encoded);
    const other = path.join(dir, `session${suffix(opposite(compression))}`);
    if (opens(other)) throw encodingMismatch(other, compression);
    const file = path.join(dir, artifactFileName(compression));
    if (opens(file)) matches.push(file);
  }
  if (matches.length > 1) throw layoutRefusal(`duplicate JSONL session id "${id}" appears in multiple project directories`);
  if (matches.length === 0) throw sessionNotFound(id);
  return matches[0] as string;
}

/**
 * dsh's observation beside a refusal of `id` under `root` for a backend
 * configured for `compression`: when a backend configured for the other
 * compression finds the session, the flag that opens it that way. Only for a
 * refusal about the encoding (or a session not found); undefined otherwise.
 */
export function otherCompressionHint(error: unknown, rootDir: string, id: string, compression: Compression): string | undefined {
  const aboutEncoding =
    (error instanceof LogError && error.message.includes('but this backend is configured for compression')) ||
    (error instanceof UsageError && error.kind === 'io');
  if (!aboutEncoding) return undefined;
  const other = opposite(compression);
  let found: string;
  try {
    found = findSessionById(rootDir, id, other);
  } catch {
    return undefined;
  }
  return `a backend configured for compression ${toJson(other)} finds this session at ${toJson(found)}: --compression ${other} opens it that way`;
}

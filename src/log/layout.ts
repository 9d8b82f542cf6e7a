import path from 'node:path';
import { realpathSync } from 'node:fs';
import type { Encoding, SessionHeader } from './types.js';
import { LogError } from './errors.js';

/** DSH's artifact layout (format.md §1.1). */

const LITERAL = /[A-Za-z0-9._-]/;

function escapeUnit(code: number): string {
  return '~' + code.toString(16).toUpperCase().padStart(4, '0');
}

/** Session id → one path segment (injective over UTF-16 code units). */
export function encodeSegment(raw: string): string {
  if (raw === '') throw new Error('cannot encode an empty path segment');
  if (raw === '.') return '~002E';
  if (raw === '..') return '~002E~002E';
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] as string;
    out += LITERAL.test(ch) ? ch : escapeUnit(raw.charCodeAt(i));
  }
  return out;
}

/** Inverse of `encodeSegment`: each `~HHHH` → that code unit, everything else literal. */
export function decodeSegment(segment: string): string {
  return segment.replace(/~([0-9A-Fa-f]{4})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** DSH's export `safeSessionIdSegment`: every char outside `[A-Za-z0-9_-]` becomes `_` (lossy). */
export function safeSegment(id: string): string {
  return id.replace(/[^A-Za-z0-9_-]/g, '_');
}

/**
 * cwd → lossy, readable, bounded project key (`--${slug}--`). A header's cwd
 * is whatever JSON value the log holds, and DSH's `projectKey` runs on it
 * unchecked: its `length` and `charCodeAt` decide (an empty array is "an empty
 * project path", a number names `--root--`, null and non-empty arrays throw
 * the TypeErrors its property reads throw). This mirrors that evaluation.
 */
export function projectKey(cwd: unknown): string {
  if (cwd === null || cwd === undefined) throw new TypeError(`Cannot read properties of ${cwd} (reading 'length')`);
  const value = cwd as { length?: unknown; charCodeAt?: unknown };
  if (value.length === 0) throw new Error('cannot encode an empty project path');
  let slug = '';
  let lastSep = false;
  for (let i = 0; i < (value.length as number); i++) {
    if (typeof value.charCodeAt !== 'function') throw new TypeError('cwd.charCodeAt is not a function');
    const code = (value.charCodeAt as (at: number) => number).call(cwd, i);
    const ch = String.fromCharCode(code);
    if (ch === '/' || ch === '\\' || ch === ':') {
      if (!lastSep) slug += '-';
      lastSep = true;
      continue;
    }
    lastSep = false;
    slug += LITERAL.test(ch) ? ch : escapeUnit(code);
  }
  slug = slug.replace(/^-+/, '');
  if (slug === '') slug = 'root';
  slug = slug.slice(0, 251);
  return `--${slug}--`;
}

/** The project directory name for a header's cwd (`_no-cwd` when absent). */
export function projectDir(cwd: unknown): string {
  return cwd === undefined ? '_no-cwd' : projectKey(cwd);
}

export function artifactFileName(encoding: Encoding): string {
  return encoding === 'zstd' ? 'session.jsonl.zstd' : 'session.jsonl';
}

/** DSH's `logPath(root, cwd, id, compression)`. */
export function sessionPath(root: string, header: Pick<SessionHeader, 'id' | 'cwd'>, encoding: Encoding): string {
  return path.join(root, projectDir(header.cwd), encodeSegment(header.id), artifactFileName(encoding));
}

/** Where a by-id read found its artifact: what DSH's `assertStoredIdentity` compares the header with. */
export interface StoredAt {
  root: string;
  /** The artifact path as DSH's lookup spelled it. */
  path: string;
  expectedId?: string;
  encoding: Encoding;
}

/** DSH's `sameFile`: both spellings resolve to one file (ENOENT: not the same). */
function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * A file read by path is the session DSH's backend would be asked for by its
 * header id. An empty id is refused while that lookup encodes it, before the
 * backend reads anything: `encodeSegment`'s own error, as DSH gives it (a
 * plain `Error`), whatever the cwd or the rest of the log. (By id, the
 * requested id is never empty, and the identity check answers.)
 */
export function locateRefusal(meta: Pick<SessionHeader, 'id'>, at?: StoredAt): LogError | undefined {
  if (at !== undefined || meta.id !== '') return undefined;
  try {
    encodeSegment(meta.id);
  } catch (error) {
    return new LogError((error as Error).message, { kind: 'corrupt', rule: 'DSH-A3' });
  }
  return undefined;
}

/**
 * DSH's backend checks the header against where it read the log, on every
 * read (`assertStoredIdentity`, after the physical scan, before any logical
 * check): the requested id, then the storage path derived from the header
 * (`projectKey(cwd)` first, then `encodeSegment(id)`, whose error is the
 * cause), then that the path names the file read. Without `at` (a file read
 * by path) only the derivation is checked: a header DSH cannot place is
 * refused wherever it lies.
 */
export function storageIdentityRefusal(meta: Pick<SessionHeader, 'id' | 'cwd'>, rawPath: string, at?: StoredAt): LogError | undefined {
  const unlocatable = locateRefusal(meta, at);
  if (unlocatable) return unlocatable;
  if (at?.expectedId !== undefined && meta.id !== at.expectedId) {
    return new LogError(`corrupt session log "${rawPath}": requested id "${at.expectedId}" does not match header id "${meta.id}"`, { kind: 'corrupt', rule: 'DSH-A4' });
  }
  let expected: string;
  try {
    expected = sessionPath(at?.root ?? '', meta, at?.encoding ?? 'zstd');
  } catch (error) {
    const e = error as Error;
    const cls = e instanceof TypeError ? 'TypeError' : 'Error';
    return new LogError(`corrupt session log "${rawPath}": header id cannot name a storage path`, {
      kind: 'corrupt',
      rule: 'DSH-A3',
      cause: { name: cls, class: cls, message: e.message },
    });
  }
  if (at && at.path !== expected && !sameFile(at.path, expected)) {
    return new LogError(`corrupt session log "${rawPath}": header id "${meta.id}" and cwd identify "${expected}"`, { kind: 'corrupt', rule: 'DSH-A4' });
  }
  return undefined;
}

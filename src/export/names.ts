/**
 * Archive entry naming (DSH `session-export.ts` rules) and the safety checks
 * every entry name passes before it is written.
 */

import { safeSegment } from '../log/layout.js';
import { toJson } from '../core/json.js';

export { safeSegment };

/** DSH's download filename for a root session's export. */
export function exportFileName(sessionId: string): string {
  return `dsh-session-${safeSegment(sessionId)}.zip`;
}

/** The only entry names that may contain `:` (DSH does not sanitize attachment ids; they are validated first). */
const MEDIA_NAME = /^media\/sha256:[a-f0-9]{64}\.(png|jpg|webp|gif)$/;

/**
 * Refuse any entry name that could escape or misbehave on extraction:
 * absolute paths, drive letters, backslashes, `.`/`..`/empty segments,
 * control characters. Throws a plain Error (a dsh bug if it ever fires).
 */
export function assertSafeEntryName(name: string): void {
  const bad = (why: string): never => {
    throw new Error(`refusing unsafe archive entry name ${toJson(name)}: ${why}`);
  };
  if (name.length === 0 || name.length > 1024) bad('empty or too long');
  if (name.startsWith('/')) bad('absolute path');
  if (name.includes('\\')) bad('backslash');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) bad('control character');
  if (name.includes(':') && !MEDIA_NAME.test(name)) bad('colon (drive letter or stream name)');
  for (const segment of name.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') bad('empty, "." or ".." path segment');
  }
}

import { corrupt, refused } from './errors.js';
import type { SessionHeader } from './types.js';
import { toJson } from '../core/json.js';

export const SESSION_FORMAT_VERSION = 0;

/** DSH's foreign-version refusal text (`sessionFormatVersionRefusal`). */
export function versionRefusalText(id: string, version: number): string {
  return version > SESSION_FORMAT_VERSION
    ? `session "${id}" uses log format v${version}, but this harness reads only v0: the log was written by a newer harness — upgrade the harness to open it`
    : `session "${id}" uses log format v${version}, older than the supported v0, and this build ships no upgrade path for it`;
}

function isNonNegSafe(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && !Object.is(v, -0);
}

/** DSH's on-disk header predicate (`isHeaderLine`). */
export function isHeaderLine(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    v['type'] === 'session' &&
    typeof v['version'] === 'number' &&
    typeof v['id'] === 'string' &&
    isNonNegSafe(v['createdAt']) &&
    isNonNegSafe(v['delegationDepth']) &&
    (v['origin'] === undefined || v['origin'] === 'subagent') &&
    (v['agentPreset'] === undefined || typeof v['agentPreset'] === 'string')
  );
}

/** Keep only the known header fields, in DSH's order; refuse retired fields. */
export function fromHeaderLine(line: Record<string, unknown>): SessionHeader {
  if (Object.hasOwn(line, 'sandboxMode') || Object.hasOwn(line, 'approvalPolicy')) {
    throw corrupt('session header uses retired policy baseline fields', { rule: 'DSH-A3' });
  }
  const out: Record<string, unknown> = { version: line['version'], id: line['id'], createdAt: line['createdAt'] };
  for (const key of ['cwd', 'parentSession', 'seedLength', 'origin'] as const) {
    if (line[key] !== undefined) out[key] = line[key];
  }
  out['delegationDepth'] = line['delegationDepth'];
  if (line['agentPreset'] !== undefined) out['agentPreset'] = line['agentPreset'];
  return out as unknown as SessionHeader;
}

/** The header line as DSH writes it (`toHeaderLine`), key order included. */
export function toHeaderLine(h: SessionHeader): string {
  const out: Record<string, unknown> = { type: 'session', version: h.version, id: h.id, createdAt: h.createdAt };
  if (h.cwd !== undefined) out['cwd'] = h.cwd;
  if (h.parentSession !== undefined) out['parentSession'] = h.parentSession;
  if (h.seedLength !== undefined) out['seedLength'] = h.seedLength;
  if (h.origin !== undefined) out['origin'] = h.origin;
  out['delegationDepth'] = h.delegationDepth ?? 0;
  if (h.agentPreset !== undefined) out['agentPreset'] = h.agentPreset;
  return toJson(out);
}

/**
 * Parse the header record (bytes through its single trailing LF) as DSH's
 * `parseHeaderRecord`: framing, JSON, foreign-version refusal before any shape
 * check, shape, retired fields. `rawPath` is appended to refusals.
 */
export function parseHeaderRecord(record: Buffer, rawPath: string): SessionHeader {
  if (record.length === 0 || record[record.length - 1] !== 0x0a || record.indexOf(0x0a) !== record.length - 1) {
    throw corrupt('empty or header-less session log', { rule: 'DSH-A1' });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(record.subarray(0, record.length - 1).toString('utf8'));
  } catch {
    throw corrupt('corrupt session log: header line is not valid JSON', { rule: 'DSH-A1' });
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const { version, id } = parsed as { version?: unknown; id?: unknown };
    if (typeof version === 'number' && version !== SESSION_FORMAT_VERSION) {
      throw refused(
        `${versionRefusalText(typeof id === 'string' ? id : String(id), version)} (raw log: ${rawPath})`,
        { kind: 'jsonl', path: rawPath },
        undefined,
        'DSH-A2',
      );
    }
  }
  if (!isHeaderLine(parsed)) throw corrupt('corrupt session log: first line is not a session header', { rule: 'DSH-A3' });
  return fromHeaderLine(parsed as Record<string, unknown>);
}

/** The lenient listing/readRaw parser (`parseHeaderMeta`): undefined when not a header. */
export function parseHeaderMeta(firstLine: string): SessionHeader | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(firstLine);
  } catch {
    return undefined;
  }
  if (!isHeaderLine(parsed)) return undefined;
  return fromHeaderLine(parsed as Record<string, unknown>);
}

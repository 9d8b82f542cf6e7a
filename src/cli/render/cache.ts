import type { ChalkInstance } from 'chalk';
import { escapeControl, humanBytes } from '../io.js';

export interface CacheRow {
  entry: string;
  sessionId: string | null;
  path: string | null;
  logBytes: number | null;
  indexBytes: number;
  usedMs: number;
  createdMs: number | null;
}

export interface CacheListing {
  dir: string;
  enabled: boolean;
  maxBytes: number;
  totalBytes: number;
  entries: CacheRow[];
}


function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

export function renderCacheListing(l: CacheListing, c: ChalkInstance, now: number): string {
  const lines = [
    `cache    ${escapeControl(l.dir)}${l.enabled ? '' : c.yellow('  (disabled: --no-cache or DSH_NO_CACHE)')}`,
    `entries  ${l.entries.length}, ${humanBytes(l.totalBytes)} of ${humanBytes(l.maxBytes)} (DSH_CACHE_MAX_BYTES; least recently used evicted first)`,
  ];
  if (l.entries.length > 0) {
    lines.push('');
    lines.push(c.dim(`${'session'.padEnd(36)}  ${'log size'.padStart(9)}  ${'index'.padStart(9)}  ${'used'.padStart(5)}  log`));
    for (const e of l.entries) {
      lines.push(
        `${escapeControl(e.sessionId ?? '(unreadable entry)').padEnd(36)}  ${(e.logBytes === null ? '-' : humanBytes(e.logBytes)).padStart(9)}  ${humanBytes(e.indexBytes).padStart(9)}  ${age(now - e.usedMs).padStart(5)}  ${escapeControl(e.path ?? e.entry)}`,
      );
    }
  }
  return lines.join('\n') + '\n';
}

/** The one-line progress display of a long reading pass (stderr, TTY only). */
import type { ReadProgress } from '../../api/log.js';
import { formatCount } from '../../api/log.js';

const n = formatCount;

function size(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${n(Math.round(bytes / 1e3))} kB`;
}

function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** `reading 1.20 GB of 2.00 GB (60%), 3,456,789 events, ETA 8s` (no ETA before a rate is known). */
export function renderProgress(p: ReadProgress, etaSeconds: number | undefined): string {
  const pct = p.totalBytes > 0 ? Math.min(100, Math.floor((p.bytes / p.totalBytes) * 100)) : 100;
  const eta = etaSeconds !== undefined && Number.isFinite(etaSeconds) ? `, ETA ${duration(etaSeconds)}` : '';
  return `reading ${size(p.bytes)} of ${size(p.totalBytes)} (${pct}%), ${n(p.events)} events${eta}`;
}

/**
 * `dsh export --format otlp`: read sessions (one target, or every session of
 * a root) and turn each into its trace.
 */
import { failureObject, type ErrorObject } from '../core/errors.js';
import { inspectTarget } from '../log/session.js';
import { looksLikeRoot, resolveTarget, scanRoot, type ResolvedTarget } from '../log/target.js';
import { createRedactor, type RedactOptions } from '../views/redactor.js';
import type { FrameDecoder } from '../physical/decoders.js';
import { sessionSpans, type OtlpSpan } from './otlp.js';

export interface OtlpRunOptions {
  content?: boolean;
  maxInputBytes?: number;
  redact?: RedactOptions;
  decoder?: FrameDecoder;
  onWarning?: (message: string) => void;
}

export interface OtlpSessionResult {
  id: string | null;
  path: string;
  spans: number;
  error?: ErrorObject;
}

export interface OtlpRun {
  spans: OtlpSpan[];
  sessions: OtlpSessionResult[];
}

/** The targets a command-line target names: every session of a root, else the one target. */
export async function otlpTargets(target: string, resolve: () => Promise<ResolvedTarget>): Promise<ResolvedTarget[]> {
  if (target !== '-' && looksLikeRoot(target)) return scanRoot(target).sessions.map((s) => resolveTarget(s.path));
  return [await resolve()];
}

/** Spans of every target; a session that cannot be read is reported, not exported. */
export async function otlpSpans(targets: readonly ResolvedTarget[], options: OtlpRunOptions = {}): Promise<OtlpRun> {
  const spans: OtlpSpan[] = [];
  const sessions: OtlpSessionResult[] = [];
  for (const target of targets) {
    const r = await inspectTarget(target, { collect: true, ...(options.decoder ? { decoder: options.decoder } : {}) });
    for (const w of r.warnings) options.onWarning?.(w);
    if (r.error || !r.events || !r.meta) {
      sessions.push({ id: r.meta?.id ?? null, path: target.path, spans: 0, error: failureObject(r.error) });
      continue;
    }
    const redactor = options.redact ? createRedactor({ ...options.redact, ...(r.meta.cwd !== undefined ? { cwd: r.meta.cwd } : {}) }) : undefined;
    const own = sessionSpans(r.meta, r.events, {
      ...(options.content ? { content: true } : {}),
      ...(redactor ? { redactor } : {}),
      ...(options.maxInputBytes !== undefined ? { maxInputBytes: options.maxInputBytes } : {}),
      closers: r.closerReasons,
      torn: r.torn !== null,
    });
    spans.push(...own);
    sessions.push({ id: r.meta.id, path: target.path, spans: own.length });
  }
  return { spans, sessions };
}

import { summarize, type CheckReport } from '../engine.js';
import { toJson } from '../../core/json.js';

/** The `--format json` document: the engine's data plus a summary. Stable keys (schema `dsh-check/1`). */
export function checkJson(report: CheckReport, extra: { exitCode?: number } = {}): unknown {
  return {
    schema: 'dsh-check/1',
    tool: report.tool,
    summary: summarize(report),
    ...(extra.exitCode !== undefined ? { exitCode: extra.exitCode } : {}),
    layout: report.layout,
    sessions: report.sessions,
  };
}

/** `dsh check --format json`. */
export function renderJson(report: CheckReport, extra: { exitCode?: number } = {}): string {
  return toJson(checkJson(report, extra)) + '\n';
}

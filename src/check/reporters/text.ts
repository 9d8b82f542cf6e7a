import type { ChalkInstance } from 'chalk';
import { Chalk } from 'chalk';
import { escapeControl } from '../../core/text.js';
import { allFindings, compareCodes, summarize, type CheckReport, type Finding } from '../engine.js';
import { RULES, type RuleMeta } from '../rules.js';

const plain = new Chalk({ level: 0 });

function where(f: Finding): string {
  const parts: string[] = [];
  if (f.seq !== undefined) parts.push(`seq ${f.seq}`);
  if (f.byteOffset !== undefined) parts.push(`${f.offsetIn === 'plaintext' ? 'plaintext byte' : 'byte'} ${f.byteOffset}`);
  return parts.join(', ');
}

function sevLabel(c: ChalkInstance, f: Finding): string {
  if (f.severity === 'error') return c.red('error  ');
  if (f.severity === 'warning') return c.yellow('warning');
  return c.blue('info   ');
}

function line(c: ChalkInstance, f: Finding, hints: boolean): string {
  const loc = where(f);
  let out = `  ${sevLabel(c, f)} ${c.bold(f.code.padEnd(8))} ${loc ? c.dim(`[${loc}] `) : ''}${escapeControl(f.message)}\n`;
  if (hints) out += `           ${c.dim(`hint: ${f.hint}`)}\n`;
  return out;
}

/** Human report: findings grouped by session, then one summary line. */
export function renderText(report: CheckReport, c: ChalkInstance = plain, options: { hints?: boolean; quiet?: boolean } = {}): string {
  const hints = options.hints ?? true;
  let out = '';
  if (report.layout.length > 0) {
    out += c.bold('root layout') + '\n';
    for (const f of report.layout) out += `  ${c.dim(escapeControl(f.file))}\n` + line(c, f, hints);
    out += '\n';
  }
  for (const s of report.sessions) {
    if (s.findings.length === 0) continue;
    const head = s.sessionId !== undefined ? `${c.bold(escapeControl(s.sessionId))} ${c.dim(escapeControl(s.file))}` : c.bold(escapeControl(s.file));
    out += head + '\n';
    const sorted = [...s.findings].sort((a, b) => compareCodes(a.code, b.code) || (a.seq ?? -1) - (b.seq ?? -1));
    for (const f of sorted) out += line(c, f, hints);
    out += '\n';
  }
  const sum = summarize(report);
  const clean = report.sessions.filter((s) => s.findings.length === 0).length;
  const counts = `${sum.errors} error${sum.errors === 1 ? '' : 's'}, ${sum.warnings} warning${sum.warnings === 1 ? '' : 's'}, ${sum.infos} info`;
  const mark = sum.errors > 0 ? c.red('✖') : sum.warnings > 0 ? c.yellow('⚠') : c.green('✔');
  out += `${mark} ${counts} in ${sum.sessions} session${sum.sessions === 1 ? '' : 's'} (${sum.loaded} loaded, ${clean} clean)\n`;
  if (allFindings(report).length > 0) {
    out += c.dim(`  by rule: ${Object.entries(sum.byCode).map(([k, v]) => `${k}×${v}`).join(' ')}`) + '\n';
  }
  return out;
}

/** `--list-rules`: the catalogue as a table. */
export function renderRuleList(rules: readonly RuleMeta[] = RULES, c: ChalkInstance = plain): string {
  let out = '';
  for (const r of rules) {
    out += `${c.bold(r.code.padEnd(9))} ${r.severity.padEnd(7)} ${r.name.padEnd(28)} ${r.title}\n`;
  }
  return out;
}

import path from 'node:path';
import { allFindings, compareCodes, summarize, type CheckReport, type Finding } from '../engine.js';
import { RULE_BY_CODE, type Severity } from '../rules.js';
import { escapeControl } from '../../core/text.js';

/** GitHub shows at most this many annotations of each level per step. */
export const ANNOTATION_CAP = 10;
/** `$GITHUB_STEP_SUMMARY` is capped at 1 MiB per step; stay well below. */
export const SUMMARY_CAP_BYTES = 900 * 1024;

const COMMAND: Record<Severity, 'error' | 'warning' | 'notice'> = { error: 'error', warning: 'warning', info: 'notice' };

function escapeData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

function relFile(file: string, baseDir: string): string {
  if (file === '-') return file;
  const rel = path.relative(baseDir, path.resolve(file));
  return rel.startsWith('..') || path.isAbsolute(rel) ? path.resolve(file) : rel.split(path.sep).join('/');
}

function annotation(level: Severity, file: string | undefined, title: string, rawMessage: string): string {
  // Log text is untrusted: no raw control characters reach the runner's log.
  const message = escapeControl(rawMessage);
  const props = [file !== undefined ? `file=${escapeProperty(file)}` : '', `title=${escapeProperty(title)}`].filter(Boolean).join(',');
  return `::${COMMAND[level]} ${props}::${escapeData(message)}\n`;
}

function title(f: Finding): string {
  const name = RULE_BY_CODE.get(f.code)?.name;
  return `${f.code}${name ? ` ${name}` : ''}`;
}

function located(f: Finding): string {
  const where = [f.sessionId !== undefined ? `session ${f.sessionId}` : '', f.seq !== undefined ? `seq ${f.seq}` : '', f.byteOffset !== undefined ? `byte ${f.byteOffset}` : '']
    .filter(Boolean)
    .join(', ');
  return `${where ? `${where}: ` : ''}${f.message}`;
}

/**
 * Workflow-command annotations, at most ANNOTATION_CAP per level: one per
 * finding when they fit, else one per rule (first occurrence + count), and a
 * final overflow notice when even the rules do not fit.
 */
export function renderGithubAnnotations(report: CheckReport, baseDir: string = process.cwd()): string {
  let out = '';
  const findings = allFindings(report);
  for (const level of ['error', 'warning', 'info'] as const) {
    const mine = findings.filter((f) => f.severity === level);
    if (mine.length === 0) continue;
    if (mine.length <= ANNOTATION_CAP) {
      for (const f of mine) out += annotation(level, relFile(f.file, baseDir), title(f), located(f));
      continue;
    }
    const byCode = new Map<string, Finding[]>();
    for (const f of mine) byCode.set(f.code, [...(byCode.get(f.code) ?? []), f]);
    const codes = [...byCode.keys()].sort(compareCodes);
    const room = codes.length <= ANNOTATION_CAP ? codes.length : ANNOTATION_CAP - 1;
    for (const code of codes.slice(0, room)) {
      const group = byCode.get(code)!;
      const first = group[0]!;
      const sessions = new Set(group.map((f) => f.sessionId ?? f.file)).size;
      const more = group.length > 1 ? ` (and ${group.length - 1} more ${code} finding${group.length === 2 ? '' : 's'} in ${sessions} session${sessions === 1 ? '' : 's'}; see the job summary)` : '';
      out += annotation(level, relFile(first.file, baseDir), title(first), located(first) + more);
    }
    if (room < codes.length) {
      const rest = codes.slice(room);
      const n = rest.reduce((a, c) => a + byCode.get(c)!.length, 0);
      out += annotation(level, undefined, `dsh check: ${n} more ${level} findings`, `${n} more ${level} finding(s) under ${rest.join(', ')} are not annotated (GitHub shows ${ANNOTATION_CAP} per level); see the job summary or the text report`);
    }
  }
  return out;
}

function mdCell(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f]/g, ' ').replace(/\|/g, '\\|').replace(/[<>]/g, (c) => (c === '<' ? '&lt;' : '&gt;')).replace(/`/g, "'");
}

/** Markdown for `$GITHUB_STEP_SUMMARY`: totals, per-rule counts, then findings until the size cap. */
export function renderGithubSummary(report: CheckReport, baseDir: string = process.cwd()): string {
  const sum = summarize(report);
  let md = `## dsh check\n\n`;
  md += `${sum.errors > 0 ? '❌' : sum.warnings > 0 ? '⚠️' : '✅'} **${sum.errors} errors, ${sum.warnings} warnings, ${sum.infos} info** in ${sum.sessions} sessions (${sum.loaded} loaded)\n\n`;
  const entries = Object.entries(sum.byCode);
  if (entries.length > 0) {
    md += `| rule | severity | findings | description |\n|---|---|---|---|\n`;
    for (const [code, n] of entries) {
      const meta = RULE_BY_CODE.get(code);
      md += `| ${code} | ${meta?.severity ?? ''} | ${n} | ${mdCell(meta?.title ?? '')} |\n`;
    }
    md += `\n### Findings\n\n| severity | rule | session | file | seq | message |\n|---|---|---|---|---|---|\n`;
    const all = allFindings(report);
    let shown = 0;
    let size = Buffer.byteLength(md);
    for (const f of all) {
      const row = `| ${f.severity} | ${f.code} | ${mdCell(f.sessionId ?? '')} | ${mdCell(relFile(f.file, baseDir))} | ${f.seq ?? ''} | ${mdCell(f.message.length > 500 ? f.message.slice(0, 499) + '…' : f.message)} |\n`;
      const rowBytes = Buffer.byteLength(row);
      if (size + rowBytes > SUMMARY_CAP_BYTES - 200) break;
      md += row;
      size += rowBytes;
      shown += 1;
    }
    if (shown < all.length) md += `\n_${all.length - shown} more findings omitted (summary size cap); run \`dsh check --format json\` for all._\n`;
  }
  return md;
}

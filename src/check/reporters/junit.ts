import { summarize, type CheckReport, type Finding } from '../engine.js';
import { RULES, type RuleMeta } from '../rules.js';

/** Escape text for XML 1.0 attributes and content; characters XML cannot carry become U+FFFD. */
export function xmlEscape(text: string): string {
  return text
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

export interface JunitOptions {
  /** Rules that get a testcase in every suite (default: the whole catalogue). */
  rules?: readonly RuleMeta[];
  /** Warnings count as failures (`--strict`). */
  failWarnings?: boolean;
}

function describe(f: Finding): string {
  const where = [f.seq !== undefined ? `seq ${f.seq}` : '', f.byteOffset !== undefined ? `byte ${f.byteOffset}` : ''].filter(Boolean).join(', ');
  return `${f.severity} ${f.code}${where ? ` [${where}]` : ''}: ${f.message}\nfile: ${f.file}\nhint: ${f.hint}${f.evidence ? `\nevidence: ${JSON.stringify(f.evidence)}` : ''}`;
}

function suite(name: string, file: string | undefined, findings: Finding[], rules: readonly RuleMeta[], failWarnings: boolean): { xml: string; tests: number; failures: number } {
  let failures = 0;
  let body = '';
  const codes = new Set(rules.map((r) => r.code));
  const extra = [...new Set(findings.map((f) => f.code))].filter((c) => !codes.has(c));
  const all = [...rules.map((r) => ({ code: r.code, name: r.name })), ...extra.map((c) => ({ code: c, name: c }))];
  for (const r of all) {
    const mine = findings.filter((f) => f.code === r.code);
    const failing = mine.filter((f) => f.severity === 'error' || (failWarnings && f.severity === 'warning'));
    const attrs = `classname="${xmlEscape(name)}" name="${xmlEscape(`${r.code} ${r.name}`)}"${file ? ` file="${xmlEscape(file)}"` : ''}`;
    if (mine.length === 0) {
      body += `    <testcase ${attrs}/>\n`;
      continue;
    }
    body += `    <testcase ${attrs}>\n`;
    if (failing.length > 0) {
      failures += 1;
      const first = failing[0]!;
      body += `      <failure type="${first.severity}" message="${xmlEscape(first.message)}">${xmlEscape(failing.map(describe).join('\n\n'))}</failure>\n`;
    }
    const rest = mine.filter((f) => !failing.includes(f));
    if (rest.length > 0) body += `      <system-out>${xmlEscape(rest.map(describe).join('\n\n'))}</system-out>\n`;
    body += `    </testcase>\n`;
  }
  const xml = `  <testsuite name="${xmlEscape(name)}" tests="${all.length}" failures="${failures}" errors="0" skipped="0"${file ? ` file="${xmlEscape(file)}"` : ''}>\n${body}  </testsuite>\n`;
  return { xml, tests: all.length, failures };
}

/** JUnit XML: one testsuite per session (plus one for root layout), one testcase per rule. */
export function renderJunit(report: CheckReport, options: JunitOptions = {}): string {
  const rules = options.rules ?? RULES;
  const failWarnings = options.failWarnings ?? false;
  let tests = 0;
  let failures = 0;
  let suites = '';
  if (report.layout.length > 0) {
    const layoutRules = rules.filter((r) => r.code === 'DSH-A11');
    const s = suite('root layout', undefined, report.layout, layoutRules, failWarnings);
    suites += s.xml;
    tests += s.tests;
    failures += s.failures;
  }
  for (const session of report.sessions) {
    const s = suite(session.sessionId ?? session.file, session.file, session.findings, rules, failWarnings);
    suites += s.xml;
    tests += s.tests;
    failures += s.failures;
  }
  const sum = summarize(report);
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="dsh check" tests="${tests}" failures="${failures}" errors="0">\n` +
    `  <!-- ${sum.errors} errors, ${sum.warnings} warnings, ${sum.infos} info in ${sum.sessions} sessions -->\n` +
    suites +
    `</testsuites>\n`
  );
}

import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResolved, discoverTargets, summarize, type CheckReport, type Finding, type SessionReport } from '../src/check/engine.js';
import { checkTargets } from '../src/check/pool.js';
import { RULES } from '../src/check/rules.js';
import { checkSarif, renderSarif } from '../src/check/reporters/sarif.js';
import { renderJunit, xmlEscape } from '../src/check/reporters/junit.js';
import { ANNOTATION_CAP, renderGithubAnnotations, renderGithubSummary } from '../src/check/reporters/github.js';
import { renderText } from '../src/check/reporters/text.js';
import { checkJson } from '../src/check/reporters/json.js';
import type { ResolvedTarget } from '../src/log/target.js';
import { MemorySource } from '../src/physical/source.js';
import { CORPUS, HAVE_CORPUS } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { baseEvents, clone, logText, type Ev } from './helpers/logtext.js';

// ---------------------------------------------------------------- a report built from small logs

async function sessionOf(name: string, text: string): Promise<SessionReport> {
  const target: ResolvedTarget = { path: path.join('/logs', name, 'session.jsonl'), rawPath: name, open: () => new MemorySource(name, Buffer.from(text)), layoutWarnings: [] };
  return checkResolved(target);
}

function mutate(fn: (e: any[]) => void, extra: Ev[] = []): Ev[] {
  const events = clone([...baseEvents(), ...extra]) as any[];
  fn(events);
  return events;
}

let report: CheckReport;

beforeAll(async () => {
  const sessions = [
    await sessionOf('clean', logText(baseEvents())),
    await sessionOf('gap', logText(mutate((e) => (e[5].seq = 6)))),
    await sessionOf('open', logText(baseEvents().slice(0, 30))),
    await sessionOf('hostile', logText(mutate(() => {}, [{ type: 'future/\u001b[31m<x & "y">,:%\n', data: {} }]))),
    await sessionOf('turns', logText(mutate((e) => (e[24].data.turn = 3)))),
  ];
  report = {
    tool: { name: 'dsh', version: '0.1.0' },
    sessions,
    layout: [{ code: 'DSH-A11', severity: 'error', file: '/logs/root/--w--/flat.jsonl', message: 'session artifact "/logs/root/--w--/flat.jsonl" uses the unsupported flat-file layout', hint: 'move it' }],
  };
});

/** Many findings of many rules, to exercise the GitHub caps. */
function bigReport(n: number, codes: string[]): CheckReport {
  const sessions: SessionReport[] = [];
  for (let i = 0; i < n; i++) {
    const code = codes[i % codes.length]!;
    const rule = RULES.find((r) => r.code === code)!;
    const f: Finding = { code, severity: rule.severity, sessionId: `s${i}`, file: `/logs/s${i}/session.jsonl`, seq: i, message: `problem ${i}`, hint: rule.hint };
    sessions.push({ file: f.file, sessionId: `s${i}`, loaded: true, findings: [f] });
  }
  return { tool: { name: 'dsh', version: '0.1.0' }, sessions, layout: [] };
}

// ---------------------------------------------------------------- optional validators

/**
 * The official SARIF 2.1.0 schema ships in `@microsoft/jest-sarif`
 * (lib/schemas/sarif-2.1.0-rtm.5.json, draft-04) and validates with
 * `ajv-draft-04` + `ajv-formats`. They are looked up in the project's
 * node_modules, then in $DSH_TEST_NODE_MODULES; absent, only the structural
 * tests run.
 */
function optionalRequire(): NodeJS.Require | undefined {
  const candidates = [createRequire(import.meta.url)];
  const extra = process.env['DSH_TEST_NODE_MODULES'];
  if (extra) candidates.push(createRequire(path.join(extra, '..', 'noop.js')));
  for (const req of candidates) {
    try {
      req.resolve('ajv-draft-04');
      req.resolve('ajv-formats');
      req.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json');
      return req;
    } catch {
      // try the next
    }
  }
  return undefined;
}
const REQ = optionalRequire();

function xmlRequire(): NodeJS.Require | undefined {
  const candidates = [createRequire(import.meta.url)];
  const extra = process.env['DSH_TEST_NODE_MODULES'];
  if (extra) candidates.push(createRequire(path.join(extra, '..', 'noop.js')));
  for (const req of candidates) {
    try {
      req.resolve('fast-xml-parser');
      return req;
    } catch {
      // next
    }
  }
  return undefined;
}
const XREQ = xmlRequire();

/**
 * A small XML 1.0 well-formedness checker (elements, attributes, comments,
 * declaration, entity references): enough to prove the JUnit output parses.
 * Returns the element tree as [name, attributes, children].
 */
type XNode = { name: string; attrs: Record<string, string>; children: XNode[]; text: string };
function parseXml(xml: string): XNode {
  let i = 0;
  const fail = (msg: string): never => {
    throw new Error(`XML not well-formed at ${i}: ${msg}`);
  };
  const decode = (s: string) => {
    if (/&(?!(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/.test(s)) fail(`bad entity in ${JSON.stringify(s.slice(0, 40))}`);
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(s)) fail('control character');
    return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
  };
  const skipWs = () => {
    while (i < xml.length && /\s/.test(xml[i]!)) i++;
  };
  if (xml.startsWith('<?xml')) {
    const end = xml.indexOf('?>');
    if (end < 0) fail('unterminated declaration');
    i = end + 2;
  }
  const stack: XNode[] = [];
  let root: XNode | undefined;
  while (i < xml.length) {
    if (xml.startsWith('<!--', i)) {
      const end = xml.indexOf('-->', i + 4);
      if (end < 0 || xml.slice(i + 4, end).includes('--')) fail('bad comment');
      i = end + 3;
      continue;
    }
    if (xml[i] === '<' && xml[i + 1] === '/') {
      const m = /^<\/([A-Za-z_][\w.-]*)\s*>/.exec(xml.slice(i));
      if (!m) fail('bad end tag');
      const open = stack.pop();
      if (!open || open.name !== m![1]) fail(`mismatched </${m![1]}>`);
      i += m![0].length;
      continue;
    }
    if (xml[i] === '<') {
      const m = /^<([A-Za-z_][\w.-]*)/.exec(xml.slice(i));
      if (!m) fail('bad start tag');
      i += m![0].length;
      const node: XNode = { name: m![1]!, attrs: {}, children: [], text: '' };
      for (;;) {
        skipWs();
        if (xml.startsWith('/>', i)) {
          i += 2;
          break;
        }
        if (xml[i] === '>') {
          i += 1;
          stack.push(node);
          break;
        }
        const a = /^([A-Za-z_][\w.-]*)\s*=\s*"([^"<]*)"/.exec(xml.slice(i));
        if (!a) fail('bad attribute');
        if (Object.hasOwn(node.attrs, a![1]!)) fail(`duplicate attribute ${a![1]}`);
        node.attrs[a![1]!] = decode(a![2]!);
        i += a![0].length;
      }
      const parent = stack[stack.length - (stack[stack.length - 1] === node ? 2 : 1)];
      if (parent) parent.children.push(node);
      else if (root) fail('second root element');
      else root = node;
      continue;
    }
    const next = xml.indexOf('<', i);
    const text = xml.slice(i, next < 0 ? xml.length : next);
    if (stack.length === 0 && text.trim() !== '') fail('text outside the root');
    if (stack.length > 0) stack[stack.length - 1]!.text += decode(text);
    i = next < 0 ? xml.length : next;
  }
  if (stack.length > 0) fail(`unclosed <${stack[stack.length - 1]!.name}>`);
  if (!root) fail('no root');
  return root!;
}

// ---------------------------------------------------------------- SARIF

describe('SARIF reporter', () => {
  it('is a SARIF 2.1.0 log with the catalogue as rules and stable ids', () => {
    const sarif = checkSarif(report, { baseDir: '/logs' }) as any;
    expect(sarif.version).toBe('2.1.0');
    expect(sarif.$schema).toMatch(/sarif-2\.1\.0/);
    expect(sarif.runs).toHaveLength(1);
    const run = sarif.runs[0];
    const rules = run.tool.driver.rules as any[];
    expect(rules.map((r) => r.id)).toEqual(RULES.map((r) => r.code));
    for (const r of rules) {
      expect(r.shortDescription.text.length).toBeGreaterThan(0);
      expect(['error', 'warning', 'note']).toContain(r.defaultConfiguration.level);
    }
    const results = run.results as any[];
    const findings = [...report.layout, ...report.sessions.flatMap((s) => s.findings)];
    expect(results).toHaveLength(findings.length);
    const prints = new Set<string>();
    for (const res of results) {
      expect(rules[res.ruleIndex].id).toBe(res.ruleId);
      expect(['error', 'warning', 'note']).toContain(res.level);
      expect(typeof res.message.text).toBe('string');
      const loc = res.locations[0];
      expect(loc.physicalLocation.artifactLocation.uri).not.toMatch(/^\//);
      if (res.properties.seq !== undefined) expect(loc.logicalLocations.map((l: any) => l.name)).toContain(`seq ${res.properties.seq}`);
      prints.add(res.partialFingerprints['dshFinding/v1']);
    }
    expect(prints.size).toBe(results.length);
    expect(run.originalUriBaseIds.SRCROOT.uri).toBe('file:///logs/');
    // Stable across runs.
    expect(renderSarif(report, { baseDir: '/logs' })).toBe(renderSarif(report, { baseDir: '/logs' }));
  });

  it('carries seq and byte offset in logical locations and properties', () => {
    const sarif = checkSarif(report, { baseDir: '/logs' }) as any;
    const gap = sarif.runs[0].results.find((r: any) => r.ruleId === 'DSH-A9');
    expect(gap.properties.byteOffset).toBeGreaterThan(0);
    expect(gap.locations[0].logicalLocations.map((l: any) => l.name)).toContain(`byte ${gap.properties.byteOffset}`);
    expect(gap.locations[0].physicalLocation.artifactLocation).toEqual({ uri: 'gap/session.jsonl', uriBaseId: 'SRCROOT' });
  });

  it.skipIf(!REQ)('validates against the official SARIF 2.1.0 JSON schema', async () => {
    const Ajv = REQ!('ajv-draft-04');
    const addFormats = REQ!('ajv-formats');
    const schema = JSON.parse(readFileSync(REQ!.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8'));
    const ajv = new (Ajv.default ?? Ajv)({ strict: false, allErrors: true, unicodeRegExp: false, logger: false });
    (addFormats.default ?? addFormats)(ajv);
    const validate = ajv.compile(schema);
    const docs = [checkSarif(report, { baseDir: '/logs' }), checkSarif(report, { baseDir: '/elsewhere' }), checkSarif(bigReport(30, ['DSH-A8', 'DSH-R1', 'DSH-B7']))];
    if (HAVE_CORPUS) {
      const d = discoverTargets([CORPUS]);
      docs.push(checkSarif({ tool: { name: 'dsh', version: '0.1.0' }, layout: d.layout, sessions: await checkTargets(d.targets, { jobs: 1 }) }));
    }
    for (const doc of docs) {
      const ok = validate(doc);
      expect(validate.errors ?? [], JSON.stringify(validate.errors?.slice(0, 3))).toEqual([]);
      expect(ok).toBe(true);
    }
  });
  if (!REQ) {
    it('official SARIF schema validation skipped', () => {
      console.warn('SARIF schema validation skipped: add devDependencies ajv-draft-04, ajv-formats and @microsoft/jest-sarif (ships sarif-2.1.0-rtm.5.json), or set DSH_TEST_NODE_MODULES');
    });
  }
});

// ---------------------------------------------------------------- JUnit

describe('JUnit reporter', () => {
  it('is well-formed XML: one testsuite per session, one testcase per rule', () => {
    const xml = renderJunit(report);
    const root = parseXml(xml);
    expect(root.name).toBe('testsuites');
    const suites = root.children.filter((c) => c.name === 'testsuite');
    expect(suites).toHaveLength(report.sessions.length + 1);
    for (const s of suites.slice(1)) {
      expect(s.children.map((c) => c.name).every((n) => n === 'testcase')).toBe(true);
      expect(s.children.length).toBe(RULES.length);
      expect(Number(s.attrs['tests'])).toBe(s.children.length);
      expect(Number(s.attrs['failures'])).toBe(s.children.filter((c) => c.children.some((x) => x.name === 'failure')).length);
    }
    const gap = suites.find((s) => s.attrs['file']?.includes('/gap/'))!;
    const failing = gap.children.filter((c) => c.children.some((x) => x.name === 'failure'));
    expect(failing.map((c) => c.attrs['name'])).toEqual(['DSH-A9 seq-gap']);
    // A warning passes unless --strict.
    const open = suites.find((s) => s.attrs['file']?.includes('/open/'))!;
    expect(open.attrs['failures']).toBe('0');
    const strict = parseXml(renderJunit(report, { failWarnings: true }));
    expect(strict.children.find((s) => s.attrs['file']?.includes('/open/'))!.attrs['failures']).toBe('1');
    // Hostile text survives escaping.
    const hostile = suites.find((s) => s.attrs['file']?.includes('/hostile/'))!;
    const b6 = hostile.children.find((c) => c.attrs['name'] === 'DSH-B6 unknown-type')!;
    expect(b6.children[0]!.attrs['message']).toContain('future/\ufffd[31m<x & "y">');
    expect(Number(root.attrs['tests'])).toBe(suites.reduce((a, s) => a + Number(s.attrs['tests']), 0));
  });
  it('xmlEscape removes what XML cannot carry', () => {
    expect(xmlEscape('a\u0000b\u001bc<&>"\'\ud800')).toBe('a\ufffdb\ufffdc&lt;&amp;&gt;&quot;&apos;\ufffd');
  });
  it.skipIf(!XREQ)('fast-xml-parser agrees it is valid', () => {
    const { XMLValidator } = XREQ!('fast-xml-parser');
    expect(XMLValidator.validate(renderJunit(report))).toBe(true);
    expect(XMLValidator.validate(renderJunit(bigReport(40, ['DSH-A8', 'DSH-R1'])))).toBe(true);
  });
  it('the own checker rejects broken XML', () => {
    expect(() => parseXml('<a><b></a>')).toThrow(/mismatched/);
    expect(() => parseXml('<a x="1 & 2"/>')).toThrow(/bad entity/);
    expect(() => parseXml('<a/><b/>')).toThrow(/second root/);
  });
});

// ---------------------------------------------------------------- GitHub

describe('GitHub reporter', () => {
  const count = (out: string, level: string) => out.split('\n').filter((l) => l.startsWith(`::${level} `)).length;

  it('one annotation per finding when they fit, escaped', () => {
    const out = renderGithubAnnotations(report, '/logs');
    expect(count(out, 'error')).toBe(3);
    expect(out).toContain('::error file=gap/session.jsonl,title=DSH-A9 seq-gap::session x, byte 598: corrupt session log: seq gap');
    const hostile = out.split('\n').find((l) => l.includes('DSH-B6'))!;
    expect(hostile).toContain('future/\\u001b[31m<x & "y">,:%25\\n');
    expect(hostile).not.toContain('\u001b');
    expect(out.split('\n').every((l) => l === '' || l.startsWith('::'))).toBe(true);
  });

  it('stays under the per-level cap and summarizes the rest', () => {
    const codes = RULES.filter((r) => r.severity === 'error').map((r) => r.code);
    const big = bigReport(500, [...codes, 'DSH-R1', 'DSH-A10', 'DSH-E5', 'DSH-B7']);
    const out = renderGithubAnnotations(big, '/logs');
    expect(count(out, 'error')).toBe(ANNOTATION_CAP);
    expect(count(out, 'warning')).toBeLessThanOrEqual(ANNOTATION_CAP);
    expect(count(out, 'notice')).toBeLessThanOrEqual(ANNOTATION_CAP);
    expect(out).toMatch(/::error title=dsh check%3A \d+ more error findings::/);
    expect(out).toMatch(/and \d+ more DSH-R1 findings in \d+ sessions/);
    // Few rules, many findings: one annotation per rule, no overflow notice.
    const few = renderGithubAnnotations(bigReport(200, ['DSH-A8', 'DSH-A9']), '/logs');
    expect(count(few, 'error')).toBe(2);
  });

  it('writes a markdown summary under the size cap', () => {
    const md = renderGithubSummary(bigReport(20000, ['DSH-A8', 'DSH-R1']), '/logs');
    expect(Buffer.byteLength(md)).toBeLessThan(1024 * 1024);
    expect(md).toMatch(/^## dsh check/);
    expect(md).toMatch(/more findings omitted/);
    const small = renderGithubSummary(report, '/logs');
    expect(small).toContain('| DSH-A9 | error | 1 |');
    expect(small).not.toContain('\u001b');
  });

  describe('CLI --format github', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-gh-'));
      mkdirSync(path.join(dir, 'root', '--w--', 'x'), { recursive: true });
      writeFileSync(path.join(dir, 'root', '--w--', 'x', 'session.jsonl'), logText(mutate((e) => (e[5].seq = 6))));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    it('prints annotations plus the text report and appends the step summary', async () => {
      const summary = path.join(dir, 'summary.md');
      const r = await runInProcess(['check', '--format', 'github', path.join(dir, 'root')], { GITHUB_STEP_SUMMARY: summary });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^::error file=.*title=DSH-A9 seq-gap::/m);
      expect(r.stdout).toMatch(/1 error, 0 warnings, 0 info in 1 session/);
      expect(existsSync(summary)).toBe(true);
      expect(readFileSync(summary, 'utf8')).toContain('| DSH-A9 | error | 1 |');
    });
    it('other formats through the CLI', async () => {
      const sarif = JSON.parse((await runInProcess(['check', '--format', 'sarif', path.join(dir, 'root')])).stdout);
      expect(sarif.runs[0].results[0].ruleId).toBe('DSH-A9');
      const junit = (await runInProcess(['check', '--format', 'junit', path.join(dir, 'root')])).stdout;
      expect(parseXml(junit).children).toHaveLength(1);
      const filtered = JSON.parse((await runInProcess(['check', '--format', 'sarif', '--rules', 'A9,A10', path.join(dir, 'root')])).stdout);
      expect(filtered.runs[0].tool.driver.rules.map((r: any) => r.id)).toEqual(['DSH-A9', 'DSH-A10']);
      expect(filtered.runs[0].results[0].ruleIndex).toBe(0);
    });
  });
});

// ---------------------------------------------------------------- text and JSON

describe('text and JSON reporters', () => {
  it('text groups by session, escapes log text, ends with a summary line', () => {
    const out = renderText(report);
    expect(out).not.toContain('\u001b');
    expect(out).toContain('\\u001b[31m');
    expect(out).toMatch(/^root layout$/m);
    expect(out.indexOf('gap/session.jsonl')).toBeLessThan(out.indexOf('open/session.jsonl'));
    expect(out).not.toContain('/logs/clean/');
    expect(out.trimEnd().split('\n').slice(-2)[0]).toMatch(/^✖ 3 errors, 2 warnings, 0 info in 5 sessions \(3 loaded, 1 clean\)$/);
  });
  it('JSON is the engine data with a summary', () => {
    const doc = JSON.parse(JSON.stringify(checkJson(report, { exitCode: 1 })));
    expect(doc.schema).toBe('dsh-check/1');
    expect(doc.summary).toEqual(JSON.parse(JSON.stringify(summarize(report))));
    expect(doc.exitCode).toBe(1);
    expect(doc.sessions).toHaveLength(5);
  });
});

import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { allFindings, type CheckReport, type Finding } from '../engine.js';
import { RULES, type RuleMeta, type Severity } from '../rules.js';
import { toJson } from '../../core/json.js';
import { BEHAVIOUR_OPTIONS, isBehaviourCode } from '../behaviour.js';

/** A rule's help: its hint, and for a behaviour rule its options with their defaults. */
function helpText(r: RuleMeta): string {
  if (!isBehaviourCode(r.code)) return r.hint;
  const opts = Object.entries(BEHAVIOUR_OPTIONS[r.code]).map(([k, o]) => `${k} (default ${Array.isArray(o.default) ? o.default.join(',') : o.default}): ${o.doc}`);
  return opts.length > 0 ? `${r.hint}. Options (--rule ${r.code}:option=value): ${opts.join('; ')}.` : r.hint;
}

const LEVEL: Record<Severity, 'error' | 'warning' | 'note'> = { error: 'error', warning: 'warning', info: 'note' };

export interface SarifOptions {
  /** Directory artifact URIs are made relative to (`%SRCROOT%`); default the process cwd. */
  baseDir?: string;
  /** Rules to describe (default: the whole catalogue). */
  rules?: readonly RuleMeta[];
}

function encodePath(rel: string): string {
  return rel.split(path.sep).map(encodeURIComponent).join('/');
}

function artifactLocation(file: string, baseDir: string): { uri: string; uriBaseId?: string } {
  if (file === '-') return { uri: 'stdin' };
  const abs = path.resolve(file);
  const rel = path.relative(baseDir, abs);
  if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return { uri: encodePath(rel), uriBaseId: 'SRCROOT' };
  return { uri: pathToFileURL(abs).href };
}

/** Stable across runs: rule, session, artifact path relative to the base, seq. */
export function fingerprint(f: Finding, baseDir: string): string {
  const file = f.file === '-' ? '-' : path.relative(baseDir, path.resolve(f.file));
  return createHash('sha256')
    .update([f.code, f.sessionId ?? '', file, f.seq ?? ''].join('\u0000'))
    .digest('hex')
    .slice(0, 32);
}

/** SARIF 2.1.0 log: one run, the catalogue in tool.driver.rules, seq/byte offset as logical locations. */
export function checkSarif(report: CheckReport, options: SarifOptions = {}): unknown {
  const baseDir = path.resolve(options.baseDir ?? process.cwd());
  const rules = options.rules ?? RULES;
  const index = new Map(rules.map((r, i) => [r.code, i]));
  const results = allFindings(report).map((f) => {
    const logical: Record<string, unknown>[] = [];
    const session = f.sessionId ?? path.basename(path.dirname(f.file));
    if (f.seq !== undefined) logical.push({ name: `seq ${f.seq}`, fullyQualifiedName: `${session}/seq/${f.seq}`, kind: 'element' });
    if (f.byteOffset !== undefined) {
      const what = f.offsetIn === 'plaintext' ? 'plaintext-byte' : 'byte';
      logical.push({ name: `${what} ${f.byteOffset}`, fullyQualifiedName: `${session}/${what}/${f.byteOffset}`, kind: 'element' });
    }
    const location: Record<string, unknown> = { physicalLocation: { artifactLocation: artifactLocation(f.file, baseDir) } };
    if (logical.length > 0) location['logicalLocations'] = logical;
    const properties: Record<string, unknown> = {};
    if (f.sessionId !== undefined) properties['sessionId'] = f.sessionId;
    if (f.seq !== undefined) properties['seq'] = f.seq;
    if (f.byteOffset !== undefined) {
      properties['byteOffset'] = f.byteOffset;
      properties['offsetIn'] = f.offsetIn ?? 'file';
    }
    properties['hint'] = f.hint;
    if (f.evidence) properties['evidence'] = f.evidence;
    const result: Record<string, unknown> = {
      ruleId: f.code,
      level: LEVEL[f.severity],
      message: { text: f.message },
      locations: [location],
      partialFingerprints: { 'dshFinding/v1': fingerprint(f, baseDir) },
      properties,
    };
    const i = index.get(f.code);
    if (i !== undefined) result['ruleIndex'] = i;
    return result;
  });
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'dsh',
            semanticVersion: report.tool.version,
            version: report.tool.version,
            rules: rules.map((r) => ({
              id: r.code,
              name: r.name,
              shortDescription: { text: r.title },
              fullDescription: { text: `${r.title}. Source: ${r.source}.` },
              help: { text: helpText(r) },
              defaultConfiguration: { level: LEVEL[r.severity] },
              properties: { source: r.source, tags: ['dsh', r.code.replace(/^DSH-([A-Z]).*$/, 'family-$1')] },
            })),
          },
        },
        originalUriBaseIds: { SRCROOT: { uri: pathToFileURL(baseDir + path.sep).href } },
        columnKind: 'unicodeCodePoints',
        results,
      },
    ],
  };
}

/** `dsh check --format sarif` (SARIF 2.1.0). */
export function renderSarif(report: CheckReport, options: SarifOptions = {}): string {
  return toJson(checkSarif(report, options), null, 2) + '\n';
}

/**
 * `dsh check`'s rule configuration, as ESLint and knip users expect it: rule levels and options from a
 * config file (`dsh.config.json`, or the `dsh` key of `package.json`, the nearest one found upward from
 * the working directory), then `--rule CODE=off|info|warning|error` and `--rule CODE:option=value` on the
 * command line, which win. With no config and no flag, nothing changes: the behaviour rules (family X)
 * are off and every other rule keeps its catalogue severity.
 *
 * ```json
 * { "behaviour": true, "failOn": "warning",
 *   "rules": { "DSH-X6": ["warning", { "minBytes": 8192 }], "DSH-X2": "off", "DSH-R1": "info" } }
 * ```
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../core/errors.js';
import { BEHAVIOUR_CODES, BEHAVIOUR_OPTIONS, defaultOptions, isBehaviourCode, type BehaviourSettings, type OptionValue } from './behaviour.js';
import { expandCodes, RULE_BY_CODE, type Severity } from './rules.js';
import type { CheckReport, Finding } from './engine.js';

export type RuleLevel = Severity | 'off';
export type FailOn = Severity | 'none';

export interface RuleSetting {
  level?: RuleLevel;
  options?: Record<string, OptionValue>;
}

/** The configuration a check runs with. */
export interface CheckConfig {
  /** The file it was read from (`dsh.config.json` or `package.json`); null: none. */
  file: string | null;
  /** Every behaviour rule on, at its catalogue level unless `rules` sets one. */
  behaviour: boolean;
  /** The lowest severity that fails the check; absent: `error` (or `warning` with `--strict`). */
  failOn?: FailOn;
  /** By rule code. */
  rules: Record<string, RuleSetting>;
}

export const CONFIG_FILE = 'dsh.config.json';
const LEVELS: readonly string[] = ['off', 'info', 'warning', 'error'];
const FAIL_ON: readonly string[] = ['error', 'warning', 'info', 'none'];
const KEYS = new Set(['behaviour', 'failOn', 'rules', '$schema']);

export function emptyConfig(): CheckConfig {
  return { file: null, behaviour: false, rules: {} };
}

function level(value: unknown, where: string): RuleLevel {
  const v = value === 'warn' ? 'warning' : value;
  if (typeof v !== 'string' || !LEVELS.includes(v)) throw new UsageError(`${where}: level must be one of off, info, warning, error; got ${JSON.stringify(value)}`);
  return v as RuleLevel;
}

/** One rule code (case-insensitive, `DSH-` optional) or family (`X`). */
function codesOf(spec: string, where: string): string[] {
  const { codes, unknown } = expandCodes(spec);
  if (unknown.length > 0 || codes.size === 0) throw new UsageError(`${where}: unknown rule code ${JSON.stringify(spec)} (see dsh check --list-rules)`);
  return [...codes];
}

function optionValue(code: string, name: string, value: unknown, where: string): OptionValue {
  const spec = isBehaviourCode(code) ? BEHAVIOUR_OPTIONS[code][name] : undefined;
  if (!spec) {
    const known = isBehaviourCode(code) ? Object.keys(BEHAVIOUR_OPTIONS[code]) : [];
    throw new UsageError(`${where}: ${code} has no option ${JSON.stringify(name)}${known.length > 0 ? ` (options: ${known.join(', ')})` : ' (it takes none)'}`);
  }
  if (spec.kind === 'list') {
    const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value;
    if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw new UsageError(`${where}: ${code}:${name} must be a list of names; got ${JSON.stringify(value)}`);
    return [...list] as string[];
  }
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < (spec.min ?? 0)) {
    throw new UsageError(`${where}: ${code}:${name} must be an integer >= ${spec.min ?? 0}; got ${JSON.stringify(value)}`);
  }
  return n;
}

function setRule(config: CheckConfig, code: string, setting: RuleSetting): void {
  const prev = config.rules[code] ?? {};
  config.rules[code] = {
    ...((setting.level ?? prev.level) !== undefined ? { level: (setting.level ?? prev.level)! } : {}),
    ...(prev.options || setting.options ? { options: { ...prev.options, ...setting.options } } : {}),
  };
}

/** Validate a config document (the file's JSON, or `package.json#dsh`). Throws UsageError naming `where`. */
export function parseConfig(doc: unknown, where: string, file: string | null = null): CheckConfig {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new UsageError(`${where}: the config must be a JSON object`);
  const o = doc as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!KEYS.has(k)) throw new UsageError(`${where}: unknown key ${JSON.stringify(k)} (known: behaviour, failOn, rules)`);
  const config: CheckConfig = { file, behaviour: false, rules: {} };
  if (o['behaviour'] !== undefined) {
    if (typeof o['behaviour'] !== 'boolean') throw new UsageError(`${where}: "behaviour" must be true or false`);
    config.behaviour = o['behaviour'];
  }
  if (o['failOn'] !== undefined) {
    if (typeof o['failOn'] !== 'string' || !FAIL_ON.includes(o['failOn'])) throw new UsageError(`${where}: "failOn" must be one of error, warning, info, none; got ${JSON.stringify(o['failOn'])}`);
    config.failOn = o['failOn'] as FailOn;
  }
  const rules = o['rules'];
  if (rules !== undefined) {
    if (rules === null || typeof rules !== 'object' || Array.isArray(rules)) throw new UsageError(`${where}: "rules" must be an object of rule code to level`);
    for (const [spec, value] of Object.entries(rules as Record<string, unknown>)) {
      const at = `${where}: rules.${spec}`;
      const [lv, opts] = Array.isArray(value) ? value : [value, undefined];
      if (Array.isArray(value) && (value.length < 1 || value.length > 2)) throw new UsageError(`${at}: expected a level or [level, options]`);
      const l = level(lv, at);
      if (opts !== undefined && (opts === null || typeof opts !== 'object' || Array.isArray(opts))) throw new UsageError(`${at}: options must be an object`);
      for (const code of codesOf(spec, at)) {
        const options = opts ? Object.fromEntries(Object.entries(opts as Record<string, unknown>).map(([k, v]) => [k, optionValue(code, k, v, at)])) : undefined;
        setRule(config, code, { level: l, ...(options ? { options } : {}) });
      }
    }
  }
  return config;
}

/**
 * The nearest config upward from `cwd`: `dsh.config.json`, else a `package.json` with a `dsh` key, in the
 * same directory; the first directory that has either wins. None: the empty config.
 */
export function findConfig(cwd: string): CheckConfig {
  let dir = path.resolve(cwd);
  for (;;) {
    const own = path.join(dir, CONFIG_FILE);
    if (existsSync(own)) return readConfigFile(own);
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg)) {
      // A package.json that cannot be read is not a config (only its `dsh` key would be).
      let doc: unknown;
      try {
        doc = readJson(pkg);
      } catch {
        doc = null;
      }
      if (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && (doc as Record<string, unknown>)['dsh'] !== undefined) {
        return parseConfig((doc as Record<string, unknown>)['dsh'], `${pkg}#dsh`, pkg);
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return emptyConfig();
    dir = up;
  }
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read config ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, 'io');
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file}: not valid JSON (${(error as Error).message})`);
  }
}

/** A config file named on the command line (`--config`): `dsh.config.json`'s shape, or a package.json's `dsh` key. */
export function readConfigFile(file: string): CheckConfig {
  const abs = path.resolve(file);
  const doc = readJson(abs);
  if (path.basename(abs) === 'package.json') {
    const d = (doc as Record<string, unknown> | null)?.['dsh'];
    if (d === undefined) throw new UsageError(`${abs}: no "dsh" key`);
    return parseConfig(d, `${abs}#dsh`, abs);
  }
  return parseConfig(doc, abs, abs);
}

/** Apply one `--rule` flag: `CODE=level` or `CODE:option=value`. */
export function applyRuleFlag(config: CheckConfig, flag: string): void {
  const where = `--rule ${flag}`;
  const eq = flag.indexOf('=');
  if (eq <= 0) throw new UsageError(`${where}: expected CODE=off|info|warning|error or CODE:option=value`);
  const left = flag.slice(0, eq).trim();
  const value = flag.slice(eq + 1).trim();
  const colon = left.indexOf(':');
  if (colon === -1) {
    const l = level(value, where);
    for (const code of codesOf(left, where)) setRule(config, code, { level: l });
    return;
  }
  const name = left.slice(colon + 1).trim();
  for (const code of codesOf(left.slice(0, colon).trim(), where)) setRule(config, code, { options: { [name]: optionValue(code, name, value, where) } });
}

/** The behaviour rules a config turns on, with their options (defaults filled in); undefined: none. */
export function behaviourSettings(config: CheckConfig): BehaviourSettings | undefined {
  const out: BehaviourSettings = {};
  for (const code of BEHAVIOUR_CODES) {
    const r = config.rules[code];
    const on = r?.level !== undefined ? r.level !== 'off' : config.behaviour;
    if (on) out[code] = { ...defaultOptions(code), ...r?.options };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The level a rule runs at under a config ('off': dropped). */
export function levelOf(config: CheckConfig, code: string): RuleLevel {
  const set = config.rules[code]?.level;
  if (set !== undefined) return set;
  if (isBehaviourCode(code) && !config.behaviour) return 'off';
  return RULE_BY_CODE.get(code)?.severity ?? 'error';
}

/** Findings at the levels a config sets: a rule set `off` is dropped, one set to a level reports at it. */
export function applyLevels(findings: readonly Finding[], config: CheckConfig): Finding[] {
  const out: Finding[] = [];
  for (const f of findings) {
    const l = config.rules[f.code]?.level;
    if (l === 'off') continue;
    out.push(l === undefined || l === f.severity ? f : { ...f, severity: l });
  }
  return out;
}

export function applyLevelsToReport(report: CheckReport, config: CheckConfig): CheckReport {
  if (Object.values(config.rules).every((r) => r.level === undefined)) return report;
  return { ...report, layout: applyLevels(report.layout, config), sessions: report.sessions.map((s) => ({ ...s, findings: applyLevels(s.findings, config) })) };
}

/** `--print-config`: the file, whether behaviour rules run, the failing level, and every behaviour rule's level and options (plus other rules the config sets). */
export function printableConfig(config: CheckConfig, failOn: FailOn): Record<string, unknown> {
  const settings = behaviourSettings(config) ?? {};
  const rules: Record<string, unknown> = {};
  for (const code of BEHAVIOUR_CODES) rules[code] = { level: levelOf(config, code), options: settings[code] ?? { ...defaultOptions(code), ...config.rules[code]?.options } };
  for (const [code, r] of Object.entries(config.rules)) if (!isBehaviourCode(code) && r.level !== undefined) rules[code] = { level: r.level };
  return { file: config.file, behaviour: config.behaviour, failOn, rules };
}

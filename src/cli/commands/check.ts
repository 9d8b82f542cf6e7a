import { appendFileSync, existsSync } from 'node:fs';
import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, envFor, EXIT, jobsFor, parseCount, resolveOptionsFor, type CommonOptions } from '../shared.js';
import { UsageError, defaultRoot, readStdin, VERSION, toJson } from '../../api/log.js';
import {
  discoverTargets,
  exitCodeFor,
  selectFindings,
  summarize,
  type CheckReport,
  checkTargets,
  expandCodes,
  RULES,
  renderRuleList,
  renderText,
  renderJson,
  renderSarif,
  renderJunit,
  renderGithubAnnotations,
  renderGithubSummary,
  applyLevelsToReport,
  applyRuleFlag,
  behaviourSettings,
  findConfig,
  levelOf,
  printableConfig,
  readConfigFile,
  BEHAVIOUR_CODES,
  type CheckConfig,
  type FailOn,
} from '../../api/check.js';
import { secretsOptions } from './secrets.js';

/** Rules that run only with --secrets (left out of SARIF/JUnit rule lists otherwise). */
const SECRET_RULES = new Set(['DSH-K1', 'DSH-K2']);

type Format = 'text' | 'json' | 'sarif' | 'junit' | 'github';

interface CheckOptions extends CommonOptions {
  rules?: string;
  ignore?: string;
  strict?: boolean;
  maxWarnings?: string;
  exitZero?: boolean;
  format: Format;
  listRules?: boolean;
  hints: boolean;
  secrets?: boolean;
  pattern: string[];
  paths?: boolean;
  detectors?: string;
  behaviour?: boolean;
  rule: string[];
  failOn?: FailOn;
  config?: string;
  printConfig?: boolean;
}

const BEHAVIOUR_RULES = new Set<string>(BEHAVIOUR_CODES);

/** The config in use: `--config FILE`, else the nearest dsh.config.json or package.json#dsh upward from the cwd; then the flags. */
function configFor(opts: CheckOptions): CheckConfig {
  const config = opts.config !== undefined ? readConfigFile(opts.config) : findConfig(process.cwd());
  if (opts.behaviour) config.behaviour = true;
  for (const flag of opts.rule) applyRuleFlag(config, flag);
  if (opts.failOn !== undefined) config.failOn = opts.failOn;
  return config;
}

function codesOption(value: string | undefined, flag: string): Set<string> | undefined {
  if (value === undefined) return undefined;
  const { codes, unknown } = expandCodes(value);
  if (unknown.length > 0) throw new UsageError(`${flag}: unknown rule code(s) ${unknown.join(', ')} (see dsh check --list-rules)`);
  return codes;
}

export function registerCheck(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('check')
    .description('CI-grade validation of session logs: DSH load/refusal rules, restore and surface rules, invariant replays, fork seeds, crash state')
    .argument('[targets...]', 'artifact files, session directories, session roots (or directories holding roots), session ids (under --root), or - for stdin; default: the session root')
    .option('--rules <codes>', 'only these rules (comma-separated codes or families, e.g. A,DSH-E5,S10)')
    .option('--ignore <codes>', 'drop these rules (codes or families)')
    .option('--strict', 'warnings fail too')
    .option('--max-warnings <n>', 'fail when there are more than n warnings')
    .option('--exit-zero', 'always exit 0 when the check ran (report only)')
    .addOption(new Option('--format <format>', 'report format').choices(['text', 'json', 'sarif', 'junit', 'github']).default('text'))
    .option('--list-rules', 'print the rule catalogue and exit')
    .option('--no-hints', 'text format: omit the hint line under each finding')
    .option('--secrets', 'also run the secret rules: DSH-K1 (warning) a secret on the current surface, DSH-K2 (info) a secret sent to the provider')
    .option('--pattern <regex>', 'with --secrets: extra secret pattern (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--paths', 'with --secrets: also home directory user names and the session cwd')
    .option('--detectors <names>', 'with --secrets: a subset of the built-in detectors')
    .option('--behaviour', 'also run the behaviour rules (DSH-X1..X12: loops, redundant reads, error spirals, retry storms, carried results, compaction thrash, interrupted side effects, unoffered tools, invalid arguments, header changes that broke the prompt cache)')
    .option('--rule <rule>', 'CODE=off|info|warning|error sets a rule\'s level (a behaviour rule given a level runs); CODE:option=value sets a threshold (repeatable; wins over the config file)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .addOption(new Option('--fail-on <level>', 'the lowest severity that fails the check (default error)').choices(['error', 'warning', 'info', 'none']))
    .option('--config <file>', 'read the rule config from this file (default: the nearest dsh.config.json, or package.json with a "dsh" key, upward from the working directory)')
    .option('--print-config', 'print the rule config in use (JSON) and exit');
  addCommon(cmd, { json: 'same as --format json' });
  cmd.addHelpText(
    'after',
    `
Exit codes: 0 clean (or only findings below the failing level), 1 findings at a failing level
(errors; warnings with --strict or over --max-warnings; whatever --fail-on names), 2 usage or I/O
error (a bad --rule or config file too). Rule config: dsh.config.json or package.json's "dsh" key,
the nearest upward from the working directory; --print-config shows it.
Severity: error = DSH refuses or fails to load the log; warning = DSH loads it but something is
lost, repaired, or breaks an opt-in DSH invariant; info = worth knowing.

Examples:
  dsh check ~/.dsh/sessions
  dsh check --strict --format sarif ~/.dsh/sessions > dsh.sarif
  dsh check --behaviour --rule DSH-X6:minBytes=8192 --rule X2=off --exit-zero fixtures/incident`,
  );
  cmd.action(
    action(io, setExit, async (targets: string[], opts: CheckOptions) => {
      const env = envFor(io, opts);
      if (opts.listRules) {
        if (opts.json || opts.format === 'json') await writeOut(io.stdout, toJson({ rules: RULES }) + '\n');
        else await writeOut(io.stdout, renderRuleList(RULES, env.c));
        return EXIT.ok;
      }
      const config = configFor(opts);
      const failOn: FailOn = config.failOn ?? (opts.strict ? 'warning' : 'error');
      if (opts.printConfig) {
        await writeOut(io.stdout, toJson(printableConfig(config, failOn), null, 2) + '\n');
        return EXIT.ok;
      }
      const behaviour = behaviourSettings(config);
      const format: Format = opts.json ? 'json' : opts.format;
      const only = codesOption(opts.rules, '--rules');
      const ignore = codesOption(opts.ignore, '--ignore');
      const maxWarnings = opts.maxWarnings !== undefined ? parseCount(opts.maxWarnings, '--max-warnings') : undefined;
      if (!opts.secrets && (opts.pattern.length > 0 || opts.paths || opts.detectors)) throw new UsageError('--pattern, --paths and --detectors need --secrets');
      const secrets = opts.secrets ? secretsOptions(opts) : undefined;
      const jobs = jobsFor(opts, io.env);
      let inputs = targets;
      if (inputs.length === 0) {
        const root = opts.root ?? defaultRoot(io.env);
        if (!existsSync(root)) throw new UsageError(`session root ${root} does not exist (name targets, or set --root)`, 'io');
        inputs = [root];
      }
      if (inputs.filter((t) => t === '-').length > 1) throw new UsageError('- (stdin) can be named only once');
      const stdin = inputs.includes('-') ? await readStdin() : undefined;
      const discovery = discoverTargets(inputs, resolveOptionsFor(opts, stdin));
      if (discovery.targets.length === 0 && discovery.layout.length === 0) {
        throw new UsageError(`no session artifacts (session.jsonl, session.jsonl.zstd) found under ${inputs.join(', ')}`, 'io');
      }
      const progress = Boolean(io.stderr.isTTY) && discovery.targets.length > 1;
      const sessions = await checkTargets(discovery.targets, {
        jobs,
        decoder: opts.decoder ?? 'auto',
        ...(secrets ? { secrets } : {}),
        ...(behaviour ? { behaviour } : {}),
        ...(progress ? { onProgress: (done: number, total: number) => void io.stderr.write(`\rdsh check: ${done}/${total} sessions`) } : {}),
      });
      if (progress) io.stderr.write('\r\u001b[K');
      const full: CheckReport = { tool: { name: 'dsh', version: VERSION }, sessions, layout: discovery.layout };
      const sel = { ...(only ? { only } : {}), ...(ignore ? { ignore } : {}) };
      const report = selectFindings(applyLevelsToReport(full, config), sel);
      const summary = summarize(report);
      const verdict = { ...(config.failOn !== undefined ? { failOn: config.failOn } : {}), ...(opts.strict ? { strict: true } : {}), ...(maxWarnings !== undefined ? { maxWarnings } : {}), ...(opts.exitZero ? { exitZero: true } : {}) };
      const code = exitCodeFor(summary, verdict);
      const rules = RULES.filter(
        (r) => (!only || only.has(r.code)) && !ignore?.has(r.code) && (secrets || !SECRET_RULES.has(r.code)) && (BEHAVIOUR_RULES.has(r.code) ? behaviour?.[r.code as keyof typeof behaviour] !== undefined : levelOf(config, r.code) !== 'off'),
      );
      switch (format) {
        case 'json':
          await writeOut(io.stdout, renderJson(report, { exitCode: code }));
          break;
        case 'sarif':
          await writeOut(io.stdout, renderSarif(report, { rules }));
          break;
        case 'junit':
          await writeOut(io.stdout, renderJunit(report, { rules, failWarnings: failOn === 'warning' || failOn === 'info' }));
          break;
        case 'github': {
          await writeOut(io.stdout, renderGithubAnnotations(report) + renderText(report, envFor(io, { ...opts, color: 'never' }).c, { hints: opts.hints }));
          const summaryFile = io.env['GITHUB_STEP_SUMMARY'];
          if (summaryFile) appendFileSync(summaryFile, renderGithubSummary(report) + '\n');
          break;
        }
        default:
          await writeOut(io.stdout, renderText(report, env.c, { hints: opts.hints }));
      }
      return code === 1 ? EXIT.failed : EXIT.ok;
    }),
  );
}

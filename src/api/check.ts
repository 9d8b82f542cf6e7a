/**
 * `dsh check` (`dsh/check`): discovering targets, checking them (on worker threads), selecting findings, and the text, JSON, SARIF, JUnit and GitHub reporters.
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { discoverTargets, exitCodeFor, selectFindings, summarize } from '../check/engine.js';
export type { CheckReport, Discovery, Selection, Summary, Verdict } from '../check/engine.js';
export { checkTargets } from '../check/pool.js';
export type { RunOptions } from '../check/pool.js';
export { renderGithubAnnotations, renderGithubSummary } from '../check/reporters/github.js';
export { renderJson } from '../check/reporters/json.js';
export { renderJunit } from '../check/reporters/junit.js';
export type { JunitOptions } from '../check/reporters/junit.js';
export { renderSarif } from '../check/reporters/sarif.js';
export type { SarifOptions } from '../check/reporters/sarif.js';
export { renderRuleList, renderText } from '../check/reporters/text.js';
export { RULES, expandCodes } from '../check/rules.js';
export { applyLevelsToReport, applyRuleFlag, behaviourSettings, findConfig, levelOf, printableConfig, readConfigFile } from '../check/config.js';
export type { CheckConfig, FailOn, RuleLevel, RuleSetting } from '../check/config.js';
export { BEHAVIOUR_CODES } from '../check/behaviour.js';
export type { BehaviourCode, BehaviourEvidence, BehaviourSettings, CarriedEvidence, OptionSpec, OptionValue } from '../check/behaviour.js';

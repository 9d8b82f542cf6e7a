import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, isRootDir, addExamples } from '../shared.js';
import { UsageError, toJson } from '../../api/log.js';
import { DETECTOR_NAMES, secretsOfRoot, secretsOfTarget, type AnalyzeOptions, type SecretsReport } from '../../api/redact.js';
import { renderSecrets } from '../render/secrets.js';
import { reportLoadFailure } from './replay.js';

interface SecretsCliOptions extends CommonOptions {
  pattern: string[];
  paths?: boolean;
  detectors?: string;
  full?: boolean;
}


/** The detector options shared by `dsh secrets` and `dsh check --secrets` (usage errors for bad names/patterns). */
export function secretsOptions(opts: { pattern?: string[]; paths?: boolean; detectors?: string }): AnalyzeOptions {
  const detectors = opts.detectors ? opts.detectors.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
  for (const d of detectors ?? []) if (!DETECTOR_NAMES.includes(d)) throw new UsageError(`unknown detector ${toJson(d)} (known: ${DETECTOR_NAMES.join(', ')})`);
  for (const p of opts.pattern ?? []) {
    let re: RegExp;
    try {
      re = new RegExp(p, 'g');
    } catch (error) {
      throw new UsageError(`invalid --pattern ${toJson(p)}: ${(error as Error).message}`);
    }
    if (re.test('')) throw new UsageError(`--pattern ${toJson(p)} matches the empty string`);
  }
  return { ...(opts.pattern && opts.pattern.length > 0 ? { patterns: opts.pattern } : {}), ...(opts.paths ? { paths: true } : {}), ...(detectors ? { detectors } : {}) };
}

export function registerSecrets(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('secrets')
    .description('which secrets reached the model, and when: per secret (masked), the events holding it, the dispatches that sent it, what removed or re-embedded it, whether it is still current, forks and subagents that got it')
    .argument('<target>', 'session file, directory, id, -, or a session root (every session)')
    .option('--pattern <regex>', 'extra secret pattern (JavaScript regex; group 1 when present, else the whole match); repeatable', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--paths', 'also look for home directory user names and the session cwd')
    .option('--detectors <names>', `comma-separated subset of built-in detectors (${DETECTOR_NAMES.join(', ')})`)
    .option('--full', 'list every event holding a secret (default: the first 8)');
  addCommon(cmd, { json: 'print {sessions, secrets} as JSON (secrets masked as in the text output)' });
  cmd.addHelpText(
    'after',
    `
A secret is shown only as dsh redact's token [REDACTED:<label>:≤<length class>#<4 hex of sha256>].
"Sent" comes from the surface fold: a dispatch sent a secret when the secret is in the model message of a
surface node on the surface at its first chunk, or in the request header or context in force.
Over a target in a session root, its forks and subagents are read too.
Exit codes: 0 report printed (secrets or not), 1 a log could not be read, 2 usage or I/O error.`,
  );
  addExamples(
    cmd,
    'dsh secrets session-incident-1 --root fixtures/incident',
    'dsh secrets session-incident-1 --root fixtures/incident --paths --json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: SecretsCliOptions) => {
      const env = envFor(io, opts);
      const options: AnalyzeOptions = { ...secretsOptions(opts), decoder: decoderFor(opts) };
      let report: SecretsReport & { warnings: string[] };
      if (target !== '-' && isRootDir(target)) report = await secretsOfRoot(target, options);
      else {
        report = await secretsOfTarget(await resolveCli(target, opts), options);
        const first = report.sessions[0];
        if (first?.error) return reportLoadFailure(io, opts, first.error);
      }
      for (const w of report.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
      const { warnings: _w, ...data } = report;
      void _w;
      if (opts.json) await writeOut(io.stdout, toJson(data) + '\n');
      else await writeOut(io.stdout, renderSecrets(data, env.c, { full: Boolean(opts.full) }));
      return report.sessions.some((s) => s.error) ? EXIT.failed : EXIT.ok;
    }),
  );
}

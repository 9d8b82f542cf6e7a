import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { ChalkInstance } from 'chalk';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { UsageError, toJson } from '../../api/log.js';
import { outputRefusal, prepareNewFile, writeNewFile } from '../../api/export.js';
import { redactTarget, type RedactReport, DETECTOR_NAMES } from '../../api/redact.js';

interface RedactCliOptions extends CommonOptions {
  output?: string;
  dryRun?: boolean;
  report?: string;
  redactPattern: string[];
  redactPaths?: boolean;
  detectors?: string;
  splitSecrets: boolean;
}

/** Pure renderer of the redaction summary (stderr). */
export function renderRedact(r: RedactReport, c: ChalkInstance): string {
  const s = r.stats;
  const lines: string[] = [];
  lines.push(`${c.bold('redact')} ${escapeControl(r.source)} (${r.encoding === 'zstd' ? 'zstd' : 'raw'})${r.dryRun ? ' — dry run, nothing written' : ''}`);
  lines.push(`  replaced    ${s.replacements} secret occurrence(s), ${s.distinctSecrets} distinct, in ${s.linesChanged}/${s.linesSeen} line(s)${s.headerChanged ? ' + header cwd' : ''}`);
  const names = Object.keys(s.byDetector).sort();
  for (const n of names) {
    const seqs = s.seqsByDetector[n] ?? [];
    const shown = seqs.slice(0, 12).join(', ') + (seqs.length > 12 ? `, … (${seqs.length} events)` : '');
    lines.push(`  ${n.padEnd(22)} ${String(s.byDetector[n]).padStart(5)}${seqs.length > 0 ? `  seqs ${shown}` : ''}`);
  }
  if (s.unparsableLines.length > 0) lines.push(`  ${c.yellow('note')}        redacted as plain text in unparsable line(s) ${s.unparsableLines.slice(0, 12).join(', ')}`);
  for (const h of s.protectedHits.slice(0, 20)) {
    lines.push(`  ${c.yellow('NOT redacted')} ${h.detector} match in identity field "${escapeControl(h.key)}"${h.seq !== undefined ? ` (seq ${h.seq})` : ''}: rewriting it would break pairing`);
  }
  if (r.frames) lines.push(`  frames      ${r.frames.total} total, ${r.frames.changed} re-encoded, ${r.frames.copied} copied verbatim`);
  if (r.tornDropped) lines.push(`  ${c.yellow('torn')}        the cut final record (${r.tornDropped.fragmentBytes} bytes) of the torn frame at byte ${r.tornDropped.frameStart} was not written`);
  if (r.output) lines.push(`  wrote       ${escapeControl(r.output)}${r.identical ? ' (identical to the input: nothing to redact)' : ''}`);
  if (r.verify) {
    const v = r.verify;
    lines.push(
      v.ok
        ? `  verify      same ${v.redacted.events} events${v.redacted.closers ? ` + ${v.redacted.closers} closer(s)` : ''}, types and seqs as the input${v.redacted.error ? ` (same verdict: ${escapeControl(v.redacted.error)})` : ''}`
        : `  ${c.red('verify')}      MISMATCH: input ${v.original.events} events${v.original.error ? ` (${escapeControl(v.original.error)})` : ''}, output ${v.redacted.events}${v.redacted.error ? ` (${escapeControl(v.redacted.error)})` : ''}`,
    );
  }
  return lines.join('\n') + '\n';
}

export function registerRedact(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('redact')
    .description('write a copy of a session with secrets replaced in event text (same events, seqs and pairing) into a NEW session root')
    .argument('<target>', 'session.jsonl[.zstd] file, session directory, session id (under --root), or - for stdin')
    .option('-o, --output <dir>', 'new session root to write <dir>/<project>/<id>/session.jsonl[.zstd] into (must not exist or be empty)')
    .option('--dry-run', 'only report what would be redacted; write nothing')
    .option('--report <file>', 'also write the summary as JSON to this new file')
    .option('--redact-pattern <regex>', 'extra secret pattern (JavaScript regex; group 1 when present, else the whole match); repeatable', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--redact-paths', 'also redact home directory user names (/home/<user>, /Users/<user>) and the session cwd (header cwd included)')
    .option('--detectors <names>', `comma-separated subset of built-in detectors (${DETECTOR_NAMES.join(', ')})`)
    .option('--no-split-secrets', 'do not scan assembled streamed deltas for secrets split across chunks');
  addCommon(cmd, { json: 'print the redaction report as JSON on stdout' });
  cmd.addHelpText(
    'after',
    `
Replacement: [REDACTED:<label>:≤<length class>#<first 4 hex of sha256(secret)>] — identical secrets get
identical tokens. Only string values in event data (and packed-row texts/args) change; ids used for pairing
(id, callId, toolCallId, …), types, seqs and surface markers never do. Unchanged lines/frames are copied
byte for byte. Exit codes: 0 ok, 1 the log cannot be read/redacted or the result does not verify, 2 usage/I-O.`,
  );
  addExamples(
    cmd,
    'dsh redact session-incident-1 --root fixtures/incident --dry-run',
    'dsh redact session-incident-1 --root fixtures/incident --redact-paths -o redacted-root',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: RedactCliOptions) => {
      const env = envFor(io, opts);
      if (!opts.output && !opts.dryRun) throw new UsageError('redact needs an output directory: -o <dir> (or --dry-run)');
      const detectors = opts.detectors ? opts.detectors.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
      for (const d of detectors ?? []) if (!DETECTOR_NAMES.includes(d)) throw new UsageError(`unknown detector ${toJson(d)} (known: ${DETECTOR_NAMES.join(', ')})`);
      const resolved = await resolveCli(target, opts);
      // The report is a new file like any other output: refused before reading where the one rule refuses it,
      // written (it may go inside -o DIR) only once the redaction is done.
      const reportRefusal = opts.report ? outputRefusal(opts.report, [resolved]) : undefined;
      if (reportRefusal) throw new UsageError(reportRefusal, 'io');
      if (opts.report && existsSync(opts.report)) throw new UsageError(`refusing to overwrite ${path.resolve(opts.report)}: it already exists`, 'io');
      let report: RedactReport;
      try {
        report = await redactTarget(resolved, opts.output, {
          dryRun: Boolean(opts.dryRun),
          decoder: decoderFor(opts),
          patterns: opts.redactPattern,
          paths: Boolean(opts.redactPaths),
          splitSecrets: opts.splitSecrets,
          ...(detectors ? { detectors } : {}),
        });
      } catch (error) {
        if (error instanceof Error && /invalid --redact-pattern|matches the empty string/.test(error.message)) throw new UsageError(error.message);
        throw error;
      }
      io.stderr.write(renderRedact(report, env.c));
      if (opts.report) writeNewFile(prepareNewFile(opts.report, false, 0o600, [resolved]), [toJson(report, null, 2) + '\n'], false);
      if (opts.json) await writeOut(io.stdout, toJson(report) + '\n');
      return report.verify && !report.verify.ok ? EXIT.failed : EXIT.ok;
    }),
  );
}

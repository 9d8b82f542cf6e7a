import type { Command } from 'commander';
import type { ChalkInstance } from 'chalk';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, decoderFor, envFor, resolveCli, EXIT, type CommonOptions, addExamples } from '../shared.js';
import { UsageError, toJson } from '../../api/log.js';
import { runSalvage, type SalvageReport } from '../../api/salvage.js';

interface SalvageCliOptions extends CommonOptions {
  output?: string;
  artifact?: boolean;
}

/** Pure renderer of the salvage report. */
export function renderSalvage(r: SalvageReport, c: ChalkInstance): string {
  const lines: string[] = [];
  const phys = r.frames
    ? `${r.frames.ok}/${r.frames.total} frames decoded${r.frames.failed ? `, ${r.frames.failed} failed` : ''}${r.frames.torn ? ', torn final frame' : ''}`
    : `${r.lines!.ok}/${r.lines!.total} body lines parsed`;
  lines.push(`${c.bold('salvage')} ${escapeControl(r.source)} (${r.encoding === 'zstd' ? 'zstd' : 'raw'}, ${r.bytes} bytes)`);
  lines.push(`  header      ${r.header ? escapeControl(`${r.header.id}`) : c.red('lost')}`);
  lines.push(`  physical    ${phys}`);
  lines.push(
    `  events      ${r.keptEvents} kept` + (r.keptEvents > 0 ? ` (original seqs ${r.firstSeq}..${r.lastSeq})` : '') + (r.clean ? ', log is intact' : ''),
  );
  if (r.gaps.length === 0) lines.push(`  gaps        none`);
  for (const g of r.gaps) {
    const range = g.toSeq === null ? `seq ${g.fromSeq}.. (tail lost)` : g.fromSeq === g.toSeq ? `seq ${g.fromSeq}` : `seqs ${g.fromSeq}..${g.toSeq}`;
    lines.push(`  ${c.yellow('gap')}         ${range}, ${g.bytesLost} bytes lost: ${escapeControl(g.why)}`);
  }
  const other = r.defects.filter((_, i) => !r.gaps.some((g) => g.defects.includes(i)));
  for (const d of other) lines.push(`  defect      ${d.kind} at bytes ${d.start}..${d.end}: ${escapeControl(d.message)}`);
  lines.push(`  wrote       ${escapeControl(r.output.events)}`);
  lines.push(`              ${escapeControl(r.output.gaps)}`);
  if (r.artifact) {
    const a = r.artifact;
    lines.push(`              ${escapeControl(a.path)} (${a.events} events, renumbered; ${a.notes.length} dsh/salvage-note event(s); seq map in ${escapeControl(a.seqMapFile)})`);
    for (const d of a.dropped) lines.push(`  ${c.yellow('dropped')}     original seq ${d.originalSeq} ${escapeControl(d.type)}: ${escapeControl(d.why)}`);
    lines.push(
      a.verify.ok
        ? `  verify      dsh inspect reads the new artifact: ${a.verify.events} events${a.verify.closers ? ` + ${a.verify.closers} crash closer(s)` : ''}`
        : `  ${c.red('verify')}      dsh inspect FAILS on the new artifact: ${escapeControl(a.verify.error ?? '')}`,
    );
  }
  if (r.headerSynthesized) lines.push(`  ${c.yellow('header')}      lost: the artifact has a synthesized header (id ${escapeControl(r.headerSynthesized.id)} from the session directory, no cwd, createdAt = first event time)`);
  if (r.artifactSkipped) lines.push(`  ${c.yellow('no artifact')} ${escapeControl(r.artifactSkipped)}`);
  return lines.join('\n') + '\n';
}

export function registerSalvage(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('salvage')
    .description('read past defects (corrupt frames, garbage, unparsable lines) and write what survives to a NEW directory: events.ndjson + gaps.json [+ a loadable artifact]')
    .argument('<target>', 'session.jsonl[.zstd] file, session directory, session id (under --root), or - for stdin')
    .option('-o, --output <dir>', 'new output directory (must not exist or be empty; never inside the input session directory)')
    .option('--artifact', 'also write a loadable DSH session under <dir>/root/ (seqs renumbered, gaps marked by ignorable dsh/salvage-note events, map in seq-map.json)');
  addCommon(cmd, { json: 'print the salvage report (gaps.json) on stdout' });
  cmd.addHelpText(
    'after',
    `
Rules: zstd keeps every complete frame that decodes and checksum-verifies, reports and skips failing
frames, re-synchronises on the next frame magic after damaged bytes, and prefix-decodes a torn final
frame; raw keeps every complete line that parses. Original seqs are kept: after a gap an event is kept
only if its seq is greater than the last kept one. The input is never modified.
Exit codes: 0 something was salvaged, 1 nothing could be salvaged (or the artifact did not verify), 2 usage/I-O.`,
  );
  addExamples(
    cmd,
    'dsh salvage session-incident-1 --root fixtures/incident -o incident-salvage',
    'dsh salvage session-incident-1 --root fixtures/incident -o incident-salvaged --artifact --json',
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: SalvageCliOptions) => {
      const env = envFor(io, opts);
      if (!opts.output) throw new UsageError('salvage needs an output directory: -o <dir>');
      const resolved = await resolveCli(target, opts);
      const report = await runSalvage(resolved, opts.output, { artifact: Boolean(opts.artifact), decoder: decoderFor(opts) });
      // A defect's message quotes the bytes that did not parse: DEL, which JSON may carry raw, is written escaped.
      if (opts.json) await writeOut(io.stdout, toJson(report).replace(/\u007f/g, '\\u007f') + '\n');
      else await writeOut(io.stdout, renderSalvage(report, env.c));
      if (report.keptEvents === 0) {
        io.stderr.write('dsh: nothing could be salvaged\n');
        return EXIT.failed;
      }
      if (opts.artifact && (!report.artifact || !report.artifact.verify.ok)) return EXIT.failed;
      return EXIT.ok;
    }),
  );
}

import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, cacheFor, decoderFor, indexUseFor, resolveCli, EXIT, type CommonOptions } from '../shared.js';
import { formatCount, UsageError, VERSION, toJson } from '../../api/log.js';
import { buildReport, reportParts, compareReportHtml, streamReport } from '../../api/report.js';
import { CITATIONS, DISPATCHES, SURFACE_EVENTS } from '../../api/views.js';
import { abandonNewFile, prepareNewFile, writeNewFile, writeNewFileAsync, type NewFile } from '../../api/export.js';
import { compareSides } from './diff.js';
import { behaviourSettings, findConfig } from '../../api/check.js';

interface ReportOptions extends CommonOptions {
  output?: string;
  force?: boolean;
  compare?: string;
  behaviour?: boolean;
}

function resolvedId(data: unknown): string | null {
  const d = data as { session?: { id?: unknown }; header?: { id?: unknown } };
  const id = d.session?.id ?? d.header?.id;
  return typeof id === 'string' ? id : null;
}

/** `--behaviour`: every behaviour rule the config does not turn off, at its thresholds. */
function behaviourOf(opts: ReportOptions): { behaviour?: ReturnType<typeof behaviourSettings> } {
  if (!opts.behaviour) return {};
  const behaviour = behaviourSettings({ ...findConfig(process.cwd()), behaviour: true });
  return behaviour ? { behaviour } : {};
}

export function registerReport(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('report')
    .description('write a self-contained HTML incident report (no network; opens from disk): health, lineage, timeline with every dispatch\'s request and diff, user vs model view, compactions, check findings, every event')
    .argument('<target>', 'session.jsonl[.zstd] file, session directory, session id (under --root), or - for stdin')
    .requiredOption('-o, --output <file>', 'the NEW .html file to write (- for stdout)')
    .option('--force', 'replace the output file if it exists')
    .option('--behaviour', "also list dsh check's behaviour findings (DSH-X*) with their evidence, at the thresholds of the nearest dsh.config.json or package.json#dsh")
    .option('--compare <target>', 'compare mode: the two dispatch timelines side by side (this session as a, <target> as b), the first divergent dispatch highlighted, surface and transcript diffs (as dsh diff)');
  addCommon(cmd, { json: 'print a manifest {output, bytes, sessionId, health} on stdout (not with -o -)' });
  cmd.addHelpText(
    'after',
    `
The report is one HTML file: an inline script and stylesheet allowed by their hashes in a strict
Content-Security-Policy, and the data as JSON inside the file. Nothing is fetched. Log text is
rendered as text, never as HTML.

Exit codes: 0 the report was written; 1 the report was written but DSH refuses or cannot read the
log (the report's health card shows DSH's error); 2 usage or I/O (the output exists, is a directory
or is not writable; nothing is written).

Examples:
  dsh report session.jsonl.zstd -o incident.html
  dsh report 8f2c41 --root ~/.dsh/sessions -o report.html --force
  dsh report parent.jsonl.zstd --compare child/session.jsonl.zstd -o compare.html`,
  );
  cmd.action(
    action(io, setExit, async (target: string, opts: ReportOptions) => {
      const output = opts.output;
      if (output === undefined || output === '') throw new UsageError('give the output file with -o <file> (or -o - for stdout)');
      if (output === '-' && opts.json) throw new UsageError('--json prints a manifest on stdout; it cannot be combined with -o - (the report itself on stdout)');
      // Check the output before reading anything.
      const resolved = await resolveCli(target, opts);
      let out: NewFile | undefined;
      if (opts.compare !== undefined) {
        const other = await resolveCli(opts.compare, opts);
        if (output !== '-') out = prepareNewFile(output, Boolean(opts.force), 0o644, [resolved.path, other.path]);
        try {
          return await writeCompare(io, target, opts.compare, opts, output, out);
        } finally {
          if (out) abandonNewFile(out);
        }
      }
      if (output !== '-') out = prepareNewFile(output, Boolean(opts.force), 0o644, [resolved.path]);
      try {
        // An accepted log: written as it is re-read, from the validating pass or the saved session index.
        const use = indexUseFor(io, opts, [DISPATCHES, SURFACE_EVENTS, CITATIONS]);
        const streamed = await streamReport(resolved, {
          decoder: decoderFor(opts),
          ...(opts.root ? { root: opts.root } : {}),
          version: VERSION,
          use,
          cold: { ...use, cache: cacheFor(io, { ...opts, cache: false }) },
          ...behaviourOf(opts),
        });
        if (streamed) {
          try {
            for (const w of streamed.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
            if (!out) {
              for await (const part of streamed.parts()) await writeOut(io.stdout, part);
              return EXIT.ok;
            }
            const abs = out.abs;
            const bytes = await writeNewFileAsync(out, streamed.parts(), Boolean(opts.force));
            out = undefined;
            io.stderr.write(`dsh: wrote ${escapeControl(output)} (${formatCount(bytes)} bytes)\n`);
            if (opts.json) await writeOut(io.stdout, toJson({ output: abs, bytes, sessionId: streamed.sessionId, health: 'readable' }) + '\n');
            return EXIT.ok;
          } finally {
            streamed.close();
          }
        }
        // A log DSH refuses (or without a header): the report shows the refusal.
        const built = await buildReport(resolved, { decoder: decoderFor(opts), ...(opts.root ? { root: opts.root } : {}), version: VERSION, ...behaviourOf(opts) });
        for (const w of built.data.health.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
        const parts = reportParts(built.data, built.events, built.facts);
        if (out) {
          const abs = out.abs;
          const bytes = writeNewFile(out, parts, Boolean(opts.force));
          out = undefined;
          io.stderr.write(`dsh: wrote ${escapeControl(output)} (${formatCount(bytes)} bytes)\n`);
          if (opts.json) {
            const e = built.data.health.error;
            await writeOut(
              io.stdout,
              toJson({ output: abs, bytes, sessionId: resolvedId(built.data), health: e ? { error: { class: e.class, message: e.message } } : 'readable' }) + '\n',
            );
          }
        } else {
          for (const part of parts) await writeOut(io.stdout, part);
        }
        const e = built.data.health.error;
        if (e) {
          io.stderr.write(`dsh: ${escapeControl(`${e.class}: ${e.message}`)}\n`);
          io.stderr.write('dsh: DSH refuses this log; the report shows the refusal (exit 1)\n');
          return EXIT.failed;
        }
        return EXIT.ok;
      } finally {
        if (out) abandonNewFile(out);
      }
    }),
  );
}

/** `--compare`: both sides must be readable (a side DSH refuses: its error, exit 1, nothing written). */
async function writeCompare(io: Io, a: string, b: string, opts: ReportOptions, output: string, out: NewFile | undefined): Promise<number> {
  const d = await compareSides(io, a, b, opts, async (x) => x);
  if (typeof d === 'number') return d;
  const html = compareReportHtml(d, { a, b }, VERSION);
  if (!out) {
    await writeOut(io.stdout, html);
    return EXIT.ok;
  }
  const abs = out.abs;
  const bytes = writeNewFile(out, [html], Boolean(opts.force));
  io.stderr.write(`dsh: wrote ${escapeControl(output)} (${formatCount(bytes)} bytes)\n`);
  if (opts.json) {
    const fd = d.dispatches.firstDivergent;
    const pair = fd === null ? null : d.dispatches.pairs[fd];
    await writeOut(io.stdout, toJson({ output: abs, bytes, sessionIds: { a: d.a.sessionId, b: d.b.sessionId }, firstDivergent: pair ? { a: pair.a, b: pair.b, differs: pair.differs } : null }) + '\n');
  }
  return EXIT.ok;
}

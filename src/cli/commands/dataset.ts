import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { Io } from '../io.js';
import { escapeControl, writeOut } from '../io.js';
import { action, addCommon, envFor, EXIT, jobsFor, type CommonOptions } from '../shared.js';
import { formatCount, UsageError, defaultRoot, VERSION, toJson } from '../../api/log.js';
import { buildDataset, type DatasetSummary, schemaDocument } from '../../api/dataset.js';

export interface DatasetBuildOptions extends CommonOptions {
  content?: boolean;
  redact?: boolean;
  redactPaths?: boolean;
}

/** Register the options `dataset` and `sql` share for building. */
export function addBuildOptions(cmd: Command): Command {
  return cmd
    .option('--content', 'also write event text (events.text, events.data_json)')
    .option('--redact', 'redact secrets from the content (built-in detectors, as dsh redact); needs --content')
    .option('--redact-paths', 'with --redact: also home-directory user names and the session cwd');
}

/** Build or refresh a dataset, with a progress line on a terminal. */
export async function runBuild(io: Io, inputs: string[], out: string, opts: DatasetBuildOptions): Promise<DatasetSummary> {
  if (opts.redact && !opts.content) throw new UsageError('--redact redacts event content: add --content (without it no log text is written)');
  if (opts.redactPaths && !opts.redact) throw new UsageError('--redact-paths needs --redact');
  let list = inputs;
  if (list.length === 0) {
    const root = opts.root ?? defaultRoot(io.env);
    if (!existsSync(root)) throw new UsageError(`session root ${root} does not exist (name roots or targets, or set --root)`, 'io');
    list = [root];
  }
  const progress = Boolean(io.stderr.isTTY);
  const summary = await buildDataset(list, out, {
    content: Boolean(opts.content),
    redact: Boolean(opts.redact),
    redactPaths: Boolean(opts.redactPaths),
    ...(opts.root ? { root: opts.root } : {}),
    jobs: jobsFor(opts, io.env),
    decoder: opts.decoder ?? 'auto',
    version: VERSION,
    ...(progress ? { onProgress: (done: number, total: number) => void io.stderr.write(`\rdsh dataset: ${done}/${total} sessions`) } : {}),
  });
  if (progress) io.stderr.write('\r\u001b[K');
  for (const w of summary.warnings) io.stderr.write(`dsh: warning: ${escapeControl(w)}\n`);
  return summary;
}

function renderSummary(s: DatasetSummary): string {
  const n = formatCount;
  const rows = Object.entries(s.rows)
    .map(([t, c]) => `${t} ${n(c)}`)
    .join(', ');
  return (
    `dataset  ${escapeControl(s.dir)}\n` +
    `sessions ${n(s.sessions)}: ${n(s.written)} written, ${n(s.unchanged)} unchanged, ${n(s.removed)} removed` +
    (s.unreadable > 0 ? `; ${n(s.unreadable)} unreadable (in sessions with DSH's error)` : '') +
    `\nrows     ${rows}\ntime     ${(s.ms / 1000).toFixed(2)} s\n`
  );
}

export function registerDataset(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('dataset')
    .description('write Parquet tables (sessions, events, dispatches, tool_calls, compactions, findings, lineage) for roots or targets, incrementally')
    .argument('[inputs...]', 'session roots, session directories, artifacts or ids (default: the session root)')
    .option('-o, --out <dir>', 'the dataset directory (created; re-runs refresh it)')
    .option('--schema', 'print the table schema (JSON) and exit');
  addBuildOptions(cmd);
  addCommon(cmd, { json: 'print the run summary as JSON' });
  cmd.addHelpText(
    'after',
    `
One Parquet file per session per table under <dir>/<table>/, and <dir>/manifest.json saying what each file
came from. A re-run rewrites only sessions whose artifact changed (sha256 of the bytes), drops sessions no longer
among the inputs, and leaves the rest untouched. Log text is written only with --content (then redacted with
--redact). Unreadable sessions appear in the sessions table with DSH's error. Query with dsh sql, DuckDB, Spark,
pyarrow or polars.

Examples:
  dsh dataset ~/.dsh/sessions -o sessions.ds
  dsh dataset ~/.dsh/sessions -o sessions.ds --content --redact
  dsh sql "select tool, count(*) from tool_calls group by 1 order by 2 desc" --dataset sessions.ds`,
  );
  cmd.action(
    action(io, setExit, async (inputs: string[], opts: DatasetBuildOptions & { out?: string; schema?: boolean }) => {
      envFor(io, opts);
      if (opts.schema) {
        await writeOut(io.stdout, toJson(schemaDocument(), null, opts.json ? undefined : 2) + '\n');
        return EXIT.ok;
      }
      if (!opts.out) throw new UsageError('name the dataset directory with -o <dir>');
      const summary = await runBuild(io, inputs, opts.out, opts);
      await writeOut(io.stdout, opts.json ? toJson(summary) + '\n' : renderSummary(summary));
      return EXIT.ok;
    }),
  );
}

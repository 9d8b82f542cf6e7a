import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { Io } from '../io.js';
import { writeOut } from '../io.js';
import { action, addCommon, envFor, EXIT } from '../shared.js';
import { UsageError, toJson } from '../../api/log.js';
import { runSql } from '../../api/dataset.js';
import { addBuildOptions, runBuild, type DatasetBuildOptions } from './dataset.js';
import { renderCsv, renderNdjson, renderTable } from '../render/sql.js';

interface SqlOptions extends DatasetBuildOptions {
  dataset?: string;
  csv?: boolean;
  duckdbModule?: string;
}

/** Where `dsh sql <query> <roots...>` keeps the dataset it builds when no --dataset is named. */
export function cachedDatasetDir(inputs: readonly string[], env: NodeJS.ProcessEnv, content: string): string {
  const base = env['DSH_CACHE_DIR'] ?? path.join(env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'dsh');
  const key = createHash('sha1')
    .update(toJson([...inputs.map((i) => path.resolve(i))].sort()) + content)
    .digest('hex')
    .slice(0, 16);
  return path.join(base, 'datasets', key);
}

export function registerSql(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('sql')
    .description('run SQL over a dataset with embedded DuckDB (optional dependency), building or refreshing it first when given roots')
    .argument('<query>', 'the SQL query (tables: sessions, events, dispatches, tool_calls, compactions, findings, lineage)')
    .argument('[inputs...]', 'session roots or targets: build/refresh the dataset first')
    .option('--dataset <dir>', 'the dataset directory (with inputs: built there; without: queried as it is)')
    .option('--csv', 'print CSV (RFC 4180) instead of a table');
  addBuildOptions(cmd);
  addCommon(cmd, { json: 'print NDJSON: one object per row' });
  // A test hook, not a setting: the module DuckDB is imported from (the tests name a missing one).
  cmd.addOption(new Option('--duckdb-module <name>').hideHelp());
  cmd.addHelpText(
    'after',
    `
DuckDB is an optional dependency (npm install @duckdb/node-api); without it dsh sql explains how to add it
and exits 2, and every other command works. With inputs and no --dataset, the dataset is kept in the cache
directory ($DSH_CACHE_DIR, else $XDG_CACHE_HOME/dsh, else ~/.cache/dsh) and refreshed incrementally.

Examples:
  dsh sql "select health, count(*) from sessions group by 1" --dataset sessions.ds
  dsh sql "select tool, avg(duration_ms) from tool_calls group by 1" ~/.dsh/sessions --csv
  dsh sql "select code, count(*) n from findings group by 1 order by n desc" ./sessions --json`,
  );
  cmd.action(
    action(io, setExit, async (query: string, inputs: string[], opts: SqlOptions) => {
      const env = envFor(io, opts);
      if (opts.csv && opts.json) throw new UsageError('--csv and --json are separate formats; pick one');
      if (query.trim() === '') throw new UsageError('the query is empty');
      let dir = opts.dataset;
      if (inputs.length > 0) {
        dir ??= cachedDatasetDir(inputs, io.env, `${Boolean(opts.content)}/${Boolean(opts.redact)}/${Boolean(opts.redactPaths)}`);
        await runBuild(io, inputs, dir, opts);
      } else if (dir === undefined) throw new UsageError('name a dataset (--dataset <dir>) or the session roots to build one from');
      const result = await runSql(path.resolve(dir), query, opts.duckdbModule !== undefined ? { duckdbModule: opts.duckdbModule } : {});
      const text = opts.json ? renderNdjson(result) : opts.csv ? renderCsv(result) : renderTable(result, env.c);
      await writeOut(io.stdout, text);
      return EXIT.ok;
    }),
  );
}

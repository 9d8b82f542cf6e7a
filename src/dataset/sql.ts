/**
 * SQL over a dataset with embedded DuckDB (`@duckdb/node-api`, an optional
 * dependency whose engine binary ships in a per-platform npm package). Each
 * table is a view over its Parquet files; a table with no files yet is an
 * empty view with the documented columns, so queries never fail on a table
 * a dataset happens not to have rows for.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../log/errors.js';
import { columnsOf, TABLES, type ColumnKind } from './schema.js';
import { readManifest } from './build.js';

export const DUCKDB_PACKAGE = '@duckdb/node-api';

/** DuckDB is not installed: `dsh sql` explains how to add it (exit 2). */
export class DuckdbMissingError extends UsageError {
  constructor(cause: string) {
    super(
      `dsh sql needs DuckDB, an optional dependency that is not installed (${cause}).\n` +
        `  Install it next to dsh:  npm install ${DUCKDB_PACKAGE}\n` +
        '  (its engine ships in a platform package, e.g. @duckdb/node-bindings-linux-x64; `npm install --omit=optional` skips it)\n' +
        '  Or query the Parquet files with any engine: duckdb, pyarrow, polars, Spark (see README "Datasets").',
    );
  }
}

export interface QueryResult {
  columns: string[];
  types: string[];
  rows: unknown[][];
}

const DUCK_TYPE: Record<ColumnKind, string> = {
  string: 'VARCHAR',
  int32: 'INTEGER',
  int64: 'BIGINT',
  double: 'DOUBLE',
  bool: 'BOOLEAN',
  timestamp: 'TIMESTAMP WITH TIME ZONE',
};

const quoteString = (s: string) => `'${s.replace(/'/g, "''")}'`;
const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** The view definition of one table over its files in `dir`. */
function viewSql(dir: string, table: (typeof TABLES)[number], content: boolean): string {
  const tableDir = path.join(dir, table.name);
  const files = existsSync(tableDir) ? readdirSync(tableDir).filter((f) => f.endsWith('.parquet')) : [];
  if (files.length > 0) {
    return `CREATE VIEW ${quoteIdent(table.name)} AS SELECT * FROM read_parquet(${quoteString(path.join(tableDir, '*.parquet'))}, union_by_name = true)`;
  }
  const cols = columnsOf(table.name, content).map((c) => `CAST(NULL AS ${DUCK_TYPE[c.kind]}) AS ${quoteIdent(c.name)}`);
  return `CREATE VIEW ${quoteIdent(table.name)} AS SELECT ${cols.join(', ')} WHERE false`;
}

/** A JSON-safe value: integers as numbers when exact (else strings), times as ISO strings. */
function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

type DuckModule = typeof import('@duckdb/node-api');

/** The DuckDB package, or the module `name` (the tests name a missing one). */
async function loadDuckdb(name = DUCKDB_PACKAGE): Promise<DuckModule> {
  try {
    return (await import(name)) as DuckModule;
  } catch (error) {
    throw new DuckdbMissingError((error as Error).message.split('\n')[0] ?? 'cannot be loaded');
  }
}

/** How `runSql` runs. */
export interface RunSqlOptions {
  /** The module DuckDB is imported from (default `@duckdb/node-api`; a test hook: the tests name a missing one). */
  duckdbModule?: string;
}

/** Run `query` over the dataset in `dir` (tables: sessions, events, dispatches, tool_calls, compactions, findings, lineage). */
export async function runSql(dir: string, query: string, options: RunSqlOptions = {}): Promise<QueryResult> {
  const manifest = readManifest(dir);
  if (!manifest) throw new UsageError(`${dir}: no dataset here (build one with: dsh dataset <roots...> -o ${dir})`);
  const duck = await loadDuckdb(options.duckdbModule);
  const instance = await duck.DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    for (const t of TABLES) await connection.run(viewSql(dir, t, manifest.options.content));
    let reader;
    try {
      reader = await connection.runAndReadAll(query);
    } catch (error) {
      throw new UsageError(`sql: ${(error as Error).message}`);
    }
    return {
      columns: reader.columnNames(),
      types: reader.columnTypes().map((t) => String(t)),
      rows: reader.getRowsJS().map((r) => r.map(plain)),
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

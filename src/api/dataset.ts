/**
 * Fleet datasets (`dsh/dataset`): Parquet tables of sessions, events, dispatches and more, built incrementally, and SQL over them with embedded DuckDB (optional).
 *
 * A public entry point: the CLI (src/cli) imports the library only through
 * the entry points in src/api and src/index.ts, so whatever it uses is public
 * API, typed and in the API reference (docs/api).
 *
 * @packageDocumentation
 */
export { buildDataset } from '../dataset/build.js';
export type { DatasetSummary } from '../dataset/build.js';
export { schemaDocument } from '../dataset/schema.js';
export { runSql } from '../dataset/sql.js';
export type { QueryResult, RunSqlOptions } from '../dataset/sql.js';

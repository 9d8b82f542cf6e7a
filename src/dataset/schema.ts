import { toJson } from '../core/json.js';
/**
 * The dataset schema: every table, every column, its type and meaning, in one
 * place. It is versioned (`DATASET_SCHEMA_VERSION`) and written as JSON into
 * every Parquet file's key-value metadata (`dsh.schema`), so a file read on
 * any engine says what it holds. Bump the version whenever a column changes:
 * `dsh dataset` then rewrites every file of an older dataset.
 */

export const DATASET_SCHEMA_VERSION = 2;
export const DATASET_SCHEMA_ID = `dsh-dataset/${DATASET_SCHEMA_VERSION}`;

/** Column kinds, mapped to Parquet physical/logical types by the writer (all columns nullable). */
export type ColumnKind = 'string' | 'int32' | 'int64' | 'double' | 'bool' | 'timestamp';

export interface ColumnDef {
  name: string;
  kind: ColumnKind;
  doc: string;
  /** Only written with `dsh dataset --content` (log text, after `--redact` when given). */
  content?: true;
}

export interface TableDef {
  name: TableName;
  doc: string;
  columns: ColumnDef[];
}

export type TableName = 'sessions' | 'events' | 'dispatches' | 'tool_calls' | 'compactions' | 'findings' | 'lineage' | 'context' | 'cache_breaks';

const S = (name: string, doc: string): ColumnDef => ({ name, kind: 'string', doc });
const I = (name: string, doc: string): ColumnDef => ({ name, kind: 'int32', doc });
const L = (name: string, doc: string): ColumnDef => ({ name, kind: 'int64', doc });
const B = (name: string, doc: string): ColumnDef => ({ name, kind: 'bool', doc });
const T = (name: string, doc: string): ColumnDef => ({ name, kind: 'timestamp', doc });
const D = (name: string, doc: string): ColumnDef => ({ name, kind: 'double', doc });

const SESSION = S('session_id', 'the session id (header id; the directory id when the header cannot be read)');

export const TABLES: readonly TableDef[] = [
  {
    name: 'sessions',
    doc: 'one row per session artifact, readable or not',
    columns: [
      SESSION,
      S('root', 'the session root the artifact was found under (null for a lone file)'),
      S('path', 'absolute path of the artifact'),
      S('kind', 'root | fork | subagent (from the header)'),
      S('parent_session', 'header parentSession'),
      I('seed_length', 'header seedLength (forks)'),
      I('delegation_depth', 'header delegationDepth'),
      T('created_at', 'header createdAt'),
      S('cwd', 'header cwd'),
      S('title', 'the last session/title of the logical log (readTitle)'),
      S('encoding', 'zstd | none'),
      L('bytes', 'artifact size on disk'),
      S('health', 'ok | torn | needs-repair | corrupt | refused (as dsh ls)'),
      B('loaded', 'DSH loads the log (false: refused or corrupt)'),
      S('error_class', "DSH's error class when it does not load (Error, SessionFormatUnsupportedError, SessionPersistenceCorruptionError)"),
      S('error_message', "DSH's exact error text"),
      I('stored_events', 'committed events in the artifact'),
      I('logical_events', 'logical events (stored + synthetic closers)'),
      I('closers', 'synthetic crash closers DSH would append'),
      L('torn_truncate_to', 'torn tail: the byte DSH load() would truncate to'),
      S('identity', 'the artifact identity the rows were built from (sha256 of its bytes)'),
    ],
  },
  {
    name: 'events',
    doc: 'one row per logical event (closers included), as `dsh events --json`',
    columns: [
      SESSION,
      I('seq', 'event seq'),
      S('type', 'event type'),
      T('time', 'event time'),
      I('turn', 'data.turn, else the enclosing turn/start'),
      I('step', 'data.step'),
      S('label', 'surface label: current | shadowed | log-only'),
      L('logical_bytes', 'UTF-8 bytes of the event as a logical JSON line'),
      S('surface_op', 'append | replace (null: not a surface event)'),
      I('replace_start', 'surfaceOp replace: first replaced seq'),
      I('replace_end', 'surfaceOp replace: last replaced seq'),
      B('synthetic', 'a crash closer DSH synthesizes (not in the file)'),
      { ...S('text', "the event's searchable text (session-query extraction)"), content: true },
      { ...S('data_json', "the event's data as JSON"), content: true },
    ],
  },
  {
    name: 'dispatches',
    doc: 'one row per model dispatch, as `dsh request --list --json`',
    columns: [
      SESSION,
      I('index', 'dispatch index in the session'),
      S('key', 'turn/step#attempt'),
      I('turn', 'turn'),
      I('step', 'step'),
      I('attempt', 'attempt within the step (from 0)'),
      I('first_chunk_seq', 'first assistant/chunk'),
      I('last_chunk_seq', 'last assistant/chunk'),
      I('chunk_count', 'chunks in the attempt'),
      S('finish', 'the finish chunk reason as JSON (null: cancelled or crash tail)'),
      S('finish_kind', 'finish reason kind (stop, error, tool-calls, ...)'),
      S('error_code', 'finish error code'),
      I('header_seq', 'request/header in force'),
      S('header_changes', 'header fields changed since the previous dispatch, comma-separated'),
      I('assistant_message_seq', 'the assistant/message citing the attempt (null: failed)'),
      I('message_count', 'messages sent'),
      S('provider', 'provider'),
      S('model', 'model'),
      S('usage_from', 'assistant/message | usage chunk'),
      L('prompt_tokens', 'usage inputTokens (uncached prompt tokens)'),
      L('output_tokens', 'usage outputTokens'),
      L('cache_read_tokens', 'usage cacheReadTokens'),
      L('cache_write_tokens', 'usage cacheWriteTokens'),
      S('usage_json', 'the usage object as JSON'),
      L('duration_ms', 'first chunk to last chunk'),
      T('start_time', 'first chunk time'),
      D('cost_usd', 'cost in USD from the shipped price table (data/prices.json) at the first chunk time; null: no usage, or the model is unpriced'),
    ],
  },
  {
    name: 'tool_calls',
    doc: 'one row per tool call (tool/call event or an appended tool/result without one)',
    columns: [
      SESSION,
      S('call_id', 'callId'),
      S('tool', 'tool name (tool/call name, else the assistant tool-call block name)'),
      I('turn', 'turn'),
      I('step', 'step'),
      I('call_seq', 'tool/call seq (null: the result has no tool/call)'),
      I('result_seq', 'appended tool/result seq (null: no result)'),
      S('outcome', 'ok | error | unknown (a synthetic crash-closer result) | pending (no result)'),
      L('duration_ms', 'tool/result time − tool/call time'),
      S('error_code', 'tool/result data.error.code'),
      S('error_message', 'tool/result data.error.message'),
    ],
  },
  {
    name: 'compactions',
    doc: 'one row per compaction attempt, prune or replacement, as `dsh compactions --json` attempts',
    columns: [
      SESSION,
      I('index', 'attempt index'),
      S('kind', 'compaction | prune | replacement'),
      S('compaction_id', 'compactionId'),
      I('first_seq', 'first seq of the attempt'),
      I('last_seq', 'last seq of the attempt'),
      I('start_seq', 'compaction/start'),
      I('summary_seq', 'compaction/summary'),
      I('replacement_seq', 'the replacing surface event'),
      I('end_seq', 'compaction/end'),
      I('prune_seq', 'compaction/prune'),
      S('trigger', 'manual | pressure | context-overflow | request-error | automatic | unknown'),
      S('outcome', 'succeeded | failed | unclosed | unbracketed | applied | not-started | nothing-to-compact'),
      S('failure_class', 'busy | cancelled | changed | summary | commit | persistence | other'),
      S('failure_reason', 'matched failure cause'),
      S('lock_state', 'active | stale | superseded'),
      I('shadowed_nodes', 'surface nodes the replacement shadowed'),
      L('summary_input_tokens', 'summary call usage inputTokens'),
      L('summary_output_tokens', 'summary call usage outputTokens'),
      L('net_gain_tokens', 'estimated token gain of the next request envelope'),
      S('attempt_json', 'the whole audit record as JSON'),
    ],
  },
  {
    name: 'findings',
    doc: 'one row per `dsh check` finding (root layout findings have a null session_id)',
    columns: [
      { ...SESSION, doc: 'the session id (null: a root layout finding)' },
      S('file', 'the artifact or layout entry'),
      S('code', 'rule code (DSH-A1 ... DSH-R2)'),
      S('severity', 'error | warning | info'),
      I('seq', 'event seq'),
      L('byte_offset', 'byte offset'),
      S('offset_in', 'file | plaintext'),
      S('message', 'finding text (DSH wording for load failures)'),
      S('hint', 'rule hint'),
    ],
  },
  {
    name: 'lineage',
    doc: 'one row per fork/subagent edge, from the child header',
    columns: [
      { ...SESSION, doc: 'the child session' },
      S('parent_session', 'the parent session id'),
      S('kind', 'fork | subagent'),
      I('seed_length', 'events inherited from the parent'),
      I('delegation_depth', 'header delegationDepth'),
      S('agent_preset', 'header agentPreset'),
      B('parent_found', 'the parent is a session of the same root'),
    ],
  },
  {
    name: 'context',
    doc: 'one row per model dispatch and context category, as `dsh context --json` (bytes exact, tokens proportional)',
    columns: [
      SESSION,
      I('dispatch_index', 'dispatch index in the session'),
      S('key', 'turn/step#attempt'),
      I('turn', 'turn'),
      I('first_chunk_seq', 'first assistant/chunk'),
      T('time', 'first chunk time'),
      S('model', 'model'),
      S('category', 'system | tools | user | assistantText | assistantReasoning | assistantToolCalls | toolResults | compaction | other'),
      L('bytes', 'bytes of the category in the request `dsh request --json` rebuilds'),
      L('tokens', "the dispatch's logged prompt tokens split in proportion to bytes (null: no usage logged)"),
      L('request_bytes', 'bytes of the whole request (the sum of its categories)'),
      L('prompt_tokens', 'logged prompt tokens: input + cache read + cache write'),
      L('context_window', 'request/context contextWindow'),
      D('fill_percent', 'prompt_tokens / context_window in percent'),
      L('shared_prefix_bytes', 'longest prompt prefix shared with an earlier dispatch (DeepSeek body, chat-template order)'),
      L('cache_read_tokens', 'logged cache-read tokens'),
    ],
  },
  {
    name: 'cache_breaks',
    doc: 'one row per prompt-cache break: a request that does not repeat the whole prompt of the dispatch before it, as `dsh context --breaks --json`',
    columns: [
      SESSION,
      I('dispatch_index', 'the dispatch that broke the cache'),
      S('key', 'turn/step#attempt'),
      I('first_chunk_seq', 'first assistant/chunk'),
      T('time', 'first chunk time'),
      S('previous_key', 'the dispatch before it'),
      S('cause', 'compaction | prune | rewrite | system | tools | model | removed | other'),
      I('cause_seq', 'the event that caused it (compaction checkpoint, compaction/prune, rewriting event, request/header)'),
      S('fields', 'header fields changed, comma-separated'),
      I('position', 'the first prompt element of the previous request not repeated'),
      S('element', 'system | tools | message | end'),
      I('element_seq', 'the surface node of that element (a message)'),
      L('resent_bytes', 'bytes after the break the previous prompt already held (sent again, uncached)'),
      L('resent_tokens', 'resent_bytes in proportional tokens'),
      D('uncached_cost_usd', 'the re-sent tokens at the uncached input price (shipped price table); null: unpriced'),
      D('extra_cost_usd', 'the re-sent tokens at the uncached price minus at the cache-hit price; null: unpriced'),
      S('detail', 'why, in words'),
    ],
  },
];

export const TABLE_BY_NAME: ReadonlyMap<TableName, TableDef> = new Map(TABLES.map((t) => [t.name, t]));

/** The columns a dataset has, with or without `--content`. */
export function columnsOf(table: TableName, content: boolean): ColumnDef[] {
  return TABLE_BY_NAME.get(table)!.columns.filter((c) => content || !c.content);
}

/** A row: column name to value (missing = null). */
export type Row = Record<string, string | number | boolean | null | undefined>;

/** The schema as the JSON document written into file metadata and printed by `dsh dataset --schema`. */
export function schemaDocument(): { schema: string; version: number; tables: TableDef[] } {
  return { schema: DATASET_SCHEMA_ID, version: DATASET_SCHEMA_VERSION, tables: TABLES as TableDef[] };
}

const tableJson = new Map<TableName, string>();
/** The schema of one table as written into its files' metadata (`dsh.schema`): id, version, the table's columns. */
export function tableSchemaJson(table: TableName): string {
  let json = tableJson.get(table);
  if (json === undefined) {
    json = toJson({ schema: DATASET_SCHEMA_ID, version: DATASET_SCHEMA_VERSION, table: TABLE_BY_NAME.get(table) });
    tableJson.set(table, json);
  }
  return json;
}

/**
 * `dsh dataset`: build or refresh a Parquet dataset from session roots and
 * targets. Layout of the output directory (nothing is written anywhere else):
 *
 *   DIR/manifest.json                  what every file came from (schema dsh-dataset-manifest/1)
 *   DIR/<table>/<shard>.parquet        one file per session per table (tables a session has rows for)
 *   DIR/findings/layout.parquet        root layout findings (no session)
 *
 * A session's shard name is derived from its artifact path, so its rows are
 * replaced alone: a re-run rewrites only the sessions whose artifact identity
 * (or whose fork parent's identity, which their findings and lineage depend
 * on) changed, and deletes the files of sessions no longer among the inputs.
 * Every file is published by the one output publisher (src/core/publish.ts: a temporary
 * name, fsync, rename); the manifest last.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { discoverTargets, type Finding } from '../check/engine.js';
import { checkTargets } from '../check/pool.js';
import { LogError, UsageError } from '../log/errors.js';
import type { ResolvedTarget } from '../log/target.js';
import { createDecoder, type DecoderName } from '../physical/decoders.js';
import { createRedactor } from '../views/redactor.js';
import { abandonNewFile, commitNewFile, openNewFile, outputRefusal, writeFileAtomic, type NewFile } from '../core/publish.js';
import { artifactIdentity, type ArtifactIdentity } from './identity.js';
import { openTableFile, type TableFile } from './parquet.js';
import { columnsOf, DATASET_SCHEMA_ID, DATASET_SCHEMA_VERSION, tableSchemaJson, TABLES, type Row, type TableName } from './schema.js';
import { sessionRows } from './session-rows.js';
import { toJson } from '../core/json.js';

export const MANIFEST_SCHEMA = 'dsh-dataset-manifest/1';
export const MANIFEST_NAME = 'manifest.json';

export interface DatasetOptions {
  /** Write event text (`text`, `data_json`). */
  content?: boolean;
  /** Redact content with the built-in detectors (and `--redact-paths`). */
  redact?: boolean;
  redactPaths?: boolean;
  root?: string;
  jobs?: number;
  decoder?: DecoderName | 'auto';
  /** dsh version for file metadata. */
  version: string;
  onProgress?: (done: number, total: number) => void;
}

export interface ManifestSession {
  path: string;
  root: string | null;
  sessionId: string | null;
  identity: string;
  stamp: ArtifactIdentity['stamp'];
  parentSession: string | null;
  /** Identity of the fork parent the rows were built against ('absent': not in the inputs). */
  parentIdentity: string | null;
  loaded: boolean;
  /** What this session's rows lack, and why (e.g. a compaction audit too large to hold). */
  warnings?: string[];
  /** Rows per table file written for this session. */
  tables: Partial<Record<TableName, number>>;
  builtAt: string;
}

export interface Manifest {
  schema: typeof MANIFEST_SCHEMA;
  datasetSchema: string;
  datasetSchemaVersion: number;
  tool: { name: 'dsh'; version: string };
  options: { content: boolean; redact: boolean; redactPaths: boolean };
  inputs: string[];
  updatedAt: string;
  sessions: Record<string, ManifestSession>;
  layoutFindings: number;
}

export interface DatasetSummary {
  dir: string;
  sessions: number;
  written: number;
  unchanged: number;
  removed: number;
  unreadable: number;
  rows: Record<TableName, number>;
  /** Warnings of the sessions written by this run. */
  warnings: string[];
  ms: number;
}

/** Shard name of an artifact: stable for its absolute path. */
export function shardOf(artifactPath: string): string {
  return 's' + createHash('sha1').update(path.resolve(artifactPath)).digest('hex').slice(0, 20);
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Read an existing manifest; undefined for a new (absent or empty) directory; UsageError for a foreign one. */
export function readManifest(dir: string): Manifest | undefined {
  const file = path.join(dir, MANIFEST_NAME);
  if (!existsSync(dir)) return undefined;
  if (!statSync(dir).isDirectory()) throw new UsageError(`-o ${dir}: not a directory`);
  if (!existsSync(file)) {
    if (readdirSync(dir).length > 0) throw new UsageError(`-o ${dir}: the directory is not empty and holds no ${MANIFEST_NAME}; refusing to write a dataset into it`);
    return undefined;
  }
  let m: Manifest;
  try {
    m = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`${file}: not a readable dataset manifest (${(error as Error).message})`);
  }
  if (m?.schema !== MANIFEST_SCHEMA || typeof m.sessions !== 'object') throw new UsageError(`${file}: not a dsh dataset manifest (schema ${toJson(m?.schema)})`);
  return m;
}

/** Write `file` through the output publisher's temporary sibling (fsync, rename over the old file); nothing is left on failure. */
function writeTableAtomic(file: string, write: (fd: number) => void): void {
  const out = openNewFile(file);
  try {
    write(out.fd);
  } catch (error) {
    abandonNewFile(out);
    throw error;
  }
  commitNewFile(out, true);
}

function fileMetadata(table: TableName, extra: Record<string, string>): Record<string, string> {
  return {
    'dsh.dataset_schema': DATASET_SCHEMA_ID,
    'dsh.dataset_schema_version': String(DATASET_SCHEMA_VERSION),
    'dsh.table': table,
    'dsh.schema': tableSchemaJson(table),
    ...extra,
  };
}

/** Per-table Parquet files of one shard, opened lazily on a table's first row. */
class ShardWriter {
  private files = new Map<TableName, { file: TableFile; out: NewFile }>();
  constructor(
    private readonly dir: string,
    private readonly shard: string,
    private readonly content: boolean,
    private readonly createdBy: string,
    private readonly meta: Record<string, string>,
  ) {}
  sink = (table: TableName, rows: Row[]): void => {
    if (rows.length === 0) return;
    let f = this.files.get(table);
    if (!f) {
      const final = path.join(this.dir, table, `${this.shard}.parquet`);
      mkdirSync(path.dirname(final), { recursive: true });
      const out = openNewFile(final);
      try {
        f = { file: openTableFile(out.fd, { columns: columnsOf(table, this.content), metadata: fileMetadata(table, this.meta), createdBy: this.createdBy }), out };
      } catch (error) {
        abandonNewFile(out);
        throw error;
      }
      this.files.set(table, f);
    }
    f.file.append(rows);
  };
  /** Close every file and move it into place; remove this shard's files of tables it no longer has. */
  commit(): Partial<Record<TableName, number>> {
    const counts: Partial<Record<TableName, number>> = {};
    const files = [...this.files];
    for (const [i, [table, f]] of files.entries()) {
      try {
        counts[table] = f.file.close();
        commitNewFile(f.out, true);
      } catch (error) {
        // Leave no temporary file of this shard behind (the one that failed is removed by the publisher).
        for (const [, rest] of files.slice(i)) abandonNewFile(rest.out);
        throw error;
      }
    }
    for (const t of TABLES) if (!this.files.has(t.name)) rmSync(path.join(this.dir, t.name, `${this.shard}.parquet`), { force: true });
    return counts;
  }
  abort(): void {
    for (const f of this.files.values()) {
      try {
        f.file.close();
      } catch {
        // the temporary file is removed either way
      }
      abandonNewFile(f.out);
    }
  }
}

function removeShard(dir: string, shard: string): void {
  for (const t of TABLES) rmSync(path.join(dir, t.name, `${shard}.parquet`), { force: true });
}

function findingRow(f: Finding): Row {
  return {
    session_id: f.sessionId ?? null,
    file: f.file,
    code: f.code,
    severity: f.severity,
    seq: f.seq ?? null,
    byte_offset: f.byteOffset ?? null,
    offset_in: f.offsetIn ?? null,
    message: f.message,
    hint: f.hint,
  };
}

/** Build or refresh the dataset in `outDir` from `inputs` (roots, session directories, artifacts, ids). */
export async function buildDataset(inputs: string[], outDir: string, options: DatasetOptions): Promise<DatasetSummary> {
  const started = Date.now();
  if (inputs.length === 0) throw new UsageError('give at least one session root, session directory or artifact');
  if (inputs.includes('-')) throw new UsageError('dsh dataset reads files, not stdin (-): save the log to a file first');
  const dir = path.resolve(outDir);
  const discovery = discoverTargets(inputs, options.root ? { root: options.root } : {});
  const targets = discovery.targets;
  // Outputs never go beside inputs: not into an input directory, a root, or a session directory (the one rule).
  const why = outputRefusal(dir, [...inputs.filter((i) => isDirectory(path.resolve(i))), ...targets], { directory: true });
  if (why) throw new UsageError(why, 'io');
  const previous = readManifest(dir);
  const opts = { content: Boolean(options.content), redact: Boolean(options.redact), redactPaths: Boolean(options.redactPaths) };
  const reusable =
    previous &&
    previous.datasetSchemaVersion === DATASET_SCHEMA_VERSION &&
    previous.options.content === opts.content &&
    previous.options.redact === opts.redact &&
    previous.options.redactPaths === opts.redactPaths;
  mkdirSync(dir, { recursive: true });

  // Identities, and each root's ids (fork parents and lineage `parent_found`).
  const shards = targets.map((t) => shardOf(t.path));
  const idents = targets.map((t, i) => {
    const prev = reusable ? previous.sessions[shards[i]!] : undefined;
    return artifactIdentity(t.path, prev && prev.path === path.resolve(t.path) ? { identity: prev.identity, stamp: prev.stamp } : undefined);
  });
  const byRootId = new Map<string, string>();
  const rootIds = new Map<string, Set<string>>();
  targets.forEach((t, i) => {
    if (t.root === undefined || t.expectedId === undefined) return;
    byRootId.set(`${t.root}\u0000${t.expectedId}`, idents[i]!.identity);
    let s = rootIds.get(t.root);
    if (!s) rootIds.set(t.root, (s = new Set()));
    s.add(t.expectedId);
  });
  const parentIdentity = (t: ResolvedTarget, parent: string | null): string | null =>
    parent === null ? null : t.root !== undefined ? (byRootId.get(`${t.root}\u0000${parent}`) ?? 'absent') : 'absent';

  const stale: number[] = [];
  targets.forEach((t, i) => {
    const prev = reusable ? previous.sessions[shards[i]!] : undefined;
    const fresh = prev && prev.path === path.resolve(t.path) && prev.identity === idents[i]!.identity && prev.parentIdentity === parentIdentity(t, prev.parentSession);
    if (!fresh) stale.push(i);
  });

  const sessions: Record<string, ManifestSession> = {};
  const keep = new Set(shards);
  let removed = 0;
  if (previous) {
    for (const shard of Object.keys(previous.sessions)) {
      if (keep.has(shard)) continue;
      removeShard(dir, shard);
      removed++;
    }
    if (!reusable) for (const shard of Object.keys(previous.sessions)) if (keep.has(shard)) removeShard(dir, shard);
  }
  targets.forEach((_t, i) => {
    const prev = reusable ? previous.sessions[shards[i]!] : undefined;
    if (prev && !stale.includes(i)) sessions[shards[i]!] = { ...prev, stamp: idents[i]!.stamp };
  });

  // Findings: the check engine over the sessions to rebuild (worker threads for many).
  const staleTargets = stale.map((i) => targets[i]!);
  const reports = await checkTargets(staleTargets, { ...(options.jobs !== undefined ? { jobs: options.jobs } : {}), decoder: options.decoder ?? 'auto' });
  const decoder = createDecoder(options.decoder ?? 'auto');
  const createdBy = `dsh version ${options.version}`;
  const redactor = opts.redact ? () => createRedactor({ paths: opts.redactPaths }) : undefined;
  let done = 0;
  const warnings: string[] = [];
  for (const [k, i] of stale.entries()) {
    const t = targets[i]!;
    const shard = shards[i]!;
    const ident = idents[i]!;
    const writer = new ShardWriter(dir, shard, opts.content, createdBy, { 'dsh.source': path.resolve(t.path), 'dsh.identity': ident.identity });
    let result: { sessionId: string | null; loaded: boolean; warnings: string[] };
    let parent: string | null = null;
    try {
      result = await sessionRows(
        t,
        {
          decoder,
          content: opts.content,
          ...(redactor ? { redactor } : {}),
          identity: ident.identity,
          ...(t.root !== undefined && rootIds.has(t.root) ? { rootIds: rootIds.get(t.root)! } : {}),
        },
        (table, rows) => {
          if (table === 'sessions') parent = (rows[0]?.['parent_session'] as string | null) ?? null;
          writer.sink(table, rows);
        },
      );
      const report = reports[k]!;
      writer.sink(
        'findings',
        report.findings.map((f) => findingRow(f)),
      );
    } catch (error) {
      writer.abort();
      if (error instanceof LogError) throw new UsageError(`${t.path}: ${error.message}`);
      throw error;
    }
    const tables = writer.commit();
    sessions[shard] = {
      path: path.resolve(t.path),
      root: t.root ?? null,
      sessionId: result.sessionId,
      identity: ident.identity,
      stamp: ident.stamp,
      parentSession: parent,
      parentIdentity: parentIdentity(t, parent),
      loaded: result.loaded,
      ...(result.warnings.length > 0 ? { warnings: result.warnings } : {}),
      tables,
      builtAt: new Date().toISOString(),
    };
    warnings.push(...result.warnings);
    options.onProgress?.(++done, stale.length);
  }

  // Root layout findings (not tied to a session): one small file, rewritten every run.
  const layoutFile = path.join(dir, 'findings', 'layout.parquet');
  if (discovery.layout.length > 0) {
    mkdirSync(path.dirname(layoutFile), { recursive: true });
    writeTableAtomic(layoutFile, (fd) => {
      const f = openTableFile(fd, { columns: columnsOf('findings', opts.content), metadata: fileMetadata('findings', { 'dsh.source': 'layout' }), createdBy });
      f.append(discovery.layout.map(findingRow));
      f.close();
    });
  } else rmSync(layoutFile, { force: true });

  const manifest: Manifest = {
    schema: MANIFEST_SCHEMA,
    datasetSchema: DATASET_SCHEMA_ID,
    datasetSchemaVersion: DATASET_SCHEMA_VERSION,
    tool: { name: 'dsh', version: options.version },
    options: opts,
    inputs: inputs.map((x) => path.resolve(x)),
    updatedAt: new Date().toISOString(),
    sessions,
    layoutFindings: discovery.layout.length,
  };
  writeFileAtomic(path.join(dir, MANIFEST_NAME), [toJson(manifest, null, 2) + '\n']);

  const rows = Object.fromEntries(TABLES.map((t) => [t.name, 0])) as Record<TableName, number>;
  for (const s of Object.values(sessions)) for (const [t, n] of Object.entries(s.tables)) rows[t as TableName] += n ?? 0;
  rows.findings += discovery.layout.length;
  return {
    dir,
    sessions: targets.length,
    written: stale.length,
    unchanged: targets.length - stale.length,
    removed,
    unreadable: Object.values(sessions).filter((s) => !s.loaded).length,
    rows,
    warnings,
    ms: Date.now() - started,
  };
}

/**
 * Incremental re-runs of `dsh dataset` (unchanged, one changed, one added,
 * one removed, a fork parent changed, options changed), content and
 * redaction, the output-directory rules, a second independent reader
 * (pyarrow), and `dsh sql` (table, --json, --csv, and without DuckDB).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { duckRows, haveDuckdb, pyarrowPython } from './helpers/dataset.js';

const HAVE_DUCKDB = await haveDuckdb();
if (!HAVE_CORPUS) console.warn(SKIP_REASON);
if (!HAVE_DUCKDB) console.warn('@duckdb/node-api is not installed (optional dependency): dataset read-back and dsh sql tests skipped; run npm install');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'dsh-dataset-inc-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const PROJECT = '--home-dsh-synthetic-project--';
const SRC = path.join(CORPUS, 'synthetic', 'root-raw');
const root = path.join(tmp, 'root');
const sessionFile = (id: string) => path.join(root, PROJECT, id, 'session.jsonl');

/** A copy of a corpus root holding only the artifacts (no expected.json beside them). */
function copyRoot(from: string, to: string): void {
  cpSync(from, to, { recursive: true, filter: (p) => !p.endsWith('expected.json') && !p.endsWith('expected-root.json') });
}

/** Drop the last line of a raw log: a shorter log DSH still loads (a genuine content change). */
function dropLastLine(file: string): void {
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
  writeFileSync(file, lines.slice(0, -1).join('\n') + '\n');
}

async function build(out: string, ...extra: string[]) {
  const r = await runCli(['dataset', root, '-o', out, '--json', ...extra]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

function parquetStamps(out: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const table of readdirSync(out)) {
    const dir = path.join(out, table);
    if (!statSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir)) m.set(`${table}/${f}`, statSync(path.join(dir, f)).mtimeMs);
  }
  return m;
}

const manifestOf = (out: string) => JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
const shardOfId = (out: string, id: string) => Object.entries(manifestOf(out).sessions as Record<string, { sessionId: string }>).find(([, s]) => s.sessionId === id)![0];

describe.skipIf(!HAVE_CORPUS || !HAVE_DUCKDB)('incremental dsh dataset', () => {
  const out = path.join(tmp, 'ds');
  beforeAll(() => copyRoot(SRC, root));

  it('builds, then a re-run over unchanged inputs rewrites nothing', async () => {
    const first = await build(out);
    expect([first.sessions, first.written, first.unchanged, first.removed]).toEqual([13, 13, 0, 0]);
    const before = parquetStamps(out);
    const again = await build(out);
    expect([again.sessions, again.written, again.unchanged, again.removed]).toEqual([13, 0, 13, 0]);
    expect(again.rows).toEqual(first.rows);
    expect(parquetStamps(out)).toEqual(before);
  });

  it('one changed, one added, one removed: only those sessions are touched', async () => {
    const before = parquetStamps(out);
    const changedShard = shardOfId(out, 'syn.llm-retry');
    const removedShard = shardOfId(out, 'syn.large-tool-output');
    dropLastLine(sessionFile('syn.llm-retry'));
    rmSync(path.join(root, PROJECT, 'syn.large-tool-output'), { recursive: true });
    // Added: a session from another corpus root, in its own project directory.
    const snapshots = path.join(CORPUS, 'dsh-snapshots', 'root-raw');
    const project = readdirSync(snapshots).filter((d) => d.startsWith('--')).sort()[0]!;
    const added = readdirSync(path.join(snapshots, project)).sort()[0]!;
    mkdirSync(path.join(root, project), { recursive: true });
    copyRoot(path.join(snapshots, project, added), path.join(root, project, added));

    const r = await build(out);
    expect([r.sessions, r.written, r.unchanged, r.removed]).toEqual([13, 2, 11, 1]);
    const after = parquetStamps(out);
    for (const [file, mtime] of before) {
      const shard = file.split('/')[1]!.replace(/\.parquet$/, '');
      if (shard === changedShard) continue;
      if (shard === removedShard) expect(after.has(file), file).toBe(false);
      else expect(after.get(file), file).toBe(mtime);
    }
    const sessions = await duckRows(out, 'sessions', 'session_id');
    expect(sessions.map((s) => s['session_id'])).not.toContain('syn.large-tool-output');
    expect(sessions.length).toBe(13);
    const events = await duckRows(out, 'events', 'session_id, seq');
    expect(events.some((e) => e['session_id'] === 'syn.large-tool-output')).toBe(false);
    // The changed and the added session equal their views now.
    const addedId = sessions.find((s) => String(s['path']).includes(path.join(project, added)))!['session_id'];
    for (const [id, file] of [
      ['syn.llm-retry', sessionFile('syn.llm-retry')],
      [addedId, path.join(root, project, added, 'session.jsonl')],
    ] as const) {
      const view = (await runInProcess(['events', file, '--json'])).stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
      expect(view.length).toBeGreaterThan(0);
      expect(events.filter((e) => e['session_id'] === id).map((e) => [e['seq'], e['type'], e['label']])).toEqual(view.map((v) => [v.seq, v.type, v.surface]));
    }
    expect(manifestOf(out).sessions[changedShard].identity).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('a changed fork parent rebuilds its child too (its findings and lineage depend on the parent)', async () => {
    dropLastLine(sessionFile('syn.fork.parent'));
    const r = await build(out);
    expect([r.written, r.unchanged]).toEqual([2, 11]);
    const check = JSON.parse((await runInProcess(['check', root, '--json'])).stdout);
    const findings = await duckRows(out, 'findings', 'file, code, seq');
    const child = check.sessions.find((s: any) => s.sessionId === 'syn.fork.child');
    expect(findings.filter((f) => f['session_id'] === 'syn.fork.child').map((f) => f['code']).sort()).toEqual(child.findings.map((f: any) => f.code).sort());
  });

  it('changed options (--content) rewrite every session; text only with --content, redacted with --redact', async () => {
    const secret = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z';
    const file = sessionFile('syn.compaction-double');
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('"Explain the build."');
    writeFileSync(file, text.replace('"Explain the build."', `"Explain the build. key ${secret}"`));
    expect((await duckRows(out, 'events', 'seq'))[0]).not.toHaveProperty('text');
    const plain = await build(out, '--content');
    expect(plain.written).toBe(13);
    let events = await duckRows(out, 'events', 'session_id, seq');
    const msg = events.find((e) => e['session_id'] === 'syn.compaction-double' && e['seq'] === 2)!;
    expect(msg['text']).toContain(secret);
    expect(JSON.parse(msg['data_json'] as string).content[0].text).toContain(secret);
    const redacted = await build(out, '--content', '--redact');
    expect(redacted.written).toBe(13);
    events = await duckRows(out, 'events', 'session_id, seq');
    const red = events.find((e) => e['session_id'] === 'syn.compaction-double' && e['seq'] === 2)!;
    expect(red['text']).not.toContain(secret);
    expect(red['text']).toContain('[REDACTED:');
    expect(red['data_json']).not.toContain(secret);
    for (const table of readdirSync(out)) {
      const dir = path.join(out, table);
      if (statSync(dir).isDirectory()) for (const f of readdirSync(dir)) expect(readFileSync(path.join(dir, f)).includes(secret), `${table}/${f}`).toBe(false);
    }
    const usage = await runCli(['dataset', root, '-o', out, '--redact']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--content/);
  });

  it('writes only into -o DIR: never inside an input, never into a foreign directory', async () => {
    const inside = await runCli(['dataset', root, '-o', path.join(root, 'ds')]);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toMatch(/^dsh: refusing to write .* it is inside/);
    expect(existsSync(path.join(root, 'ds'))).toBe(false);
    const foreign = path.join(tmp, 'foreign');
    mkdirSync(foreign);
    writeFileSync(path.join(foreign, 'notes.txt'), 'mine');
    const r = await runCli(['dataset', root, '-o', foreign]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not empty and holds no manifest.json/);
    expect(readdirSync(foreign)).toEqual(['notes.txt']);
    const missing = await runCli(['dataset', path.join(tmp, 'nope'), '-o', path.join(tmp, 'ds2')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).not.toMatch(/internal error|\n\s+at /);
  });
});

describe.skipIf(!HAVE_CORPUS)('a second, independent reader: pyarrow', () => {
  const py = HAVE_CORPUS ? pyarrowPython() : { skip: SKIP_REASON };
  if ('skip' in py) console.warn(`pyarrow reader test skipped: ${py.skip}`);
  it.skipIf('skip' in py)('opens every table with pyarrow: row counts, values and the schema metadata', async () => {
    const src = path.join(CORPUS, 'synthetic', 'root-zstd');
    const out = path.join(tmp, 'ds-pyarrow');
    const built = await runCli(['dataset', src, '-o', out, '--json']);
    expect(built.code).toBe(0);
    const summary = JSON.parse(built.stdout);
    const script = `
import json, sys, pyarrow.parquet as pq, pyarrow.dataset as ds
out = sys.argv[1]
res = {}
for t in ['sessions','events','dispatches','tool_calls','compactions','findings','lineage','context','cache_breaks']:
    if not __import__('os').path.isdir(out + '/' + t):
        res[t] = 0
        continue
    tab = ds.dataset(out + '/' + t, format='parquet').to_table()
    res[t] = tab.num_rows
ev = ds.dataset(out + '/events', format='parquet').to_table(filter=ds.field('session_id') == 'syn.llm-retry').sort_by('seq')
res['llm'] = [[r['seq'], r['type'], r['label']] for r in ev.to_pylist()]
res['time0'] = int(ev.column('time')[0].value)
f = pq.ParquetFile(out + '/dispatches/' + sorted(__import__('os').listdir(out + '/dispatches'))[0])
kv = f.metadata.metadata
res['schema'] = kv[b'dsh.dataset_schema'].decode()
doc = json.loads(kv[b'dsh.schema'])
res['tables'] = [doc['schema'], doc['version'], doc['table']['name'], [c['name'] for c in doc['table']['columns']] == f.schema_arrow.names]
res['types'] = {c.name: str(c.type) for c in f.schema_arrow if c.name in ('seq','first_chunk_seq','start_time','prompt_tokens','cost_usd')}
print(json.dumps(res))
`;
    const run = spawnSync(py.python, ['-c', script, out], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    const got = JSON.parse(run.stdout);
    for (const [t, n] of Object.entries(summary.rows)) expect(got[t], t).toBe(n);
    const view = (await runInProcess(['events', 'syn.llm-retry', '--root', src, '--json'])).stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(got.llm).toEqual(view.map((v) => [v.seq, v.type, v.surface]));
    expect(got.time0).toBe(view[0].time);
    expect(got.schema).toBe('dsh-dataset/2');
    expect(got.tables).toEqual(['dsh-dataset/2', 2, 'dispatches', true]);
    expect(got.types).toEqual({ first_chunk_seq: 'int32', prompt_tokens: 'int64', start_time: 'timestamp[ms, tz=UTC]', cost_usd: 'double' });
  }, 300_000);
});

describe.skipIf(!HAVE_CORPUS || !HAVE_DUCKDB)('dsh sql', () => {
  const src = path.join(CORPUS, 'synthetic', 'root-zstd');
  const out = path.join(tmp, 'ds-sql');
  let counts: Record<string, number>;
  beforeAll(async () => {
    const built = await runCli(['dataset', src, '-o', out, '--json']);
    counts = JSON.parse(built.stdout).rows;
  });
  const Q = 'select session_id, count(*) as n, sum(logical_bytes) as bytes from events group by 1 order by 1';

  it('--json: one object per row, numbers as numbers, equal to the views', async () => {
    const r = await runCli(['sql', Q, '--dataset', out, '--json']);
    expect(r.code).toBe(0);
    const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.length).toBe(13);
    expect(rows.reduce((a, x) => a + x.n, 0)).toBe(counts['events']);
    const one = rows.find((x) => x.session_id === 'syn.llm-retry');
    const view = (await runInProcess(['events', 'syn.llm-retry', '--root', src, '--json'])).stdout.split('\n').filter(Boolean);
    expect(one.n).toBe(view.length);
  });

  it('--csv and the table agree with --json', async () => {
    const json = (await runCli(['sql', Q, '--dataset', out, '--json'])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const csv = await runCli(['sql', Q, '--dataset', out, '--csv']);
    expect(csv.code).toBe(0);
    const lines = csv.stdout.split('\r\n').filter(Boolean);
    expect(lines[0]).toBe('session_id,n,bytes');
    expect(lines.slice(1)).toEqual(json.map((x) => `${x.session_id},${x.n},${x.bytes}`));
    const table = await runCli(['sql', Q, '--dataset', out]);
    expect(table.code).toBe(0);
    const tl = table.stdout.split('\n');
    expect(tl[0]).toMatch(/^session_id\s+n\s+bytes$/);
    expect(tl).toContain('(13 rows)');
    for (const x of json) expect(tl.some((l) => new RegExp(`^${x.session_id.replace(/\./g, '\\.')}\\s+${x.n}\\s+${x.bytes}$`).test(l))).toBe(true);
  });

  it('builds the dataset from roots first, then queries it; a bad query is a usage error', async () => {
    const cache = path.join(tmp, 'cache');
    const r = await runCli(['sql', 'select count(*) as n from dispatches', src, '--json'], { env: { DSH_CACHE_DIR: cache } });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).n).toBe(counts['dispatches']);
    expect(readdirSync(path.join(cache, 'datasets')).length).toBe(1);
    const bad = await runCli(['sql', 'select nope from sessions', '--dataset', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^dsh: sql: /);
    const none = await runCli(['sql', 'select 1']);
    expect(none.code).toBe(2);
  });

  it('an empty table is an empty view with the documented columns', async () => {
    const r = await runCli(['sql', "select count(*) as n from lineage where kind = 'x'", '--dataset', out, '--json']);
    expect(JSON.parse(r.stdout).n).toBe(0);
    const damaged = path.join(tmp, 'ds-damaged');
    await runCli(['dataset', path.join(CORPUS, 'synthetic', 'refused', 'syn.unknown-required', 'root-zstd'), '-o', damaged]);
    const e = await runCli(['sql', 'select count(*) as n, max(seq) as m from events', '--dataset', damaged, '--json']);
    expect(e.code).toBe(0);
    expect(JSON.parse(e.stdout)).toEqual({ n: 0, m: null });
  });

  it('without DuckDB: exit 2 with how to install it; other commands still work', async () => {
    const r = await runCli(['sql', 'select 1', '--dataset', out, '--duckdb-module', '@duckdb/not-installed-for-this-test']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/npm install @duckdb\/node-api/);
    expect(r.stdout).toBe('');
    // (dataset never imports DuckDB.)
    const ds = await runCli(['dataset', src, '-o', out]);
    expect(ds.code).toBe(0);
  });
});

describe.skipIf(!HAVE_CORPUS || !HAVE_DUCKDB)('the library API', () => {
  it('buildDataset, datasetSchema and queryDataset return Results', async () => {
    const { buildDataset, datasetSchema, queryDataset } = await import('../src/index.js');
    const out = path.join(tmp, 'ds-api');
    const built = await buildDataset([path.join(CORPUS, 'synthetic', 'root-zstd')], out);
    expect(built.ok).toBe(true);
    if (!built.ok) return;
    expect(built.value.sessions).toBe(13);
    expect(datasetSchema().tables.map((t) => t.name)).toEqual(['sessions', 'events', 'dispatches', 'tool_calls', 'compactions', 'findings', 'lineage', 'context', 'cache_breaks']);
    const q = await queryDataset(out, 'select count(*) as n from sessions');
    expect(q.ok && q.value.rows).toEqual([[13]]);
    const bad = await buildDataset([path.join(tmp, 'missing-root')], path.join(tmp, 'ds-api-2'));
    expect(bad.ok).toBe(false);
  });
});

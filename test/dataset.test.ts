/**
 * `dsh dataset` against the views it comes from, over every corpus root: the
 * dataset is built by the CLI as a spawned process and read back with DuckDB
 * (not the library that wrote it); each session's rows are compared with the
 * `--json` output of `dsh events`, `dsh request --list`, `dsh check` and
 * `dsh compactions`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { corpusRoots, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { duckRows, haveDuckdb } from './helpers/dataset.js';

const HAVE_DUCKDB = await haveDuckdb();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'dsh-dataset-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

if (!HAVE_CORPUS) console.warn(SKIP_REASON);
if (!HAVE_DUCKDB) console.warn('@duckdb/node-api is not installed (optional dependency): the dataset is not read back; run npm install');

const ndjson = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));

describe.skipIf(!HAVE_CORPUS || !HAVE_DUCKDB)('dsh dataset equals the views, for every corpus root', () => {
  const roots = corpusRoots();
  it('has the corpus roots', () => {
    expect(roots.length).toBeGreaterThanOrEqual(20);
  });
  for (const root of roots) {
    const name = path.relative(path.resolve(root, '..', '..'), root);
    it(`${name}`, async () => {
      const out = path.join(tmp, name.replace(/[\\/]/g, '_'));
      const built = await runCli(['dataset', root, '-o', out, '--json']);
      expect(built.stderr).toBe('');
      expect(built.code).toBe(0);
      const summary = JSON.parse(built.stdout);
      const sessions = await duckRows(out, 'sessions', 'path');
      expect(sessions.length).toBe(summary.sessions);
      expect(sessions.length).toBeGreaterThan(0);
      const events = await duckRows(out, 'events', 'session_id, seq');
      const dispatches = await duckRows(out, 'dispatches', 'session_id, "index"');
      const findings = await duckRows(out, 'findings', 'file, code, seq, message');
      const compactions = await duckRows(out, 'compactions', 'session_id, "index"');
      const contextRows = await duckRows(out, 'context', 'session_id, dispatch_index, category');
      const breakRows = await duckRows(out, 'cache_breaks', 'session_id, dispatch_index');
      const check = JSON.parse((await runInProcess(['check', root, '--json'])).stdout);
      for (const s of sessions) {
        const artifact = s['path'] as string;
        const id = s['session_id'];
        const ev = await runInProcess(['events', artifact, '--json']);
        const mine = events.filter((e) => e['session_id'] === id);
        if (!s['loaded']) {
          // An unreadable session: its row carries DSH's error, and it has no other rows.
          expect(ev.code).toBe(1);
          const { error } = JSON.parse(ev.stdout);
          expect([s['error_class'], s['error_message']]).toEqual([error.class, error.message]);
          expect(['corrupt', 'refused']).toContain(s['health']);
          expect(mine).toEqual([]);
          expect(dispatches.filter((d) => d['session_id'] === id)).toEqual([]);
        } else {
          expect(ev.code).toBe(0);
          const view = ndjson(ev.stdout);
          expect(mine.map((e) => [e['seq'], e['type'], e['label'], e['synthetic']])).toEqual(view.map((v) => [v.seq, v.type, v.surface, Boolean(v.synthetic)]));
          expect(mine.map((e) => (e['time'] as Date).getTime())).toEqual(view.map((v) => v.time));
          expect(mine.map((e) => e['logical_bytes'])).toEqual(view.map((v) => Buffer.byteLength(JSON.stringify(v.event))));
          const list = JSON.parse((await runInProcess(['request', artifact, '--list', '--json'])).stdout);
          const dis = dispatches.filter((d) => d['session_id'] === id);
          expect(
            dis.map((d) => [d['key'], d['first_chunk_seq'], d['last_chunk_seq'], d['finish'] === null ? null : JSON.parse(d['finish'] as string), d['header_seq'], d['assistant_message_seq'], d['message_count'], d['model'], d['duration_ms']]),
          ).toEqual(list.requests.map((q: any) => [q.key, q.firstChunkSeq, q.lastChunkSeq, q.finish, q.headerSeq, q.assistantMessageSeq, q.messageCount, q.model, q.durationMs]));
          expect(dis.map((d) => d['prompt_tokens'] ?? null)).toEqual(list.requests.map((q: any) => q.usage?.inputTokens ?? null));
          const audit = JSON.parse((await runInProcess(['compactions', artifact, '--json'])).stdout);
          expect(compactions.filter((c) => c['session_id'] === id).map((c) => [c['index'], c['kind'], c['compaction_id'], c['outcome'], c['trigger']])).toEqual(
            audit.attempts.map((a: any) => [a.index, a.kind, a.compactionId, a.outcome, a.trigger.kind]),
          );
          // context (dispatch x category) and cache_breaks: exactly `dsh context --json`.
          const ctx = JSON.parse((await runInProcess(['context', artifact, '--json'])).stdout);
          const cats = ['assistantReasoning', 'assistantText', 'assistantToolCalls', 'compaction', 'other', 'system', 'toolResults', 'tools', 'user'];
          expect(contextRows.filter((r) => r['session_id'] === id).map((r) => [r['dispatch_index'], r['key'], r['category'], r['bytes'], r['tokens'] ?? null, r['request_bytes'], r['shared_prefix_bytes']])).toEqual(
            ctx.dispatches.flatMap((d: any) => cats.map((c) => [d.index, d.key, c, d.byCategory[c], d.tokensByCategory?.[c] ?? null, d.bytes, d.cache.sharedBytes])),
          );
          expect(breakRows.filter((r) => r['session_id'] === id).map((r) => [r['key'], r['cause'], r['cause_seq'] ?? null, r['resent_bytes'], r['extra_cost_usd'] ?? null])).toEqual(
            ctx.breaks.map((b: any) => [b.key, b.cause, b.causeSeq, b.resentBytes, b.cost?.priced ? Number(b.cost.extra) : null]),
          );
        }
        // Findings: exactly `dsh check --json` for this artifact.
        const reported = check.sessions.find((r: any) => r.file === artifact);
        expect(reported).toBeDefined();
        const key = (f: any) => [f.code, f.severity, f.seq ?? null, f.byteOffset ?? null, f.message];
        const sort = (a: unknown[][]) => a.map((x) => JSON.stringify(x)).sort();
        expect(sort(findings.filter((f) => f['file'] === artifact).map((f) => key({ ...f, byteOffset: f['byte_offset'] })))).toEqual(sort(reported.findings.map(key)));
      }
      // Root layout findings.
      expect(findings.filter((f) => f['session_id'] === null && !sessions.some((s) => s['path'] === f['file'])).length).toBe(check.layout.length);
      const manifest = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
      expect(Object.keys(manifest.sessions).length).toBe(sessions.length);
    }, 120_000);
  }
});

/**
 * A real OTLP backend: Arize Phoenix (PyPI `arize-phoenix`, installed by
 * .ci/run into .ci/.phoenix), started on 127.0.0.1 with its data in a fresh
 * PHOENIX_WORKING_DIR. dsh sends the incident sample with --endpoint (OTLP/HTTP
 * protobuf, which is what Phoenix's /v1/traces takes), and the test reads the
 * spans back through Phoenix's REST API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from './helpers/cli.js';
import { PROJECT_ROOT } from './helpers/corpus.js';

const INCIDENT = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');

function phoenixPython(): { python?: string; why: string } {
  const candidates = [process.env['DSH_PHOENIX_PYTHON'], path.join(PROJECT_ROOT, '.ci', '.phoenix', 'bin', 'python'), 'python3'].filter((p): p is string => Boolean(p));
  for (const python of candidates) {
    if (python.includes('/') && !existsSync(python)) continue;
    const r = spawnSync(python, ['-c', 'import phoenix.server.main'], { encoding: 'utf8', timeout: 60_000 });
    if (r.status === 0) return { python, why: '' };
  }
  return { why: `Arize Phoenix is not installed (tried ${candidates.join(', ')}; .ci/run installs it with pip into .ci/.phoenix when PyPI is reachable)` };
}

const found = phoenixPython();
if (!found.python) console.warn(`skipping the Phoenix round trip: ${found.why}`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!found.python)('OTLP export into Arize Phoenix (real backend on 127.0.0.1)', () => {
  let child: ChildProcess | undefined;
  let base = '';
  let log = '';
  beforeAll(async () => {
    const port = await freePort();
    const grpc = await freePort();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-phoenix-'));
    child = spawn(found.python!, ['-m', 'phoenix.server.main', 'serve'], {
      env: { ...process.env, PHOENIX_WORKING_DIR: dir, PHOENIX_HOST: '127.0.0.1', PHOENIX_PORT: String(port), PHOENIX_GRPC_PORT: String(grpc), PHOENIX_TELEMETRY_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    base = `http://127.0.0.1:${port}`;
    const until = Date.now() + 90_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`Phoenix exited (${child.exitCode}):\n${log.slice(-2000)}`);
      try {
        const r = await fetch(`${base}/healthz`);
        if (r.ok) break;
      } catch {
        /* not up yet */
      }
      if (Date.now() > until) throw new Error(`Phoenix did not come up in 90 s:\n${log.slice(-2000)}`);
      await sleep(500);
    }
  }, 120_000);
  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
  });

  it('holds every span with its parent, token usage and the compaction event', async () => {
    const file = await runCli(['export', INCIDENT, '--format', 'otlp']);
    expect(file.code, file.stderr).toBe(0);
    const expected = JSON.parse(file.stdout).resourceSpans[0].scopeSpans[0].spans as any[];
    const sent = await runCli(['export', INCIDENT, '--format', 'otlp', '--endpoint', base, '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    let spans: any[] = [];
    const until = Date.now() + 30_000;
    // Phoenix's span listing: /spans in current releases, /span_search in older ones.
    const list = async (): Promise<any[]> => {
      for (const route of ['spans', 'span_search']) {
        const r = await fetch(`${base}/v1/projects/default/${route}?limit=1000`);
        if (r.status === 404 && route === 'spans') continue;
        expect(r.status, await r.clone().text()).toBe(200);
        return ((await r.json()) as { data: any[] }).data;
      }
      return [];
    };
    while (Date.now() < until) {
      spans = await list();
      if (spans.length >= expected.length) break;
      await sleep(500);
    }
    expect(spans.length).toBe(expected.length);
    const spanId = (s: any) => s.context?.span_id ?? s.span_id;
    const traceId = (s: any) => s.context?.trace_id ?? s.trace_id;
    const byId = new Map(spans.map((s) => [spanId(s), s]));
    for (const e of expected) {
      const got = byId.get(e.spanId);
      expect(got, e.name).toBeDefined();
      expect(got.name).toBe(e.name);
      expect(traceId(got)).toBe(e.traceId);
      expect(got.parent_id ?? undefined).toBe(e.parentSpanId);
    }
    const attr = (s: any, key: string) => (s.attributes?.[key] !== undefined ? s.attributes[key] : key.split('.').reduce((o: any, k) => o?.[k], s.attributes));
    const chats = expected.filter((e) => e.attributes.some((a: any) => a.key === 'gen_ai.operation.name' && a.value.stringValue === 'chat'));
    for (const c of chats) {
      const want = c.attributes.find((a: any) => a.key === 'gen_ai.usage.output_tokens')?.value.intValue;
      if (want !== undefined) expect(Number(attr(byId.get(c.spanId), 'gen_ai.usage.output_tokens'))).toBe(Number(want));
    }
    const events = spans.flatMap((s) => (s.events ?? []).map((e: any) => e.name));
    expect(events).toContain('dsh.context.compaction');
  }, 60_000);
});

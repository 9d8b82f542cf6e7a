import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { runCli } from './helpers/cli.js';
import { PROJECT_ROOT } from './helpers/corpus.js';
import { encodeProtobuf, PROTO_DIR, TRACE_SERVICE_PROTO } from '../src/export/otlp-send.js';
import { SCHEMA_URL, type ExportTraceServiceRequest, type OtlpSpan } from '../src/export/otlp.js';

const require = createRequire(import.meta.url);
const protobuf = require('protobufjs');

const FIXTURES = path.join(PROJECT_ROOT, 'fixtures', 'incident');
const INCIDENT = path.join(FIXTURES, '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
const CORPUS_ROOT = path.join(PROJECT_ROOT, '..', 'shared', 'corpus', 'synthetic', 'root-zstd');

/** The official definitions, loaded independently of the code under test. */
function officialType(): any {
  const root = new protobuf.Root();
  root.resolvePath = (_o: string, t: string) => path.join(PROTO_DIR, t);
  root.loadSync(TRACE_SERVICE_PROTO);
  root.resolveAll();
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

const INT64 = new Set(['int64', 'uint64', 'fixed64', 'sfixed64', 'sint64']);
const INT32 = new Set(['int32', 'uint32', 'fixed32', 'sfixed32', 'sint32']);
const HEX_IDS: Record<string, number> = { traceId: 32, spanId: 16, parentSpanId: 16 };

/**
 * Strict OTLP/JSON check against the reflected proto: every key is a field of
 * its message (lowerCamelCase JSON names), every value has the field's JSON
 * type (64-bit integers as decimal strings, ids as hex, enums as integers),
 * at most one member of a oneof is set.
 */
function validate(type: any, obj: unknown, where: string, problems: string[]): void {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) {
    problems.push(`${where}: expected a ${type.name} object`);
    return;
  }
  const o = obj as Record<string, unknown>;
  for (const oneof of type.oneofsArray) {
    const set = oneof.fieldsArray.filter((f: any) => o[f.name] !== undefined);
    if (set.length > 1) problems.push(`${where}: oneof ${oneof.name} has ${set.length} members set`);
  }
  for (const [key, v] of Object.entries(o)) {
    const field = type.fields[key];
    if (!field) {
      problems.push(`${where}.${key}: no such field in ${type.fullName}`);
      continue;
    }
    const values = field.repeated ? v : [v];
    if (field.repeated && !Array.isArray(v)) {
      problems.push(`${where}.${key}: repeated field must be an array`);
      continue;
    }
    (values as unknown[]).forEach((x, i) => {
      const at = field.repeated ? `${where}.${key}[${i}]` : `${where}.${key}`;
      if (field.resolvedType instanceof protobuf.Type) return validate(field.resolvedType, x, at, problems);
      if (field.resolvedType instanceof protobuf.Enum) {
        if (!Number.isInteger(x) || !Object.values(field.resolvedType.values).includes(x)) problems.push(`${at}: not a value of ${field.resolvedType.name}`);
        return;
      }
      const t = field.type;
      const ok =
        t === 'string'
          ? typeof x === 'string'
          : t === 'bool'
            ? typeof x === 'boolean'
            : t === 'double' || t === 'float'
              ? typeof x === 'number'
              : INT64.has(t)
                ? typeof x === 'string' && /^-?\d+$/.test(x)
                : INT32.has(t)
                  ? Number.isInteger(x)
                  : t === 'bytes'
                    ? typeof x === 'string' && (HEX_IDS[key] ? new RegExp(`^[0-9a-f]{${HEX_IDS[key]}}$`).test(x) && !/^0+$/.test(x) : /^[A-Za-z0-9+/]*={0,2}$/.test(x))
                    : false;
      if (!ok) problems.push(`${at}: ${JSON.stringify(x)} is not a valid ${t}`);
    });
  }
}

/** Drop what protobuf does not carry (defaults, empty lists), ids to hex, longs to strings. */
function normalize(v: any, key?: string): any {
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString(key && HEX_IDS[key] ? 'hex' : 'base64');
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.map((x) => normalize(x));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const n = normalize(v[k], k);
      if (n !== undefined) out[k] = n;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  if (v === 0 || v === '' || v === '0' || v === false) return undefined;
  return v;
}

function spansOf(doc: ExportTraceServiceRequest): OtlpSpan[] {
  return doc.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}
const attr = (s: { attributes: { key: string; value: any }[] }, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : (v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue ?? v.arrayValue);
};

async function exportJson(args: string[]): Promise<ExportTraceServiceRequest> {
  const r = await runCli(['export', ...args, '--format', 'otlp']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('dsh export --format otlp (OTLP/JSON)', () => {
  it('is valid against the official opentelemetry-proto definitions and round-trips through protobuf', async () => {
    const T = officialType();
    const docs = [await exportJson([INCIDENT, '--content']), await exportJson([FIXTURES])];
    if (existsSync(CORPUS_ROOT)) docs.push(await exportJson([CORPUS_ROOT, '--content']));
    for (const doc of docs) {
      const problems: string[] = [];
      validate(T, doc, 'request', problems);
      expect(problems.slice(0, 10)).toEqual([]);
      expect(doc.resourceSpans[0]!.schemaUrl).toBe(SCHEMA_URL);
      const decoded = T.toObject(T.decode(encodeProtobuf(doc)), { longs: String, enums: Number, bytes: Buffer, defaults: false, arrays: false });
      expect(normalize(decoded)).toEqual(normalize(doc));
    }
  });

  it('the validator itself rejects what the definitions do not allow', () => {
    const T = officialType();
    const problems: string[] = [];
    const bad = { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'XYZ', spanId: '00000000000000000000', kind: 9, startTimeUnixNano: 5, colour: 'red', attributes: [{ key: 'k', value: { stringValue: 'a', intValue: '1' } }] }] }] }] };
    validate(T, bad, 'request', problems);
    expect(problems.join('\n')).toMatch(/traceId.*bytes/);
    expect(problems.join('\n')).toMatch(/spanId.*bytes/);
    expect(problems.join('\n')).toMatch(/kind: not a value of SpanKind/);
    expect(problems.join('\n')).toMatch(/startTimeUnixNano: 5 is not a valid fixed64/);
    expect(problems.join('\n')).toMatch(/colour: no such field/);
    expect(problems.join('\n')).toMatch(/oneof value has 2 members set/);
  });

  it('builds one trace per session: parent links resolve, ids are unique and deterministic', async () => {
    const a = await exportJson([FIXTURES]);
    const b = await exportJson([FIXTURES]);
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    const spans = spansOf(a);
    const ids = new Set(spans.map((s) => `${s.traceId}/${s.spanId}`));
    expect(ids.size).toBe(spans.length);
    for (const s of spans) if (s.parentSpanId) expect(ids.has(`${s.traceId}/${s.parentSpanId}`), s.name).toBe(true);
    const roots = spans.filter((s) => !s.parentSpanId);
    expect(roots.map((s) => attr(s, 'gen_ai.conversation.id')).sort()).toEqual(['session-incident-1', 'session-incident-1-fork-1']);
    expect(new Set(roots.map((s) => s.traceId)).size).toBe(2);
    // The fork links to the parent's turn where its seed ends, and that span exists in the parent's trace.
    const fork = roots.find((s) => attr(s, 'dsh.session.kind') === 'fork')!;
    expect(fork.links).toHaveLength(1);
    const link = fork.links[0]!;
    expect(attr(link, 'dsh.link.kind')).toBe('fork-of');
    const target = spans.find((s) => s.traceId === link.traceId && s.spanId === link.spanId);
    expect(target?.name).toMatch(/^turn \d+$/);
  });

  it.skipIf(!existsSync(CORPUS_ROOT))('gives a subagent its own trace, linked to its parent session\'s root span', async () => {
    const spans = spansOf(await exportJson([CORPUS_ROOT]));
    const child = spans.find((s) => !s.parentSpanId && attr(s, 'dsh.session.id') === 'syn.subagent.child')!;
    const parent = spans.find((s) => !s.parentSpanId && attr(s, 'dsh.session.id') === 'syn.subagent.parent')!;
    expect(child.traceId).not.toBe(parent.traceId);
    expect(child.links.map((l) => [l.traceId, l.spanId, attr(l, 'dsh.link.kind')])).toEqual([[parent.traceId, parent.spanId, 'subagent-of']]);
  });

  it('marks the crash: interrupted turn, synthetic closers, tool calls of unknown outcome; token usage and compaction events', async () => {
    const spans = spansOf(await exportJson([INCIDENT]));
    const turns = spans.filter((s) => s.name.startsWith('turn '));
    expect(turns).toHaveLength(4);
    const t4 = turns.find((s) => s.name === 'turn 4')!;
    expect(attr(t4, 'dsh.turn.interrupted')).toBe(true);
    expect(attr(t4, 'dsh.turn.synthetic_end')).toBe(true);
    expect(t4.events.filter((e) => e.name === 'dsh.synthetic_closer')).toHaveLength(5);
    const synthetic = spans.filter((s) => s.name.startsWith('execute_tool') && attr(s, 'dsh.synthetic') === true);
    expect(synthetic.map((s) => attr(s, 'dsh.tool.outcome')).sort()).toEqual(['not-started', 'not-started', 'unknown']);
    expect(synthetic.every((s) => s.status.code === 2)).toBe(true);
    const chats = spans.filter((s) => attr(s, 'gen_ai.operation.name') === 'chat');
    expect(chats.length).toBeGreaterThan(0);
    for (const c of chats) {
      expect(attr(c, 'gen_ai.provider.name')).toBe('deepseek');
      expect(BigInt(c.endTimeUnixNano) >= BigInt(c.startTimeUnixNano)).toBe(true);
    }
    // Usage equals `dsh request --list --json`-level figures: the sum of output tokens over dispatches is positive and integral.
    expect(chats.some((c) => Number(attr(c, 'gen_ai.usage.output_tokens')) > 0)).toBe(true);
    const events = turns.flatMap((t) => t.events).map((e) => e.name);
    expect(events).toContain('dsh.context.compaction');
    expect(events).toContain('dsh.context.prune');
    // No content without --content.
    expect(spans.flatMap((s) => s.attributes.map((a) => a.key)).filter((k) => k.startsWith('gen_ai.input') || k.endsWith('.arguments'))).toEqual([]);
  });

  it('caps each chat span\'s input messages at --content-max-bytes, leaving out the oldest first', async () => {
    const full = spansOf(await exportJson([INCIDENT, '--content']));
    const capped = spansOf(await exportJson([INCIDENT, '--content', '--content-max-bytes', '2000']));
    let omittedSome = false;
    for (const [i, c] of capped.entries()) {
      if (attr(c, 'gen_ai.operation.name') !== 'chat') continue;
      const all = JSON.parse(attr(full[i]!, 'gen_ai.input.messages'));
      const kept = JSON.parse(attr(c, 'gen_ai.input.messages'));
      const omitted = Number(attr(c, 'dsh.content.omitted_input_messages') ?? 0);
      expect(kept).toEqual(all.slice(omitted));
      expect(kept.length).toBeGreaterThan(0);
      if (kept.length > 1) expect(Buffer.byteLength(attr(c, 'gen_ai.input.messages'))).toBeLessThanOrEqual(2000);
      if (omitted > 0) omittedSome = true;
    }
    expect(omittedSome).toBe(true);
  });

  it('exports content only with --content, and redacts it with --redact', async () => {
    const SECRET = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd';
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-otlp-'));
    const file = path.join(dir, 'session.jsonl');
    const ev = (seq: number, type: string, data: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ type, seq, time: 1000 + seq * 10, data, ...extra });
    const chunk = (seq: number, c: unknown) => ev(seq, 'assistant/chunk', { turn: 1, step: 1, chunk: c });
    writeFileSync(
      file,
      [
        '{"type":"session","version":0,"id":"sec","createdAt":1000,"cwd":"/home/alice/proj","delegationDepth":0}',
        ev(0, 'turn/start', { turn: 1 }),
        ev(1, 'step/start', { turn: 1, step: 1 }),
        ev(2, 'user/message', { content: [{ type: 'text', text: `deploy with ${SECRET}` }], source: { kind: 'user' }, role: 'user', id: 'u1' }, { surfaceOp: 'append' }),
        ev(3, 'request/header', { header: { config: { provider: 'deepseek-official', model: 'deepseek-v4-flash', temperature: 0.5 }, system: 'Be brief.' } }),
        chunk(4, { type: 'block-start', index: 0, blockType: 'text' }),
        chunk(5, { type: 'text-delta', index: 0, text: 'Done.' }),
        chunk(6, { type: 'block-end', index: 0, block: { type: 'text', text: 'Done.' } }),
        chunk(7, { type: 'usage', usage: { inputTokens: 40, outputTokens: 2, cacheReadTokens: 10 } }),
        chunk(8, { type: 'finish', reason: { kind: 'stop' } }),
        ev(9, 'assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'Done.' }], source: { kind: 'model', provider: 'deepseek-official', model: 'deepseek-v4-flash' }, id: 'a1' }, usage: { inputTokens: 40, outputTokens: 2, cacheReadTokens: 10 } }, { sourceEventSeqs: [4, 5, 6, 7, 8], surfaceOp: 'append' }),
        ev(10, 'step/end', { turn: 1, step: 1 }),
        ev(11, 'turn/end', { turn: 1, reason: { kind: 'completed' } }),
        '',
      ].join('\n'),
    );
    const plain = JSON.stringify(await exportJson([file]));
    expect(plain).not.toContain(SECRET);
    expect(plain).not.toContain('gen_ai.input.messages');
    const withContent = await exportJson([file, '--content']);
    const chat = spansOf(withContent).find((s) => attr(s, 'gen_ai.operation.name') === 'chat')!;
    expect(attr(chat, 'gen_ai.request.model')).toBe('deepseek-v4-flash');
    expect(attr(chat, 'gen_ai.request.temperature')).toBe(0.5);
    expect(attr(chat, 'gen_ai.usage.input_tokens')).toBe('50');
    expect(attr(chat, 'gen_ai.usage.cache_read.input_tokens')).toBe('10');
    expect(attr(chat, 'gen_ai.usage.output_tokens')).toBe('2');
    expect(JSON.parse(attr(chat, 'gen_ai.input.messages'))).toEqual([{ role: 'user', parts: [{ type: 'text', content: `deploy with ${SECRET}` }] }]);
    expect(JSON.parse(attr(chat, 'gen_ai.system_instructions'))).toEqual([{ type: 'text', content: 'Be brief.' }]);
    expect(JSON.parse(attr(chat, 'gen_ai.output.messages'))).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'Done.' }], finish_reason: 'stop' }]);
    const redacted = JSON.stringify(await exportJson([file, '--content', '--redact']));
    expect(redacted).not.toContain(SECRET);
    expect(redacted).toMatch(/\[REDACTED:sk-…:≤64#[0-9a-f]{4}\]/);
    // -o writes the same document (outside the input's directory, which is refused); an existing file is refused.
    const outDir = mkdtempSync(path.join(os.tmpdir(), 'dsh-otlp-out-'));
    const out = path.join(outDir, 'spans.json');
    const w = await runCli(['export', file, '--format', 'otlp', '--content', '-o', out]);
    expect(w.code, w.stderr).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual(withContent);
    const again = await runCli(['export', file, '--format', 'otlp', '-o', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
    expect(readdirSync(dir).sort()).toEqual(['session.jsonl']);
    expect(readdirSync(outDir)).toEqual(['spans.json']);
  });
});

interface Received {
  contentType: string;
  body: Buffer;
}

describe('dsh export --format otlp --endpoint (OTLP/HTTP)', () => {
  let server: Server;
  let base = '';
  const received: Received[] = [];
  const plan: number[] = [];
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const status = plan.shift() ?? 200;
        if (status === 200) received.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
        res.statusCode = status;
        if (status === 503) res.setHeader('retry-after', '0');
        res.end(status === 400 ? 'bad span data' : '');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends protobuf in batches, retrying a 503; the receiver decodes every span with the official definitions', async () => {
    received.length = 0;
    plan.push(503);
    const r = await runCli(['export', FIXTURES, '--format', 'otlp', '--endpoint', base, '--batch-size', '10', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('attempt 1 failed (HTTP 503');
    const summary = JSON.parse(r.stdout);
    const file = spansOf(await exportJson([FIXTURES]));
    expect(summary).toMatchObject({ sessions: 2, spans: file.length, protocol: 'http/protobuf', endpoint: `${base}/v1/traces` });
    expect(received.length).toBe(Math.ceil(file.length / 10));
    const T = officialType();
    const got = received.flatMap((x) => {
      expect(x.contentType).toBe('application/x-protobuf');
      const m = T.toObject(T.decode(x.body), { longs: String, enums: Number, bytes: Buffer });
      return m.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans));
    });
    expect(got.map((s: any) => normalize(s))).toEqual(file.map((s) => normalize(s)));
  });

  it('sends OTLP/JSON with --protocol http/json', async () => {
    received.length = 0;
    const r = await runCli(['export', INCIDENT, '--format', 'otlp', '--endpoint', `${base}/v1/traces`, '--protocol', 'http/json']);
    expect(r.code, r.stderr).toBe(0);
    expect(received).toHaveLength(1);
    expect(received[0]!.contentType).toBe('application/json');
    expect(JSON.parse(received[0]!.body.toString())).toEqual(await exportJson([INCIDENT]));
  });

  it('exits 2 with the endpoint\'s answer when it refuses, and when nothing listens', async () => {
    plan.push(400);
    const refused = await runCli(['export', INCIDENT, '--format', 'otlp', '--endpoint', base]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('refused the export (HTTP 400: bad span data)');
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = await runCli(['export', INCIDENT, '--format', 'otlp', '--endpoint', `http://127.0.0.1:${port}`]);
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/could not take the export after 4 attempt\(s\) \(ECONNREFUSED\)/);
    expect(down.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('dsh export --format otlp -o never writes to or beside an input', () => {
  it('refuses the input itself (even with --force), its session directory and its root, before reading', async () => {
    const { cpSync, statSync } = await import('node:fs');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-otlp-input-'));
    const root = path.join(dir, 'root');
    cpSync(FIXTURES, root, { recursive: true });
    const log = path.join(root, '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
    const before = readFileSync(log);
    const mtime = statSync(log).mtimeMs;
    const outs: [string[], string][] = [
      [[log, '-o', log, '--force'], log],
      [[log, '-o', path.join(path.dirname(log), 'spans.json')], path.join(path.dirname(log), 'spans.json')],
      [[log, '-o', path.join(root, 'spans.json')], path.join(root, 'spans.json')],
      [[root, '-o', path.join(root, '--home-dev-acme-api--', 'spans.json')], path.join(root, '--home-dev-acme-api--', 'spans.json')],
    ];
    for (const [args, out] of outs) {
      for (const json of [false, true]) {
        const r = await runCli(['export', ...args.slice(0, 1), '--format', 'otlp', ...args.slice(1), ...(json ? ['--json'] : [])]);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
        if (json) expect(JSON.parse(r.stdout.trim()).error.message).toMatch(/^refusing to write/);
        else expect(r.stderr).toMatch(/refusing to write/);
        if (out !== log) expect(existsSync(out)).toBe(false);
      }
    }
    expect(readFileSync(log).equals(before)).toBe(true);
    expect(statSync(log).mtimeMs).toBe(mtime);
    expect(readdirSync(path.dirname(log))).toEqual(['session.jsonl.zstd']);
  });
});

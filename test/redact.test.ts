import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli, runInProcess } from './helpers/cli.js';
import { HAVE_CORPUS, SKIP_REASON, corpusCases } from './helpers/corpus.js';
import { MemorySource, FileSource } from '../src/physical/source.js';
import { scanFrames } from '../src/physical/zstd-frames.js';
import { createDecoder } from '../src/physical/decoders.js';
import { collectSession, type GenerateOptions } from '../tools/generate.js';
import { writeArtifact } from '../src/log/writer.js';
import { sessionPath } from '../src/log/layout.js';
import { readArtifact } from '../src/log/read.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import type { Encoding, SessionEvent } from '../src/log/types.js';
import { createRedactor, redactArtifactText, redactionToken, hashTag, RedactingText } from '../src/views/redactor.js';
import { isSecretKeyName } from '../src/views/detectors.js';
import { redactTarget } from '../src/redact/artifact.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'dsh-redact-'));
const decoder = createDecoder();

const S = {
  openai: 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z',
  deepseek: 'sk-0f3a9c1b7e2d4a6f8b0c1d2e3f4a5b6c',
  anthropic: 'sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe',
  github: 'ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s12',
  githubPat: 'github_pat_11ABCDEFG0aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789abcdefghijklmnopqrstuv',
  aws: 'AKIAZ7XQ3M5N2P4R6T8V',
  awsSecret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Q8w7e6r5',
  slack: 'xoxb-2048913375-abcDEFghiJKLmno',
  google: 'AIzaSyC7d9F1h3J5l7N9p1R3t5V7x9Z1b3D5f7H',
  stripe: 'sk_live_51HqLyjWDarjtT1zdp7dcXyZ',
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlX2hlcmVfMTIzNDU2Nzg5MA',
  bearer: 'tok_9f8e7d6c5b4a3f2e1d0c9b8a',
  pemBody: 'MIIEowIBAAKCAQEA7q9Zr8Xy2u3vQw1e',
  pgpass: 'S3cretPgPassw0rd',
  env: 'hunter2-very-secret',
} as const;
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${S.pemBody}\nQ2xvc2VkIGJsb2Nr\n-----END RSA PRIVATE KEY-----`;
/** Split across two streamed deltas. */
const SPLIT = { a: 'sk-ant-api03-SpLiTsEcReT', b: 'AbCdEfGh0123456789xyz' };
const SPLIT_FULL = SPLIT.a + SPLIT.b;
const SECRETS = [...Object.values(S), SPLIT_FULL, SPLIT.b];

describe('detectors and tokens', () => {
  const r = () => createRedactor();
  it('finds every built-in secret shape', () => {
    const cases: [string, string, string][] = [
      ['openai', `key ${S.openai} end`, S.openai],
      ['openai', `DEEPSEEK ${S.deepseek}`, S.deepseek],
      ['anthropic', `x ${S.anthropic}`, S.anthropic],
      ['github', `t=${S.github};`, S.github],
      ['github', S.githubPat, S.githubPat],
      ['aws-access-key-id', `id ${S.aws}`, S.aws],
      ['aws-secret-access-key', `aws_secret_access_key = ${S.awsSecret}`, S.awsSecret],
      ['slack', `token ${S.slack}`, S.slack],
      ['google', `key=${S.google}&x`, S.google],
      ['stripe', `${S.stripe}`, S.stripe],
      ['jwt', `auth ${S.jwt}`, S.jwt],
      ['bearer', `Authorization: Bearer ${S.bearer}`, S.bearer],
      ['private-key', `key:\n${PEM}\nafter`, S.pemBody],
      ['url-password', `postgres://admin:${S.pgpass}@db.internal:5432/app`, S.pgpass],
      ['env-secret', `DB_PASSWORD=${S.env}`, S.env],
      ['env-secret', `"client_secret": "${S.env}"`, S.env],
      ['env-secret', `export MY_API_KEY='${S.env}'`, S.env],
    ];
    for (const [detector, text, secret] of cases) {
      const red = r();
      const out = red.redactText(text);
      expect(out, detector).not.toContain(secret);
      expect(out, detector).toContain('[REDACTED:');
      expect(red.stats.byDetector[detector], `${detector}: ${out}`).toBeGreaterThan(0);
    }
  });

  it('keeps the context, a length class and a stable 4-hex hash; identical secrets stay linkable', () => {
    const red = r();
    expect(red.redactText(`Bearer ${S.bearer}`)).toBe(`Bearer [REDACTED:bearer:≤32#${hashTag(S.bearer)}]`);
    const a = red.redactText(`first ${S.openai}`);
    const b = red.redactText(`again: ${S.openai}!`);
    expect(a.slice(6)).toBe(redactionToken('sk-…', S.openai));
    expect(b).toBe(`again: ${redactionToken('sk-…', S.openai)}!`);
    expect(redactionToken('sk-…', S.openai)).toMatch(/^\[REDACTED:sk-…:≤64#[0-9a-f]{4}\]$/);
    expect(red.stats.distinctSecrets).toBe(2);
  });

  it('leaves ordinary text alone', () => {
    const red = r();
    const benign = [
      'MAX_TOKENS=4096 and max_tokens: 8192, inputTokens=12',
      'const password: string; token = getToken(); GITHUB_TOKEN=$GITHUB_TOKEN',
      'we use a Bearer token for auth; the tokenizer splits words',
      'risk-assessment-framework-2024 and sk-learn are libraries',
      'https://example.com/path?q=1 and user@example.com',
      'token_count: 123456, token_type: "Bearer"',
      '{"type":"text","text":"hello"}',
    ];
    for (const t of benign) expect(red.redactText(t), t).toBe(t);
    expect(red.stats.replacements).toBe(0);
  });

  it('secret key names', () => {
    for (const k of ['GITHUB_TOKEN', 'DB_PASSWORD', 'api_key', 'apiKey', 'OPENAI_API_KEY', 'client_secret', 'SECRET_KEY_BASE', 'accessToken']) expect(isSecretKeyName(k), k).toBe(true);
    for (const k of ['MAX_TOKENS', 'maxTokens', 'token_count', 'token_type', 'inputTokens', 'tokenizer', 'password_file', 'secretName']) expect(isSecretKeyName(k), k).toBe(false);
  });

  it('--redact-pattern and --redact-paths', () => {
    const red = createRedactor({ patterns: ['ACME-[0-9]{6}', 'ticket=(\\w+)'], paths: true, cwd: '/home/alice/work/proj' });
    const out = red.redactText('see ACME-123456 ticket=abc123 in /home/alice/work/proj/src/a.ts and /Users/bob/x and /home/carol');
    expect(out).not.toMatch(/ACME-123456|abc123|alice|bob|carol|work\/proj/);
    expect(out).toContain('ticket=[REDACTED:pattern-2');
    expect(out).toMatch(/ \/\[REDACTED:cwd:≤32#[0-9a-f]{4}\]\/src\/a\.ts/);
    expect(out).toContain('/Users/[REDACTED:user:');
    expect(() => createRedactor({ patterns: ['('] })).toThrow(/invalid --redact-pattern/);
  });

  it('never rewrites structure or identity fields; reports secrets left in them', () => {
    const red = createRedactor();
    const ev = {
      type: 'tool/call',
      seq: 7,
      time: 1,
      data: { turn: 1, step: 1, callId: S.openai, name: 'bash', arguments: JSON.stringify({ command: `echo ${S.openai}` }) },
    };
    const line = JSON.stringify(ev);
    const out = JSON.parse(red.redactBodyLine(line, 1));
    expect(out.data.callId).toBe(ev.data.callId);
    expect(out.data.arguments).not.toContain(S.openai);
    expect(out.type).toBe('tool/call');
    expect(out.seq).toBe(7);
    expect(red.stats.protectedHits).toEqual([{ seq: 7, line: 1, key: 'callId', detector: 'openai' }]);
    const clean = '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}';
    expect(red.redactBodyLine(clean, 2)).toBe(clean);
  });
});

// ---------------------------------------------------------------------------

const GEN: GenerateOptions = { seed: 5, id: 'redact-gen', cwd: '/home/alice/work/proj', turns: 5, toolOutputBytes: [300, 1500], features: { 2: ['compaction'], 3: ['prune'] } };

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** Generated batches with secrets planted in every kind of text field. */
function planted(): { batches: SessionEvent[][]; header: ReturnType<typeof collectSession>['header'] } {
  const s = collectSession(GEN);
  const batches = clone(s.batches);
  const events = batches.flat();
  const first = (p: (e: SessionEvent) => boolean) => {
    const e = events.find(p);
    if (!e) throw new Error('generator produced no such event');
    return e;
  };
  first((e) => e.type === 'user/message').data.content[0].text += ` my key is ${S.openai} and ${S.deepseek}`;
  first((e) => e.type === 'request/header').data.header.system += `\nAuthorization: Bearer ${S.bearer}\nSTRIPE=${S.stripe}`;
  const call = first((e) => e.type === 'tool/call');
  const args = JSON.stringify({ command: `psql postgres://admin:${S.pgpass}@db/app && export DB_PASSWORD=${S.env}` });
  call.data.arguments = args;
  for (const e of events) {
    if (e.type !== 'assistant/message') continue;
    for (const b of e.data.message.content) if (b.type === 'tool-call' && b.id === call.data.callId) b.arguments = args;
  }
  const result = first((e) => e.type === 'tool/result' && e.surfaceOp === 'append');
  result.data.message.content[0].content[0].text += `\nGITHUB_TOKEN=${S.github}\n${S.githubPat}\nid ${S.aws} aws_secret_access_key=${S.awsSecret}\n${PEM}\n/home/alice/work/proj/src/x.ts`;
  // Text deltas: one secret inside a delta (a packed-row member), one split across two deltas.
  const deltas = events.filter((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta');
  const i = deltas.findIndex((d, k) => k + 3 < deltas.length && deltas[k + 3]!.seq === d.seq + 3 && deltas[k + 3]!.data.chunk.index === d.data.chunk.index);
  deltas[i]!.data.chunk.text += ` ${S.slack} `;
  deltas[i + 1]!.data.chunk.text += ` ${SPLIT.a}`;
  deltas[i + 2]!.data.chunk.text = SPLIT.b + ' ' + deltas[i + 2]!.data.chunk.text;
  const msg = events.find((e) => e.type === 'assistant/message' && e.seq > deltas[i]!.seq && e.data.message.content.some((b: any) => b.type === 'text'))!;
  msg.data.message.content.find((b: any) => b.type === 'text').text += ` ${S.slack} ${SPLIT_FULL}`;
  const reasoning = first((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'reasoning-delta');
  reasoning.data.chunk.text += ` ${S.google} ${S.jwt}`;
  first((e) => e.type === 'tool/call' && e !== call).data.arguments = JSON.stringify({ path: `~/.aws/credentials ${S.anthropic}` });
  return { batches, header: s.header };
}

async function writeLog(batches: SessionEvent[][], header: any, encoding: Encoding): Promise<string> {
  const bytes = await writeArtifact({ header, encoding, batches });
  const file = sessionPath(tmp(), header, encoding);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  return file;
}

async function artifactText(file: string): Promise<string> {
  const parts: Buffer[] = [];
  const s = new FileSource(file);
  try {
    await readArtifact(s, { onArtifact: (c) => parts.push(Buffer.from(c)), artifactOnly: true, decoder });
  } finally {
    s.close();
  }
  return Buffer.concat(parts).toString('utf8');
}

function leaks(text: string, secrets: readonly string[] = SECRETS): string[] {
  return secrets.filter((s) => text.includes(s) || text.includes(JSON.stringify(s).slice(1, -1)));
}

describe('dsh redact on generated logs with planted secrets', () => {
  for (const encoding of ['zstd', 'none'] as const) {
    it(`removes every planted secret from every view (${encoding})`, async () => {
      const { batches, header } = planted();
      const input = await writeLog(batches, header, encoding);
      const before = await inspectTarget(resolveTarget(input), { collect: true });
      expect(before.error).toBeUndefined();
      // sanity: the planted secrets are visible before redaction
      expect(leaks(JSON.stringify(before.events)).sort()).toEqual([...SECRETS].sort());
      expect(leaks(await artifactText(input)).length).toBeGreaterThanOrEqual(Object.keys(S).length);

      const out = path.join(tmp(), 'redacted');
      const report = await redactTarget(resolveTarget(input), out, { decoder });
      expect(report.verify, JSON.stringify(report.verify)).toMatchObject({ ok: true, sameTypesAndSeqs: true });
      expect(report.output).toBe(sessionPath(out, header, encoding));
      for (const d of ['openai', 'anthropic', 'github', 'aws-access-key-id', 'aws-secret-access-key', 'slack', 'google', 'stripe', 'jwt', 'bearer', 'private-key', 'url-password', 'env-secret']) {
        expect(report.stats.byDetector[d], d).toBeGreaterThan(0);
      }

      const after = await inspectTarget(resolveTarget(report.output!), { collect: true });
      expect(after.error).toBeUndefined();
      expect(leaks(JSON.stringify(after.events))).toEqual([]);
      expect(leaks(await artifactText(report.output!))).toEqual([]);
      // same events, types, seqs, pairing ids
      expect(after.events!.length).toBe(before.events!.length);
      expect(after.events!.map((e) => `${e.seq} ${e.type}`)).toEqual(before.events!.map((e) => `${e.seq} ${e.type}`));
      const ids = (es: SessionEvent[]) =>
        es.map((e) => [e.surfaceOp, e.sourceEventSeqs, e.data?.callId, e.data?.message?.id, e.data?.message?.source, e.data?.id, e.data?.chunk?.id]);
      expect(ids(after.events!)).toEqual(ids(before.events!));
      // the split secret: no fragment survives in the deltas; assembled text equals the redacted message text
      expect(JSON.stringify(after.events)).not.toContain(SPLIT.b);

      // other views, when present: request (last dispatch), transcript, surface, search
      const views: string[][] = [['request', '--list', '--json'], ['transcript', '--json'], ['transcript'], ['surface', '--json'], ['events', '--json']];
      const list = await runInProcess(['request', report.output!, '--list', '--json']);
      if (list.code === 0) {
        // every reconstructed dispatch (system prompt, messages, tool arguments)
        for (const req of JSON.parse(list.stdout).requests) views.push(['request', String(req.firstChunkSeq), '--json']);
        expect(views.length).toBeGreaterThan(6);
      }
      for (const args of views) {
        const r = await runInProcess(args[0] === 'request' && /^\d+$/.test(args[1]!) ? ['request', report.output!, ...args.slice(1)] : [args[0]!, report.output!, ...args.slice(1)]);
        if (r.code === 2 && /unknown command/.test(r.stderr)) continue;
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        expect(leaks(r.stdout), args.join(' ')).toEqual([]);
        expect(r.stdout.length).toBeGreaterThan(0);
      }
      // dsh export of the redacted log: the archive's session.jsonl holds no secret
      const zip = path.join(tmp(), 'export.zip');
      const ex = await runInProcess(['export', report.output!, '-o', zip, '--no-media']);
      if (!(ex.code === 2 && /unknown command/.test(ex.stderr))) {
        expect(ex.code, ex.stderr).toBe(0);
        const src = resolveTarget(zip).open();
        const text = src.read(0, src.size).toString('utf8');
        src.close();
        expect(text.length).toBeGreaterThan(1000);
        expect(leaks(text)).toEqual([]);
      }
      // the original shows them (the views are not blind)
      const orig = await runInProcess(['transcript', input, '--json']);
      if (orig.code === 0) expect(leaks(orig.stdout).length).toBeGreaterThan(0);
    });
  }

  it('--redact-paths rewrites the header cwd (output placed by it) and every path mention', async () => {
    const { batches, header } = planted();
    const input = await writeLog(batches, header, 'zstd');
    const out = path.join(tmp(), 'p');
    const report = await redactTarget(resolveTarget(input), out, { decoder, paths: true });
    expect(report.verify!.ok).toBe(true);
    expect(report.stats.headerChanged).toBe(true);
    const text = await artifactText(report.output!);
    expect(text).not.toContain('alice');
    const after = await inspectTarget(resolveTarget(report.output!));
    expect(after.meta!.cwd).toMatch(/^\/\[REDACTED:cwd:≤32#[0-9a-f]{4}\]$/);
    expect(after.warnings).toEqual([]);
  });

  it('a secret-free log is byte-identical (zstd frames copied, raw bytes kept)', async () => {
    const s = collectSession({ ...GEN, cwd: '/srv/project' });
    for (const encoding of ['zstd', 'none'] as const) {
      const input = await writeLog(s.batches, s.header, encoding);
      const report = await redactTarget(resolveTarget(input), path.join(tmp(), 'o'), { decoder });
      expect(report.stats.replacements).toBe(0);
      expect(report.identical).toBe(true);
      expect(readFileSync(report.output!).equals(readFileSync(input))).toBe(true);
      if (encoding === 'zstd') expect(report.frames).toMatchObject({ changed: 0, copied: s.batches.length + 1 });
    }
  });

  it('keeps the original batch boundaries: one frame per original frame', async () => {
    const { batches, header } = planted();
    const input = await writeLog(batches, header, 'zstd');
    const report = await redactTarget(resolveTarget(input), path.join(tmp(), 'f'), { decoder });
    const a = scanFrames(new MemorySource('a', readFileSync(input))).frames;
    const b = scanFrames(new MemorySource('b', readFileSync(report.output!))).frames;
    expect(b.length).toBe(a.length);
    expect(report.frames!.changed).toBeGreaterThan(0);
    expect(report.frames!.copied).toBeGreaterThan(0);
    for (let i = 0; i < a.length; i++) {
      const pa = await decoder.decode(readFileSync(input).subarray(a[i]!.start, a[i]!.end));
      const pb = await decoder.decode(readFileSync(report.output!).subarray(b[i]!.start, b[i]!.end));
      expect(pb.toString().split('\n').length).toBe(pa.toString().split('\n').length);
    }
  });

  it('--dry-run writes nothing; the streaming API matches the artifact rewrite at any chunking', async () => {
    const { batches, header } = planted();
    const input = await writeLog(batches, header, 'none');
    const out = path.join(tmp(), 'dry');
    const dry = await redactTarget(resolveTarget(input), out, { decoder, dryRun: true });
    expect(existsSync(out)).toBe(false);
    expect(dry.output).toBeNull();
    expect(dry.stats.replacements).toBeGreaterThan(10);
    // redactArtifactText (for export --redact) over odd chunk sizes
    const bytes = readFileSync(input);
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 977) chunks.push(bytes.subarray(at, at + 977));
    const parts: Buffer[] = [];
    const gen = redactArtifactText(chunks, { });
    for await (const p of gen) parts.push(p);
    const streamed = Buffer.concat(parts).toString('utf8');
    const whole = new RedactingText(createRedactor());
    const oneShot = Buffer.concat([whole.write(bytes), whole.end()]).toString('utf8');
    expect(streamed).toBe(oneShot);
    // per-chunk redaction cannot see the split secret (documented); dsh redact can
    expect(leaks(streamed, Object.values(S))).toEqual([]);
    expect(streamed).toContain(SPLIT.b);
    const real = await redactTarget(resolveTarget(input), path.join(tmp(), 'real'), { decoder });
    expect(leaks(readFileSync(real.output!, 'utf8'))).toEqual([]);
  });
});

describe.skipIf(!HAVE_CORPUS)('dsh redact on the corpus', () => {
  it('every valid corpus log: same events after redaction; secret-free ones byte-identical', async () => {
    const cases = corpusCases().filter((c) => /synthetic[\\/]root-|dsh-snapshots[\\/]root-/.test(c.name) && !c.expected.inspection.error).slice(0, 40);
    expect(cases.length).toBeGreaterThan(5);
    for (const c of cases) {
      const report = await redactTarget(resolveTarget(c.artifact), path.join(tmp(), 'c'), { decoder });
      expect(report.verify?.ok, `${c.name}: ${JSON.stringify(report.verify)}`).toBe(true);
      if (report.stats.replacements === 0) expect(readFileSync(report.output!).equals(readFileSync(c.artifact)), c.name).toBe(true);
    }
  });
});

describe('dsh redact as a process', () => {
  it('exit codes: 0 ok (summary on stderr, --report file), 2 output exists / bad regex, 1 undecodable zstd', async () => {
    const { batches, header } = planted();
    const input = await writeLog(batches, header, 'zstd');
    const dir = tmp();
    const out = path.join(dir, 'out');
    const reportFile = path.join(dir, 'report.json');
    const r = await runCli(['redact', input, '-o', out, '--report', reportFile, '--redact-pattern', 'Be precise']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/replaced\s+\d+ secret occurrence/);
    expect(r.stderr).toMatch(/openai\s+\d+\s+seqs \d+/);
    expect(r.stderr).toMatch(/verify\s+same \d+ events/);
    const rep = JSON.parse(readFileSync(reportFile, 'utf8'));
    expect(rep.stats.byDetector['pattern-1']).toBeGreaterThan(0);
    expect(leaks(readFileSync(rep.output).toString('latin1'))).toEqual([]);
    const insp = await runCli(['inspect', rep.output, '--json']);
    expect(insp.code).toBe(0);
    expect(leaks(insp.stdout)).toEqual([]);
    // --json
    const j = await runCli(['redact', input, '--dry-run', '--json']);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout).dryRun).toBe(true);
    // output exists and is not empty
    const again = await runCli(['redact', input, '-o', out]);
    expect(again.code).toBe(2);
    // output inside the input's session directory
    const inside = await runCli(['redact', input, '-o', path.join(path.dirname(input), 'red')]);
    expect(inside.code).toBe(2);
    expect(readdirSync(path.dirname(input))).toEqual([path.basename(input)]);
    // bad regex, missing -o
    expect((await runCli(['redact', input, '-o', path.join(dir, 'x'), '--redact-pattern', '('])).code).toBe(2);
    expect((await runCli(['redact', input])).code).toBe(2);
    // undecodable zstd: refused with a salvage hint
    const bytes = readFileSync(input);
    const { frames } = scanFrames(new MemorySource('b', bytes));
    bytes[frames[2]!.end - 2]! ^= 0xff;
    const bad = await writeRaw(bytes, header);
    const c = await runCli(['redact', bad, '-o', path.join(dir, 'y')]);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/dsh salvage/);
    expect(existsSync(path.join(dir, 'y'))).toBe(false);
  });
});

async function writeRaw(bytes: Buffer, header: any): Promise<string> {
  const file = sessionPath(tmp(), header, 'zstd');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  return file;
}

describe('RedactingText past the line limit (issue #23: bounded memory)', () => {
  const limit = 64;
  const feed = (rt: RedactingText, text: string, pieces = 7) => {
    const out: Buffer[] = [];
    const b = Buffer.from(text);
    for (let at = 0; at < b.length; at += pieces) out.push(rt.write(b.subarray(at, at + pieces)));
    return Buffer.concat(out).toString();
  };
  const header = '{"version":0,"id":"s","createdAt":1}\n';
  it('counts an unterminated fragment past the limit without holding it, and drops it whole', () => {
    const rt = new RedactingText(createRedactor(), undefined, limit);
    expect(feed(rt, header + 'y'.repeat(10 * limit))).toBe(header);
    expect(rt.pendingBytes).toBe(10 * limit);
    expect(rt.dropFragment()).toBe(10 * limit);
    expect(rt.end().length).toBe(0);
  });
  it('refuses a complete record past the limit with a classified error naming its line, and a trailing one at end()', () => {
    const rt = new RedactingText(createRedactor(), undefined, limit);
    expect(() => feed(rt, header + '{"a":"' + 'y'.repeat(2 * limit) + '"}\n')).toThrow(/^line 2 is longer than the 0 MiB line limit/);
    const tail = new RedactingText(createRedactor(), undefined, limit);
    feed(tail, header + 'z'.repeat(2 * limit));
    expect(() => tail.end()).toThrow(expect.objectContaining({ name: 'Error', kind: 'corrupt' }));
  });
  it('keeps lines up to the limit byte for byte', () => {
    const rt = new RedactingText(createRedactor(), undefined, limit);
    const line = '{"type":"x","seq":0,"data":"' + 'q'.repeat(limit - 30) + '"}\n';
    expect(Buffer.byteLength(line) - 1).toBeLessThanOrEqual(limit);
    expect(feed(rt, header + line)).toBe(header + line);
  });
});

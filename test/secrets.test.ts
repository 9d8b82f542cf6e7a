import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { collectSession } from '../tools/generate.js';
import { sessionPath, writeArtifactFile } from '../src/log/writer.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { deriveDispatches, messagesOf } from '../src/views/requests.js';
import { hashTag } from '../src/views/redactor.js';
import { exposureOf, SecretsFold, secretsOfRoot, secretsOfTarget, type SecretReport, type SecretsReport } from '../src/views/secrets.js';
import type { SessionEvent, SessionHeader } from '../src/log/types.js';
import { buildReport } from '../src/report/build.js';

/**
 * Secrets planted at known places of sessions made by the project's own
 * generator and writer. The planted values are split in the source so this
 * file itself holds no detector match.
 */
const S = {
  /** In a tool result a later prune rewrites. */
  pruned: 'AKIA' + 'Z3Q4R5S6T7U8V9W0',
  /** In turn 1's user message; a compaction shadows it and its summary quotes the key. */
  compacted: 'sk-proj-' + 'aB3dE5fG7hJ9kL1mN3pQ5rS7tU9',
  /** In a tool result that stays on the surface. */
  current: 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
  /** Only in the deltas of a failed attempt (log-only chunks), split across two deltas. */
  chunk: 'xoxb-' + '123456789012-abcdefABCDEF',
  /** Streamed by the model in a completed text block (split across two deltas; its block-end and message repeat it). */
  streamed: 'sk-ant-' + 'api03-Xy7Wv6Ut5Sr4Qp3On2Ml1Kj',
  /** In the first request header's system prompt (a header change drops it). */
  header: 'Zq8Xw7Vu6Ts5Rq4Po3Nm2' + 'Lk1Jh',
};
const PLANTED = Object.values(S);

let dir: string;
let root: string;
let parentFile: string;
let forkFile: string;
let subFile: string;
/** Where each secret was planted (parent seqs). */
const at: Record<string, number[]> = {};

const textOf = (e: SessionEvent): any => e.data.message.content[0].content[0];

function plantParent(events: SessionEvent[]): void {
  const prune = events.find((e) => e.type === 'tool/result' && typeof e.surfaceOp === 'object')!;
  const original = events[(prune.surfaceOp as { start: number }).start]!;
  textOf(original).text += `\nexport AWS_ACCESS_KEY_ID=${S.pruned}\n`;
  at['pruned'] = [original.seq];

  const firstUser = events.find((e) => e.type === 'user/message')!;
  firstUser.data.content[0].text += ` my key is ${S.compacted} please use it`;
  const summary = events.find((e) => e.type === 'compaction/summary')!;
  expect(summary.data.shadowedSeqs).toContain(firstUser.seq);
  summary.data.summary[0].text += ` The user's key is ${S.compacted}.`;
  summary.data.rawOutput = summary.data.summary;
  const checkpoint = events.find((e) => e.type === 'user/message' && typeof e.surfaceOp === 'object')!;
  checkpoint.data.content[1].text = summary.data.summary[0].text;
  at['compacted'] = [firstUser.seq, summary.seq, checkpoint.seq];

  const lastResult = [...events].reverse().find((e) => e.type === 'tool/result' && e.surfaceOp === 'append')!;
  expect(lastResult.seq).toBeGreaterThan(checkpoint.seq);
  textOf(lastResult).text += `\ngit remote set-url origin https://${S.current}@github.com/acme/api\n`;
  at['current'] = [lastResult.seq];

  // The failed attempt of the retry turn: its deltas are never cited by an assistant/message.
  const retry = events.find((e) => e.type === 'llm/retry')!;
  const deltas = events.filter((e) => e.seq < retry.seq && e.seq > retry.seq - 8 && e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta');
  expect(deltas.length).toBeGreaterThanOrEqual(2);
  deltas[0]!.data.chunk.text = `token ${S.chunk.slice(0, 12)}`;
  deltas[1]!.data.chunk.text = `${S.chunk.slice(12)} ok`;
  at['chunk'] = [deltas[0]!.seq, deltas[1]!.seq];

  // A completed text block of turn 6: two deltas spell the key, the block-end and the message repeat the text.
  const message = events.find((e) => e.type === 'assistant/message' && e.data.turn === 6 && e.data.message.content.some((b: any) => b.type === 'text'))!;
  const cited = new Set(message.sourceEventSeqs);
  const textIndex = events.find((e) => cited.has(e.seq) && e.data.chunk.type === 'block-start' && e.data.chunk.blockType === 'text')!.data.chunk.index;
  const blockDeltas = events.filter((e) => cited.has(e.seq) && e.data.chunk.type === 'text-delta' && e.data.chunk.index === textIndex);
  expect(blockDeltas.length).toBeGreaterThanOrEqual(2);
  blockDeltas[0]!.data.chunk.text = `use ${S.streamed.slice(0, 10)}`;
  blockDeltas[1]!.data.chunk.text = `${S.streamed.slice(10)} now `;
  const full = blockDeltas.map((e) => e.data.chunk.text).join('');
  const blockEnd = events.find((e) => cited.has(e.seq) && e.data.chunk.type === 'block-end' && e.data.chunk.index === textIndex)!;
  blockEnd.data.chunk.block.text = full;
  message.data.message.content.find((b: any) => b.type === 'text').text = full;
  at['streamed'] = [blockDeltas[0]!.seq, blockDeltas[1]!.seq, blockEnd.seq, message.seq];

  const header = events.find((e) => e.type === 'request/header')!;
  header.data.header.system += `\n- call the API with Authorization: Bearer ${S.header}`;
  at['header'] = [header.seq];
}

async function write(header: SessionHeader, batches: SessionEvent[][]): Promise<string> {
  const file = sessionPath(root, header, 'zstd');
  await writeArtifactFile(file, { header, encoding: 'zstd', batches });
  return file;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-secrets-'));
  root = path.join(dir, 'root');
  const parent = collectSession({
    seed: 11,
    id: 'sec-parent',
    turns: 7,
    randomFeatures: false,
    features: { 3: ['prune'], 4: ['retry'], 5: ['compaction'], 6: ['header-change'] },
    toolOutputBytes: [200, 600],
  });
  plantParent(parent.events);
  parentFile = await write(parent.header, parent.batches);
  // A fork of turns 1-2 (the seed holds the user's key and the header with the bearer token).
  const turn2End = parent.events.find((e) => e.type === 'turn/end' && e.data.turn === 2)!;
  const fork = collectSession({ seed: 12, id: 'sec-fork', turns: 2, randomFeatures: false, fork: { parentId: 'sec-parent', seed: parent.events.slice(0, turn2End.seq + 1) }, toolOutputBytes: [200, 600] });
  forkFile = await write(fork.header, fork.batches);
  // A subagent the parent handed the key to.
  const sub = collectSession({ seed: 13, id: 'sec-sub', turns: 2, randomFeatures: false, origin: 'subagent', delegationDepth: 1, toolOutputBytes: [200, 600] });
  sub.header.parentSession = 'sec-parent';
  sub.header.createdAt += 1000;
  sub.events.find((e) => e.type === 'user/message')!.data.content[0].text += ` use key ${S.compacted}`;
  subFile = await write(sub.header, sub.batches);
}, 60_000);

afterAll(() => {
  if (dir && !process.env.KEEPDIR) rmSync(dir, { recursive: true, force: true });
});

/** The oracle: rebuild every request with the library's reconstruction and search it. */
async function sentBy(file: string, secret: string): Promise<number[]> {
  const r = await inspectTarget(resolveTarget(file), { collect: true });
  if (r.error) throw new Error(r.error.message);
  const events = r.events!;
  const index = deriveDispatches(events);
  return index.requests
    .filter((d) => JSON.stringify({ header: d.header, requestContext: d.requestContext, messages: messagesOf(d, events) }).includes(secret))
    .map((d) => d.index);
}

const expand = (ranges: [number, number][]) => ranges.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i));
const find = (r: SecretsReport, secret: string): SecretReport => {
  const tag = hashTag(secret);
  const hits = r.secrets.filter((s) => s.token.endsWith(`#${tag}]`));
  expect(hits, `one report entry for the secret tagged ${tag}`).toHaveLength(1);
  return hits[0]!;
};
const inSession = (s: SecretReport, id: string) => s.sessions.find((x) => x.sessionId === id)!;

function assertNoSecretText(text: string, where: string): void {
  for (const p of PLANTED) {
    expect(text.includes(p), `${where} holds a planted secret`).toBe(false);
    // Nor the part after the public prefix (a partial leak).
    expect(text.includes(p.slice(6)), `${where} holds part of a planted secret`).toBe(false);
  }
}

describe('dsh secrets over planted secrets', () => {
  let report: SecretsReport;
  beforeAll(async () => {
    report = await secretsOfTarget(resolveTarget(parentFile, { root }), {});
  }, 60_000);

  it('reads the target and its fork and subagent, and finds exactly the planted secrets', () => {
    expect(report.sessions.map((s) => [s.sessionId, s.kind, s.error])).toEqual([
      ['sec-parent', 'root', null],
      ['sec-fork', 'fork', null],
      ['sec-sub', 'subagent', null],
    ]);
    expect(report.secrets).toHaveLength(PLANTED.length);
  });

  it('each secret is sent in exactly the dispatches whose rebuilt request holds it', async () => {
    for (const [name, secret] of Object.entries(S)) {
      const entry = find(report, secret);
      for (const [id, file] of [
        ['sec-parent', parentFile],
        ['sec-fork', forkFile],
        ['sec-sub', subFile],
      ] as const) {
        const x = inSession(entry, id);
        const expected = await sentBy(file, secret);
        expect(x ? expand(x.dispatches.ranges) : [], `${name} in ${id}`).toEqual(expected);
        if (x) expect(x.dispatches.count).toBe(expected.length);
      }
    }
    // Not vacuous: the parent sent the pruned, compacted, current and header keys in some but not all dispatches; never the chunk key.
    const total = report.sessions[0]!.dispatches;
    expect(inSession(find(report, S.compacted), 'sec-parent').dispatches.count).toBe(total);
    for (const secret of [S.pruned, S.current, S.header, S.streamed]) {
      const n = inSession(find(report, secret), 'sec-parent').dispatches.count;
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThan(total);
    }
    expect(inSession(find(report, S.chunk), 'sec-parent').dispatches.count).toBe(0);
  });

  it('names the planted events, removals, re-embedding and the final surface', () => {
    const pruned = inSession(find(report, S.pruned), 'sec-parent');
    expect(pruned.events.map((e) => [e.seq, e.type, e.label, e.place])).toEqual([[at['pruned']![0], 'tool/result', 'shadowed', 'message']]);
    expect(pruned.removed?.kind).toBe('prune');
    expect(pruned.removed?.noLongerSentFrom?.index).toBe(pruned.dispatches.last!.index + 1);
    expect(pruned.finalSurface).toEqual([]);
    expect(exposureOf(pruned)).toBe(1);
    // The fork (turns 1-2) inherited the tool result before the prune: still current there.
    const prunedFork = inSession(find(report, S.pruned), 'sec-fork');
    expect(prunedFork.relation).toBe('inherited');
    expect(prunedFork.finalSurface).toEqual(at['pruned']);
    expect(find(report, S.pruned).exposure).toBe('sent-current');
    expect(find(report, S.pruned).verdict).toMatch(/^SENT in sec-fork: .*inherited by fork sec-fork/);

    const compacted = find(report, S.compacted);
    const c = inSession(compacted, 'sec-parent');
    expect(c.events.map((e) => [e.seq, e.type, e.label])).toEqual([
      [at['compacted']![0], 'user/message', 'shadowed'],
      [at['compacted']![1], 'compaction/summary', 'log-only'],
      [at['compacted']![2], 'user/message', 'current'],
    ]);
    expect(c.reembedded).toEqual([{ seq: at['compacted']![2], kind: 'compaction', compactionId: 'compaction-1' }]);
    expect(c.summaryCalls.map((x) => x.seq)).toEqual([at['compacted']![1]]);
    expect(c.finalSurface).toEqual([at['compacted']![2]]);
    expect(c.removed).toBeNull();
    expect(compacted.exposure).toBe('sent-current');
    expect(inSession(compacted, 'sec-fork').relation).toBe('inherited');
    expect(inSession(compacted, 'sec-sub').relation).toBe('received');
    expect(compacted.verdict).toMatch(/inherited by fork sec-fork; received by subagent sec-sub/);

    const current = find(report, S.current);
    expect(current.exposure).toBe('sent-current');
    expect(inSession(current, 'sec-parent').finalSurface).toEqual(at['current']);
    expect(current.sessions.map((s) => s.sessionId)).toEqual(['sec-parent']);

    const chunk = find(report, S.chunk);
    expect(chunk.exposure).toBe('log-only');
    expect(chunk.dispatchCount).toBe(0);
    expect(inSession(chunk, 'sec-parent').events.map((e) => [e.seq, e.type, e.label, e.place])).toEqual(at['chunk']!.map((s) => [s, 'assistant/chunk', 'log-only', 'stream']));
    expect(chunk.verdict).toMatch(/^never sent/);

    const streamed = inSession(find(report, S.streamed), 'sec-parent');
    expect(streamed.events.map((e) => [e.seq, e.type, e.place])).toEqual([
      [at['streamed']![0], 'assistant/chunk', 'stream'],
      [at['streamed']![1], 'assistant/chunk', 'stream'],
      [at['streamed']![2], 'assistant/chunk', 'data'],
      [at['streamed']![3], 'assistant/message', 'message'],
    ]);
    expect(streamed.finalSurface).toEqual([at['streamed']![3]]);

    const header = find(report, S.header);
    const h = inSession(header, 'sec-parent');
    expect(h.events.map((e) => [e.seq, e.place])).toEqual([[at['header']![0], 'header']]);
    expect(h.removed?.kind).toBe('header-change');
    expect(h.inLatestHeader).toBe(false);
    // The fork re-logs the seed's header (reason resume): still in force there.
    const hf = inSession(header, 'sec-fork');
    expect(hf.relation).toBe('inherited');
    expect(hf.inLatestHeader).toBe(true);
  });

  it('sorts by exposure: sent and current first, never-sent last', () => {
    const order = report.secrets.map((s) => s.exposure);
    const rank = ['sent-current', 'sent-removed', 'current-unsent', 'log-only'];
    expect([...order].sort((a, b) => rank.indexOf(a) - rank.indexOf(b))).toEqual(order);
    expect(order[0]).toBe('sent-current');
    expect(order.at(-1)).toBe('log-only');
  });

  it('over the root: the same secrets, every session', async () => {
    const r = await secretsOfRoot(root, {});
    expect(r.sessions.map((s) => s.sessionId).sort()).toEqual(['sec-fork', 'sec-parent', 'sec-sub']);
    expect(r.secrets.map((s) => [s.token, s.exposure, s.dispatchCount]).sort()).toEqual(report.secrets.map((s) => [s.token, s.exposure, s.dispatchCount]).sort());
  });
});

describe('public API', () => {
  it('session.secrets() returns the same report as dsh secrets --json', async () => {
    const { openSession } = await import('../src/index.js');
    const opened = await openSession(parentFile);
    expect(opened.ok).toBe(true);
    const r = await (opened as any).value.secrets();
    expect(r.ok).toBe(true);
    const cli = await runCli(['secrets', parentFile, '--json']);
    expect(r.value).toEqual(JSON.parse(cli.stdout));
  }, 60_000);
});

describe('the JSON-line pre-screen', () => {
  it('gives the same result as scanning every event, and never trusts a line with escapes', async () => {
    const r = await inspectTarget(resolveTarget(parentFile), { collect: true });
    const events = r.events!;
    const plain = new SecretsFold('p', r.meta!, {});
    const screened = new SecretsFold('p', r.meta!, {});
    for (const e of events) {
      plain.observe(e);
      screened.observe(e, JSON.stringify(e));
    }
    expect(screened.finish()).toEqual(plain.finish());
    // A line that spells the key with JSON escapes still finds it.
    const fold = new SecretsFold('x', undefined, {});
    const ev: SessionEvent = { type: 'session/title', seq: 0, time: 0, data: { title: `key ${S.compacted}` } };
    fold.observe(ev, JSON.stringify(ev).replace('sk-', '\\u0073k-'));
    expect(fold.finish().secrets.map((x) => x.token)).toEqual([expect.stringContaining(`#${hashTag(S.compacted)}]`)]);
  });
});

describe('dsh secrets CLI', () => {
  it('--json matches dsh request --json per dispatch, and holds no secret text', async () => {
    const r = await runCli(['secrets', parentFile, '--json']);
    expect(r.code, r.stderr).toBe(0);
    assertNoSecretText(r.stdout + r.stderr, 'dsh secrets --json');
    const data = JSON.parse(r.stdout) as SecretsReport;
    const list = await runCli(['request', parentFile, '--list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    const firsts: number[] = JSON.parse(list.stdout).requests.map((d: { firstChunkSeq: number }) => d.firstChunkSeq);
    // Each dispatch of the parent rebuilt by the CLI and searched for the key the compaction re-embedded and the pruned key.
    const sent: Record<string, number[]> = { compacted: [], pruned: [] };
    for (let i = 0; i < firsts.length; i++) {
      const req = await runCli(['request', parentFile, String(firsts[i]), '--json']);
      expect(req.code, req.stderr).toBe(0);
      if (req.stdout.includes(S.compacted)) sent['compacted']!.push(i);
      if (req.stdout.includes(S.pruned)) sent['pruned']!.push(i);
    }
    expect(expand(inSession(find(data, S.compacted), 'sec-parent').dispatches.ranges)).toEqual(sent['compacted']);
    expect(expand(inSession(find(data, S.pruned), 'sec-parent').dispatches.ranges)).toEqual(sent['pruned']);
  }, 180_000);

  it('text output, --full and a root: verdict lines, no secret text, no file created', async () => {
    const before = listFiles(dir);
    for (const args of [['secrets', parentFile], ['secrets', parentFile, '--full', '--color', 'always'], ['secrets', root], ['secrets', root, '--json', '--paths']]) {
      const r = await runCli(args);
      expect(r.code, r.stderr).toBe(0);
      assertNoSecretText(r.stdout + r.stderr, args.join(' '));
      if (!args.includes('--json')) expect(r.stdout).toMatch(/verdict +SENT/);
    }
    expect(listFiles(dir)).toEqual(before);
  }, 60_000);

  it('usage and read errors are classified', async () => {
    expect((await runCli(['secrets', parentFile, '--pattern', '('])).code).toBe(2);
    expect((await runCli(['secrets', parentFile, '--pattern', 'x*'])).code).toBe(2);
    expect((await runCli(['secrets', parentFile, '--detectors', 'nope'])).code).toBe(2);
    expect((await runCli(['secrets', path.join(dir, 'missing.jsonl')])).code).toBe(2);
    const bad = await runCli(['secrets', '-', '--json'], { input: Buffer.from('not a log\n') });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error.class).toBeTruthy();
  });

  it('--pattern finds a user-defined secret', async () => {
    const r = await runCli(['secrets', parentFile, '--json', '--detectors', 'github', '--pattern', 'AWS_ACCESS_KEY_ID=(\\w+)']);
    expect(r.code, r.stderr).toBe(0);
    const data = JSON.parse(r.stdout) as SecretsReport;
    expect(data.secrets.map((s) => s.detector).sort()).toEqual(['github', 'pattern-1']);
    assertNoSecretText(r.stdout, '--pattern output');
  });
});

describe('dsh check --secrets', () => {
  it('off by default; with --secrets K1 for current secrets and K2 for sent ones, in every format, masked', async () => {
    const plain = await runCli(['check', root, '--json']);
    expect(JSON.parse(plain.stdout).sessions.flatMap((s: { findings: { code: string }[] }) => s.findings.map((f) => f.code)).filter((c: string) => c.startsWith('DSH-K'))).toEqual([]);
    const r = await runCli(['check', parentFile, '--secrets', '--json']);
    expect(r.code, r.stderr).toBe(0);
    assertNoSecretText(r.stdout, 'check --json');
    const findings = JSON.parse(r.stdout).sessions[0].findings as { code: string; severity: string; message: string }[];
    const k1 = findings.filter((f) => f.code === 'DSH-K1');
    const k2 = findings.filter((f) => f.code === 'DSH-K2');
    expect(k1.every((f) => f.severity === 'warning')).toBe(true);
    expect(k2.every((f) => f.severity === 'info')).toBe(true);
    const tagged = (fs: { message: string }[], secret: string) => fs.some((f) => f.message.includes(`#${hashTag(secret)}]`));
    expect(tagged(k1, S.compacted) && tagged(k1, S.current)).toBe(true);
    expect(tagged(k1, S.pruned) || tagged(k1, S.chunk) || tagged(k1, S.header)).toBe(false);
    expect(tagged(k2, S.compacted) && tagged(k2, S.current) && tagged(k2, S.pruned) && tagged(k2, S.header)).toBe(true);
    expect(tagged(k2, S.chunk)).toBe(false);
    // --strict fails on the K1 warnings; other formats stay masked.
    expect((await runCli(['check', parentFile, '--secrets', '--strict'])).code).toBe(1);
    for (const format of ['text', 'sarif', 'junit', 'github']) {
      const out = await runCli(['check', root, '--secrets', '--format', format, '-j', '1']);
      assertNoSecretText(out.stdout + out.stderr, `check --format ${format}`);
    }
    expect((await runCli(['check', parentFile, '--paths'])).code).toBe(2);
  }, 60_000);
});

describe('dsh report: Secrets section', () => {
  it('carries the same secrets as dsh secrets, masked', async () => {
    const built = await buildReport(resolveTarget(parentFile), { version: 'test' });
    const secrets = built.data.secrets!;
    assertNoSecretText(JSON.stringify(secrets), 'report secrets data');
    // The same per-session facts as dsh secrets over the target (which also reads its fork and subagent).
    const withLineage = (await secretsOfTarget(resolveTarget(parentFile), {})).secrets;
    const bySecret = (list: SecretReport[]) => Object.fromEntries(list.map((x) => [x.token, x.sessions.find((y) => y.sessionId === 'sec-parent')]));
    expect(bySecret(secrets)).toEqual(bySecret(withLineage));
    expect(secrets.every((x) => x.sessions.length === 1)).toBe(true);
    expect(secrets.map((x) => x.token)).toEqual(expect.arrayContaining(PLANTED.map((p) => expect.stringContaining(`#${hashTag(p)}]`))));
    const out = path.join(dir, 'report.html');
    const r = await runCli(['report', parentFile, '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html).toContain('function renderSecrets');
    for (const x of secrets) expect(html).toContain(x.token);
    rmSync(out);
  }, 60_000);
});

function listFiles(d: string): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    for (const e of readdirSync(p)) {
      const q = path.join(p, e);
      if (statSync(q).isDirectory()) walk(q);
      else out.push(`${q}:${statSync(q).size}`);
    }
  };
  walk(d);
  return out.sort();
}


import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverTargets, exitCodeFor, forkSeedFindings, rootLookup, summarize } from '../src/check/engine.js';
import { checkTargets } from '../src/check/pool.js';
import { relationalFindings, sessionInvariant } from '../src/check/relational.js';
import { expandCodes, RULES } from '../src/check/rules.js';
import { RestoreValidator } from '../src/log/restore.js';
import { SurfaceFold } from '../src/log/surface.js';
import { CORPUS, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { baseEvents, clone, inspectText, logText, sequence, toolResultData, toolTurn } from './helpers/logtext.js';
import { at, findingsOf, lines, MUTATIONS, mutate, zstdArtifact } from './helpers/mutations.js';

// ---------------------------------------------------------------- helpers

// ---------------------------------------------------------------- the clean log

describe('dsh check: the small valid log', () => {
  it('fires nothing (raw)', async () => {
    expect(await findingsOf(logText(baseEvents()))).toEqual([]);
  });
  it('fires nothing with a content-only tool/result rewrite inside a turn', async () => {
    const events = [...baseEvents(), ...toolTurn()];
    events.splice(37, 0, { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', '[pruned]'), surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] });
    expect(await findingsOf(logText(events))).toEqual([]);
  });
  it('fires nothing (zstd, one frame per batch)', async () => {
    const l = lines(baseEvents());
    const { bytes } = await zstdArtifact([l[0]!, l.slice(1, 11).join(''), l.slice(11).join('')]);
    expect(await findingsOf(bytes, 'session.jsonl.zstd')).toEqual([]);
  });
  it('every relational replay is silent on it', async () => {
    const r = await inspectText(logText(baseEvents()));
    expect(relationalFindings(r.events!)).toEqual([]);
  });
});

// ---------------------------------------------------------------- mutations


describe('dsh check: each mutation fires exactly its rule', () => {
  for (const m of MUTATIONS) {
    it(`${m.rule}: ${m.why}`, async () => {
      const findings = await findingsOf(await m.build(), m.name);
      expect(findings.map((f) => f.code)).toEqual([m.rule]);
      const f = findings[0]!;
      expect(f.severity).toBe(RULES.find((r) => r.code === m.rule)!.severity);
      if (m.seq !== undefined) expect(f.seq).toBe(m.seq);
      if (m.message) expect(f.message).toMatch(m.message);
      expect(f.hint.length).toBeGreaterThan(0);
    });
  }

  it('A8/A6 carry the byte offset of the defect', async () => {
    const l = lines(baseEvents());
    const broken = [...l];
    broken[6] = '{not json\n';
    const [a8] = await findingsOf(broken.join(''));
    expect(a8!.byteOffset).toBe(l.slice(0, 6).join('').length);
    expect(a8!.offsetIn).toBe('file');
    const { frames } = await zstdArtifact([l[0]!, l.slice(1, 11).join(''), l.slice(11).join('')]);
    const middle = Buffer.from(frames[1]!);
    middle[middle.length - 1]! ^= 0xff;
    const [a6] = await findingsOf(Buffer.concat([frames[0]!, middle, frames[2]!]), 'session.jsonl.zstd');
    expect(a6!.byteOffset).toBe(frames[0]!.length);
  });

  it('A10 on a torn zstd final frame says what is recovered and lost', async () => {
    const l = lines(baseEvents());
    const { frames } = await zstdArtifact([l[0]!, l.slice(1).join(''), JSON.stringify({ type: 'session/title', seq: 31, time: 1, data: { title: 't' } }) + '\n']);
    const torn = Buffer.concat([frames[0]!, frames[1]!, frames[2]!.subarray(0, frames[2]!.length - 6)]);
    const findings = await findingsOf(torn, 'session.jsonl.zstd');
    expect(findings.map((f) => f.code)).toEqual(['DSH-A10']);
    expect(findings[0]!.severity).toBe('warning');
    expect(findings[0]!.byteOffset).toBe(frames[0]!.length + frames[1]!.length);
  });

  it('a log that fails to load gets only the load failure', async () => {
    // Broken both physically late (seq gap + turn/end) and relationally (turn numbering).
    const findings = await findingsOf(logText(mutate((e) => ((at(e, 24).data.turn = 3), (at(e, 27).seq = 99)))));
    expect(findings.map((f) => f.code)).toEqual(['DSH-A9']);
  });
});

describe('dsh check: rules unreachable through a full load', () => {
  it('DSH-E1 seq must strictly increase (A9/C6 catch it first in a loaded log)', () => {
    const events = sequence(baseEvents()) as any[];
    events[5].seq = 4;
    const found = sessionInvariant(events);
    expect(found).toEqual([{ code: 'DSH-E1', seq: 4, message: 'seq must strictly increase: saw 4 after 4', pkg: '@deepseek-ai/dsh-session' }]);
  });
  // Restore's own checks, run on events that passed every earlier stage's check of the same fact
  // (B1 fallback, A9 contiguity, B5 message shapes): each detector names its rule with DSH's text.
  const restoreFailure = (events: Record<string, unknown>[]) => {
    const v = new RestoreValidator();
    for (const e of events) v.observe(e as never);
    return v.failure;
  };
  it('DSH-C4 request/header reason "fallback"', () => {
    const events = sequence(baseEvents()) as any[];
    events[3].data.reason = 'fallback';
    expect(restoreFailure(events)).toEqual({ rule: 'DSH-C4', seq: 3, message: 'seed event at index 3 uses unsupported legacy request/header reason "fallback"' });
  });
  it('DSH-C5 message shape', () => {
    const events = sequence(baseEvents()) as any[];
    const i = events.findIndex((e) => e.type === 'user/message');
    delete events[i].data.id;
    expect(restoreFailure(events)).toEqual({ rule: 'DSH-C5', seq: i, message: `seed user/message at index ${i} lacks an identified message` });
  });
  it('DSH-C6 contiguity', () => {
    const events = sequence(baseEvents()) as any[];
    events[4].seq = 5;
    expect(restoreFailure(events)).toEqual({ rule: 'DSH-C6', seq: 5, message: 'seed event at index 4 has seq 5 (expected 4); seed must be contiguous from 0' });
  });
  it('DSH-S1 surface contiguity (the fold alone; C6 catches it first in restore)', () => {
    const events = sequence(baseEvents()) as any[];
    const fold = new SurfaceFold();
    for (const e of events.slice(0, 4)) fold.apply(e);
    expect(() => fold.apply({ ...events[5], seq: 5 })).toThrow(expect.objectContaining({ rule: 'DSH-S1', message: 'session event seq 5 is not contiguous; expected 4' }));
  });
  it('DSH-C7 a restore failure outside the named checks', () => {
    const events = sequence(baseEvents()) as any[];
    const i = events.findIndex((e) => e.type === 'user/message');
    // An event the fold cannot read at all (nothing DSH writes; the catch-all still classifies it).
    Object.defineProperty(events[i], 'sourceEventSeqs', { get: () => { throw new Error('something new'); }, enumerable: false });
    expect(restoreFailure(events)).toEqual({ rule: 'DSH-C7', seq: i, message: `invalid seed event at index ${i}: something new` });
  });
});

// ---------------------------------------------------------------- on disk: layout, identity, fork seeds

describe('dsh check: roots on disk', () => {
  let dir: string;
  const write = (rel: string, text: string) => {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, text);
    return p;
  };
  const childEvents = () => [...baseEvents(), { type: 'session/end-seed', data: {} }];
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-check-'));
    write('clean/--w--/x/session.jsonl', logText(baseEvents()));
    write('identity/--w--/y/session.jsonl', logText(baseEvents()));
    write('flat/--w--/x.jsonl', logText(baseEvents()));
    write('fork/--w--/p/session.jsonl', logText(baseEvents(), { id: 'p' }));
    write('fork/--w--/c/session.jsonl', logText(childEvents(), { id: 'c', parentSession: 'p', seedLength: 31 }));
    const bad = clone(childEvents()) as any[];
    bad[26].data.content[0].text = 'changed';
    write('fork/--w--/d/session.jsonl', logText(bad, { id: 'd', parentSession: 'p', seedLength: 31 }));
    write('fork/--w--/e/session.jsonl', logText(baseEvents(), { id: 'e', parentSession: 'p', seedLength: 31 }));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function check(rel: string) {
    const d = discoverTargets([path.join(dir, rel)]);
    const sessions = await checkTargets(d.targets, { jobs: 1 });
    return { layout: d.layout, sessions };
  }

  it('a clean root fires nothing', async () => {
    const { layout, sessions } = await check('clean');
    expect(layout).toEqual([]);
    expect(sessions.map((s) => s.findings)).toEqual([[]]);
  });
  it('DSH-A4: header id does not match the session directory (warning)', async () => {
    const { sessions } = await check('identity');
    expect(sessions[0]!.findings.map((f) => [f.code, f.severity])).toEqual([['DSH-A4', 'warning']]);
    expect(sessions[0]!.findings[0]!.message).toMatch(/requested id "y" does not match header id "x"/);
  });
  it('DSH-A11: flat-file layout', async () => {
    const { layout } = await check('flat');
    expect(layout.map((f) => f.code)).toEqual(['DSH-A11']);
    expect(layout[0]!.message).toMatch(/unsupported flat-file layout/);
  });
  it('DSH-A11: both encodings in one session directory', async () => {
    write('mixed/--w--/x/session.jsonl', logText(baseEvents()));
    const l = lines(baseEvents());
    write('mixed/--w--/x/session.jsonl.zstd', '');
    writeFileSync(path.join(dir, 'mixed/--w--/x/session.jsonl.zstd'), (await zstdArtifact([l[0]!, l.slice(1).join('')])).bytes);
    const { layout, sessions } = await check('mixed');
    expect(layout.map((f) => f.code)).toEqual(['DSH-A11']);
    expect(sessions.map((s) => s.findings)).toEqual([[]]);
  });
  it('DSH-A11: one session id under two project directories', async () => {
    write('dup/--w--/x/session.jsonl', logText(baseEvents()));
    write('dup/--v--/x/session.jsonl', logText(baseEvents(), { cwd: '/v' }));
    const { layout } = await check('dup');
    expect(layout.map((f) => [f.code, f.message])).toEqual([['DSH-A11', 'duplicate JSONL session id "x" appears in multiple project directories']]);
  });
  it('DSH-L1: fork seeds equal to the parent fire nothing; a changed seed or a missing end-seed fires', async () => {
    const { sessions } = await check('fork');
    const by = Object.fromEntries(sessions.map((s) => [s.sessionId, s.findings.map((f) => [f.code, f.seq, f.message])]));
    expect(by['p']).toEqual([]);
    expect(by['c']).toEqual([]);
    expect(by['d']).toEqual([['DSH-L1', 26, 'seed event seq 26 (user/message) differs from parent session "p" seq 26 (user/message)']]);
    expect(by['e']).toEqual([['DSH-L1', 31, 'fork child has no session/end-seed at seq 31 (seedLength 31); found end of log']]);
  });
  it('forkSeedFindings without a parent checks only the end-seed', () => {
    const events = sequence(childEvents()) as any[];
    expect(forkSeedFindings(events, 31, 'p', undefined)).toEqual([]);
    expect(forkSeedFindings(events, 30, 'p', undefined)[0]!.message).toMatch(/no session\/end-seed at seq 30/);
  });
  it('a directory holding several roots is searched recursively', async () => {
    const d = discoverTargets([dir]);
    expect(d.targets.length).toBeGreaterThanOrEqual(7);
    expect(rootLookup()(path.join(dir, 'fork'), 'p')).toBe(path.join(dir, 'fork/--w--/p/session.jsonl'));
  });

  it('CLI: exit codes and selection', async () => {
    const clean = await runInProcess(['check', path.join(dir, 'clean')]);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/0 errors, 0 warnings, 0 info in 1 session/);
    const warn = await runInProcess(['check', path.join(dir, 'identity')]);
    expect(warn.code).toBe(0);
    expect((await runInProcess(['check', '--strict', path.join(dir, 'identity')])).code).toBe(1);
    expect((await runInProcess(['check', '--max-warnings', '0', path.join(dir, 'identity')])).code).toBe(1);
    expect((await runInProcess(['check', '--max-warnings', '1', path.join(dir, 'identity')])).code).toBe(0);
    expect((await runInProcess(['check', '--strict', '--ignore', 'A4', path.join(dir, 'identity')])).code).toBe(0);
    expect((await runInProcess(['check', '--strict', '--rules', 'E,F', path.join(dir, 'identity')])).code).toBe(0);
    const flat = await runInProcess(['check', path.join(dir, 'flat')]);
    expect(flat.code).toBe(1);
    expect((await runInProcess(['check', '--exit-zero', path.join(dir, 'flat')])).code).toBe(0);
    const usage = await runInProcess(['check', '--rules', 'NOPE', path.join(dir, 'clean')]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/unknown rule code/);
    expect((await runInProcess(['check', path.join(dir, 'missing', 'session.jsonl')])).code).toBe(2);
    mkdirSync(path.join(dir, 'empty'), { recursive: true });
    const empty = await runInProcess(['check', path.join(dir, 'empty')]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/no session artifacts/);
    const json = JSON.parse((await runInProcess(['check', '--json', path.join(dir, 'fork')])).stdout);
    expect(json.schema).toBe('dsh-check/1');
    expect(json.summary.sessions).toBe(4);
    expect(json.summary.byCode).toEqual({ 'DSH-L1': 2 });
  });
  it('CLI: --list-rules lists the catalogue', async () => {
    const out = await runInProcess(['check', '--list-rules']);
    expect(out.code).toBe(0);
    for (const r of RULES) expect(out.stdout).toContain(r.code);
  });
});

describe('rule codes', () => {
  it('are unique and expand by family', () => {
    expect(new Set(RULES.map((r) => r.code)).size).toBe(RULES.length);
    expect([...expandCodes('A').codes]).toHaveLength(11);
    expect([...expandCodes('dsh-s10b,E1').codes]).toEqual(['DSH-S10B', 'DSH-E1']);
    expect(expandCodes('Z9').unknown).toEqual(['Z9']);
  });
  it('exit code follows severity and options', () => {
    const s = { sessions: 1, loaded: 1, errors: 0, warnings: 2, infos: 0, byCode: {} };
    expect(exitCodeFor(s, {})).toBe(0);
    expect(exitCodeFor(s, { strict: true })).toBe(1);
    expect(exitCodeFor(s, { maxWarnings: 1 })).toBe(1);
    expect(exitCodeFor({ ...s, errors: 1 }, { exitZero: true })).toBe(0);
  });
});

// ---------------------------------------------------------------- the reference corpus

describe.skipIf(!HAVE_CORPUS)('dsh check over the reference corpus', () => {
  if (!HAVE_CORPUS) console.warn(SKIP_REASON);
  const summaryFile = path.join(CORPUS, 'expected-summary.json');

  it('every artifact: valid ones have no errors; failures match DSH', async () => {
    const expected = new Map<string, { inspection: string; torn: unknown }>();
    for (const a of JSON.parse(readFileSync(summaryFile, 'utf8')).artifacts) expected.set(path.join(CORPUS, a.path), a);
    const d = discoverTargets([CORPUS]);
    expect(d.layout).toEqual([]);
    const sessions = await checkTargets(d.targets, { jobs: 1 });
    expect(sessions.length).toBeGreaterThanOrEqual(expected.size);
    let compared = 0;
    for (const s of sessions) {
      const e = expected.get(s.file);
      const errors = s.findings.filter((f) => f.severity === 'error');
      if (e === undefined || e.inspection.startsWith('ok')) {
        // Loadable by DSH (or a repaired copy DSH wrote): never an error.
        expect(errors, s.file).toEqual([]);
        expect(s.loaded, s.file).toBe(true);
      } else {
        // DSH refuses or rejects it: exactly the load failure, as an error.
        expect(s.findings.length, s.file).toBe(1);
        expect(errors.length, s.file).toBe(1);
        const cut = (t: string) => t.replace(/ \(raw log: .*$/s, '');
        const want = cut(e.inspection.replace(/^error (Error: )?/, ''));
        expect(cut(errors[0]!.message).startsWith(want) || want.startsWith(cut(errors[0]!.message)), `${s.file}: ${errors[0]!.message} vs ${want}`).toBe(true);
      }
      if (e !== undefined) {
        compared += 1;
        expect(s.findings.some((f) => f.code === 'DSH-A10'), s.file).toBe(e.torn !== null);
      }
    }
    expect(compared).toBe(expected.size);
    console.info(`dsh check: ${sessions.length} corpus artifacts checked (${compared} against expected-summary.json)`);
  });

  it('damaged and refused artifacts get the rule a reader expects', async () => {
    const d = discoverTargets([path.join(CORPUS, 'synthetic'), path.join(CORPUS, 'dsh-snapshots')]);
    const sessions = await checkTargets(d.targets, { jobs: 1 });
    const codesFor = (fragment: string) => {
      const hits = sessions.filter((s) => s.file.includes(fragment));
      expect(hits.length, fragment).toBeGreaterThan(0);
      return hits.map((s) => s.findings.map((f) => `${f.code}:${f.severity}`));
    };
    for (const torn of ['torn-raw-mid-turn', 'torn-raw-last-line', 'torn-final-frame-checksum', 'torn-final-frame-multiblock', 'torn-final-frame-stub', 'torn-final-frame-half', 'torn-final-frame-tail']) {
      for (const codes of codesFor(`/damaged/${torn}/`)) {
        expect(codes).toContain('DSH-A10:warning');
        expect(codes.filter((c) => c.endsWith(':error'))).toEqual([]);
      }
    }
    expect(codesFor('/damaged/checksum-corrupt-middle-frame/')).toEqual([['DSH-A6:error']]);
    expect(codesFor('/damaged/corrupt-raw-middle-line/')).toEqual([['DSH-A8:error']]);
    expect(codesFor('/damaged/seq-gap-raw/')).toEqual([['DSH-A9:error']]);
    expect(codesFor('/refused/syn.header-version-1/')).toEqual([['DSH-A2:error'], ['DSH-A2:error']]);
    expect(codesFor('/refused/syn.unknown-required/')).toEqual([['DSH-B6:error'], ['DSH-B6:error']]);
    expect(codesFor('/refused/syn.unknown-ignorable/')).toEqual([['DSH-B7:info'], ['DSH-B7:info']]);
    expect(codesFor('/web.cordis-tool-round/')).toEqual([['DSH-S10:error'], ['DSH-S10:error']]);
    const cordis = sessions.find((s) => s.file.includes('web.cordis-tool-round'))!.findings[0]!;
    expect(cordis.seq).toBe(11);
    // Crash scenarios DSH repairs with closers: a warning saying what DSH would write.
    const crashes = sessions.filter((x) => /synthetic\/root-(raw|zstd)\/.*syn\.crash-/.test(x.file));
    expect(crashes.length).toBe(6);
    for (const s of crashes) expect(s.findings.map((f) => `${f.code}:${f.severity}`), s.file).toEqual(['DSH-R1:warning']);
    // Forks and subagent forks in the same root: seeds equal the parent prefix.
    for (const s of sessions.filter((x) => /syn\.fork\.child|subagent-fork|subagent-mixed/.test(x.file))) {
      expect(s.findings.filter((f) => f.code === 'DSH-L1'), s.file).toEqual([]);
    }
  });

  it('worker pool (the built CLI, -j 2) gives the same answer as one thread', async () => {
    if (!existsSync(path.join(PROJECT_ROOT, 'dist', 'check', 'worker.js'))) {
      console.warn('dist/ not built: worker-pool test skipped (run npx tsc -p . first)');
      return;
    }
    const target = path.join(CORPUS, 'synthetic');
    const one = await runCli(['check', '--format', 'json', '-j', '1', target]);
    const two = await runCli(['check', '--format', 'json', '-j', '2', target]);
    expect(one.code, one.stderr).toBe(1);
    expect(two.code, two.stderr).toBe(1);
    expect(JSON.parse(two.stdout)).toEqual(JSON.parse(one.stdout));
    const inProcess = await checkTargets(discoverTargets([target]).targets, { jobs: 4 });
    expect(JSON.parse(one.stdout).sessions).toEqual(JSON.parse(JSON.stringify(inProcess)));
    expect(summarize({ tool: { name: 'dsh', version: '0' }, layout: [], sessions: inProcess }).errors).toBeGreaterThan(0);
  });
});

describe('the look-back replays keep only what they read of a request/header', () => {
  const retryFindings = async (provider: string) => {
    const events = clone(baseEvents()) as any[];
    const header = events.find((e) => e.type === 'request/header');
    header.data.header.config.provider = provider;
    // A header of the size DSH logs (tools and system prompt), which the replays never read.
    header.data.header.tools = Array.from({ length: 50 }, (_, i) => ({ name: `tool${i}`, description: 'd'.repeat(2000), parameters: { type: 'object' } }));
    const r = await inspectText(logText(events));
    expect(r.error?.message).toBeUndefined();
    return relationalFindings(r.events!).filter((f) => f.code === 'DSH-F2').map((f) => f.message);
  };
  it('the open step\'s provider still decides whether a retry matches its failed request', async () => {
    expect(await retryFindings('p')).toEqual([]);
    expect((await retryFindings('q')).join('\n')).toContain('llm/retry provider p does not match the failed request provider q');
  });
});

describe('the retry replay (DSH-F2) looks back through every earlier retry, however far back', () => {
  type Ev = { type: string; data: Record<string, unknown> };
  const retry = (turn: unknown, step: unknown, retryId: string, n: number, policyKey = 'k'): Ev => ({
    type: 'llm/retry',
    data: { retryId, turn, step, provider: 'p', mode: 'always', policyKey, retry: n, delayMs: 5, failure: { message: 'reset', code: 'TRANSPORT' } },
  });
  const started = (turn: unknown, step: unknown, retryId: string, n: number): Ev => ({ type: 'llm/retry-started', data: { retryId, turn, step, retry: n } });
  const openStep = (turn: unknown, step: unknown): Ev[] => [
    { type: 'step/start', data: { turn, step } },
    { type: 'request/header', data: { header: { config: { provider: 'p' } } } },
  ];
  const closeStep = (turn: unknown, step: unknown): Ev => ({ type: 'step/end', data: { turn, step } });
  /** Turn 1: step 1 retries two chains (policies a and b); then `filler` steps without retries; then `tail` in a new step. */
  const log = (tail: (turn: unknown, step: unknown) => Ev[], filler = 300, tailTurn: unknown = 1): Ev[] => {
    const events: Ev[] = [{ type: 'turn/start', data: { turn: 1 } }, ...openStep(1, 1)];
    events.push(retry(1, 1, 'ra', 1, 'a'), started(1, 1, 'ra', 1), retry(1, 1, 'rb', 1, 'b'), started(1, 1, 'rb', 1), retry(1, 1, 'ra', 2, 'a'), started(1, 1, 'ra', 2));
    events.push(closeStep(1, 1));
    for (let s = 2; s < 2 + filler; s++) events.push(...openStep(1, s), closeStep(1, s));
    const step = 2 + filler;
    if (tailTurn !== 1) events.push({ type: 'turn/end', data: { turn: 1 } }, { type: 'turn/start', data: { turn: tailTurn } });
    events.push(...openStep(tailTurn, step), ...tail(tailTurn, step));
    return events;
  };
  const f2 = (events: Ev[]) => relationalFindings(sequence(events) as never).filter((f) => f.code === 'DSH-F2').map((f) => `${f.seq} ${f.message}`);
  const lastSeq = (events: Ev[]) => events.length - 1;

  it('fresh chains in a later step pass; both policy chains of one step keep their own counters', () => {
    expect(f2(log((t, s) => [retry(t, s, 'rc', 1, 'a'), started(t, s, 'rc', 1), retry(t, s, 'rc', 2, 'a'), started(t, s, 'rc', 2)]))).toEqual([]);
  });
  it('a retryId a chain of an earlier step used is already owned', () => {
    const events = log((t, s) => [retry(t, s, 'rb', 1, 'a')]);
    expect(f2(events)).toEqual([`${lastSeq(events)} llm/retry retryId "rb" is already owned by another chain`]);
  });
  it('within one chain the retryId must stay, and the counter follows the chain\'s last retry', () => {
    const keep = log(() => []);
    keep.splice(9, 0, retry(1, 1, 'rz', 3, 'a'));
    expect(f2(keep)).toEqual(['9 llm/retry must preserve retryId across one provider-policy chain']);
    const skip = log(() => []);
    skip.splice(9, 0, retry(1, 1, 'ra', 4, 'a'));
    expect(f2(skip)).toEqual(['9 llm/retry retry 4 must equal provider policy retry 3']);
  });
  it('a started attempt must pair its own scheduled retry, once', () => {
    const again = log(() => []);
    again.splice(9, 0, started(1, 1, 'rb', 1));
    expect(f2(again)).toEqual(['9 llm/retry-started repeats one scheduled attempt']);
    const unpaired = log((t, s) => [started(t, s, 'ra', 3)]);
    expect(f2(unpaired)).toEqual([`${lastSeq(unpaired)} llm/retry-started pairs no prior scheduled attempt`]);
    const moved = log((t, s) => [started(t, s, 'ra', 2)]);
    expect(f2(moved)).toEqual([`${lastSeq(moved)} llm/retry-started turn/step must match its scheduled attempt`]);
  });
  it('chains compare turns with ===: turn "1" is not turn 1', () => {
    // Step 1's chain "a" ran in turn 1; the same step number in turn "1" starts a chain of its own.
    const events = log((t) => [retry(t, 1, 'ra', 3, 'a')], 0, '1');
    events.splice(events.length - 3, 2, ...openStep('1', 1));
    expect(f2(events)).toEqual([`${lastSeq(events)} llm/retry retry 3 must equal provider policy retry 1`]);
  });
});

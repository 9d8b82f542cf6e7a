import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, SKIP_REASON, corpusCases, corpusArtifacts } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { sessionPath } from '../src/log/layout.js';
import { writeGeneratedArtifact, generatedHeader } from '../tools/generate.js';
import { writeArtifactFile } from '../src/log/writer.js';
import type { SessionEvent } from '../src/log/types.js';
import { ForkUnavailable, childEvents, forkBoundary, planFork } from '../src/views/fork.js';
import { openSession } from '../src/index.js';


const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
const INCIDENT_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1');
const e = (seq: number, type: string, data: any = {}): SessionEvent => ({ type, seq, time: 1000 + seq, data });

/** The check engine: a written fork child must check clean. */
async function checkEngine(): Promise<(file: string) => Promise<{ findings: { code: string; severity: string; message: string }[]; loaded: boolean }>> {
  const mod: any = await import('../src/check/engine.js');
  return (file: string) => mod.checkResolved(resolveTarget(file));
}

describe('Host fork boundary', () => {
  const log: SessionEvent[] = [
    e(0, 'turn/start', { turn: 1 }),
    e(1, 'step/start', { turn: 1, step: 1 }),
    e(2, 'step/end', { turn: 1, step: 1 }),
    e(3, 'turn/end', { turn: 1, reason: { kind: 'completed' } }),
    e(4, 'session/title', { title: 't' }),
    e(5, 'session/end-seed'),
    e(6, 'turn/start', { turn: 2 }),
    e(7, 'turn/end', { turn: 2, reason: { kind: 'error', error: { message: 'x', code: 'Y' } } }),
    e(8, 'turn/start', { turn: 3 }),
    e(9, 'step/start', { turn: 3, step: 1 }),
  ];
  it('the first turn/end at or after atSeq, extended over trailing events to the next turn/start', () => {
    expect(forkBoundary('s', log, 0)).toEqual({ boundarySeq: 3, cut: 6, rule: 'anchored' });
    expect(forkBoundary('s', log, 3)).toEqual({ boundarySeq: 3, cut: 6, rule: 'anchored' });
    expect(forkBoundary('s', log, 4)).toEqual({ boundarySeq: 7, cut: 8, rule: 'anchored' });
    expect(forkBoundary('s', log)).toEqual({ boundarySeq: 7, cut: 8, rule: 'last-completed-turn' });
    expect(forkBoundary('s', log, 99)).toEqual({ boundarySeq: 7, cut: 8, rule: 'last-completed-turn' });
  });
  it('refuses an anchor inside the open turn, and a log without a completed turn (DSH texts)', () => {
    expect(() => forkBoundary('s', log, 8)).toThrow(new ForkUnavailable('session "s" has not completed the turn containing event 8'));
    expect(() => forkBoundary('s', log.slice(0, 2))).toThrow('session "s" has no completed turn to fork from');
    expect(() => forkBoundary('s', [], 0)).toThrow('session "s" has no completed turn to fork from');
  });
  it('no new end-seed when the seed already ends with one; lineage header', () => {
    const header = { version: 0, id: 's', createdAt: 1, cwd: '/w', delegationDepth: 0, agentPreset: 'old' };
    const withPreset = [...log.slice(0, 4), e(4, 'agent-preset/selected', { agentPreset: 'new' }), ...log.slice(5)].map((x, i) => ({ ...x, seq: i }));
    const plan = planFork(header, withPreset, { atSeq: 0, childId: 'c', createdAt: 5 });
    expect(plan.seedLength).toBe(6);
    expect(plan.seedEndsWithEndSeed).toBe(true);
    expect(plan.endSeedSeq).toBeNull();
    expect(childEvents(plan, withPreset)).toHaveLength(6);
    expect(plan.child).toEqual({ version: 0, id: 'c', createdAt: 5, cwd: '/w', parentSession: 's', seedLength: 6, delegationDepth: 0, agentPreset: 'new' });
    const p2 = planFork({ ...header, agentPreset: undefined } as never, log, { atSeq: 4, childId: 'c', createdAt: 5 });
    expect(p2.endSeedSeq).toBe(8);
    expect(childEvents(p2, log).at(-1)).toEqual({ type: 'session/end-seed', seq: 8, time: 5, data: {} });
    expect(p2.inherits.lastTurn).toEqual({ turn: 2, reason: 'error (Y: x)', endSeq: 7 });
    expect(p2.inherits.title).toBe('t');
  });
});

describe('fork writes a new child session', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-fork-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.skipIf(!HAVE_CORPUS)(`syn.fork.parent --at 3: the child equals the prefix + end-seed, same cut as DSH's own child ${HAVE_CORPUS ? '' : SKIP_REASON}`, async () => {
    const srcRoot = path.join(CORPUS, 'synthetic/root-zstd');
    const src = path.join(srcRoot, '--home-dsh-synthetic-project--/syn.fork.parent/session.jsonl.zstd');
    const before = sha(src);
    const out = path.join(dir, 'out1');
    const res = await runCli(['fork', 'syn.fork.parent', '--root', srcRoot, '--at', '3', '--out', out, '--id', 'child-a', '--created-at', '1785000000000', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc.written).toBe(true);
    expect(doc.verified).toBe(true);
    expect(sha(src)).toBe(before);
    const childFile = path.join(out, '--home-dsh-synthetic-project--', 'child-a', 'session.jsonl.zstd');
    expect(doc.path).toBe(childFile);
    const parent = await inspectTarget(resolveTarget(src), { collect: true });
    const child = await inspectTarget(resolveTarget(childFile), { collect: true });
    expect(child.error).toBeUndefined();
    expect(child.meta).toEqual({ version: 0, id: 'child-a', createdAt: 1785000000000, cwd: parent.meta!.cwd, parentSession: 'syn.fork.parent', seedLength: 16, delegationDepth: 0 });
    expect(child.events!.slice(0, 16)).toEqual(parent.events!.slice(0, 16));
    expect(child.events![16]).toEqual({ type: 'session/end-seed', seq: 16, time: 1785000000000, data: {} });
    expect(child.events).toHaveLength(17);
    // DSH's own fork of this parent (syn.fork.child) has the same seedLength and the same seed.
    const real = await inspectTarget(resolveTarget(path.join(srcRoot, '--home-dsh-synthetic-project--/syn.fork.child/session.jsonl.zstd')), { collect: true });
    expect(real.meta!.seedLength).toBe(16);
    expect(child.events!.slice(0, 16)).toEqual(real.events!.slice(0, 16));
    expect(real.events![16]!.type).toBe('session/end-seed');
    // zstd, checksummed frames: header frame + one seed batch
    expect(child.encoding).toBe('zstd');
    expect(child.frames?.length ?? 2).toBe(2);
    const check = await checkEngine();
    {
      const report = await check(childFile);
      expect(report.loaded).toBe(true);
      expect(report.findings).toEqual([]);
    }
  });

  it.skipIf(!HAVE_CORPUS)('refuses the source root, a path inside it, an existing child and a duplicate id; never touches the source', async () => {
    const srcRoot = path.join(CORPUS, 'synthetic/root-zstd');
    const src = path.join(srcRoot, '--home-dsh-synthetic-project--/syn.fork.parent/session.jsonl.zstd');
    const before = sha(src);
    const same = await runCli(['fork', src, '--out', srcRoot, '--id', 'x']);
    expect(same.code).toBe(2);
    expect(same.stderr).toContain("inside the input's session root");
    const inside = await runCli(['fork', src, '--out', path.join(srcRoot, '--home-dsh-synthetic-project--'), '--id', 'x']);
    expect(inside.code).toBe(2);
    const out = path.join(dir, 'out2');
    const first = await runCli(['fork', src, '--out', out, '--id', 'dup', '--created-at', '1']);
    expect(first.code, first.stderr).toBe(0);
    const again = await runCli(['fork', src, '--out', out, '--id', 'dup', '--created-at', '1']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
    const dry = await runCli(['fork', src, '--out', out, '--id', 'dry', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('would write');
    expect(existsSync(path.join(out, '--home-dsh-synthetic-project--', 'dry'))).toBe(false);
    expect(sha(src)).toBe(before);
  });

  it('a session file outside DSH layout forks into another directory; its own folder is refused; the source is untouched', async () => {
    // A copied session.jsonl.zstd in a plain folder has no session root: three directories up is no
    // root of it (here the system's temporary directory), so only the write-safety rule for new files applies.
    const flat = path.join(dir, 'flat');
    mkdirSync(flat);
    const src = path.join(flat, 'session.jsonl.zstd');
    copyFileSync(path.join(INCIDENT_DIR, 'session.jsonl.zstd'), src);
    const before = sha(src);
    const ok = await runCli(['fork', src, '--at', '5', '--id', 'flat-child', '--created-at', '1', '--out', path.join(dir, 'flat-out'), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(existsSync(JSON.parse(ok.stdout).path)).toBe(true);
    const beside = await runCli(['fork', src, '--at', '5', '--id', 'flat-beside', '--out', path.join(flat, 'out')]);
    expect(beside.code).toBe(2);
    expect(beside.stderr).toContain("inside the input's session directory");
    expect(readdirSync(flat)).toEqual(['session.jsonl.zstd']);
    expect(sha(src)).toBe(before);
  });

  it('an anchor on trailing events after the last turn/end is refused (the logical view closes open turns, so this is the offline case)', async () => {
    const header = { version: 0, id: 'trail', createdAt: 1, cwd: '/w', delegationDepth: 0 };
    const file = sessionPath(path.join(dir, 'trail-root'), header, 'none');
    await writeArtifactFile(file, {
      header,
      encoding: 'none',
      batches: [[e(0, 'turn/start', { turn: 1 }), e(1, 'turn/end', { turn: 1, reason: { kind: 'completed' } }), e(2, 'session/title', { title: 'x', messageSeqs: [], source: { kind: 'user' } })]],
    });
    const open = await runCli(['fork', file, '--at', '2']);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain('session "trail" has not completed the turn containing event 2');
    const json = await runCli(['fork', file, '--at', '2', '--json']);
    // The same {error:{class,message}} as every command, plus DSH Host's API error code.
    expect(JSON.parse(json.stdout).error).toEqual({ class: 'ForkUnavailable', message: 'session "trail" has not completed the turn containing event 2', code: 'fork-unavailable' });
    const ok = await runCli(['fork', file, '--at', '1', '--json']);
    expect(JSON.parse(ok.stdout).plan.seedLength).toBe(3);
  });

  it('generated logs (compactions, prunes, resumes, crash tails) fork and re-read exactly', async () => {
    const check = await checkEngine();
    for (const [seed, crash] of [
      [41, null],
      [42, 'mid-tool'],
    ] as const) {
      const opts = { seed, id: `gen-${seed}`, turns: 6, features: { 2: ['compaction'], 3: ['prune', 'title'], 4: ['resume'] }, crash } as const;
      const src = sessionPath(path.join(dir, 'gen-src'), generatedHeader(opts as never), 'zstd');
      await writeGeneratedArtifact(src, { ...(opts as never), encoding: 'zstd' });
      const parent = await inspectTarget(resolveTarget(src), { collect: true });
      const turnEnds = parent.events!.filter((x) => x.type === 'turn/end').map((x) => x.seq);
      for (const at of [0, turnEnds[1]! + 1, turnEnds.at(-1)!]) {
        const id = `child-${seed}-${at}`;
        const res = await runInProcess(['fork', src, '--at', String(at), '--out', path.join(dir, 'gen-out'), '--id', id, '--created-at', '1785000000000', '--json']);
        expect(res.code, res.stderr).toBe(0);
        const doc = JSON.parse(res.stdout);
        const child = await inspectTarget(resolveTarget(doc.path), { collect: true });
        const cut = doc.plan.seedLength;
        expect(child.meta!.seedLength).toBe(cut);
        expect(child.meta!.parentSession).toBe(`gen-${seed}`);
        expect(child.events!.slice(0, cut)).toEqual(parent.events!.slice(0, cut));
        if (doc.plan.seedEndsWithEndSeed) expect(child.events).toHaveLength(cut);
        else expect(child.events![cut]).toEqual({ type: 'session/end-seed', seq: cut, time: 1785000000000, data: {} });
        expect(parent.events![cut]?.type ?? 'turn/start').toBe('turn/start');
        expect((await check(doc.path)).findings.filter((f) => f.severity === 'error')).toEqual([]);
      }
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('fork over the corpus', () => {
  it('dry-run exits 0 on every artifact; 1 exactly where inspection fails or no turn completed', async () => {
    const failing = new Set(corpusCases().filter((c) => c.expected.inspection?.error).map((c) => c.artifact));
    for (const file of corpusArtifacts()) {
      const r = await inspectTarget(resolveTarget(file), { collect: true });
      const res = await runInProcess(['fork', file, '--json']);
      const unavailable = !r.error && !r.events!.some((x) => x.type === 'turn/end');
      expect(res.code, `${file}: ${res.stderr}`).toBe(failing.has(file) || r.error || unavailable ? 1 : 0);
      if (res.code === 0) {
        const plan = JSON.parse(res.stdout).plan;
        const events = r.events!;
        expect(events[plan.boundary.boundarySeq].type).toBe('turn/end');
        expect(plan.seedLength === events.length || events[plan.seedLength].type === 'turn/start').toBe(true);
      }
    }
  });
});

describe('fork through the library (Session.fork)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-fork-lib-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.skipIf(!HAVE_CORPUS)(`openSession().fork() plans and writes the child the CLI writes, byte for byte, and reads it back ${HAVE_CORPUS ? '' : SKIP_REASON}`, async () => {
    const src = path.join(CORPUS, 'synthetic/root-zstd/--home-dsh-synthetic-project--/syn.fork.parent/session.jsonl.zstd');
    const opened = await openSession(src);
    if (!opened.ok) throw new Error(opened.error.message);
    const dry = await opened.value.fork({ atSeq: 3, childId: 'lib', createdAt: 7 });
    if (!dry.ok) throw new Error(dry.error.message);
    expect(dry.value.written).toBe(false);
    expect(dry.value.path).toBeNull();
    const cli = await runCli(['fork', src, '--at', '3', '--id', 'lib', '--created-at', '7', '--out', path.join(dir, 'cli'), '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    const doc = JSON.parse(cli.stdout);
    expect(dry.value.plan).toEqual(doc.plan);
    const lib = await opened.value.fork({ atSeq: 3, childId: 'lib', createdAt: 7, out: path.join(dir, 'lib') });
    if (!lib.ok) throw new Error(lib.error.message);
    expect({ written: lib.value.written, verified: lib.value.verified, verifiedBy: lib.value.verifiedBy }).toEqual({ written: true, verified: true, verifiedBy: 'digest' });
    expect(lib.value.plan).toEqual(doc.plan);
    expect(readFileSync(lib.value.path!)).toEqual(readFileSync(doc.path));
    // The source's own root: a typed failure with the CLI's text, nothing written.
    const own = await opened.value.fork({ childId: 'own', out: path.join(CORPUS, 'synthetic/root-zstd') });
    expect(own).toMatchObject({ ok: false, error: { class: 'UsageError', kind: 'usage', message: expect.stringContaining("inside the input's session root") } });
  });

  it('a seed whose chunk events the writer packs in another key order still reads back as the seed (compared event by event)', async () => {
    const header = { version: 0, id: 'ko', createdAt: 1, cwd: '/w', delegationDepth: 0 };
    // Chunk events stored unpacked, keys in an order the packed row's expansion does not keep.
    const ev = (seq: number, type: string, data: object) => ({ data, time: 1000 + seq, type, seq }) as unknown as SessionEvent;
    const chunk = (seq: number, text: string) => ev(seq, 'assistant/chunk', { chunk: { text, type: 'text-delta', index: 0 }, step: 1, turn: 1 });
    const events = [ev(0, 'turn/start', { turn: 1 }), ev(1, 'step/start', { turn: 1, step: 1 }), chunk(2, 'he'), chunk(3, 'llo'), chunk(4, '!'), ev(5, 'step/end', { turn: 1, step: 1 }), ev(6, 'turn/end', { turn: 1, reason: { kind: 'completed' } })];
    const file = sessionPath(path.join(dir, 'ko-src'), header, 'none');
    await writeArtifactFile(file, { header, encoding: 'none', packChunks: false, batches: [events] });
    const opened = await openSession(file);
    if (!opened.ok) throw new Error(opened.error.message);
    const forked = await opened.value.fork({ childId: 'c', createdAt: 2, out: path.join(dir, 'ko-out') });
    if (!forked.ok) throw new Error(forked.error.message);
    expect({ verified: forked.value.verified, verifiedBy: forked.value.verifiedBy }).toEqual({ verified: true, verifiedBy: 'events' });
    // The child really holds a packed row, and the CLI agrees it verifies.
    const child = await inspectTarget(resolveTarget(forked.value.path!), { collect: true });
    expect(child.events).toEqual([...events, { type: 'session/end-seed', seq: 7, time: 2, data: {} }]);
    const cli = await runCli(['fork', file, '--id', 'c2', '--created-at', '2', '--out', path.join(dir, 'ko-out'), '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout).verified).toBe(true);
  });
});

/**
 * `dsh surface | trace | transcript | ls | lineage` as real processes over a
 * few corpus sessions: exit codes, JSON that parses and matches DSH's answers.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CORPUS, corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { loadedFromInspection } from '../src/views/messages.js';
import { explainEvent } from '../src/views/trace.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const SYN = path.join(CORPUS, 'synthetic/root-zstd');
const SYN_RAW = path.join(CORPUS, 'synthetic/root-raw');
const PROJ = '--home-dsh-synthetic-project--';
const session = (root: string, id: string) => path.join(root, PROJ, id);
const expectedOf = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8'));
const CORDIS = path.join(CORPUS, 'dsh-snapshots/root-zstd/--home-dsh-web-cordis-tool-round--/web.cordis-tool-round');

describe.skipIf(!HAVE_CORPUS)('query commands as processes', () => {
  it('surface: --json is derived.messages; --at gives the stored-prefix messages; human output exits 0', async () => {
    for (const [root, id] of [
      [SYN, 'syn.compaction-double'],
      [SYN_RAW, 'syn.crash-mid-tool'],
      [SYN, 'syn.tool-result-replacement'],
    ] as const) {
      const dir = session(root, id);
      const expected = expectedOf(dir);
      const r = await runCli(['surface', dir, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(expected.derived.messages);
      const human = await runCli(['surface', dir]);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain(`surface ${id}`);
    }
    const crash = session(SYN_RAW, 'syn.crash-mid-tool');
    const exp = expectedOf(crash);
    const at = await runCli(['surface', crash, '--at', String(exp.inspection.storedEventCount - 1), '--json']);
    expect(JSON.parse(at.stdout)).toEqual(exp.derivedWithoutClosers.messages);
    // by id under --root
    const byId = await runCli(['surface', 'syn.compaction-double', '--root', SYN, '--json']);
    expect(byId.code).toBe(0);
    expect(JSON.parse(byId.stdout)).toEqual(expectedOf(session(SYN, 'syn.compaction-double')).derived.messages);
  });

  it('trace: --json equals sessionQuery.traceEvent; --all adds provenance; a missing seq exits 2', async () => {
    const dir = session(SYN, 'syn.compaction-double');
    const expected = expectedOf(dir);
    for (const seq of [2, 13, 46, 68, 69, 80]) {
      const r = await runCli(['trace', dir, String(seq), '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(expected.sessionQuery.traceEvent[String(seq)]);
    }
    const all = await runCli(['trace', dir, '69', '--all', '--json']);
    expect(all.code).toBe(0);
    const doc = JSON.parse(all.stdout);
    expect(doc.replacedEventSeqs).toEqual([46, 51, 61]);
    expect(doc.provenance.children.map((c: any) => c.seq)).toEqual([67, 68, 46, 51, 61]);
    expect(doc.origins).toEqual(expect.arrayContaining([2, 18, 28, 44, 45, 67, 68]));
    const human = await runCli(['trace', dir, '69', '--depth', '2']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('Events replaced by target: 46, 51, 61');
    expect(human.stdout).toContain('replaced 46 user/message shadowed (replaced 6: 2, 13, 18, 27, 29, 40)');
    const missing = await runCli(['trace', dir, '9999']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('dsh: session "syn.compaction-double" has no event at seq 9999\n');
    expect((await runCli(['trace', dir, 'x1'])).code).toBe(2);
    expect((await runCli(['trace', dir, '3', '--all', '--depth', '2'])).code).toBe(2);
  });

  it('trace: a provenance tree past what the process holds is refused with exit 2, never an out-of-memory crash', async () => {
    // Every event of the tree is read and held, with its node and its share of the document: on the
    // 2 GB bench log `--all` of its last summary reached millions and V8 died out of memory. The
    // budget (DSH_TRACE_MAX_EVENTS, else one event per KiB of the held-bytes budget) is checked
    // before each level is read.
    const dir = session(SYN, 'syn.compaction-double');
    const all = JSON.parse((await runCli(['trace', dir, '69', '--all', '--json'])).stdout);
    const count = (n: any): number => 1 + n.children.reduce((a: number, c: any) => a + count(c), 0);
    const reached = new Set<number>();
    const walk = (n: any) => {
      reached.add(n.seq);
      n.children.forEach(walk);
    };
    walk(all.provenance);
    expect(count(all.provenance)).toBeGreaterThan(5);
    for (const argv of [['--all'], ['--depth', '3']]) {
      const refused = await runCli(['trace', dir, '69', ...argv], { env: { DSH_TRACE_MAX_EVENTS: '5' } });
      expect({ argv, code: refused.code, stdout: refused.stdout }).toEqual({ argv, code: 2, stdout: '' });
      expect(refused.stderr).toMatch(/^dsh: trace: the provenance of seq 69 reaches more than 5 events within 1 level, /);
      expect(refused.stderr).toContain('DSH_TRACE_MAX_EVENTS');
      expect(refused.stderr).not.toMatch(/\n\s+at /);
    }
    // With --json the refusal is the error document, as for any usage error.
    const json = await runCli(['trace', dir, '69', '--all', '--json'], { env: { DSH_TRACE_MAX_EVENTS: '5' } });
    expect(json.code).toBe(2);
    const error = JSON.parse(json.stdout).error;
    expect(error.class).toBe('UsageError');
    expect(error.message).toMatch(/^trace: the provenance of seq 69 reaches more than 5 events/);
    // Past the first level, the refusal names the depth that stays within the budget.
    const second = await runCli(['trace', dir, '69', '--all'], { env: { DSH_TRACE_MAX_EVENTS: '12' } });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/reaches more than 12 events within 2 levels, .*; --depth 1 stays within it\n$/);
    // A budget the tree fits in answers as without one.
    const fits = await runCli(['trace', dir, '69', '--all', '--json'], { env: { DSH_TRACE_MAX_EVENTS: String(reached.size) } });
    expect(fits.code, fits.stderr).toBe(0);
    expect(JSON.parse(fits.stdout)).toEqual(all);
    // One level of 69 is itself and its 5 sources: a budget of 6 holds it.
    const one = await runCli(['trace', dir, '69', '--depth', '1', '--json'], { env: { DSH_TRACE_MAX_EVENTS: '6' } });
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout).provenance.children.map((c: any) => c.seq)).toEqual([67, 68, 46, 51, 61]);
  });

  it('transcript: text, markdown and json; synthetic closers and compaction markers', async () => {
    const dir = session(SYN, 'syn.compaction-double');
    const json = await runCli(['transcript', dir, '--format', 'json']);
    expect(json.code).toBe(0);
    const t = JSON.parse(json.stdout);
    expect(t.entries.filter((e: any) => e.kind === 'compaction').map((e: any) => e.seq)).toEqual([46, 69]);
    const md = await runCli(['transcript', dir, '--format', 'markdown']);
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('**Compaction compaction-2** (seq 69)');
    const crash = await runCli(['transcript', session(SYN, 'syn.crash-mid-tool')]);
    expect(crash.code).toBe(0);
    expect(crash.stdout).toContain('TOOL_OUTCOME_UNKNOWN, synthetic closer');
    expect(crash.stdout).toContain('interrupted [synthetic closer: crash repair]');
    const prune = JSON.parse((await runCli(['transcript', session(SYN, 'syn.tool-result-replacement'), '--json'])).stdout);
    expect(prune.entries.filter((e: any) => e.kind === 'prune').map((e: any) => [e.seq, e.originalSeq])).toEqual([[34, 16]]);
  });

  it('ls: --json order equals sessionQueryListSessions on every corpus root', async () => {
    const roots = [
      'synthetic/root-zstd',
      'synthetic/root-raw',
      'dsh-snapshots/root-zstd',
      'dsh-snapshots/root-raw',
      'synthetic/refused/syn.header-version-1/root-raw',
      'synthetic/damaged/torn-final-frame-tail/root-zstd',
    ];
    for (const rel of roots) {
      const root = path.join(CORPUS, rel);
      const expected = JSON.parse(readFileSync(path.join(root, 'expected-root.json'), 'utf8'));
      const r = await runCli(['ls', root, '--json']);
      expect(r.code, r.stderr).toBe(0);
      const list = JSON.parse(r.stdout);
      expect(list.map((x: any) => x.id), rel).toEqual(expected.sessionQueryListSessions.map((s: any) => s.header.id));
    }
    // Health reads spread over worker threads give the same listing as one thread, titles and errors included.
    for (const rel of ['synthetic/root-zstd', 'dsh-snapshots/root-raw']) {
      const root = path.join(CORPUS, rel);
      const one = await runCli(['ls', root, '--json', '-j', '1']);
      const two = await runCli(['ls', root, '--json', '-j', '3']);
      expect(two.code).toBe(0);
      expect(two.stdout).toBe(one.stdout);
      if (rel.startsWith('dsh-snapshots')) expect(JSON.parse(one.stdout).filter((x: any) => x.title !== null).length).toBe(113);
    }
    expect((await runCli(['ls', SYN, '-j', 'x'])).code).toBe(2);
    const refused = JSON.parse((await runCli(['ls', path.join(CORPUS, 'synthetic/refused/syn.header-version-1/root-raw'), '--json'])).stdout);
    expect(refused[0].health).toBe('refused');
    const subs = JSON.parse((await runCli(['ls', SYN, '--kind', 'subagent', '--json'])).stdout);
    expect(subs.map((x: any) => x.id)).toEqual(['syn.subagent.child']);
    const since = JSON.parse((await runCli(['ls', SYN, '--since', '1785100001000', '--no-health', '--json'])).stdout);
    expect(since.map((x: any) => x.id)).toEqual(['syn.subagent.child', 'syn.subagent.parent', 'syn.fork.child', 'syn.fork.parent']);
    expect(since[0].health).toBeNull();
    const human = await runCli(['ls', SYN]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('needs-repair');
    expect((await runCli(['ls', '/nonexistent-root-for-dsh'])).code).toBe(2);
    expect((await runCli(['ls', SYN, '--since', 'yesterday-ish'])).code).toBe(2);
  });

  it('lineage: --json equals sessionQuery.traceSession for fork and subagent scenarios', async () => {
    for (const id of ['syn.fork.parent', 'syn.fork.child', 'syn.subagent.parent', 'syn.subagent.child']) {
      const dir = session(SYN, id);
      const r = await runCli(['lineage', dir, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(expectedOf(dir).sessionQuery.traceSession);
    }
    const human = await runCli(['lineage', 'syn.fork.child', '--root', SYN]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('syn.fork.parent');
    expect(human.stdout).toMatch(/`-- \* syn\.fork\.child\s+fork/);
  });

  it('a log DSH refuses exits 1 with its error, in JSON and in text', async () => {
    for (const args of [['surface', CORDIS], ['trace', CORDIS, '3'], ['transcript', CORDIS]]) {
      const j = await runCli([...args, '--json']);
      expect(j.code).toBe(1);
      const doc = JSON.parse(j.stdout);
      expect(doc.error.class).toBe('SessionPersistenceCorruptionError');
      expect(doc.error.message).toBe(
        'stored session "web.cordis-tool-round" failed validation: Error: invalid seed event at index 11: sourceEventSeqs must reference earlier events: 11 >= current seq 11',
      );
      const h = await runCli(args);
      expect(h.code).toBe(1);
      expect(h.stderr).toContain('dsh: SessionPersistenceCorruptionError: stored session "web.cordis-tool-round" failed validation');
    }
    // lineage only needs headers, so it still answers for a refused log
    const lin = await runCli(['lineage', CORDIS, '--json']);
    expect(lin.code).toBe(0);
    expect(JSON.parse(lin.stdout)).toEqual(expectedOf(CORDIS).sessionQuery.traceSession);
  });
});

describe('query commands without the corpus', () => {
  it('escape control characters from log content and read stdin', async () => {
    const text =
      '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}\n' +
      '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n' +
      JSON.stringify({ type: 'user/message', seq: 1, time: 2, data: { content: [{ type: 'text', text: 'hi\u001b[2J\u0007there' }], source: { kind: 'user' }, role: 'user', id: 'm1' }, surfaceOp: 'append' }) +
      '\n';
    for (const args of [['surface', '-'], ['transcript', '-'], ['transcript', '-', '--format', 'markdown'], ['trace', '-', '1']]) {
      const r = await runCli(args, { input: Buffer.from(text) });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout).not.toContain('\u001b');
      expect(r.stdout).not.toContain('\u0007');
      expect(r.stdout).toContain('\\u001b[2J');
    }
    const lin = await runCli(['lineage', '-', '--json'], { input: Buffer.from(text) });
    expect(lin.code).toBe(0);
    expect(JSON.parse(lin.stdout)).toMatchObject({ complete: true, ancestors: [], descendants: [] });
  });

  it('lineage: cycle exits 1 with session-query text, a missing parent is incomplete; ls lists all three', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'dsh-lineage-'));
    try {
      const put = (id: string, header: object) => {
        mkdirSync(path.join(root, '--w--', id), { recursive: true });
        writeFileSync(path.join(root, '--w--', id, 'session.jsonl'), JSON.stringify({ type: 'session', version: 0, id, cwd: '/w', ...header }) + '\n');
      };
      put('a', { createdAt: 1, parentSession: 'b', delegationDepth: 0 });
      put('b', { createdAt: 2, parentSession: 'a', delegationDepth: 0 });
      put('c', { createdAt: 3, parentSession: 'gone', origin: 'subagent', delegationDepth: 1 });
      const cyc = await runCli(['lineage', 'a', '--root', root, '--compression', 'none', '--json']);
      expect(cyc.code).toBe(1);
      expect(JSON.parse(cyc.stdout)).toEqual({ error: { class: 'SessionQueryError', message: 'session lineage contains a cycle at "a"' } });
      const human = await runCli(['lineage', 'a', '--root', root, '--compression', 'none']);
      expect(human.code).toBe(1);
      expect(human.stderr).toBe('dsh: session lineage contains a cycle at "a"\n');
      const orphan = JSON.parse((await runCli(['lineage', 'c', '--root', root, '--compression', 'none', '--json'])).stdout);
      expect(orphan).toMatchObject({ complete: false, unresolvedParentId: 'gone', ancestors: [], descendants: [] });
      const ls = JSON.parse((await runCli(['ls', root, '--json'])).stdout);
      expect(ls.map((x: any) => [x.id, x.kind])).toEqual([
        ['c', 'subagent'],
        ['b', 'fork'],
        ['a', 'fork'],
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAVE_CORPUS)('dsh trace reads only the provenance it shows', () => {
  it('--json equals sessionQuery.traceEvent and --all --json equals the whole-log explanation, on every corpus session', async () => {
    let compared = 0;
    for (const c of corpusCases()) {
      const sq = c.expected.sessionQuery;
      if (!sq?.traceEvent || c.expected.inspection.error) continue;
      const s = loadedFromInspection(await inspectTarget(resolveTarget(c.artifact), { collect: true }));
      const seqs = Object.keys(sq.traceEvent).map(Number);
      const step = Math.max(1, Math.floor(seqs.length / 15));
      for (let i = 0; i < seqs.length; i += step) {
        const seq = seqs[i]!;
        const one = await runInProcess(['trace', c.artifact, String(seq), '--json']);
        expect(one.code, `${c.name} ${seq}`).toBe(0);
        expect(JSON.parse(one.stdout)).toEqual(sq.traceEvent[String(seq)]);
        const all = await runInProcess(['trace', c.artifact, String(seq), '--all', '--json']);
        const x = explainEvent(s.sessionId, s.events, seq, { depth: Infinity, storedEventCount: s.storedEventCount }, s.surface);
        expect(JSON.parse(all.stdout)).toEqual(JSON.parse(JSON.stringify({ ...x.trace, provenance: x.tree, origins: x.origins })));
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});

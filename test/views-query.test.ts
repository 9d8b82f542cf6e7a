/**
 * Conformance of the query views (labels, traceEvent, readSurface, readTitle,
 * deriveMessages at any seq, surface facts, traceSession, listSessions order)
 * against DSH's own answers in the reference corpus (read in place).
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { inspectTarget, type SessionInspection } from '../src/log/session.js';
import { inspectSource } from '../src/log/inspect.js';
import { resolveTarget } from '../src/log/target.js';
import { MemorySource } from '../src/physical/source.js';
import { eventRecord } from '../src/views/labels.js';
import { analyzeLog, explainEvent, traceEvent } from '../src/views/trace.js';
import {
  loadedFromInspection,
  readSurface,
  readTitle,
  sessionQueryFailureMessage,
  surfaceView,
  InspectionFailure,
  SessionQueryError,
} from '../src/views/messages.js';
import { lineageInRoot, traceSession } from '../src/views/lineage.js';
import { listSessions } from '../src/views/listing.js';
import { buildTranscript } from '../src/views/transcript.js';
import { Chalk } from 'chalk';
import { renderSurface } from '../src/cli/render/surface.js';
import { renderTrace } from '../src/cli/render/trace.js';
import { renderTranscriptMarkdown, renderTranscriptText } from '../src/cli/render/transcript.js';
import { renderLineage } from '../src/cli/render/lineage.js';

const plain = new Chalk({ level: 0 });

const CORPUS = process.env['DSH_CORPUS'] ?? path.resolve(__dirname, '../../shared/corpus');
const HAVE = existsSync(path.join(CORPUS, 'README.md'));
if (!HAVE) console.warn(`[views-query] reference corpus not found at ${CORPUS}: corpus conformance tests skipped`);

function walk(dir: string, name: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) walk(p, name, out);
    else if (entry === name) out.push(p);
  }
  return out;
}

const expectedFiles = HAVE ? walk(CORPUS, 'expected.json').sort() : [];
const rootFiles = HAVE ? walk(CORPUS, 'expected-root.json').sort() : [];

function rootOf(file: string): string {
  let dir = path.dirname(file);
  while (dir.startsWith(CORPUS) && dir !== CORPUS) {
    if (existsSync(path.join(dir, 'expected-root.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error(`no root for ${file}`);
}

function artifactOf(file: string): string {
  const dir = path.dirname(file);
  const zstd = path.join(dir, 'session.jsonl.zstd');
  return existsSync(zstd) ? zstd : path.join(dir, 'session.jsonl');
}

const counts = { artifacts: 0, traced: 0, seqs: 0, failures: 0, atPrefixes: 0, lineage: 0, roots: 0 };

describe.skipIf(!HAVE)('query views vs corpus expected.json', () => {
  it('labels, traceEvent (every seq), readSurface, readTitle, messages, surface, traceSession', async () => {
    for (const file of expectedFiles) {
      const expected = JSON.parse(readFileSync(file, 'utf8'));
      const sq = expected.sessionQuery;
      if (!sq) continue;
      counts.artifacts++;
      const root = rootOf(file);
      const target = resolveTarget(artifactOf(file));
      const r: SessionInspection = await inspectTarget(target, { collect: true });
      const where = path.relative(CORPUS, file);

      // Lineage over the root's headers (works even when the log itself is refused).
      const lineage = await lineageInRoot(root, expected.sessionId);
      expect(lineage.trace, `${where} traceSession`).toEqual(sq.traceSession);
      counts.lineage++;

      if (sq.listEvents.error) {
        counts.failures++;
        expect(r.error, `${where} should fail`).toBeDefined();
        expect(() => loadedFromInspection(r)).toThrow(InspectionFailure);
        const msg = sessionQueryFailureMessage(expected.sessionId, r.error!).split(root).join('<root>');
        expect(msg, where).toBe(sq.listEvents.error.message);
        continue;
      }
      expect(r.error, where).toBeUndefined();
      const s = loadedFromInspection(r);
      const a = analyzeLog(s.events, s.surface);
      expect(s.events.map((e) => eventRecord(s.sessionId, e, a.labels)), `${where} listEvents`).toEqual(sq.listEvents);
      // Traces computed from the inspection's fold and from a fresh fold agree.
      const fresh = analyzeLog(s.events);
      for (const e of s.events) {
        const want = sq.traceEvent[String(e.seq)];
        expect(traceEvent(s.sessionId, s.events, e.seq, a), `${where} traceEvent ${e.seq}`).toEqual(want);
        expect(traceEvent(s.sessionId, s.events, e.seq, fresh)).toEqual(want);
        counts.seqs++;
      }
      expect(Object.keys(sq.traceEvent).length).toBe(s.events.length);
      counts.traced++;
      expect(readSurface(s), `${where} readSurface`).toEqual(sq.readSurface);
      expect(readTitle(s.events), `${where} readTitle`).toEqual(sq.readTitle);

      const view = surfaceView(s);
      expect(view.messages, `${where} derived.messages`).toEqual(expected.derived.messages);
      const ds = expected.derived.surface;
      expect(
        {
          nodes: view.surface.nodes,
          replaceGeneration: view.surface.replaceGeneration,
          replacements: view.surface.replacements,
          shadowedSeqs: view.surface.shadowedSeqs,
          surfaceEventSeqs: view.surface.surfaceEventSeqs,
          appendSurfaceSeqs: view.surface.appendSurfaceSeqs,
          replacementSurfaceSeqs: view.surface.replacementSurfaceSeqs,
        },
        `${where} derived.surface`,
      ).toEqual({
        nodes: ds.nodes,
        replaceGeneration: ds.replaceGeneration,
        replacements: ds.replacements,
        shadowedSeqs: ds.shadowedSeqs,
        surfaceEventSeqs: ds.surfaceEventSeqs,
        appendSurfaceSeqs: ds.appendSurfaceSeqs,
        replacementSurfaceSeqs: ds.replacementSurfaceSeqs,
      });

      // `--at`: the messages of every dispatch's input prefix, and the stored log without closers.
      for (const req of expected.requests ?? []) {
        if (req.prefixEventCount === 0) continue;
        const at = surfaceView(s, req.prefixEventCount - 1);
        expect(at.messages, `${where} request ${req.key} messages`).toEqual(req.messages);
        expect(at.surface.nodes, `${where} request ${req.key} nodes`).toEqual(req.surfaceNodes);
        counts.atPrefixes++;
      }
      if (expected.derivedWithoutClosers && s.storedEventCount > 0) {
        const at = surfaceView(s, s.storedEventCount - 1);
        expect(at.messages, `${where} derivedWithoutClosers.messages`).toEqual(expected.derivedWithoutClosers.messages);
        counts.atPrefixes++;
      }

      // Transitive trace and transcript never throw on a valid log.
      const last = s.events[s.events.length - 1];
      if (last) {
        const t = explainEvent(s.sessionId, s.events, last.seq, { depth: Infinity });
        expect(t.trace).toEqual(sq.traceEvent[String(last.seq)]);
      }
      const transcript = buildTranscript(s);
      // Renderers are total over every valid corpus log.
      expect(renderTranscriptText(transcript, plain)).toContain(s.sessionId);
      expect(renderTranscriptMarkdown(transcript)).toContain('# Session');
      expect(renderSurface(view, plain)).toContain(`surface ${s.sessionId}`);
      if (last) expect(renderTrace(explainEvent(s.sessionId, s.events, last.seq, { depth: 2 }), 'depth 2', plain)).toContain('Target: seq');
      expect(renderLineage(lineage.trace, plain)).toContain('<- target');
      const appendSeqs = new Set(ds.appendSurfaceSeqs as number[]);
      for (const entry of transcript.entries) {
        if (entry.kind === 'message') expect(appendSeqs.has(entry.seq)).toBe(true);
      }
    }
    console.log(
      `[views-query] ${counts.artifacts} artifacts: ${counts.traced} traced (${counts.seqs} seqs compared), ${counts.failures} failing logs compared by error text, ${counts.atPrefixes} --at prefixes, ${counts.lineage} lineage traces`,
    );
    expect(counts.traced).toBeGreaterThan(200);
  });

  it('ls order equals sessionQueryListSessions for every corpus root', async () => {
    for (const file of rootFiles) {
      const expected = JSON.parse(readFileSync(file, 'utf8'));
      const listing = await listSessions(path.dirname(file), { health: false });
      expect(listing.sessions.map((x) => x.id), path.relative(CORPUS, file)).toEqual(
        expected.sessionQueryListSessions.map((r: any) => r.header.id),
      );
      expect(listing.sessions.map((x) => x.header)).toEqual(expected.sessionQueryListSessions.map((r: any) => r.header));
      counts.roots++;
    }
    expect(counts.roots).toBe(rootFiles.length);
  });

  it('ls health and titles on the synthetic zstd root', async () => {
    const root = path.join(CORPUS, 'synthetic/root-zstd');
    const listing = await listSessions(root);
    const byId = new Map(listing.sessions.map((x) => [x.id, x]));
    expect(byId.get('syn.compaction-double')?.health).toBe('ok');
    expect(byId.get('syn.crash-mid-tool')?.health).toBe('needs-repair');
    expect(byId.get('syn.subagent.child')?.kind).toBe('subagent');
    expect(byId.get('syn.fork.child')?.kind).toBe('fork');
    const forks = await listSessions(root, { kind: ['fork'], health: false });
    expect(forks.sessions.map((x) => x.id)).toEqual(['syn.fork.child']);
    const refused = await listSessions(path.join(CORPUS, 'synthetic/refused/syn.header-version-1/root-zstd'));
    expect(refused.sessions[0]?.health).toBe('refused');
    const torn = await listSessions(path.join(CORPUS, 'synthetic/damaged/torn-final-frame-tail/root-zstd'));
    expect(torn.sessions[0]?.health).toBe('torn');
  });

  it('the compaction-double explanation names both compactions and their origins', async () => {
    const file = path.join(CORPUS, 'synthetic/root-zstd/--home-dsh-synthetic-project--/syn.compaction-double/session.jsonl.zstd');
    const s = loadedFromInspection(await inspectTarget(resolveTarget(file), { collect: true }));
    const t = explainEvent(s.sessionId, s.events, 69, { depth: 2 });
    expect(t.trace.replacedEventSeqs).toEqual([46, 51, 61]);
    expect(t.tree.children.map((c) => [c.seq, c.relation])).toEqual([
      [67, 'source'],
      [68, 'source'],
      [46, 'replaced'],
      [51, 'replaced'],
      [61, 'replaced'],
    ]);
    const c46 = t.tree.children[2]!;
    expect(c46.replaced).toEqual([2, 13, 18, 27, 29, 40]);
    expect(c46.children.map((c) => c.seq)).toEqual([44, 45, 2, 13, 18, 27, 29, 40]);
    // depth 2 stops below the first compaction's shadowed nodes
    expect(c46.children.find((c) => c.seq === 13)?.truncated).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    const all = explainEvent(s.sessionId, s.events, 69, { depth: Infinity });
    expect(all.origins).toContain(2);
    expect(all.origins).toContain(28);
    const transcript = buildTranscript(s);
    const markers = transcript.entries.filter((e) => e.kind === 'compaction');
    expect(markers.map((m) => (m.kind === 'compaction' ? [m.seq, m.compactionId, m.summarySeq, m.shadowedSeqs] : null))).toEqual([
      [46, 'compaction-1', 45, [2, 13, 18, 27, 29, 40]],
      [69, 'compaction-2', 68, [46, 51, 61]],
    ]);
  });
});

describe('query views without the corpus', () => {
  it('unknown seq is SESSION_QUERY_EVENT_NOT_FOUND, checked before the fold', () => {
    const events = [{ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } }];
    expect(() => traceEvent('x', events, 5)).toThrow(new SessionQueryError('session "x" has no event at seq 5', 'SESSION_QUERY_EVENT_NOT_FOUND'));
    // A log the fold rejects still answers "no event" first.
    const bad = [{ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 }, surfaceOp: 'append' as const }];
    expect(() => traceEvent('x', bad, 3)).toThrow('session "x" has no event at seq 3');
    expect(() => traceEvent('x', bad, 0)).toThrow('invalid session surface: session event "turn/start" is not surface-eligible and cannot carry surfaceOp');
  });

  it('the tracing.spec worked example', () => {
    const m = (seq: number, surfaceOp: any, sourceEventSeqs?: number[]) => ({
      type: seq === 3 ? 'user/message' : 'assistant/message',
      seq,
      time: seq,
      data: seq === 3 ? { role: 'user', content: [], source: { kind: 'user' }, id: 'u' } : { turn: 1, step: 1, message: { role: 'assistant', content: [], id: 'a' } },
      surfaceOp,
      ...(sourceEventSeqs ? { sourceEventSeqs } : {}),
    });
    const filler = (seq: number) => ({ type: seq === 2 ? 'assistant/chunk' : 'turn/start', seq, time: seq, data: {} });
    const events = [filler(0), filler(1), filler(2), m(3, 'append', [2]), m(4, { op: 'replace', start: 3, end: 3 }, [3, 2]), filler(5), filler(6), filler(7), m(8, { op: 'replace', start: 4, end: 4 }, [2, 4])];
    const t3 = traceEvent('s', events, 3);
    expect(t3).toEqual({ target: { sessionId: 's', seq: 3, type: 'user/message', time: 3, surface: 'shadowed' }, replacedBy: 4, replacementChain: [4, 8], replacedEventSeqs: [], sourceEventSeqs: [2], derivedEventSeqs: [4] });
    expect(traceEvent('s', events, 4).replacementChain).toEqual([8]);
    expect(traceEvent('s', events, 2)).toMatchObject({ target: { surface: 'log-only' }, derivedEventSeqs: [3, 4, 8] });
    expect(traceEvent('s', events, 8)).toMatchObject({ replacedEventSeqs: [4], sourceEventSeqs: [2, 4], derivedEventSeqs: [] });
  });

  it('traceSession: ancestors, forest order, unresolved parent, cycle', () => {
    const rec = (id: string, createdAt: number, parentSession?: string, origin?: 'subagent') => ({
      header: { version: 0, id, createdAt, delegationDepth: 0, ...(parentSession ? { parentSession } : {}), ...(origin ? { origin } : {}) },
      live: false as const,
      persisted: true as const,
    });
    const records = [rec('a', 1), rec('b', 5, 'a'), rec('c', 3, 'a', 'subagent'), rec('d', 3, 'a'), rec('e', 9, 'c'), rec('orphan', 2, 'missing')];
    const t = traceSession(records, 'a');
    expect(t.complete).toBe(true);
    expect(t.descendants.map((n) => n.session.header.id)).toEqual(['c', 'd', 'b']);
    expect(t.descendants[0]!.descendants.map((n) => n.session.header.id)).toEqual(['e']);
    const e = traceSession(records, 'e');
    expect(e.ancestors.map((r) => r.header.id)).toEqual(['c', 'a']);
    expect(e).toMatchObject({ complete: true, root: { header: { id: 'a' } } });
    expect(traceSession(records, 'orphan')).toMatchObject({ complete: false, unresolvedParentId: 'missing', ancestors: [] });
    const cyc = [rec('x', 1, 'y'), rec('y', 2, 'x')];
    expect(() => traceSession(cyc, 'x')).toThrow('session lineage contains a cycle at "x"');
    expect(() => traceSession(records, 'nope')).toThrow('session "nope" not found');
  });

  it('a log that breaks the surface rules is refused with DSH text', async () => {
    const lines = [
      { type: 'session', version: 0, id: 'x', createdAt: 1, cwd: '/tmp/p', delegationDepth: 0 },
      { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } },
      { type: 'step/start', seq: 1, time: 2, data: { turn: 1, step: 1 } },
      { type: 'user/message', seq: 2, time: 3, data: { role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' }, id: 'm1' }, surfaceOp: 'append' },
      {
        type: 'user/message',
        seq: 3,
        time: 4,
        data: { role: 'user', content: [{ type: 'text', text: 'summary' }], source: { kind: 'user' }, id: 'm2' },
        surfaceOp: { op: 'replace', start: 99, end: 99 },
        sourceEventSeqs: [2],
      },
      { type: 'step/end', seq: 4, time: 5, data: { turn: 1, step: 1 } },
      { type: 'turn/end', seq: 5, time: 6, data: { turn: 1, reason: { kind: 'completed' } } },
    ];
    const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
    const r = await inspectSource(new MemorySource('mem.jsonl', Buffer.from(text)), { collect: true });
    let failure: unknown;
    try {
      surfaceView(loadedFromInspection(r));
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(InspectionFailure);
    const f = failure as InspectionFailure;
    expect(f.error.class).toBe('SessionPersistenceCorruptionError');
    expect(f.error.message).toBe('stored session "x" failed validation: Error: invalid seed event at index 3: surface replace: start seq 99 not found in surface');
    expect(sessionQueryFailureMessage('x', f.error)).toBe(`stored session "x" is corrupt: ${f.error.message}`);
  });
});

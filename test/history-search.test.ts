import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, HAVE_CORPUS, SKIP_REASON, corpusCases, corpusArtifacts } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { sessionPath } from '../src/log/layout.js';
import { writeArtifactFile } from '../src/log/writer.js';
import { writeGeneratedArtifact, generatedHeader } from '../tools/generate.js';
import type { SessionEvent, SessionHeader } from '../src/log/types.js';
import { allPages, hostServableWarning, pageSizeWarnings, paginate } from '../src/views/history.js';
import { compileTextFilter, extractSessionEventText, snippetOf, matchRanges } from '../src/views/search.js';


const user = (seq: number, text: string, extra: Partial<SessionEvent> = {}): SessionEvent => ({
  type: 'user/message',
  seq,
  time: seq,
  data: { role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' }, id: `u${seq}` },
  surfaceOp: 'append',
  ...extra,
});
const chunk = (seq: number): SessionEvent => ({ type: 'assistant/chunk', seq, time: seq, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } } });
const asst = (seq: number, sources: number[]): SessionEvent => ({
  type: 'assistant/message',
  seq,
  time: seq,
  data: { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'x' }], source: { kind: 'model', provider: 'p', model: 'm' }, id: `a${seq}` } },
  surfaceOp: 'append',
  sourceEventSeqs: sources,
});

describe('history paginate (Host rule)', () => {
  // 0 user, 1-3 chunks, 4 assistant citing 1..3, 5 tool/result, 6 user replacement copy, 7 user, 8 chunk, 9 assistant citing 8
  const events: SessionEvent[] = [
    user(0, 'q1'),
    chunk(1),
    chunk(2),
    chunk(3),
    asst(4, [1, 2, 3]),
    { type: 'tool/result', seq: 5, time: 5, data: {}, surfaceOp: 'append', sourceEventSeqs: [4] },
    user(6, 'checkpoint', { surfaceOp: { op: 'replace', start: 0, end: 4 }, sourceEventSeqs: [0, 4] }),
    user(7, 'q2'),
    chunk(8),
    asst(9, [8]),
  ];
  it('counts only append-origin user/assistant messages and never cuts inside a chunk group', () => {
    const p1 = paginate(events, undefined, 1);
    expect(p1.cut).toBe(8);
    expect(p1.events.map((e) => e.seq)).toEqual([8, 9]);
    expect(p1.hasMore).toBe(true);
    const p2 = paginate(events, undefined, 2);
    expect(p2.cut).toBe(7);
    const p3 = paginate(events, undefined, 3); // 9, 7, 4 (the replacement copy at 6 and the tool/result do not count)
    expect(p3.cut).toBe(1);
    expect(p3.countedMessageSeqs).toEqual([9, 7, 4]);
    const p4 = paginate(events, undefined, 4);
    expect(p4.cut).toBe(0);
    expect(p4.hasMore).toBe(false);
    const p5 = paginate(events, undefined, 50);
    expect(p5.cut).toBe(0);
    expect(p5.events).toHaveLength(10);
  });
  it('beforeSeq windows; beforeSeq 0 is an empty page without more', () => {
    expect(paginate(events, 7, 1).events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const empty = paginate(events, 0, 5);
    expect(empty.events).toEqual([]);
    expect(empty.hasMore).toBe(false);
  });
  it('all pages walk backwards contiguously', () => {
    const pages = allPages(events, undefined, 1);
    expect(pages.map((p) => [p.firstSeq, p.lastSeq])).toEqual([
      [8, 9],
      [7, 7],
      [1, 6],
      [0, 0],
    ]);
  });
  it('notes that the Host serves no cold cwd-less session', () => {
    expect(hostServableWarning({ id: 'a', cwd: '/w' })).toBeNull();
    expect(hostServableWarning({ id: 'a' })).toContain('session \\"a\\" not found');
  });
  it('warns when a page is unbounded relative to its message count', () => {
    const w = pageSizeWarnings(paginate(events, undefined, 3), { eventsPerMessage: 2, bytes: 100 });
    expect(w.join('\n')).toContain('raw events for 3 counted message(s)');
    expect(w.join('\n')).toContain('bytes of events (limit 100)');
    expect(pageSizeWarnings(paginate(events, undefined, 3))).toEqual([]);
  });
});

describe('search text extraction and matching (session-query rules)', () => {
  it('extractSessionEventText', () => {
    const e = (type: string, data: any): SessionEvent => ({ type, seq: 0, time: 0, data });
    expect(
      extractSessionEventText(
        e('assistant/message', {
          message: {
            content: [
              { type: 'reasoning', text: 'secret' },
              { type: 'text', text: '  hello  ' },
              { type: 'tool-call', id: 'c', name: 'bash', arguments: '{"x":1}' },
              { type: 'image', attachment: {} },
              { type: 'text', text: '   ' },
            ],
          },
        }),
      ),
    ).toBe('hello\nbash\n{"x":1}');
    expect(extractSessionEventText(e('tool/result', { message: { content: [{ type: 'tool-result', toolCallId: 'c', content: [{ type: 'text', text: 'out' }] }] }, error: { name: 'AbortError', code: 'ABORTED' } }))).toBe('out\nAbortError\nABORTED');
    expect(extractSessionEventText(e('tool/call', { name: 'read', arguments: '{}' }))).toBe('read\n{}');
    expect(extractSessionEventText(e('todo/write', { todos: [{ status: 'pending', content: 'a' }] }))).toBe('pending\na');
    expect(extractSessionEventText(e('turn/end', { reason: { kind: 'error', error: { message: 'boom' } } }))).toBe('error\nboom');
    expect(extractSessionEventText(e('turn/end', { reason: { kind: 'aborted', reason: { kind: 'user' } } }))).toBe('aborted');
    expect(extractSessionEventText(e('turn/end', { reason: { kind: 'blocked' } }))).toBe('');
    expect(extractSessionEventText(e('turn/end', { reason: { kind: 'max-tokens' } }))).toBe('max-tokens');
    expect(extractSessionEventText(e('assistant/chunk', { chunk: { type: 'text-delta', text: 'x' } }))).toBe('');
    expect(extractSessionEventText(e('compaction/summary', { summary: [{ type: 'text', text: 'x' }] }))).toBe('');
  });
  it('literal, whitespace-flexible, case-insensitive (Unicode) text clause', () => {
    const re = compileTextFilter('  pnpm   TEST ');
    expect(re.test('run pnpm\n\ttest now')).toBe(true);
    expect(re.test('pnpmtest')).toBe(false);
    expect(compileTextFilter('CAFÉ').test('un café')).toBe(true);
    expect(compileTextFilter('a.b(c)').test('axb(c)')).toBe(false);
    expect(compileTextFilter('a.b(c)').test('see a.b(c)')).toBe(true);
    expect(() => compileTextFilter('  \n ')).toThrow('session text filter must contain non-whitespace text');
  });
  it("snippets follow DSH's makeSnippet windowing", () => {
    const s = (text: string, match: [number, number] | null, max: number) => snippetOf(text, match ? [match] : [], max).text;
    expect(s('  short\ntext  ', null, 20)).toBe('short text');
    expect(s('abcdef', [5, 6], 1)).toBe('…');
    expect(s('abcdefghij', null, 5)).toBe('abcd…');
    expect(s('abcdefghij', [2, 3], 5)).toBe('…bcd…');
    expect(s('abcdefghij', [2, 3], 3)).toBe('…c…');
    expect(s('abcdef', [5, 6], 2)).toBe('…f');
    const long = 'x'.repeat(500) + ' NEEDLE ' + 'y'.repeat(500);
    const snip = snippetOf(long, matchRanges(compileTextFilter('needle'), long));
    expect(Array.from(snip.text).length).toBe(240);
    expect(snip.text.startsWith('…') && snip.text.endsWith('…')).toBe(true);
    expect(snip.text.indexOf('NEEDLE')).toBe(1 + 80 + 0);
    const [h] = snip.highlights;
    expect(Array.from(snip.text).slice(h![0], h![1]).join('')).toBe('NEEDLE');
  });
});

describe.skipIf(!HAVE_CORPUS)('history and search over the corpus', () => {
  it(`history pages partition every log contiguously ${HAVE_CORPUS ? '' : SKIP_REASON}`, async () => {
    for (const file of corpusArtifacts()) {
      const r = await inspectTarget(resolveTarget(file), { collect: true });
      if (r.error) continue;
      for (const max of [1, 2, 7]) {
        const pages = allPages(r.events!, undefined, max);
        const seqs = pages
          .slice()
          .reverse()
          .flatMap((p) => p.events.map((e) => e.seq));
        expect(seqs, file).toEqual(r.events!.map((e) => e.seq));
        for (const p of pages) {
          // no counted message on a page cites a chunk on an older page
          for (const s of p.countedMessageSeqs) for (const src of r.events![s]!.sourceEventSeqs ?? []) expect(src >= p.cut, `${file} page ${p.cut}`).toBe(true);
        }
      }
    }
  });

  it('CLI: history and search exit 0 on every corpus artifact, 1 exactly where inspection fails', async () => {
    const failing = new Set(corpusCases().filter((c) => c.expected.inspection?.error).map((c) => c.artifact));
    for (const file of corpusArtifacts()) {
      const r = await inspectTarget(resolveTarget(file), { collect: false });
      const want = failing.has(file) || r.error ? 1 : 0;
      const h = await runInProcess(['history', file, '--json', '--max-messages', '3']);
      expect(h.code, `${file}: ${h.stderr}`).toBe(want);
      const s = await runInProcess(['search', 'the', file, '--json']);
      expect(s.code, `${file}: ${s.stderr}`).toBe(want);
      if (want === 1) expect(JSON.parse(s.stdout).failures[0].message).toBe(r.error!.message);
    }
  });

  it('CLI (spawned): search over a root, with filters; history --all-pages', async () => {
    const root = path.join(CORPUS, 'synthetic/root-zstd');
    const res = await runCli(['search', 'PNPM   test', root, '--json']);
    expect(res.code).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc.sessionsSearched).toBe(13);
    expect(doc.hits.map((h: any) => [h.sessionId, h.seq, h.type, h.label])).toEqual([
      ['syn.compaction-double', 27, 'assistant/message', 'shadowed'],
      ['syn.compaction-double', 28, 'tool/call', 'log-only'],
    ]);
    const only = await runCli(['search', 'pnpm test', root, '--json', '--label', 'log-only']);
    expect(JSON.parse(only.stdout).hits.map((h: any) => h.seq)).toEqual([28]);
    const typed = await runCli(['search', 'pnpm test', root, '--json', '--type', 'assistant/', '--session', 'syn.compaction-double']);
    expect(JSON.parse(typed.stdout).hits.map((h: any) => h.seq)).toEqual([27]);
    const human = await runCli(['search', 'pnpm test', root]);
    expect(human.stdout).toContain('«pnpm test»');
    const empty = await runCli(['search', '   ', root]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('session text filter must contain non-whitespace text');
    const hist = await runCli(['history', 'syn.compaction-double', '--root', root, '--max-messages', '2', '--all-pages', '--json']);
    expect(hist.code).toBe(0);
    const pages = JSON.parse(hist.stdout).pages;
    expect(pages.at(-1).hasMore).toBe(false);
    expect(pages[0].beforeSeq).toBeNull();
  });
});

describe('history and search on project-written logs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-hs-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('escapes control characters in snippets and warns on oversized pages', async () => {
    const header: SessionHeader = { version: 0, id: 'ctl', createdAt: 1785000000000, cwd: '/home/dev/p', delegationDepth: 0 };
    const events: SessionEvent[] = [
      { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } },
      { type: 'step/start', seq: 1, time: 2, data: { turn: 1, step: 1 } },
      user(2, 'evil \u001b]0;pwned\u0007 title and \u001b[31mred\u001b[0m text'),
    ];
    for (let i = 0; i < 40; i++) events.push({ type: 'assistant/chunk', seq: 3 + i, time: 3 + i, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'z' } } });
    events.push({
      type: 'assistant/chunk',
      seq: 43,
      time: 43,
      data: { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } },
    });
    events.push({ ...asst(44, Array.from({ length: 41 }, (_, i) => 3 + i)) });
    events.push({ type: 'step/end', seq: 45, time: 45, data: { turn: 1, step: 1 } });
    events.push({ type: 'turn/end', seq: 46, time: 46, data: { turn: 1, reason: { kind: 'completed' } } });
    events[44]!.data.message.content = [{ type: 'text', text: 'z'.repeat(40) }];
    const file = sessionPath(dir, header, 'zstd');
    await writeArtifactFile(file, { header, encoding: 'zstd', batches: [events] });
    const res = await runInProcess(['search', 'red', file]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(res.stdout).toContain('\\u001b');
    const h = await runInProcess(['history', file, '--max-messages', '1', '--warn-events-per-message', '10']);
    expect(h.code).toBe(0);
    expect(h.stderr).toContain('dsh: warning:');
    expect(h.stderr).toContain('largest message group: seq 3..44 (42 events)');
  });

  it('generated sessions: search finds tool calls, history pages cover the log', async () => {
    const opts = { seed: 31, id: 'gen-31', turns: 6, features: { 2: ['compaction'], 3: ['todo'], 4: ['cjk'] } } as const;
    const file = sessionPath(dir, generatedHeader(opts as never), 'zstd');
    await writeGeneratedArtifact(file, { ...(opts as never), encoding: 'zstd' });
    const r = await inspectTarget(resolveTarget(file), { collect: true });
    const call = r.events!.find((e) => e.type === 'tool/call')!;
    const s = await runCli(['search', String(call.data.name), file, '--json', '--type', 'tool/call']);
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout).hits.length).toBe(r.events!.filter((e) => e.type === 'tool/call' && compileTextFilter(String(call.data.name)).test(extractSessionEventText(e))).length);
    const h = await runInProcess(['history', file, '--all-pages', '--max-messages', '4', '--json']);
    const pages = JSON.parse(h.stdout).pages;
    expect(pages.reduce((a: number, p: any) => a + p.events.length, 0)).toBe(r.events!.length);
  });
});

import { describe, expect, it, beforeAll } from 'vitest';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT, CORPUS, HAVE_CORPUS, SKIP_REASON, corpusCases } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { baseEvents, hostileLog, logText } from './helpers/logtext.js';
import { resolveTarget } from '../src/log/target.js';
import { buildReport } from '../src/report/build.js';
import { decodeEventsBlob, embedJson, renderReportHtml } from '../src/report/html.js';
import { clientScript } from '../src/report/client.js';
import { REPORT_CSS } from '../src/report/style.js';
import { openSession } from '../src/index.js';
import { clip, eventSummary } from '../src/views/messages.js';
import { deriveEventMessage } from '../src/log/surface.js';
import { PREVIEW_WINDOW } from '../src/report/facts.js';
import { writeGeneratedArtifact } from '../tools/generate.js';
import type { PageEventFacts } from '../src/report/page/model.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const INCIDENT = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1');
function fingerprint(file: string): string {
  const st = statSync(file);
  return `${createHash('sha256').update(readFileSync(file)).digest('hex')}:${st.mtimeMs}:${st.size}`;
}

function tmp(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'dsh-report-'));
}

function writeLog(text: string): string {
  const dir = path.join(tmp(), '--w--', 'hostile-1');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'session.jsonl');
  writeFileSync(file, text);
  return file;
}

function blob(html: string, id: string): string {
  const m = new RegExp(`<script type="application/json" id="${id}">([\\s\\S]*?)</script>`).exec(html);
  if (!m) throw new Error(`no ${id} blob`);
  return m[1]!;
}

/** The page's view of the per-event facts, decoded as the page decodes them (src/report/page/main.ts). */
function facts(html: string) {
  const f = (JSON.parse(blob(html, 'dsh-events')) as { facts: PageEventFacts }).facts;
  const replacedBy = new Map<number, number>();
  for (let i = 0; i < f.replacedBy.length; i += 2) replacedBy.set(f.replacedBy[i]!, f.replacedBy[i + 1]!);
  const replaced = new Map<number, number[]>();
  for (let i = 0; i < f.replaced.length; i += 2 + f.replaced[i + 1]!) replaced.set(f.replaced[i]!, f.replaced.slice(i + 2, i + 2 + f.replaced[i + 1]!));
  const derived = new Map<number, number[]>();
  for (let i = 0; i < f.derived.length; i += 3 + f.derived[i + 2]!) {
    for (let k = 0; k < f.derived[i + 1]!; k++) derived.set(f.derived[i]! + k, f.derived.slice(i + 3, i + 3 + f.derived[i + 2]!));
  }
  const label = (seq: number) => ({ c: 'current', s: 'shadowed', l: 'log-only' })[f.labels[seq] as 'c' | 's' | 'l'];
  const trace = (seq: number, sources: unknown) => {
    const chain: number[] = [];
    for (let n = replacedBy.get(seq); n !== undefined && !chain.includes(n) && n !== seq; n = replacedBy.get(n)) chain.push(n);
    return {
      ...(replacedBy.has(seq) ? { replacedBy: replacedBy.get(seq) } : {}),
      replacementChain: chain,
      replacedEventSeqs: replaced.get(seq) ?? [],
      sourceEventSeqs: Array.isArray(sources) ? sources : [],
      derivedEventSeqs: derived.get(seq) ?? [],
    };
  };
  const message = (e: any) => ({ '-': null, d: e.data, m: e.data?.message, x: f.messages[String(e.seq)] })[f.message[e.seq] as '-' | 'd' | 'm' | 'x'];
  return { f, label, trace, message, preview: (seq: number) => f.previews[f.preview[seq]!] };
}

/** Every event's label and trace in the page's facts are the public API's (`dsh events --json`, `dsh trace --json`). */
async function expectFactsMatchApi(html: string, target: string, name: string): Promise<void> {
  const opened = await openSession(target);
  if (!opened.ok) throw new Error(opened.error.message);
  const listed = await opened.value.events();
  if (!listed.ok) throw new Error(listed.error.message);
  const page = facts(html);
  expect(page.f.labels.length, name).toBe(listed.value.length);
  for (const r of listed.value) {
    expect(page.label(r.seq), `${name} #${r.seq} label`).toBe(r.surface);
    const t = await opened.value.trace(r.seq);
    if (!t.ok) throw new Error(t.error.message);
    const { target: _target, ...want } = t.value;
    expect(page.trace(r.seq, r.event.sourceEventSeqs), `${name} #${r.seq} trace`).toEqual(want);
    expect(page.preview(r.seq), `${name} #${r.seq} preview`).toBe(clip(eventSummary(r.event), page.f.previewLimit));
  }
}

/** The HTML with the two JSON blobs removed: only the template and the script/stylesheet remain. */
function template(html: string): string {
  return html
    .replace(/(<script type="application\/json" id="[^"]+">)[\s\S]*?<\/script>/g, '$1</script>')
    .replace(/<script type="module">[\s\S]*?<\/script>/, '<script type="module"></script>')
    .replace(/<style>[\s\S]*?<\/style>/, '<style></style>');
}

describe('a report of a message longer than a written piece', () => {
  it('escapes every "://" however the text is cut into pieces, and the page reads the message back whole', async () => {
    // 3 MiB of "ab://c": the pieces the writer cuts fall inside some "://" wherever they fall.
    const text = 'ab://c'.repeat(Math.ceil((3 << 20) / 6));
    const events = baseEvents().map((e) => (e.type === 'user/message' ? { ...e, data: { ...(e.data as object), content: [{ type: 'text', text }] } } : e));
    const file = writeLog(logText(events));
    const out = path.join(tmp(), 'long.html');
    const r = await runInProcess(['report', file, '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html.includes('://')).toBe(false);
    const decoded = decodeEventsBlob(blob(html, 'dsh-events'));
    const message = decoded.find((e) => e.type === 'user/message') as { data: { content: { text: string }[] } };
    expect(message.data.content[0]!.text === text).toBe(true);
  });
});

describe('report builder', () => {
  let html: string;
  let events: readonly unknown[];
  beforeAll(async () => {
    const file = writeLog(hostileLog());
    const built = await buildReport(resolveTarget(file), { version: 'test' });
    expect(built.failed).toBe(false);
    events = built.events;
    html = renderReportHtml(built.data, built.events, built.facts);
  });

  it('embeds the data and every event, so the page parses back the same values', () => {
    expect(decodeEventsBlob(blob(html, 'dsh-events'))).toEqual(events);
    // Byte-for-byte the same JSON text (key order included), compact rows and verbatim objects alike.
    expect(decodeEventsBlob(blob(html, 'dsh-events')).map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)));
    const data = JSON.parse(blob(html, 'dsh-data'));
    expect(data.session.id).toBe('hostile-1');
    expect(data.session.eventCount).toBe(events.length);
    expect(data.turns.map((t: any) => t.turn)).toEqual([1, 2]);
    expect(data.dispatches.map((d: any) => d.key)).toEqual(['1/1#0', '1/1#1', '1/2#0', '2/1#0']);
    expect(data.compactions.map((c: any) => [c.seq, c.kind, c.compactionId, c.shadowedSeqs])).toEqual([[22, 'compaction', 'k1', [2, 10, 12]]]);
  });

  it('log text cannot break out of the JSON blobs or the title', () => {
    // Exactly three script elements: two data blobs and the page script.
    expect(html.match(/<script\b/g)).toHaveLength(3);
    expect(html.match(/<\/script>/gi)).toHaveLength(3);
    expect(html).not.toContain('<script>alert');
    expect(html).not.toMatch(/<\/textarea>/i);
    expect(html).not.toContain('<!--');
    expect(html).not.toContain('<img');
    expect(html).not.toMatch(/<\/title>.*<\/title>/s);
    // Blobs hold no raw '<', '>' or '&'.
    for (const id of ['dsh-data', 'dsh-events']) expect(blob(html, id)).not.toMatch(/[<>&]/);
    expect(embedJson({ t: '</script><!--&' })).toBe('{"t":"\\u003c/script\\u003e\\u003c!--\\u0026"}');
    expect(JSON.parse(embedJson({ t: '</script> https://x' }))).toEqual({ t: '</script> https://x' });
  });

  it('has a strict CSP whose hashes match the inline script and stylesheet', () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    expect(csp).toBeDefined();
    const hash = (s: string) => createHash('sha256').update(s, 'utf8').digest('base64');
    const script = /<script type="module">([\s\S]*?)<\/script>/.exec(html)?.[1];
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1];
    expect(script).toBe(clientScript());
    expect(style).toBe(REPORT_CSS);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src 'sha256-${hash(script!)}'`);
    expect(csp).toContain(`style-src 'sha256-${hash(style!)}'`);
    expect(csp).toContain('img-src data:');
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  });

  it('is self-contained: no URL, no external resource, no inline handler, no HTML sinks', () => {
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    const t = template(html);
    expect(t).not.toMatch(/\s(src|href|action|srcset|ping)\s*=/i);
    expect(t).not.toMatch(/<(link|iframe|object|embed|img|base|form)\b/i);
    expect(t).not.toMatch(/\son[a-z]+\s*=/i);
    expect(REPORT_CSS).not.toMatch(/@import|url\(|@font-face/i);
    expect(clientScript()).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|fetch\(|XMLHttpRequest|WebSocket|import\(/);
  });
});

describe('dsh report (CLI)', () => {
  it('writes a NEW file, refuses to overwrite without --force, replaces with it', async () => {
    const out = path.join(tmp(), 'r.html');
    const a = await runInProcess(['report', INCIDENT, '-o', out]);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stderr).toContain('wrote');
    const first = readFileSync(out, 'utf8');
    expect(first.startsWith('<!doctype html>')).toBe(true);
    const b = await runInProcess(['report', INCIDENT, '-o', out]);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('refusing to overwrite');
    const c = await runInProcess(['report', INCIDENT, '-o', out, '--force']);
    expect(c.code, c.stderr).toBe(0);
    // Deterministic, and no temporary file left behind.
    expect(readFileSync(out, 'utf8')).toBe(first);
    expect(readdirSync(path.dirname(out))).toEqual(['r.html']);
  });

  it('never writes over its input, even with --force', async () => {
    const dir = tmp();
    const input = path.join(dir, 'session.jsonl');
    copyFileSync(path.join(PROJECT_ROOT, 'fixtures', 'raw-sample', '--home-dev-acme-web--', 'session-raw-1', 'session.jsonl'), input);
    const before = readFileSync(input);
    const r = await runInProcess(['report', input, '-o', input, '--force']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('input');
    expect(readFileSync(input).equals(before)).toBe(true);
    expect(readdirSync(dir)).toEqual(['session.jsonl']);
  });

  it('exit 2 and nothing written for an unwritable output', async () => {
    const dir = tmp();
    const missing = await runInProcess(['report', INCIDENT, '-o', path.join(dir, 'nope', 'r.html')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
    const isDir = await runInProcess(['report', INCIDENT, '-o', dir]);
    expect(isDir.code).toBe(2);
    expect(isDir.stderr).toContain('is a directory');
    const noOut = await runInProcess(['report', INCIDENT]);
    expect(noOut.code).toBe(2);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('-o - writes the report to stdout', async () => {
    const r = await runInProcess(['report', INCIDENT, '-o', '-']);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith('<!doctype html>')).toBe(true);
    expect(r.stdout.trimEnd().endsWith('</html>')).toBe(true);
  });

  it('a log DSH refuses: the report is written with DSH\'s text, exit 1', async () => {
    const file = writeLog(logText(baseEvents(), { id: 'hostile-1', version: 1 }));
    const out = path.join(tmp(), 'refused.html');
    const r = await runInProcess(['report', file, '-o', out]);
    expect(r.code).toBe(1);
    expect(existsSync(out)).toBe(true);
    const inspect = await runInProcess(['inspect', file, '--json']);
    expect(inspect.code).toBe(1);
    const want = JSON.parse(inspect.stdout).error;
    const data = JSON.parse(blob(readFileSync(out, 'utf8'), 'dsh-data'));
    expect(data.health.status).toBe('refused');
    expect(data.health.error.class).toBe(want.class);
    expect(data.health.error.message).toBe(want.message);
    expect(data.findings.length).toBeGreaterThan(0);
    expect(decodeEventsBlob(blob(readFileSync(out, 'utf8'), 'dsh-events'))).toEqual([]);
    expect(r.stderr).toContain(want.message);
  });

  it('the incident fixture: turns, dispatches, closers, trace and findings agree with the other commands', async () => {
    const out = path.join(tmp(), 'incident.html');
    expect((await runInProcess(['report', INCIDENT, '-o', out])).code).toBe(0);
    const data = JSON.parse(blob(readFileSync(out, 'utf8'), 'dsh-data'));
    const list = JSON.parse((await runInProcess(['request', INCIDENT, '--list', '--json'])).stdout);
    expect(data.dispatches.map((d: any) => [d.key, d.first, d.msgCount])).toEqual(list.requests.map((r: any) => [r.key, r.firstChunkSeq, r.messageCount]));
    expect(data.turns.map((t: any) => [t.turn, t.reason, t.synthetic])).toEqual([
      [1, 'completed', false],
      [2, 'completed', false],
      [3, 'completed', false],
      [4, 'interrupted', true],
    ]);
    expect(data.health.status).toBe('torn');
    expect(data.health.closers.map((c: any) => c.seq)).toEqual([566, 567, 568, 569, 570]);
    expect(data.lineage.descendants.map((d: any) => [d.id, d.seedLength])).toEqual([['session-incident-1-fork-1', 417]]);
    for (const c of data.compactions) {
      const t = JSON.parse((await runInProcess(['trace', INCIDENT, String(c.seq), '--json'])).stdout);
      expect(c.shadowedSeqs).toEqual(t.replacedEventSeqs);
      expect(c.sourceEventSeqs).toEqual(t.sourceEventSeqs);
    }
    expect(data.compactions.map((c: any) => c.kind).sort()).toEqual(['compaction', 'prune']);
    // The Context view's numbers are `dsh context --json`'s.
    const ctx = JSON.parse((await runInProcess(['context', INCIDENT, '--json'])).stdout);
    expect(data.context.rows.map((r: any) => [r.i, r.bytes, r.cats, r.tokens, r.window, r.prompt, r.shared, r.cacheRead, r.brk])).toEqual(
      ctx.dispatches.map((d: any) => [d.index, d.bytes, data.context.categories.map((c: string) => d.byCategory[c]), d.promptTokens, d.contextWindow, d.cache.promptBytes, d.cache.sharedBytes, d.cache.cacheReadTokens, d.break]),
    );
    expect(data.context.breaks.map((b: any) => [b.key, b.cause, b.causeSeq])).toEqual([
      ['2/1#0', 'model', 245],
      ['3/1#0', 'compaction', 422],
    ]);
    await expectFactsMatchApi(readFileSync(out, 'utf8'), INCIDENT, 'incident');
    const check = JSON.parse((await runInProcess(['check', INCIDENT, '--format', 'json'])).stdout);
    expect(data.findings.map((f: any) => f.code)).toEqual(check.sessions[0].findings.map((f: any) => f.code));
    // Every dispatch's delta-coded surface decodes to `dsh request`'s surface nodes.
    let prev: number[] = [];
    for (const d of data.dispatches) {
      const nodes = [...prev.slice(0, d.nodes[0]), ...d.nodes.slice(1)];
      const want = JSON.parse((await runInProcess(['request', INCIDENT, String(d.first), '--json'])).stdout);
      const events = decodeEventsBlob(blob(readFileSync(out, 'utf8'), 'dsh-events')) as any[];
      // The messages the page shows: each node's message where the writer's facts say it is.
      const page = facts(readFileSync(out, 'utf8'));
      const msgs = nodes.map((s: number) => page.message(events[s])).filter((m: unknown) => m !== null);
      expect(msgs).toEqual(want.messages);
      prev = nodes;
    }
  });

  it.skipIf(!HAVE_CORPUS)('every corpus log: a report is written; exit 1 exactly when DSH refuses it', async () => {
    const dir = tmp();
    let n = 0;
    for (const c of corpusCases()) {
      const out = path.join(dir, `${n++}.html`);
      const before = fingerprint(c.artifact);
      const r = await runInProcess(['report', c.artifact, '-o', out]);
      const failed = Boolean(c.expected.inspection?.error);
      expect(r.code, `${c.name}: ${r.stderr}`).toBe(failed ? 1 : 0);
      const html = readFileSync(out, 'utf8');
      expect(html).not.toMatch(/https?:\/\//i);
      const data = JSON.parse(blob(html, 'dsh-data'));
      if (failed) expect(data.health.error.class).toBe(c.expected.inspection.error.class);
      else {
        // The compact events blob decodes to exactly `dsh inspect --json`'s events (legacy shapes included).
        const events = JSON.parse((await runInProcess(['inspect', c.artifact, '--json'])).stdout).events as unknown[];
        expect(decodeEventsBlob(blob(html, 'dsh-events')).map((e) => JSON.stringify(e)), c.name).toEqual(events.map((e) => JSON.stringify(e)));
        await expectFactsMatchApi(html, c.artifact, c.name);
      }
      expect(fingerprint(c.artifact), `${c.name} unchanged`).toBe(before);
    }
    console.info(`report.test: ${n} corpus reports written from ${CORPUS}`);
  });
});

describe('report facts of a long log', () => {
  // The per-event columns (labels, message places, preview indexes) are kept in deflated blocks of
  // 65,536 events and previews are looked up within a window of 65,536 distinct ones; this log spans
  // several blocks and windows, and its facts must still be every event's, in order.
  it('labels, message places, previews and citers of ~300k events equal the public API', async () => {
    const dir = tmp();
    const file = path.join(dir, '--home-dev-p--', 'long', 'session.jsonl.zstd');
    await writeGeneratedArtifact(file, { seed: 11, id: 'long', cwd: '/home/dev/p', targetBytes: 48_000_000, encoding: 'zstd' });
    const r = await runInProcess(['report', file, '-o', '-'], { DSH_CACHE_DIR: path.join(dir, 'cache') });
    expect(r.code, r.stderr).toBe(0);
    const page = facts(r.stdout);
    const opened = await openSession(file);
    if (!opened.ok) throw new Error(opened.error.message);
    const listed = await opened.value.events();
    if (!listed.ok) throw new Error(listed.error.message);
    const events = listed.value;
    expect(events.length).toBeGreaterThan(2 * 65536);
    expect(page.f.labels.length).toBe(events.length);
    expect(page.f.message.length).toBe(events.length);
    expect(page.f.preview.length).toBe(events.length);
    // Past the preview window: the lookup started afresh at least once (a preview may then be listed twice).
    expect(page.f.previews.length).toBeGreaterThan(PREVIEW_WINDOW);
    expect(new Set(page.f.previews).size).toBeLessThan(page.f.previews.length);
    const citers = new Map<number, number[]>();
    for (const x of events) {
      for (const s of Array.isArray(x.event.sourceEventSeqs) ? (x.event.sourceEventSeqs as number[]) : []) if (s < x.seq) (citers.get(s) ?? citers.set(s, []).get(s)!).push(x.seq);
    }
    let bad = 0;
    for (const x of events) {
      const want = { label: x.surface, preview: clip(eventSummary(x.event), page.f.previewLimit), derived: citers.get(x.seq) ?? [], message: deriveEventMessage(x.event) ?? null };
      const got = { label: page.label(x.seq), preview: page.preview(x.seq), derived: page.trace(x.seq, []).derivedEventSeqs, message: page.message(x.event) ?? null };
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        if (bad++ < 3) expect(got, `#${x.seq}`).toEqual(want);
      }
    }
    expect(bad).toBe(0);
  }, 300_000);
});

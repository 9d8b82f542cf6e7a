import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runCli } from './helpers/cli.js';
import { MemorySource } from '../src/physical/source.js';
import { scanFrames } from '../src/physical/zstd-frames.js';
import { createDecoder } from '../src/physical/decoders.js';
import { decodeStorageRecord } from '../src/log/rows.js';
import { collectSession, generateArtifact, type GenerateOptions } from '../tools/generate.js';
import { writeArtifact } from '../src/log/writer.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { sessionPath } from '../src/log/layout.js';
import type { SessionEvent } from '../src/log/types.js';
import { salvageSource } from '../src/salvage/salvage.js';
import { runSalvage } from '../src/salvage/run.js';
import { SALVAGE_NOTE_TYPE } from '../src/salvage/artifact.js';
import { salvageMayHelp, salvageWouldRecoverMore } from '../src/salvage/hint.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'dsh-salvage-'));
const decoder = createDecoder();

function linesOf(text: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  for (let nl = text.indexOf(0x0a); nl !== -1; nl = text.indexOf(0x0a, from)) {
    out.push(text.subarray(from, nl));
    from = nl + 1;
  }
  return out;
}

function eventsOfLines(lines: Buffer[]): SessionEvent[] {
  return lines.flatMap((l) => decodeStorageRecord(JSON.parse(l.toString('utf8'))));
}

/** Events of every original zstd frame whose bytes survive unchanged at the same offset. */
async function recoverableZstd(original: Buffer, damaged: Buffer): Promise<SessionEvent[]> {
  const { frames } = scanFrames(new MemorySource('o', original));
  const out: SessionEvent[] = [];
  for (const f of frames.slice(1)) {
    if (f.end > damaged.length || !damaged.subarray(f.start, f.end).equals(original.subarray(f.start, f.end))) continue;
    out.push(...eventsOfLines(linesOf(await decoder.decode(original.subarray(f.start, f.end)))));
  }
  return out;
}

/** Events of every original raw body line that survives as a complete line. */
function recoverableRaw(original: Buffer, damaged: Buffer): SessionEvent[] {
  const survivors = new Set(linesOf(damaged).map((l) => l.toString('latin1')));
  return eventsOfLines(linesOf(original).slice(1).filter((l) => survivors.has(l.toString('latin1'))));
}

async function salvaged(bytes: Buffer, name = 'x') {
  return salvageSource(new MemorySource(name, bytes), { collect: true, decoder });
}

/** Write bytes as an artifact in DSH's layout under a new root; returns the artifact path. */
function place(bytes: Buffer, id: string, encoding: 'zstd' | 'none', cwd = '/home/dev/project'): string {
  const root = tmp();
  const file = sessionPath(root, { id, cwd }, encoding);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  return file;
}

async function salvageToArtifact(file: string) {
  const out = path.join(tmp(), 'out');
  const report = await runSalvage(resolveTarget(file), out, { artifact: true, decoder });
  return { out, report };
}

describe.skipIf(!HAVE_CORPUS)('salvage on the damaged corpus', () => {
  const manifest = HAVE_CORPUS ? JSON.parse(readFileSync(path.join(CORPUS, 'synthetic', 'manifest.json'), 'utf8')) : { scenarios: [] };
  const damaged = corpusCases().filter((c) => c.name.startsWith(path.join('synthetic', 'damaged')));

  it('finds every damaged artifact', () => {
    expect(damaged.length).toBeGreaterThanOrEqual(10);
  });

  for (const c of damaged) {
    it(`recovers exactly the recoverable events: ${c.name}`, async () => {
      const scenario = manifest.scenarios.find((s: any) => c.name.includes(`damaged${path.sep}${s.scenario}${path.sep}`));
      expect(scenario, 'manifest entry').toBeTruthy();
      const bytes = readFileSync(c.artifact);
      const r = await salvaged(bytes, c.artifact);
      const torn = c.expected.artifact.tornStart != null || c.expected.artifact.endsWithNewline === false;
      let expected: SessionEvent[];
      if (torn) {
        // DSH's own stored view (committed prefix + what the torn frame yields) is the referee.
        expected = c.expected.stored.events;
      } else {
        const original = readFileSync(path.join(CORPUS, scenario.derivedFrom, path.basename(c.artifact)));
        expected = scenario.compression === 'zstd' ? await recoverableZstd(original, bytes) : recoverableRaw(original, bytes);
      }
      expect(r.events!.map((e) => JSON.stringify(e))).toEqual(expected.map((e) => JSON.stringify(e)));
      expect(r.header?.id).toBe(c.expected.sessionId);
      // A mid-file defect leaves a closed gap; torn tails at most a trailing one.
      if (!torn) expect(r.gaps.length).toBeGreaterThanOrEqual(1);
      for (const g of r.gaps) {
        expect(g.why.length).toBeGreaterThan(0);
        if (g.toSeq !== null) expect(r.events!.some((e) => e.seq === g.toSeq! + 1)).toBe(true);
      }
      // The salvaged artifact loads in DSH's pipeline (and dsh inspect).
      const { report } = await salvageToArtifact(c.artifact);
      expect(report.artifact?.verify, JSON.stringify(report.artifact?.verify)).toMatchObject({ ok: true });
      expect(report.artifact!.events).toBe(r.keptEvents + report.artifact!.notes.length - report.artifact!.dropped.length);
    });
  }

  it('checksum-corrupt-middle-frame: keeps both sides of the corrupt frame, one gap with its byte range', async () => {
    const c = damaged.find((d) => d.name.includes('checksum-corrupt-middle-frame'))!;
    const r = await salvaged(readFileSync(c.artifact));
    expect(r.frames).toMatchObject({ ok: 9, failed: 1, total: 10 });
    expect(r.gaps).toHaveLength(1);
    expect(r.gaps[0]).toMatchObject({ fromSeq: 57, toSeq: 61, missing: 5, bytesLost: 562 });
    expect(r.defects[0]).toMatchObject({ kind: 'frame-failed', start: 3034, end: 3596 });
    expect(r.events!.some((e) => e.seq < 57)).toBe(true);
    expect(r.events!.some((e) => e.seq > 61)).toBe(true);
  });

  it('seq-gap-raw: a missing line is a gap without damaged bytes', async () => {
    const c = damaged.find((d) => d.name.includes('seq-gap-raw'))!;
    const r = await salvaged(readFileSync(c.artifact));
    expect(r.gaps).toEqual([{ fromSeq: 4, toSeq: 4, missing: 1, bytesLost: 0, why: expect.stringContaining('missing'), defects: [] }]);
  });
});

const GEN: GenerateOptions = { seed: 11, id: 'salv-gen', turns: 6, toolOutputBytes: [300, 2000], features: { 2: ['compaction'], 3: ['prune'], 4: ['header-change'] } };

async function generated(encoding: 'zstd' | 'none', opts: GenerateOptions = GEN) {
  const { bytes } = await generateArtifact({ ...opts, encoding });
  const { batches, events } = collectSession(opts);
  return { bytes, batches, events };
}

const j = (es: SessionEvent[]) => es.map((e) => JSON.stringify(e));

describe('salvage on generated mid-file defects', () => {
  it('an intact log salvages to itself with no gap and no defect', async () => {
    for (const enc of ['zstd', 'none'] as const) {
      const g = await generated(enc);
      const r = await salvaged(g.bytes);
      expect(j(r.events!)).toEqual(j(g.events));
      expect(r.gaps).toEqual([]);
      expect(r.defects).toEqual([]);
      expect(r.clean).toBe(true);
    }
  });

  it('a corrupt checksum byte in ANY middle frame loses exactly that batch; the artifact always loads', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    expect(frames.length).toBe(g.batches.length + 1);
    let dropped = 0;
    for (let k = 1; k < frames.length - 1; k++) {
      const f = frames[k]!;
      const bad = Buffer.from(g.bytes);
      bad[f.end - 2]! ^= 0xff;
      const r = await salvaged(bad);
      const expected = g.batches.filter((_, i) => i !== k - 1).flat();
      expect(j(r.events!), `frame ${k}`).toEqual(j(expected));
      expect(r.defects).toHaveLength(1);
      expect(r.defects[0]).toMatchObject({ kind: 'frame-failed', start: f.start, end: f.end, code: 'ZSTD_error_checksum_wrong' });
      const lost = g.batches[k - 1]!;
      expect(r.gaps).toEqual([
        expect.objectContaining({ fromSeq: lost[0]!.seq, toSeq: lost[lost.length - 1]!.seq, missing: lost.length, bytesLost: f.end - f.start }),
      ]);
      // events on both sides of the corrupt frame are kept
      if (k > 1) expect(r.events!.some((e) => e.seq < lost[0]!.seq)).toBe(true);
      expect(r.events!.some((e) => e.seq > lost[lost.length - 1]!.seq)).toBe(true);
      const file = place(bad, GEN.id, 'zstd');
      const { report } = await salvageToArtifact(file);
      expect(report.artifact!.verify, `frame ${k}: ${JSON.stringify(report.artifact!.verify)} dropped ${JSON.stringify(report.artifact!.dropped)}`).toMatchObject({ ok: true });
      dropped += report.artifact!.dropped.length;
    }
    // The compaction/prune replacements whose targets were lost were dropped, never rewritten.
    expect(dropped).toBeGreaterThan(0);
  });

  it('garbage bytes between frames: everything is kept, the garbage is reported, no gap', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const at = frames[3]!.end;
    const junk = Buffer.from('this is not a zstd frame \u0000\u0001\u0002 garbage');
    const bad = Buffer.concat([g.bytes.subarray(0, at), junk, g.bytes.subarray(at)]);
    const r = await salvaged(bad);
    expect(j(r.events!)).toEqual(j(g.events));
    expect(r.gaps).toEqual([]);
    expect(r.defects).toEqual([expect.objectContaining({ kind: 'garbage', start: at, end: at + junk.length })]);
  });

  it('a damaged frame magic re-synchronises on the next frame', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const k = 5;
    const bad = Buffer.from(g.bytes);
    bad[frames[k]!.start] = 0x00;
    const r = await salvaged(bad);
    expect(j(r.events!)).toEqual(j(g.batches.filter((_, i) => i !== k - 1).flat()));
    expect(r.gaps).toHaveLength(1);
    expect(r.defects[0]).toMatchObject({ kind: 'garbage', start: frames[k]!.start, end: frames[k + 1]!.start });
  });

  it('a reserved frame-header bit (DSH stops the whole read) costs only that frame', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const k = 2;
    const bad = Buffer.from(g.bytes);
    bad[frames[k]!.start + 4]! |= 0x08;
    const r = await salvaged(bad);
    expect(j(r.events!)).toEqual(j(g.batches.filter((_, i) => i !== k - 1).flat()));
    expect(r.defects[0]).toMatchObject({ kind: 'bad-structure', start: frames[k]!.start, end: frames[k + 1]!.start });
  });

  it('a damaged block size that swallows the next frames re-synchronises inside the declared extent', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const k = 4;
    const f = frames[k]!;
    const bad = Buffer.from(g.bytes);
    const at = f.start + f.headerBytes;
    const h = bad.readUIntLE(at, 3);
    const grown = (h >>> 3) + (frames[k + 1]!.end - frames[k + 1]!.start) + 7;
    expect(grown).toBeLessThan(128 * 1024);
    bad.writeUIntLE((h & 7) | (grown << 3), at, 3);
    const r = await salvaged(bad);
    expect(j(r.events!)).toEqual(j(g.batches.filter((_, i) => i !== k - 1).flat()));
    expect(r.defects).toEqual([expect.objectContaining({ kind: 'frame-failed', start: f.start, end: frames[k + 1]!.start })]);
  });

  it('two corrupt frames give two gaps, all other batches kept', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const bad = Buffer.from(g.bytes);
    for (const k of [3, 7]) bad[frames[k]!.end - 1]! ^= 0x55;
    const r = await salvaged(bad);
    expect(j(r.events!)).toEqual(j(g.batches.filter((_, i) => i !== 2 && i !== 6).flat()));
    expect(r.gaps).toHaveLength(2);
  });

  it('an unparsable middle raw line loses only that line (DSH drops everything after it)', async () => {
    const g = await generated('none');
    const lines = linesOf(g.bytes);
    const n = Math.floor(lines.length / 2);
    const lost = eventsOfLines([lines[n]!]);
    const bad = Buffer.concat(lines.map((l, i) => Buffer.concat([i === n ? l.subarray(0, 25) : l, Buffer.from('\n')])));
    const r = await salvaged(bad);
    const lostSeqs = new Set(lost.map((e) => e.seq));
    expect(j(r.events!)).toEqual(j(g.events.filter((e) => !lostSeqs.has(e.seq))));
    expect(r.gaps).toEqual([expect.objectContaining({ fromSeq: lost[0]!.seq, toSeq: lost[lost.length - 1]!.seq, bytesLost: 26 })]);
    const file = place(bad, GEN.id, 'none');
    const dsh = await inspectTarget(resolveTarget(file));
    const { report } = await salvageToArtifact(file);
    expect(report.artifact!.verify.ok).toBe(true);
    expect(report.artifact!.verify.events!).toBeGreaterThan(dsh.storedEventCount);
  });

  it('events whose seq does not increase are dropped and reported (no re-basing)', async () => {
    const header = { type: 'session', version: 0, id: 's', createdAt: 1, cwd: '/w', delegationDepth: 0 };
    const ev = (seq: number) => ({ type: 'turn/start', seq, time: seq, data: { turn: 1 } });
    const text = [header, ev(0), ev(1), ev(5), ev(3), ev(6)].map((v) => JSON.stringify(v)).join('\n') + '\n';
    const r = await salvaged(Buffer.from(text));
    expect(r.events!.map((e) => e.seq)).toEqual([0, 1, 5, 6]);
    expect(r.gaps).toEqual([expect.objectContaining({ fromSeq: 2, toSeq: 4 })]);
    expect(r.defects).toEqual([expect.objectContaining({ kind: 'seq-not-increasing', seq: 3 })]);
  });

  it('the artifact: renumbered, notes at each gap, mapping recorded, ids and references consistent', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const bad = Buffer.from(g.bytes);
    bad[frames[4]!.end - 2]! ^= 0xff;
    const file = place(bad, GEN.id, 'zstd');
    const { out, report } = await salvageToArtifact(file);
    expect(report.artifact!.verify.ok).toBe(true);
    const insp = await inspectTarget(resolveTarget(report.artifact!.path), { collect: true });
    expect(insp.error).toBeUndefined();
    const events = insp.events!.slice(0, insp.storedEventCount);
    events.forEach((e, i) => expect(e.seq).toBe(i));
    const notes = events.filter((e) => e.type === SALVAGE_NOTE_TYPE);
    expect(notes).toHaveLength(1);
    expect(notes[0]!.ignorable).toBe(true);
    expect(notes[0]!.data).toMatchObject({ kind: 'gap', missingOriginalSeqs: { from: g.batches[3]![0]!.seq } });
    expect(insp.ignorableUnknown).toEqual([notes[0]!.seq]);
    const map = JSON.parse(readFileSync(path.join(out, 'seq-map.json'), 'utf8'));
    expect(map.runs.length).toBe(2);
    const ndjson = readFileSync(path.join(out, 'events.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(ndjson.length).toBe(report.keptEvents);
    const gaps = JSON.parse(readFileSync(path.join(out, 'gaps.json'), 'utf8'));
    expect(gaps.gaps).toEqual(report.gaps);
  });

  it('salvage hint for inspect: only when DSH stops early and salvage gets more', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const clean = place(g.bytes, GEN.id, 'zstd');
    const ci = await inspectTarget(resolveTarget(clean));
    expect(salvageMayHelp(ci)).toBe(false);
    expect(await salvageWouldRecoverMore(resolveTarget(clean).open(), ci)).toBeNull();
    const bad = Buffer.from(g.bytes);
    bad[frames[2]!.end - 2]! ^= 0xff;
    const file = place(bad, GEN.id, 'zstd');
    const bi = await inspectTarget(resolveTarget(file));
    expect(salvageMayHelp(bi)).toBe(true);
    const hint = await salvageWouldRecoverMore(resolveTarget(file).open(), bi);
    expect(hint).toMatchObject({ more: true, stored: 0, gaps: 1 });
    expect(hint!.salvageable).toBe(g.events.length - g.batches[1]!.length);
  });
});

describe('dsh salvage as a process', () => {
  it('exit 0 with a report; 2 when the output exists or sits in the session dir; 1 when nothing survives', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const bad = Buffer.from(g.bytes);
    bad[frames[3]!.end - 2]! ^= 0xff;
    const file = place(bad, GEN.id, 'zstd');
    const out = path.join(tmp(), 'salvaged');
    const r = await runCli(['salvage', file, '-o', out, '--artifact', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.gaps).toHaveLength(1);
    expect(json.artifact.verify.ok).toBe(true);
    expect(existsSync(path.join(out, 'events.ndjson'))).toBe(true);
    const insp = await runCli(['inspect', json.artifact.path, '--json']);
    expect(insp.code, insp.stderr).toBe(0);
    // human output
    const human = await runCli(['salvage', file, '-o', path.join(tmp(), 'h')]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/gap\s+seqs \d+\.\.\d+, \d+ bytes lost: frame-failed/);
    // output exists and is not empty
    const again = await runCli(['salvage', file, '-o', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/not empty/);
    // inside the input's session directory
    const inside = await runCli(['salvage', file, '-o', path.join(path.dirname(file), 'x')]);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toMatch(/session directory/);
    expect(existsSync(path.join(path.dirname(file), 'x'))).toBe(false);
    // missing -o
    expect((await runCli(['salvage', file])).code).toBe(2);
    // nothing salvageable
    const junk = path.join(tmp(), 'junk.jsonl');
    writeFileSync(junk, 'hello\nworld\n');
    const none = await runCli(['salvage', junk, '-o', path.join(tmp(), 'n')]);
    expect(none.code).toBe(1);
    // missing input
    expect((await runCli(['salvage', '/nonexistent/session.jsonl', '-o', path.join(tmp(), 'm')])).code).toBe(2);
  });
});

void writeArtifact;

describe('salvage of a fork child (seedLength)', () => {
  it('moves seedLength to the renumbered boundary when seed events are lost', async () => {
    const parent = collectSession({ seed: 3, id: 'par', turns: 3, toolOutputBytes: [200, 600] });
    const endIdx = parent.events.map((e) => e.type).lastIndexOf('turn/end');
    const seed = parent.events.slice(0, endIdx + 1);
    const opts: GenerateOptions = { seed: 4, id: 'child', turns: 2, toolOutputBytes: [200, 600], fork: { parentId: 'par', seed } };
    const { bytes } = await generateArtifact({ ...opts, encoding: 'none' });
    const lines = linesOf(bytes);
    const n = 10; // a body line inside the inherited seed
    const lost = eventsOfLines([lines[n]!]);
    expect(lost[lost.length - 1]!.seq).toBeLessThan(seed.length);
    const bad = Buffer.concat(lines.map((l, i) => Buffer.concat([i === n ? Buffer.from('{"broken') : l, Buffer.from('\n')])));
    const file = place(bad, 'child', 'none');
    const { report } = await salvageToArtifact(file);
    expect(report.artifact!.verify.ok).toBe(true);
    const insp = await inspectTarget(resolveTarget(file.replace(file, report.artifact!.path)), { collect: true });
    // seed.length original events, minus the lost ones, plus one note
    expect(insp.meta!.seedLength).toBe(seed.length - lost.length + 1);
    expect(insp.events![insp.meta!.seedLength!]!.type).toBe('session/end-seed');
  });
});

describe('salvage when the header is lost', () => {
  it('keeps every event; --artifact synthesizes a minimal header from the session directory', async () => {
    const g = await generated('zstd');
    const { frames } = scanFrames(new MemorySource('g', g.bytes));
    const bad = Buffer.from(g.bytes);
    bad[frames[0]!.end - 2]! ^= 0xff;
    const r = await salvaged(bad);
    expect(r.header).toBeNull();
    expect(j(r.events!)).toEqual(j(g.events));
    expect(r.defects.map((d) => d.kind)).toEqual(['frame-failed', 'no-header']);
    const file = place(bad, GEN.id, 'zstd');
    const { report } = await salvageToArtifact(file);
    expect(report.headerSynthesized).toMatchObject({ id: GEN.id, version: 0, delegationDepth: 0, createdAt: g.events[0]!.time });
    expect(report.artifact!.verify).toMatchObject({ ok: true, events: g.events.length });
  });
});

describe('salvage artifact drops what DSH restore would reject', () => {
  it('an event with an invalid envelope is kept in events.ndjson but dropped (and reported) in the artifact', async () => {
    const header = { type: 'session', version: 0, id: 'env', createdAt: 1, cwd: '/w', delegationDepth: 0 };
    const lines = [
      header,
      { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } },
      { type: 'turn/start', seq: 1, data: { turn: 2 } },
      { type: 'turn/end', seq: 2, time: 3, data: { turn: 1, reason: { kind: 'completed' } } },
    ];
    const file = place(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'), 'env', 'none', '/w');
    const { out, report } = await salvageToArtifact(file);
    expect(report.keptEvents).toBe(3);
    expect(report.artifact!.dropped).toEqual([expect.objectContaining({ originalSeq: 1, why: expect.stringContaining('time') })]);
    expect(report.artifact!.verify).toMatchObject({ ok: true, events: 2 });
    expect(readFileSync(path.join(out, 'events.ndjson'), 'utf8').trim().split('\n')).toHaveLength(3);
  });
});

describe('salvage --json on a line whose defect message quotes a DEL', () => {
  it('escapes it (\\u007f): stdout carries no raw control character, and the report parses to the same text', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-salvage-del-'));
    const file = path.join(dir, 'root', '--home-dev-p--', 'del', 'session.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    const header = JSON.stringify({ type: 'session', version: 0, id: 'del', createdAt: 1, cwd: '/home/dev/p', delegationDepth: 0 });
    // JSON.parse's message quotes the unexpected token and what follows it: a DEL among them.
    writeFileSync(file, `${header}\n{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n\u0014\u007fxx\n`);
    const r = await runCli(['salvage', file, '-o', path.join(dir, 'out'), '--json']);
    expect(r.stdout).toContain('unparsable-line');
    expect(r.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    const report = JSON.parse(r.stdout);
    expect(JSON.stringify(report.defects)).toContain('\u007f');
  });
});

describe('salvage --artifact copies each event as its JSON says', () => {
  it('a "__proto__" key stays an own member, -0 and nested values are written as the input wrote them', async () => {
    const header = JSON.stringify({ type: 'session', version: 0, id: 'proto', createdAt: 1, cwd: '/home/dev/project', delegationDepth: 0 });
    const lines = [
      '{"type":"turn/start","seq":0,"time":2,"data":{"turn":1}}',
      '{"type":"x-plugin/note","seq":1,"time":3,"data":{"__proto__":{"polluted":true},"n":-0,"deep":[[{"__proto__":[1,2]}]],"s":"ok"},"ignorable":true}',
      '{"type":"turn/end","seq":2,"time":4,"data":{"turn":1,"reason":{"kind":"completed"}}}',
    ];
    const file = place(Buffer.from([header, ...lines].join('\n') + '\n'), 'proto', 'none');
    const out = path.join(tmp(), 'salvaged');
    const r = await runCli(['salvage', file, '-o', out, '--artifact', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.artifact.verify.ok).toBe(true);
    const written = readFileSync(json.artifact.path, 'utf8').split('\n').slice(1, -1);
    // The input's events are already numbered from 0 without a gap: the artifact holds them unchanged
    // (-0 as JSON writes it: 0).
    expect(written).toEqual(lines.map((l) => l.replace('"n":-0', '"n":0')));
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

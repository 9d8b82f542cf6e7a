import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResolved, classifyLoadError, discoverTargets, exitCodeFor, forkSeedFindings, rootLookup, summarize, type Finding } from '../src/check/engine.js';
import { checkTargets } from '../src/check/pool.js';
import { relationalFindings, sessionInvariant } from '../src/check/relational.js';
import { expandCodes, RULES } from '../src/check/rules.js';
import type { ResolvedTarget } from '../src/log/target.js';
import { MemorySource } from '../src/physical/source.js';
import { compressFrame } from '../src/physical/encoder.js';
import { CORPUS, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';
import { baseEvents, clone, headerLine, inspectText, logText, sequence, toolResultData, toolTurn, type Ev, type Header } from './helpers/logtext.js';

// ---------------------------------------------------------------- helpers

async function findingsOf(text: string | Buffer, name = 'session.jsonl'): Promise<Finding[]> {
  const target: ResolvedTarget = { path: name, rawPath: name, open: () => new MemorySource(name, Buffer.from(text)), layoutWarnings: [] };
  return (await checkResolved(target)).findings;
}

function mutate(fn: (events: Ev[]) => void, extra: Ev[] = []): Ev[] {
  const events = clone([...baseEvents(), ...extra]);
  fn(events);
  return events;
}

const at = (events: Ev[], i: number) => events[i] as any;

async function zstdArtifact(parts: string[]): Promise<{ bytes: Buffer; frames: Buffer[] }> {
  const frames: Buffer[] = [];
  for (const p of parts) frames.push(await compressFrame(Buffer.from(p)));
  return { bytes: Buffer.concat(frames), frames };
}

function lines(events: Ev[], header: Header = {}): string[] {
  return [headerLine(header) + '\n', ...sequence(events).map((e) => JSON.stringify(e) + '\n')];
}

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

interface Mutation {
  rule: string;
  why: string;
  seq?: number;
  byteOffset?: number;
  build: () => string | Buffer | Promise<string | Buffer>;
  name?: string;
  message?: RegExp;
}

const MUTATIONS: Mutation[] = [
  { rule: 'DSH-A1', why: 'empty artifact', build: () => '' },
  { rule: 'DSH-A1', why: 'header line is not JSON', build: () => '{"type":"session",\n' + logText(baseEvents()).split('\n').slice(1).join('\n'), message: /header line is not valid JSON/ },
  { rule: 'DSH-A2', why: 'foreign version (refused)', build: () => logText(baseEvents(), { version: 1 }), message: /^SessionFormatUnsupportedError: session "x" uses log format v1/ },
  { rule: 'DSH-A3', why: 'retired header field', build: () => logText(baseEvents(), { sandboxMode: 'x' }), message: /retired policy baseline fields/ },
  { rule: 'DSH-A3', why: 'header not a session header', build: () => logText(baseEvents(), { createdAt: -1 }), message: /first line is not a session header/ },
  {
    rule: 'DSH-A5',
    why: 'bytes after the frames are not a frame',
    name: 'session.jsonl.zstd',
    build: async () => {
      const l = lines(baseEvents());
      const { bytes } = await zstdArtifact([l[0]!, l.slice(1).join('')]);
      return Buffer.concat([bytes, Buffer.from('garbage!garbage!')]);
    },
    message: /invalid frame magic/,
  },
  {
    rule: 'DSH-A6',
    why: 'checksum of a middle frame is wrong',
    name: 'session.jsonl.zstd',
    build: async () => {
      const l = lines(baseEvents());
      const { frames } = await zstdArtifact([l[0]!, l.slice(1, 11).join(''), l.slice(11).join('')]);
      const middle = Buffer.from(frames[1]!);
      middle[middle.length - 1]! ^= 0xff;
      return Buffer.concat([frames[0]!, middle, frames[2]!]);
    },
    message: /frame at byte \d+ failed validation/,
  },
  {
    rule: 'DSH-A7',
    why: 'a complete frame ends inside a record',
    name: 'session.jsonl.zstd',
    build: async () => {
      const l = lines(baseEvents());
      const body = l.slice(1).join('');
      const { bytes } = await zstdArtifact([l[0]!, body + '{"type":"session/title"']);
      return bytes;
    },
  },
  {
    rule: 'DSH-A8',
    why: 'unparsable line before a later turn/end',
    build: () => {
      const l = lines(baseEvents());
      l[6] = '{not json\n';
      return l.join('');
    },
    message: /unparsable committed event at line 6/,
  },
  {
    rule: 'DSH-A9',
    why: 'seq gap before a later turn/end',
    build: () => logText(mutate((e) => (at(e, 5).seq = 6))),
    message: /seq gap in committed region at line 6 \(expected 5, got 6\)/,
  },
  {
    rule: 'DSH-A10',
    why: 'torn last line (no later turn/end)',
    build: () => {
      const text = logText([...baseEvents(), { type: 'session/title', data: { title: 'a title' } }]);
      return text.slice(0, text.length - 20);
    },
    message: /truncates the artifact to byte \d+/,
  },
  { rule: 'DSH-B1', why: 'legacy mode/set', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'mode/set', data: {} }])) },
  { rule: 'DSH-B2', why: 'turn/end reason with an extra key', seq: 19, build: () => logText(mutate((e) => (at(e, 19).data.reason.extra = 1))), message: /malformed pre-react-loop turn\/end at seq 19/ },
  { rule: 'DSH-B3', why: 'legacy turn/start with an empty trigger kind', seq: 0, build: () => logText(mutate((e) => (at(e, 0).data.trigger = { kind: '' }))) },
  { rule: 'DSH-B4', why: 'steering/message in neither legacy shape', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'steering/message', data: { turn: 2 } }])) },
  { rule: 'DSH-B5', why: 'user/message with role assistant', seq: 26, build: () => logText(mutate((e) => (at(e, 26).data.role = 'assistant'))), message: /session event at seq 26 message must have role "user"/ },
  { rule: 'DSH-B6', why: 'unknown type not ignorable (refused)', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'future/x', data: {} }])), message: /^SessionFormatUnsupportedError: session "x" contains event type "future\/x" \(seq 31\)/ },
  { rule: 'DSH-B7', why: 'unknown type marked ignorable', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'future/x', data: {}, ignorable: true }])) },
  { rule: 'DSH-C1', why: 'relative cwd in the header', build: () => logText(baseEvents(), { cwd: 'w' }), message: /session header cwd must be an absolute path/ },
  { rule: 'DSH-C2', why: 'unknown envelope key', seq: 4, build: () => logText(mutate((e) => (at(e, 4).extra = 1))), message: /seed event at index 4 has an invalid event envelope/ },
  { rule: 'DSH-C3', why: 'request/header without model', seq: 3, build: () => logText(mutate((e) => delete at(e, 3).data.header.config.model)), message: /seed request\/header at index 3 lacks provider\/model/ },
  { rule: 'DSH-S2', why: 'tool/call carries surfaceOp', seq: 11, build: () => logText(mutate((e) => (at(e, 11).surfaceOp = 'append'))) },
  { rule: 'DSH-S3', why: 'user/message without surfaceOp', seq: 26, build: () => logText(mutate((e) => delete at(e, 26).surfaceOp)) },
  { rule: 'DSH-S4', why: 'invalid surfaceOp', seq: 26, build: () => logText(mutate((e) => (at(e, 26).surfaceOp = 'bogus'))) },
  { rule: 'DSH-S5', why: 'replace start not on the surface', seq: 22, build: () => logText(mutate((e) => (at(e, 22).surfaceOp.start = 99))), message: /start seq 99 not found in surface/ },
  { rule: 'DSH-S6', why: 'sourceEventSeqs not an array', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = 5))) },
  { rule: 'DSH-S7', why: 'empty sourceEventSeqs on user/message', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = []))) },
  { rule: 'DSH-S8', why: 'negative source seq', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [-1]))) },
  { rule: 'DSH-S9', why: 'duplicate source seqs', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [2, 2]))) },
  { rule: 'DSH-S10', why: 'source seq not earlier', seq: 26, build: () => logText(mutate((e) => (at(e, 26).sourceEventSeqs = [26]))), message: /sourceEventSeqs must reference earlier events: 26 >= current seq 26/ },
  { rule: 'DSH-S10B', why: 'checkpoint misses a shadowed node', seq: 22, build: () => logText(mutate((e) => (at(e, 22).sourceEventSeqs = [20, 21, 2, 12]))), message: /missing 10$/ },
  {
    rule: 'DSH-S11',
    why: 'tool/result rewrite spanning two nodes',
    seq: 37,
    build: () => {
      const events = [...baseEvents(), ...toolTurn()];
      events.splice(37, 0, { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', '[pruned]'), surfaceOp: { op: 'replace', start: 34, end: 36 }, sourceEventSeqs: [34, 36] });
      return logText(events);
    },
  },
  {
    rule: 'DSH-S12',
    why: 'tool/result rewrite changing isError',
    seq: 37,
    build: () => {
      const events = [...baseEvents(), ...toolTurn()];
      const data = toolResultData(3, 1, 'c9', 't9', '[pruned]');
      (data.message.content[0] as any).isError = true;
      events.splice(37, 0, { type: 'tool/result', data, surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] });
      return logText(events);
    },
  },
  { rule: 'DSH-R2', why: "turn/start with null data (DSH's closer pass throws)", build: () => logText(mutate((e) => (at(e, 24).data = null))), message: /TypeError: Cannot read properties of null/ },
  { rule: 'DSH-E2', why: 'turn numbering skips', seq: 24, build: () => logText(mutate((e) => (at(e, 24).data.turn = 3))), message: /turn\/start expected turn 2, got 3$/ },
  { rule: 'DSH-E3', why: 'turn/end names another turn', seq: 19, build: () => logText(mutate((e) => (at(e, 19).data.turn = 5))), message: /turn\/end 5 does not match open turn 1$/ },
  { rule: 'DSH-E4', why: 'step numbering skips', seq: 15, build: () => logText(mutate((e) => (at(e, 15).data.step = 3))), message: /step\/start expected step 2 in turn 1, got 3$/ },
  { rule: 'DSH-E5', why: 'chunk names a step that is not open', seq: 8, build: () => logText(mutate((e) => (at(e, 8).data.step = 2))), message: /assistant\/chunk names turn 1\/step 2 but open is turn 1\/step 1$/ },
  { rule: 'DSH-E6', why: 'tool/result without its tool/call', seq: 12, build: () => logText(mutate((e) => (at(e, 11).data.callId = 'c2'))), message: /tool\/result for c1 with no prior tool\/call in this step$/ },
  {
    rule: 'DSH-E7',
    why: 'tool/result rewrite between turns',
    seq: 39,
    build: () => logText([...baseEvents(), ...toolTurn(), { type: 'tool/result', data: toolResultData(3, 1, 'c9', 't9', '[pruned]'), surfaceOp: { op: 'replace', start: 36, end: 36 }, sourceEventSeqs: [36] }]),
  },
  { rule: 'DSH-E8', why: 'request/context between turns', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'request/context', data: { provider: 'p', model: 'm' } }])), message: /request\/context appended outside any open turn/ },
  { rule: 'DSH-F1', why: 'shadowedRange disagrees with shadowedSeqs', seq: 21, build: () => logText(mutate((e) => (at(e, 21).data.shadowedRange.start = 3))), message: /compaction\/summary shadowedRange must match the first and last shadowedSeqs$/ },
  {
    rule: 'DSH-F1',
    why: 'successful compaction/end without a summary',
    seq: 23,
    build: () =>
      logText(
        mutate((e) => {
          e[21] = { type: 'session/title', data: { title: 't' } };
          e[22] = { type: 'session/title', data: { title: 't' } };
        }),
      ),
    message: /successful compaction\/end requires one compaction\/summary$/,
  },
  { rule: 'DSH-F2', why: 'retry counter skips', seq: 6, build: () => logText(mutate((e) => (at(e, 6).data.retry = 2))), message: /llm\/retry retry 2 must equal provider policy retry 1$/ },
  { rule: 'DSH-F2', why: 'retry-started without its retry', seq: 7, build: () => logText(mutate((e) => (at(e, 7).data.retryId = 'r2'))), message: /llm\/retry-started pairs no prior scheduled attempt$/ },
  {
    rule: 'DSH-F3',
    why: 'no request/header before the first dispatch',
    seq: 5,
    build: () =>
      logText(
        mutate((e) => {
          for (const i of [3, 6, 7]) e[i] = { type: 'request/context', data: { provider: 'p', model: 'm' } };
        }),
      ),
  },
  { rule: 'DSH-F4', why: 'compaction/start left open at the end', seq: 31, build: () => logText(mutate(() => {}, [{ type: 'compaction/start', data: { compactionId: 'k2', turn: null } }])) },
  { rule: 'DSH-R1', why: 'last turn left open', seq: 30, build: () => logText(baseEvents().slice(0, 30)), message: /turn 2 is open at the end of the log; DSH would synthesize 1 closer\(s\): turn\/end seq 30/ },
];

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
  const restore = (inner: string) => ({ class: 'SessionPersistenceCorruptionError', message: `stored session "x" failed validation: Error: ${inner}`, name: 'x', kind: 'corrupt' as const, stage: 'restore', cause: { name: 'Error', class: 'Error', message: inner } });
  it.each([
    ['DSH-C4', 'seed event at index 3 uses unsupported legacy request/header reason "fallback"'],
    ['DSH-C5', 'seed user/message at index 2 lacks an identified message'],
    ['DSH-C6', 'seed event at index 4 has seq 5 (expected 4); seed must be contiguous from 0'],
    ['DSH-S1', 'invalid seed event at index 4: session event seq 5 is not contiguous; expected 4'],
    ['DSH-C7', 'invalid seed event at index 4: something new'],
  ])('%s is classified from DSH text', (code, inner) => {
    expect(classifyLoadError(restore(inner))).toBe(code);
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

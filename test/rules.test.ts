/**
 * The rule-code catalogue (src/core/rules.ts) is the only source of codes:
 * every code has its check metadata, every code is produced by some input
 * (through `dsh check`, or by its detector where an earlier stage always wins
 * in a full load), and no detector emits a code outside it.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkResolved, discoverTargets, type Finding } from '../src/check/engine.js';
import { checkTargets } from '../src/check/pool.js';
import { relationalFindings, sessionInvariant } from '../src/check/relational.js';
import { RULES } from '../src/check/rules.js';
import { isRuleCode, RULE_CODES } from '../src/core/rules.js';
import { RestoreValidator } from '../src/log/restore.js';
import { SurfaceFold, SurfaceError } from '../src/log/surface.js';
import { inspectSource } from '../src/log/inspect.js';
import { MemorySource } from '../src/physical/source.js';
import { corpusArtifacts, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { baseEvents, clone, logText, sequence, type Ev } from './helpers/logtext.js';
import { findingsOf, MUTATIONS } from './helpers/mutations.js';
import { crashedSession, plantedSession } from './helpers/behaviour-session.js';
import { defaultBehaviour } from '../src/check/behaviour.js';
import { sessionPath, writeArtifactFile } from '../src/log/writer.js';
import { resolveTarget } from '../src/log/target.js';
import { collectSession } from '../tools/generate.js';

const produced = new Map<string, string>();
const record = (code: string, by: string) => {
  if (!produced.has(code)) produced.set(code, by);
};

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the rule-code catalogue', () => {
  it('every catalogue code has check metadata, and check has no code of its own', () => {
    expect(RULES.map((r) => r.code).sort()).toEqual([...RULE_CODES].sort());
    expect(new Set(RULE_CODES).size).toBe(RULE_CODES.length);
    for (const code of RULE_CODES) expect(code).toMatch(/^DSH-[A-Z]\d+B?$/);
  });

  it('no source file names a DSH-code outside the catalogue', () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
    const outside: string[] = [];
    for (const file of walk(path.join(PROJECT_ROOT, 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/['"`](DSH-[A-Z]+\d+[A-Za-z]?)['"`]/g)) {
        if (!isRuleCode(m[1]!)) outside.push(`${path.relative(PROJECT_ROOT, file)}: ${m[1]}`);
      }
      // The old short spellings (S10b, 'S5') are gone: rules are named by their catalogue code.
      for (const m of readFileSync(file, 'utf8').matchAll(/rule(?:: |, )'([A-Z]\d+b?)'/g)) outside.push(`${path.relative(PROJECT_ROOT, file)}: ${m[1]}`);
    }
    expect(outside).toEqual([]);
  });

  it('every mutation of the small valid log produces its code through dsh check', async () => {
    for (const m of MUTATIONS) {
      const findings = await findingsOf(await m.build(), m.name);
      for (const f of findings) {
        expect(isRuleCode(f.code), f.code).toBe(true);
        record(f.code, `mutation: ${m.why}`);
      }
    }
  });

  it('roots on disk produce the layout, identity and fork-seed codes', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-rules-'));
    dirs.push(dir);
    const write = (rel: string, text: string) => {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), text);
    };
    write('--w--/y/session.jsonl', logText(baseEvents())); // header id x in directory y: A4
    write('--w--/flat.jsonl', logText(baseEvents())); // flat file: A11
    const child = clone([...baseEvents(), { type: 'session/end-seed', data: {} }]) as any[];
    child[26].data.content[0].text = 'changed';
    write('--w--/p/session.jsonl', logText(baseEvents(), { id: 'p' }));
    write('--w--/d/session.jsonl', logText(child, { id: 'd', parentSession: 'p', seedLength: 31 })); // L1
    const d = discoverTargets([dir]);
    const findings: Finding[] = [...d.layout, ...(await checkTargets(d.targets, { jobs: 1 })).flatMap((s) => s.findings)];
    for (const f of findings) record(f.code, 'a root on disk');
    expect(findings.map((f) => f.code)).toEqual(expect.arrayContaining(['DSH-A4', 'DSH-A11', 'DSH-L1']));
  });

  it('detectors that an earlier stage always pre-empts in a full load still produce their codes', async () => {
    const restoreFailure = (events: Record<string, unknown>[]) => {
      const v = new RestoreValidator();
      for (const e of events) v.observe(e as never);
      return v.failure?.rule;
    };
    const base = () => sequence(baseEvents()) as any[];
    const userIndex = base().findIndex((e) => e.type === 'user/message');
    const cases: [string, () => string | undefined][] = [
      ['DSH-C4', () => restoreFailure(base().map((e, i) => (i === 3 ? { ...e, data: { ...e.data, reason: 'fallback' } } : e)))],
      ['DSH-C5', () => restoreFailure(base().map((e, i) => (i === userIndex ? { ...e, data: { ...e.data, id: undefined } } : e)))],
      ['DSH-C6', () => restoreFailure(base().map((e, i) => (i === 4 ? { ...e, seq: 5 } : e)))],
      [
        'DSH-C7',
        () => {
          const events = base();
          Object.defineProperty(events[userIndex], 'sourceEventSeqs', { get: () => { throw new Error('unreadable'); }, enumerable: false });
          return restoreFailure(events);
        },
      ],
      [
        'DSH-S1',
        () => {
          const fold = new SurfaceFold();
          try {
            fold.apply({ ...base()[1], seq: 1 });
          } catch (error) {
            return (error as SurfaceError).rule;
          }
          return undefined;
        },
      ],
      [
        'DSH-E1',
        () => {
          const events = base();
          events[5].seq = 4;
          return sessionInvariant(events as never)[0]?.code;
        },
      ],
    ];
    for (const [code, produce] of cases) {
      expect(produce(), code).toBe(code);
      record(code, 'its detector');
    }
    // Tool pairing across a replacement (F5) is a relational finding over a loaded log.
    const split = clone(baseEvents()) as Ev[] as any[];
    split[21].data.shadowedRange = { start: 2, end: 10 };
    split[21].data.shadowedSeqs = [2, 10];
    split[22].surfaceOp = { op: 'replace', start: 2, end: 10 };
    split[22].sourceEventSeqs = [20, 21, 2, 10];
    const f5 = relationalFindings(sequence(split) as never).map((f) => f.code);
    expect(f5).toEqual(['DSH-F5']);
    record('DSH-F5', 'relational replay');
    // The secret rules run only with --secrets: a key in the request header still in force (K1), sent (K2).
    const keyed = clone(baseEvents()) as any[];
    keyed[3].data.header.system = 'Authorization: Bearer ' + 'Zq8Xw7Vu6Ts5Rq4Po3Nm2' + 'Lk1Jh';
    const keyedText = logText(keyed as Ev[]);
    const target = { path: 's.jsonl', rawPath: 's.jsonl', open: () => new MemorySource('s.jsonl', Buffer.from(keyedText)), layoutWarnings: [] };
    expect((await checkResolved(target, {})).findings.map((f) => f.code)).toEqual([]);
    const secretCodes = (await checkResolved(target, { secrets: {} })).findings.map((f) => f.code);
    expect(secretCodes).toEqual(['DSH-K1', 'DSH-K2']);
    for (const code of secretCodes) record(code, 'check --secrets');
    // The behaviour rules run only with --behaviour (or a level in the config): sessions with each pattern planted.
    const behaviourRoot = mkdtempSync(path.join(os.tmpdir(), 'dsh-rules-behaviour-'));
    dirs.push(behaviourRoot);
    // X12: a generated session whose header changes (a model switch) at turn 3 breaks the prompt cache.
    const switched = collectSession({ seed: 5, id: 'rules-header', turns: 4, randomFeatures: false, features: { 3: ['header-change'] } });
    for (const s of [plantedSession(), crashedSession('rules-crash', ['edit_file', 'read_file']), { header: switched.header, batches: [switched.events] }]) {
      const file = sessionPath(behaviourRoot, s.header, 'zstd');
      await writeArtifactFile(file, { header: s.header, encoding: 'zstd', batches: s.batches });
      expect((await checkResolved(resolveTarget(file), {})).findings.filter((f) => f.code.startsWith('DSH-X'))).toEqual([]);
      for (const f of (await checkResolved(resolveTarget(file), { behaviour: defaultBehaviour() })).findings) record(f.code, 'check --behaviour');
    }
  });

  it('every catalogue code is produced by some input above', () => {
    expect(RULE_CODES.filter((c) => !produced.has(c))).toEqual([]);
  });

  it.skipIf(!HAVE_CORPUS)('every load failure in the corpus carries its rule from the detector', async () => {
    if (!HAVE_CORPUS) console.warn(SKIP_REASON);
    let failures = 0;
    for (const file of corpusArtifacts()) {
      const r = await inspectSource(new MemorySource(file, readFileSync(file)), { collect: false, skipArtifact: true });
      if (!r.error) continue;
      failures += 1;
      expect(r.error.rule, `${file}: ${r.error.message}`).toBeDefined();
      expect(isRuleCode(r.error.rule!)).toBe(true);
    }
    expect(failures).toBeGreaterThan(0);
  });
});

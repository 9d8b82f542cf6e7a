/**
 * The persistent session index (src/log/index) over the whole corpus: every indexed command gives, cold,
 * on the run that builds the index and warm, exactly the stdout, stderr and exit code of a run without the
 * cache, on every artifact and on prefixes of grown ones. A long campaign: `npm run test:full`.
 * test/index-cache.test.ts (npm test) covers logs that change after indexing and the cache directory.
 */
/**
 * The persistent session index (src/log/index): every indexed command gives,
 * cold, on the run that builds the index, warm, and after the log changed,
 * exactly the stdout, stderr and exit code of a run without the cache.
 */
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { dispatchFacts } from './helpers/index-facts.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTargetIndexed } from '../src/log/session.js';
import { cacheConfig, clearEntries, listEntryFiles } from '../src/log/index/cache.js';
import { CITATIONS, SESSION_FOLDS, foldOf } from '../src/views/index-folds.js';
import { DISPATCHES } from '../src/views/dispatch-fold.js';
import { FrameWalker } from '../src/physical/zstd-frames.js';
import { MemorySource } from '../src/physical/source.js';
import { commandLines, expectSameEveryWay, run, totalOf, type DispatchMark, scratchDir } from './helpers/index-cache-run.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const { dir: TMP, freshCache } = scratchDir();

describe.skipIf(!HAVE_CORPUS)('index cache on the corpus', () => {
  it('every indexed command: cold, building and warm runs are byte-identical on every artifact', async () => {
    const cacheDir = freshCache();
    const cases = corpusCases();
    expect(cases.length).toBeGreaterThan(200);
    for (const c of cases) await expectSameEveryWay(commandLines(c.artifact, totalOf(c.expected), Array.isArray(c.expected?.requests) ? c.expected.requests : []), cacheDir);
    // Accepted logs were indexed (refused and corrupt ones never are).
    const accepted = cases.filter((c) => !c.expected?.inspection?.error && c.expected?.inspection?.events).length;
    const entries = listEntryFiles(cacheConfig({ DSH_CACHE_DIR: cacheDir })).length;
    expect(entries).toBeGreaterThan(accepted * 0.8);
  }, 900_000);

  it('the second read of an accepted artifact is answered from the index', async () => {
    const cache = cacheConfig({ DSH_CACHE_DIR: freshCache() });
    let warm = 0;
    for (const c of corpusCases().slice(0, 60)) {
      const use = { cache, folds: SESSION_FOLDS };
      const first = await inspectTargetIndexed(resolveTarget(c.artifact), {}, use);
      first.close();
      expect(first.warm).toBe(false);
      const second = await inspectTargetIndexed(resolveTarget(c.artifact), {}, use);
      second.close();
      if (!first.inspection.error && first.inspection.migratedEvents === 0) {
        expect(second.warm).toBe(true);
        warm++;
        const { target: _a, ...a } = first.inspection;
        const { target: _b, ...b } = second.inspection;
        expect({ closers: b.closers, closerReasons: b.closerReasons, torn: b.torn, surface: b.surface, meta: b.meta, warnings: b.warnings, count: b.storedEventCount }).toEqual({
          closers: a.closers,
          closerReasons: a.closerReasons,
          torn: a.torn,
          surface: a.surface,
          meta: a.meta,
          warnings: a.warnings,
          count: a.storedEventCount,
        });
      } else expect(second.warm).toBe(false);
    }
    expect(warm).toBeGreaterThan(20);
  }, 300_000);
});

/** Offsets where a prefix of `bytes` ends cleanly: zstd frame ends, or raw line ends. */
function boundaries(bytes: Buffer, zstd: boolean): number[] {
  if (!zstd) {
    const out: number[] = [];
    for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) out.push(i + 1);
    return out;
  }
  const out: number[] = [];
  try {
    const w = new FrameWalker(new MemorySource('x', bytes));
    for (let f = w.next(); f; f = w.next()) out.push(f.end);
  } catch {
    // A structurally corrupt artifact: the frames before the damage.
  }
  return out;
}

/** The session facts an indexed inspection answers from (compared cold against extended). */
function facts(r: Awaited<ReturnType<typeof inspectTargetIndexed>>) {
  const i = r.inspection;
  return { error: i.error?.message, closers: i.closers, closerReasons: i.closerReasons, torn: i.torn, surface: i.surface, meta: i.meta, warnings: i.warnings, count: i.storedEventCount };
}

describe.skipIf(!HAVE_CORPUS)('index cache: a corpus artifact that grew after its prefix was indexed', () => {
  const commands = (file: string, total: number): string[][] => [
    ['trace', file, String(Math.floor(total / 2)), '--json'],
    ['trace', file, String(Math.max(0, total - 1)), '--all'],
    ['surface', file, '--at', String(Math.floor(total / 2))],
    ['surface', file, '--json'],
    ['history', file, '--max-messages', '2', '--json'],
    ['request', file, '--list', '--json'],
    ['events', file, '--from', String(Math.floor(total / 3)), '--to', String(total), '--json'],
  ];

  it('prefixes cut at a frame/line boundary and inside a frame/line, then the whole artifact: the cold answer, extended when the prefix was resumable', async () => {
    const cacheDir = freshCache();
    const cache = cacheConfig({ DSH_CACHE_DIR: cacheDir });
    const cases = corpusCases();
    let extended = 0;
    let i = 0;
    for (const c of cases) {
      const full = fs.readFileSync(c.artifact);
      const zstd = c.artifact.endsWith('.zstd');
      const ends = boundaries(full, zstd).filter((b) => b < full.length);
      if (ends.length < 2) continue;
      const cut = ends[Math.floor(ends.length / 2)] as number;
      const next = ends.find((b) => b > cut) ?? full.length;
      const dir = path.join(TMP, 'corpus-grow', String(i++), path.basename(path.dirname(c.artifact)));
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, path.basename(c.artifact));
      const total = totalOf(c.expected);
      // Each cut: index the prefix with the command itself, grow the file to the whole artifact, ask again.
      for (const prefix of [cut, Math.floor((cut + next) / 2)]) {
        const lines = prefix === cut ? commands(file, total) : commands(file, total).slice(0, 2);
        for (const args of lines) {
          // An empty cache each time: the grown file's own entry from an earlier command would answer it warm.
          clearEntries(cache);
          fs.writeFileSync(file, full.subarray(0, prefix));
          await run(args, cacheDir);
          fs.writeFileSync(file, full);
          const cold = await run([...args, '--no-cache'], cacheDir);
          const grown = await run(args, cacheDir);
          expect({ case: c.name, prefix, args, ...grown }).toEqual({ case: c.name, prefix, args, ...cold });
        }
      }
      // Through the API: the extension happened where it can, and gives the cold pass's facts.
      const use = { cache, folds: SESSION_FOLDS, needs: [CITATIONS] };
      clearEntries(cache);
      fs.writeFileSync(file, full.subarray(0, cut));
      const before = await inspectTargetIndexed(resolveTarget(file), {}, use);
      before.close();
      fs.writeFileSync(file, full);
      const after = await inspectTargetIndexed(resolveTarget(file), {}, use);
      after.close();
      const cold = await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: { ...cache, enabled: false } });
      cold.close();
      expect({ case: c.name, ...facts(after) }).toEqual({ case: c.name, ...facts(cold) });
      const resumable = !before.inspection.error && before.inspection.migratedEvents === 0 && !!before.inspection.resumePoint;
      const acceptable = !cold.inspection.error && cold.inspection.migratedEvents === 0;
      expect({ case: c.name, extended: after.extended === true }).toEqual({ case: c.name, extended: resumable && acceptable });
      if (after.extended) extended++;
    }
    console.log("extended", extended);
    expect(extended).toBeGreaterThan(100);
  }, 1_200_000);
});

describe.skipIf(!HAVE_CORPUS)('index cache: the dispatch index of a grown corpus artifact is extended', () => {
  const requestLines = (file: string, dispatches: readonly DispatchMark[]): string[][] => {
    const out: string[][] = [['request', file, '--list'], ['request', file, '--list', '--json']];
    const picks = dispatches.length > 2 ? [dispatches[0]!, dispatches[dispatches.length - 1]!] : dispatches;
    for (const d of picks) {
      out.push(['request', file, String(d.firstChunkSeq), '--json']);
      out.push(['request', file, String(d.lastChunkSeq)]);
      out.push(['request', file, '--step', d.key, '--diff', '--json']);
      out.push(['request', file, String(d.firstChunkSeq), '--body', 'deepseek']);
    }
    return out;
  };

  it('prefixes cut at a frame/line boundary and inside a frame/line (and grown twice), then the whole artifact: request gives the cold answer from an extended index', async () => {
    const cacheDir = freshCache();
    const cache = cacheConfig({ DSH_CACHE_DIR: cacheDir });
    const use = { cache, folds: SESSION_FOLDS, needs: [DISPATCHES] };
    let extended = 0;
    let withDispatches = 0;
    let i = 0;
    for (const c of corpusCases()) {
      const full = fs.readFileSync(c.artifact);
      const zstd = c.artifact.endsWith('.zstd');
      const ends = boundaries(full, zstd).filter((b) => b < full.length);
      if (ends.length < 2) continue;
      const cut = ends[Math.floor(ends.length / 2)] as number;
      const early = ends[Math.floor(ends.length / 4)] as number;
      const next = ends.find((b) => b > cut) ?? full.length;
      const dir = path.join(TMP, 'corpus-grow-request', String(i++), path.basename(path.dirname(c.artifact)));
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, path.basename(c.artifact));
      const dispatches: DispatchMark[] = Array.isArray(c.expected?.requests) ? c.expected.requests : [];
      // Through the CLI: the prefix indexed by `request` itself, then every request form on the whole artifact.
      for (const prefix of [cut, Math.floor((cut + next) / 2)]) {
        for (const args of requestLines(file, dispatches)) {
          clearEntries(cache);
          fs.writeFileSync(file, full.subarray(0, prefix));
          await run(['request', file, '--list', '--json'], cacheDir);
          fs.writeFileSync(file, full);
          const cold = await run([...args, '--no-cache'], cacheDir);
          const grown = await run(args, cacheDir);
          expect({ case: c.name, prefix, args, ...grown }).toEqual({ case: c.name, prefix, args, ...cold });
        }
      }
      // Through the API: grown in two steps (each extending the entry the step before wrote), the same dispatch index as a cold pass.
      clearEntries(cache);
      const steps = early < cut ? [early, cut, full.length] : [cut, full.length];
      let resumable = true;
      let last: Awaited<ReturnType<typeof inspectTargetIndexed>> | undefined;
      for (const [k, size] of steps.entries()) {
        fs.writeFileSync(file, full.subarray(0, size));
        last = await inspectTargetIndexed(resolveTarget(file), {}, use);
        const cold = await inspectTargetIndexed(resolveTarget(file), {}, { ...use, cache: { ...cache, enabled: false } });
        const acceptable = !cold.inspection.error && cold.inspection.migratedEvents === 0;
        if (k > 0) expect({ case: c.name, size, extended: last.extended === true }).toEqual({ case: c.name, size, extended: resumable && acceptable });
        if (acceptable) expect({ case: c.name, size, ...(await dispatchFacts(last)) }).toEqual({ case: c.name, size, ...(await dispatchFacts(cold)) });
        resumable = !last.inspection.error && last.inspection.migratedEvents === 0 && !!last.inspection.resumePoint;
        if (k === steps.length - 1 && last.extended) {
          extended++;
          if (foldOf(last.folds, DISPATCHES).index.requests.length > 0) withDispatches++;
        }
        cold.close();
        last.close();
      }
    }
    console.log(`dispatch index extended on ${extended} grown artifacts (${withDispatches} with dispatches)`);
    expect(extended).toBeGreaterThan(100);
    expect(withDispatches).toBeGreaterThan(50);
  }, 1_200_000);
});

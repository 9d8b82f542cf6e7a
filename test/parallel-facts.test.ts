/**
 * Issue #16: with consumers that take pruned events (text inspect's summary, a pass with no
 * consumer), the workers of the parallel reader also parse and check every line and hand the main
 * thread facts (src/log/facts.ts). The inspection must be the one-thread path's in every field,
 * errors and their precedence included: every rule mutation of the check suite, every raw corpus
 * artifact and many random nested-field mutations of them, each written as a zstd log with one
 * line per frame and read with one frame per worker group, at jobs 1 and at jobs 4 (more workers
 * than cores). The compiled build is used in-process (worker threads need the .js files), and the
 * test fails unless the workers really handed over facts. The reference is a one-thread read whose
 * consumer takes whole events (nothing pruned); a one-thread read that takes pruned events (packed
 * rows' members then arrive pruned, src/log/scanner.ts) must give the same inspection too.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { MUTATIONS } from './helpers/mutations.js';
import { deepNesting, headerFieldType, missingNestedField } from './helpers/hostile-gen.js';

const BUILT = existsSync(path.join(PROJECT_ROOT, 'dist', 'log', 'facts.js'));
if (!HAVE_CORPUS) console.warn(SKIP_REASON);
if (!BUILT) console.warn('dist/ is not built (npx tsc -p tsconfig.json): the facts-mode tests need the compiled reader');

const dist = (p: string) => path.join(PROJECT_ROOT, 'dist', p);

/** A raw JSONL text as a zstd log: the header line its own frame, then one frame per line (a partial last line included). */
async function asZstd(text: Buffer, compressFrame: (b: Buffer) => Promise<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  let start = 0;
  for (let nl = text.indexOf(0x0a); nl !== -1; nl = text.indexOf(0x0a, start)) {
    parts.push(text.subarray(start, nl + 1));
    start = nl + 1;
  }
  if (start < text.length) parts.push(text.subarray(start));
  const frames: Buffer[] = [];
  for (const p of parts) frames.push(await compressFrame(Buffer.from(p)));
  return Buffer.concat(frames);
}

describe.skipIf(!BUILT)('parallel reader, facts mode: workers parse and check, the inspection is the one-thread one', () => {
  it('rule mutations, raw corpus artifacts and nested-field mutations as zstd logs, at jobs 1 and 4', async () => {
    (await import(dist('log/parallel.js'))).setReadTuning({ parallelMinBytes: 0, groupBytes: 1 });
    const { inspectSource } = await import(dist('log/inspect.js'));
    const { MemorySource } = await import(dist('physical/source.js'));
    const { compressFrame } = await import(dist('physical/encoder.js'));
    const { parallelStats } = await import(dist('log/parallel.js'));
    const { PrunedEvent } = await import(dist('log/pruned-event.js'));
    const { Summarizer } = await import(dist('views/summary.js'));

    const inputs: [string, Buffer][] = [];
    for (const m of MUTATIONS) {
      if (m.name?.endsWith('.zstd')) continue;
      inputs.push([`mutation ${m.rule} ${m.why}`, Buffer.from(await m.build())]);
    }
    const raw = HAVE_CORPUS ? corpusCases().filter((c) => c.artifact.endsWith('session.jsonl')) : [];
    for (const c of raw) inputs.push([c.name, readFileSync(c.artifact)]);
    for (let seed = 1; seed <= 240 && raw.length > 0; seed++) {
      const text = readFileSync(raw[(seed * 7) % raw.length]!.artifact, 'utf8');
      const g = seed % 10 === 0 ? headerFieldType(text, seed) : seed % 10 === 5 ? deepNesting(text, seed, 1200) : missingNestedField(text, seed);
      inputs.push([`${g.name} (seed ${seed})`, Buffer.from(g.bytes)]);
    }

    const inspect = async (bytes: Buffer, jobs: number, takesPruned = true) => {
      const summary = new Summarizer();
      let pruned = 0;
      const r = await inspectSource(new MemorySource('session.jsonl.zstd', bytes), {
        collect: false,
        skipArtifact: true,
        jobs,
        pruned: takesPruned,
        onLogical: (e: { seq: number }) => {
          if (e instanceof PrunedEvent) pruned++;
          summary.observe(e);
        },
      });
      for (const c of r.closers) summary.observe(c);
      summary.setCloserStart(r.storedEventCount);
      return { doc: JSON.stringify({ ...r, source: undefined, summary: summary.result() }), pruned };
    };

    const differ: string[] = [];
    let prunedEvents = 0;
    let prunedOnOneThread = 0;
    let failed = 0;
    const before = parallelStats().factGroups;
    for (const [name, text] of inputs) {
      const bytes = await asZstd(text, compressFrame);
      const whole = await inspect(bytes, 1, false);
      const one = await inspect(bytes, 1);
      const four = await inspect(bytes, 4);
      expect(whole.pruned).toBe(0);
      prunedOnOneThread += one.pruned;
      prunedEvents += four.pruned;
      if (JSON.parse(whole.doc).error) failed++;
      if (whole.doc !== one.doc) differ.push(`${name}:\n  whole events ${whole.doc.slice(0, 600)}\n  -j1 pruned   ${one.doc.slice(0, 600)}`);
      if (whole.doc !== four.doc) differ.push(`${name}:\n  whole events ${whole.doc.slice(0, 600)}\n  -j4 ${four.doc.slice(0, 600)}`);
    }
    // The corpus's zstd artifacts as DSH wrote them (torn final frames included: their recovered
    // events are re-appended whole in the repair plan, so a torn frame's rows are never pruned).
    const zstd = HAVE_CORPUS ? corpusCases().filter((c) => c.artifact.endsWith('session.jsonl.zstd')) : [];
    let torn = 0;
    for (const c of zstd) {
      const bytes = readFileSync(c.artifact);
      const whole = await inspect(bytes, 1, false);
      const one = await inspect(bytes, 1);
      if (JSON.parse(whole.doc).torn?.recoveredEventSeqs?.length > 0) torn++;
      if (whole.doc !== one.doc) differ.push(`${c.name}:\n  whole events ${whole.doc.slice(0, 600)}\n  -j1 pruned   ${one.doc.slice(0, 600)}`);
    }
    const factGroups = parallelStats().factGroups - before;
    console.log(`facts mode: ${inputs.length} logs (${failed} refused or corrupt) at jobs 1 and 4; ${factGroups} groups parsed on workers, ${prunedEvents} pruned events folded (${prunedOnOneThread} on one thread)`);
    expect(differ).toEqual([]);
    expect(factGroups).toBeGreaterThan(inputs.length);
    expect(prunedEvents).toBeGreaterThan(inputs.length * 5);
    // Packed rows (the corpus's chunk streams) reached the one-thread consumer pruned.
    expect(prunedOnOneThread).toBeGreaterThan(inputs.length);
    if (HAVE_CORPUS) expect(torn).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(30);
  }, 600_000);
});

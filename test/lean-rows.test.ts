/**
 * Issue #16 and #15: where nothing reads of a packed row's chunks more than their type, seq, time,
 * turn and step, a pass hands them over as pruned events (`InspectOptions.leanRows`) instead of
 * building each chunk: `check` (without --secrets, and not for fork children, whose seeds are
 * fingerprinted whole), and the session index's folds when a view takes no events of its own.
 * Both must give what a read of whole events gives, in every field and byte: check's report, and
 * every fold's saved bytes and closers' effect. Inputs: every corpus artifact in place (fork
 * children and torn final frames included), the check suite's rule mutations, and corpus logs whose
 * rows were moved to another step or turn (the step rules then fire on a row's members), at jobs 1
 * and 4. The test fails unless the lean read really handed over pruned members.
 */
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { HAVE_CORPUS, PROJECT_ROOT, SKIP_REASON } from './helpers/corpus.js';
import { foldInputs } from './helpers/fold-inputs.js';

const BUILT = existsSync(path.join(PROJECT_ROOT, 'dist', 'check', 'engine.js'));
if (!HAVE_CORPUS) console.warn(SKIP_REASON);
if (!BUILT) console.warn('dist/ is not built (npx tsc -p tsconfig.json): the lean-rows test runs the compiled reader at jobs 4');

const dist = (p: string) => path.join(PROJECT_ROOT, 'dist', p);
describe.skipIf(!BUILT)('lean rows: what a read of whole events gives', () => {
  it('check: the report, on corpus artifacts, rule mutations and moved rows, at jobs 1 and 4', async () => {
    (await import(dist('log/parallel.js'))).setReadTuning({ parallelMinBytes: 0 });
    const { checkResolved, rootLookup } = await import(dist('check/engine.js'));
    // As the CLI checks: a fork child's seed is compared with its parent's prefix.
    const lookup = rootLookup();
    const { resolveTarget, inspectTarget, setReadJobs } = await import(dist('api/log.js'));
    const { PrunedEvent } = await import(dist('log/pruned-event.js'));

    const { targets, withRows } = await foldInputs('dsh-lean-rows-');

    const report = async (file: string, jobs: number, wholeRows: boolean) => {
      setReadJobs(jobs);
      try {
        return JSON.stringify(await checkResolved(resolveTarget(file), { lookup, wholeRows }));
      } finally {
        setReadJobs(1);
      }
    };
    const differ: string[] = [];
    const codes = new Set<string>();
    for (const [name, file] of targets) {
      const whole = await report(file, 1, true);
      for (const f of JSON.parse(whole).findings ?? []) codes.add(f.code);
      for (const jobs of [1, 4]) {
        const lean = await report(file, jobs, false);
        if (lean !== whole) differ.push(`${name} (jobs ${jobs}):\n  whole ${whole.slice(0, 500)}\n  lean  ${lean.slice(0, 500)}`);
      }
    }
    expect(differ).toEqual([]);
    // The moved rows break the step rules on a row's members, and the lean read saw the same.
    expect(codes.has('DSH-E5')).toBe(true);

    // The lean read hands over a row's members pruned (with the row's turn and step), and only them.
    let pruned = 0;
    let chunks = 0;
    for (const c of withRows.slice(0, 20)) {
      await inspectTarget(resolveTarget(c.artifact), {
        collect: false,
        skipArtifact: true,
        leanRows: () => true,
        onLogical: (e: { type: string; data: { turn?: unknown; step?: unknown } }) => {
          if (e.type === 'assistant/chunk') chunks++;
          if (!(e instanceof PrunedEvent)) return;
          pruned++;
          expect(e.type).toBe('assistant/chunk');
          expect(typeof e.data.turn).toBe('number');
          expect(typeof e.data.step).toBe('number');
        },
      });
    }
    console.log(`lean rows: ${targets.length} logs checked whole and lean at jobs 1 and 4; ${pruned} of ${chunks} chunks of ${Math.min(20, withRows.length)} corpus logs handed over pruned`);
    if (HAVE_CORPUS) expect(pruned).toBeGreaterThan(100);
  }, 600_000);
  it('the session index: every fold\'s saved bytes, after the closers too, at jobs 1 and 4', async () => {
    (await import(dist('log/parallel.js'))).setReadTuning({ parallelMinBytes: 0 });
    const { resolveTarget, inspectTarget, setReadJobs } = await import(dist('api/log.js'));
    const { SESSION_FOLDS } = await import(dist('api/views.js'));
    const { PrunedEvent, RowChunk } = await import(dist('log/pruned-event.js'));
    const { targets } = await foldInputs('dsh-lean-rows-');
    expect(SESSION_FOLDS.every((f: { leanRows?: boolean }) => f.leanRows === true)).toBe(true);
    // As the index pass does: a fold that says so is not handed rows' lean members.
    const skips = SESSION_FOLDS.map((f: { skipsRowChunks?: boolean }) => f.skipsRowChunks === true);
    expect(skips.filter(Boolean).length).toBeGreaterThan(0);

    /** Every fold built from one pass (lean or whole), as its bytes (or its error), once the closers are applied. */
    const folds = async (file: string, jobs: number, lean: boolean) => {
      const builders = SESSION_FOLDS.map((f: { create(): any }) => f.create());
      let failure: string | undefined;
      let pruned = 0;
      setReadJobs(jobs);
      try {
        const r = await inspectTarget(resolveTarget(file), {
          collect: false,
          skipArtifact: true,
          ...(lean ? { leanRows: () => true } : {}),
          onLogical: (e: unknown) => {
            if (e instanceof PrunedEvent) pruned++;
            if (failure) return;
            try {
              const row = e instanceof RowChunk;
              builders.forEach((b: { observe(e: unknown): void }, i: number) => (row && skips[i] ? undefined : b.observe(e)));
            } catch (error) {
              failure = (error as Error).message;
            }
          },
        });
        if (r.error) return { doc: `refused: ${r.error.message}`, pruned };
        if (failure) return { doc: `fold failed: ${failure}`, pruned };
        for (const b of builders) b.end?.(r.closers, r.storedEventCount);
        return { doc: builders.map((b: { encode(): Buffer | undefined }) => b.encode()?.toString('base64') ?? 'unsaved').join(' '), pruned };
      } catch (error) {
        return { doc: `threw: ${(error as Error).message}`, pruned };
      } finally {
        setReadJobs(1);
      }
    };
    const differ: string[] = [];
    let pruned = 0;
    let saved = 0;
    for (const [name, file] of targets) {
      const whole = await folds(file, 1, false);
      expect(whole.pruned).toBe(0);
      if (!/^(refused|fold failed|threw)/.test(whole.doc)) saved++;
      for (const jobs of [1, 4]) {
        const lean = await folds(file, jobs, true);
        pruned += lean.pruned;
        if (lean.doc !== whole.doc) differ.push(`${name} (jobs ${jobs}):\n  whole ${whole.doc.slice(0, 300)}\n  lean  ${lean.doc.slice(0, 300)}`);
      }
    }
    console.log(`lean rows, index folds: ${targets.length} logs (${saved} with every fold saved), ${pruned} members handed over pruned`);
    expect(differ).toEqual([]);
    if (HAVE_CORPUS) {
      expect(saved).toBeGreaterThan(200);
      expect(pruned).toBeGreaterThan(1000);
    }
  }, 600_000);
});

/**
 * Logs too big to hold are streamed in two passes (validate, then a light
 * decode-and-normalize pass). Forcing that path on every corpus artifact must
 * print byte-for-byte what the one-pass path prints.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const saved = process.env['DSH_MAX_HELD_BYTES'];
afterEach(() => {
  if (saved === undefined) delete process.env['DSH_MAX_HELD_BYTES'];
  else process.env['DSH_MAX_HELD_BYTES'] = saved;
});

describe.skipIf(!HAVE_CORPUS)('two-pass streaming', () => {
  it('events (labelled, filtered) and inspect --json print the same as one pass, on every corpus artifact; events prints in the validating pass', async () => {
    const { HeldOutput } = await import('../src/cli/stream.js');
    const released = vi.spyOn(HeldOutput.prototype, 'release');
    let compared = 0;
    const lines = (f: string) => [
      ['events', f, '--json'],
      ['inspect', f, '--json'],
      ['events', f, '--color', 'never'],
      ['events', f, '--json', '--label', 'current'],
      ['events', f, '--label', 'shadowed', 'log-only', '--color', 'always'],
      ['events', f, '--json', '--type', 'tool/', 'user/message', '--turn', '2'],
    ];
    for (const c of corpusCases()) {
      for (const args of lines(c.artifact)) {
        delete process.env['DSH_MAX_HELD_BYTES'];
        const one = await runInProcess(args);
        process.env['DSH_MAX_HELD_BYTES'] = '1';
        const two = await runInProcess(args);
        expect(two.code, `${c.name} ${args.join(' ')}`).toBe(one.code);
        expect(two.stdout, `${c.name} ${args.join(' ')}`).toBe(one.stdout);
        compared++;
      }
    }
    expect(compared).toBe(6 * corpusCases().length);
    // The one-pass runs of accepted logs printed during the validating pass (the forced runs never do).
    expect(released.mock.calls.length).toBeGreaterThan(4 * 200);
    released.mockRestore();
  }, 900_000);
});

describe.skipIf(!HAVE_CORPUS)('a consumer error inside the reader', () => {
  it('propagates as itself, never as a verdict about the frame being decoded', async () => {
    const { inspectTarget } = await import('../src/log/session.js');
    const { resolveTarget } = await import('../src/log/target.js');
    const { UsageError } = await import('../src/log/errors.js');
    // The damaged frame sits in the first decode group, so frames are re-decoded one by one.
    const c = corpusCases().find((x) => x.name.includes('checksum-corrupt-middle-frame/root-zstd'))!;
    const stop = new UsageError('consumer stops');
    await expect(inspectTarget(resolveTarget(c.artifact), { collect: false, onLogical: () => { throw stop; } })).rejects.toBe(stop);
    await expect(inspectTarget(resolveTarget(c.artifact), { collect: false, onLogical: () => { throw stop; } , bigFrameBytes: 1 })).rejects.toBe(stop);
    await expect(inspectTarget(resolveTarget(c.artifact), { collect: false, onMeta: () => { throw stop; } })).rejects.toBe(stop);
  });
});

describe.skipIf(!HAVE_CORPUS)('events --no-labels (print while reading)', () => {
  it('prints the labelled records minus their label; a refused log ends with DSH\'s error and exit 1', async () => {
    let valid = 0;
    let refused = 0;
    for (const c of corpusCases()) {
      const labelled = await runInProcess(['events', c.artifact, '--json']);
      const streamed = await runInProcess(['events', c.artifact, '--json', '--no-labels']);
      expect(streamed.code, c.name).toBe(labelled.code);
      if (labelled.code === 0) {
        const want = labelled.stdout.split('\n').filter(Boolean).map((l) => {
          const rec = JSON.parse(l);
          delete rec.surface;
          return rec;
        });
        expect(streamed.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l))).toEqual(want);
        valid++;
      } else {
        const lines = streamed.stdout.split('\n').filter(Boolean);
        expect(lines[lines.length - 1]).toBe(labelled.stdout.trim());
        refused++;
      }
    }
    expect(valid).toBeGreaterThan(200);
    expect(refused).toBeGreaterThan(3);
    expect((await runInProcess(['events', corpusCases()[0]!.artifact, '--no-labels', '--label', 'current'])).code).toBe(2);
  });
});

describe.skipIf(!HAVE_CORPUS)('stats and search stream: equal to the views over held events', () => {
  it('stats --json and search --json equal sessionStats/searchSession on every corpus artifact', async () => {
    const { resolveTarget } = await import('../src/log/target.js');
    const { inspectTarget } = await import('../src/log/session.js');
    const { sessionStats } = await import('../src/views/stats.js');
    const { searchSession, compileTextFilter } = await import('../src/views/search.js');
    const { Labels } = await import('../src/views/labels.js');
    let compared = 0;
    for (const c of corpusCases()) {
      const held = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const stats = await runInProcess(['stats', c.artifact, '--json']);
      const search = await runInProcess(['search', 'e', c.artifact, '--json']);
      if (held.error) {
        expect(stats.code, c.name).toBe(1);
        expect(search.code, c.name).toBe(1);
        continue;
      }
      expect(stats.code, `${c.name}: ${stats.stderr}`).toBe(0);
      const want = sessionStats(held.meta!.id, held.events!, { storedEventCount: held.storedEventCount, createdAt: held.meta!.createdAt });
      // The streaming fold's figures equal the held view; the ledger adds its own fields beside them.
      const got = JSON.parse(stats.stdout) as Record<string, unknown>;
      const expected = JSON.parse(JSON.stringify(want)) as Record<string, unknown>;
      expect(Object.fromEntries(Object.keys(expected).map((k) => [k, got[k]]))).toEqual(expected);
      for (const k of ['owned', 'inherited', 'naive', 'cost']) expect(got, `${c.name}: ledger field ${k}`).toHaveProperty(k);
      const hits = searchSession(held.meta!.id, held.events!, new Labels(held.surface!.nodes, held.surface!.replacements), compileTextFilter('e'), { snippetChars: 240 }, held.storedEventCount);
      expect(JSON.parse(search.stdout).hits).toEqual(JSON.parse(JSON.stringify(hits)));
      compared++;
    }
    expect(compared).toBeGreaterThan(200);
  });
});

describe.skipIf(!HAVE_CORPUS)('history reads one page without holding the log', () => {
  it('history --json (tail page, --before-seq, small --max-messages) equals paginate over held events on every corpus artifact', async () => {
    const { resolveTarget } = await import('../src/log/target.js');
    const { inspectTarget } = await import('../src/log/session.js');
    const { paginate } = await import('../src/views/history.js');
    let compared = 0;
    for (const c of corpusCases()) {
      const held = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const n = held.events?.length ?? 0;
      for (const [before, max] of [[undefined, 50], [undefined, 2], [Math.floor(n / 2), 3], [n + 5, 1], [0, 4]] as [number | undefined, number][]) {
        const args = ['history', c.artifact, '--json', '--max-messages', String(max), ...(before !== undefined ? ['--before-seq', String(before)] : [])];
        const r = await runInProcess(args);
        if (held.error) {
          expect(r.code, c.name).toBe(1);
          continue;
        }
        expect(r.code, `${c.name} ${args.join(' ')}: ${r.stderr}`).toBe(0);
        expect(JSON.parse(r.stdout).pages, `${c.name} ${args.join(' ')}`).toEqual(JSON.parse(JSON.stringify([paginate(held.events!, before, max)])));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});

/**
 * `dsh diff <target> <A> <B>` generalises `request --diff`: for every pair of
 * consecutive dispatches of every corpus session, both commands print the
 * same JSON and the same text. Also: every corpus session diffed with itself
 * reports no difference, and with its other encoding no difference either.
 */
import { describe, expect, it } from 'vitest';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { resolveTarget } from '../src/log/target.js';
import { inspectTarget } from '../src/log/session.js';
import { deriveDispatches } from '../src/views/requests.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

describe.skipIf(!HAVE_CORPUS)('diff <t> A B = request --diff on every consecutive corpus pair', () => {
  it('same JSON and same text for every consecutive pair of dispatches', async () => {
    let pairs = 0;
    for (const c of corpusCases()) {
      if (!Array.isArray(c.expected.requests) || c.expected.requests.length < 2) continue;
      const held = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const events = held.events!;
      const reqs = deriveDispatches(events, { lazy: events }).requests;
      for (let i = 1; i < reqs.length; i++) {
        const a = reqs[i - 1]!;
        const b = reqs[i]!;
        const viaRequest = await runInProcess(['request', c.artifact, String(b.firstChunkSeq), '--diff', '--json']);
        // Any seq of a dispatch names it: use the last chunk of A and the key of B.
        const viaDiff = await runInProcess(['diff', c.artifact, String(a.lastChunkSeq), b.key, '--json']);
        expect(viaDiff.code, `${c.name} ${a.key}→${b.key}: ${viaDiff.stderr}`).toBe(0);
        expect(JSON.parse(viaDiff.stdout), `${c.name} ${a.key}→${b.key}`).toEqual(JSON.parse(viaRequest.stdout));
        const textRequest = await runInProcess(['request', c.artifact, String(b.firstChunkSeq), '--diff', '--color', 'never']);
        const textDiff = await runInProcess(['diff', c.artifact, '--request', String(a.firstChunkSeq), String(b.firstChunkSeq), '--color', 'never']);
        expect(textDiff.stdout, `${c.name} ${a.key}→${b.key}`).toBe(textRequest.stdout);
        pairs += 1;
      }
    }
    console.info(`diff-corpus.test: ${pairs} consecutive dispatch pairs, diff <t> A B = request --diff`);
    expect(pairs).toBe(377);
  });

  it('any two dispatches (first and last of each session) equal the library view; the later one first is a usage error', async () => {
    const { diffDispatches } = await import('../src/views/requests.js');
    let compared = 0;
    for (const c of corpusCases()) {
      if (!Array.isArray(c.expected.requests) || c.expected.requests.length < 3) continue;
      const held = await inspectTarget(resolveTarget(c.artifact), { collect: true });
      const events = held.events!;
      const reqs = deriveDispatches(events, { lazy: events }).requests;
      const a = reqs[0]!;
      const b = reqs[reqs.length - 1]!;
      const r = await runInProcess(['diff', c.artifact, String(a.firstChunkSeq), String(b.lastChunkSeq), '--json', '--exit-code']);
      const want = JSON.parse(JSON.stringify(diffDispatches(a, b, events)));
      expect(JSON.parse(r.stdout), c.name).toEqual(want);
      const differs = want.header.changed || want.requestContext.changed || want.messages.added.length > 0 || want.messages.removed.length > 0;
      expect(r.code, c.name).toBe(differs ? 1 : 0);
      const back = await runInProcess(['diff', c.artifact, b.key, a.key]);
      expect(back.code).toBe(2);
      expect(back.stderr).toContain('give the earlier dispatch first');
      compared += 1;
    }
    expect(compared).toBeGreaterThan(20);
  });

  it('every readable corpus session against itself: identical, exit 0 with --exit-code; unreadable ones exit 1 naming the side', async () => {
    let same = 0;
    for (const c of corpusCases()) {
      const r = await runInProcess(['diff', c.artifact, c.artifact, '--json', '--exit-code']);
      expect(r.stderr, c.name).not.toMatch(/internal error|\n\s+at /);
      if (c.expected.inspection?.error) {
        expect(r.code, c.name).toBe(1);
        expect(JSON.parse(r.stdout).error).toMatchObject({ class: c.expected.inspection.error.class, message: c.expected.inspection.error.message.replaceAll('<root>', c.artifact.slice(0, c.artifact.length - c.rawPath.length + 6)), side: 'a' });
        continue;
      }
      expect(r.code, `${c.name}: ${r.stderr}`).toBe(0);
      const d = JSON.parse(r.stdout);
      expect(d.identical, c.name).toBe(true);
      expect(d.dispatches.firstDivergent).toBeNull();
      same += 1;
    }
    expect(same).toBeGreaterThan(200);
  });

  it('each dsh-snapshot session in zstd against its raw copy: no difference', async () => {
    const byName = new Map<string, string[]>();
    for (const c of corpusCases()) {
      if (c.expected.inspection?.error || !/root-(zstd|raw)/.test(c.name)) continue;
      const key = c.name.replace(/root-(zstd|raw)/, 'root-*');
      byName.set(key, [...(byName.get(key) ?? []), c.artifact]);
    }
    let compared = 0;
    for (const [name, files] of byName) {
      if (files.length !== 2) continue;
      const r = await runInProcess(['diff', files[0]!, files[1]!, '--json', '--exit-code']);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout).identical, name).toBe(true);
      compared += 1;
    }
    expect(compared).toBeGreaterThan(50);
  });
});

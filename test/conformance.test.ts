import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, SKIP_REASON, CORPUS } from './helpers/corpus.js';
import { FileSource } from '../src/physical/source.js';
import { readArtifact } from '../src/log/read.js';
import { inspectSource } from '../src/log/inspect.js';
import { inspectJson } from '../src/cli/commands/inspect.js';
import { createDecoder, nodeZstdAvailable, type DecoderName } from '../src/physical/decoders.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const decoders: DecoderName[] = nodeZstdAvailable() ? ['node-zlib', 'mongodb-js'] : ['mongodb-js'];

describe.skipIf(!HAVE_CORPUS)('conformance with DSH over ../shared/corpus', () => {
  const cases = corpusCases();

  it('walks all 280 artifacts', () => {
    expect(cases.length).toBe(280);
  });

  for (const decoderName of decoders) {
    describe(`decoder ${decoderName}`, () => {
      it('stored view, torn marker, artifact view and frame facts equal expected', async () => {
        const decoder = createDecoder(decoderName);
        const failures: string[] = [];
        for (const c of cases) {
          const exp = c.expected;
          const source = new FileSource(c.artifact);
          const out = await readArtifact(source, { collect: true, frameDetail: true, rawPath: c.rawPath, decoder });
          source.close();
          const fail = (what: string) => failures.push(`${c.name}: ${what}`);
          if (exp.stored.error) {
            if (out.error?.message !== exp.stored.error.message || out.error?.dshClass !== exp.stored.error.class) fail(`stored error ${out.error?.message}`);
          } else if (out.error || !out.stored) fail(`unexpected stored error ${out.error?.message}`);
          else {
            if (JSON.stringify(out.stored.meta) !== JSON.stringify(exp.stored.meta)) fail('stored meta');
            if (out.stored.eventCount !== exp.stored.eventCount) fail('stored eventCount');
            if (JSON.stringify(out.stored.events) !== JSON.stringify(exp.stored.events)) fail('stored events');
            const torn = out.stored.torn ? { truncateTo: out.stored.torn.truncateTo, recoveredEventSeqs: out.stored.torn.recoveredEventSeqs } : null;
            if (JSON.stringify(torn) !== JSON.stringify(exp.stored.tornMarker ?? null)) fail('torn marker');
          }
          const rr = exp.readRaw;
          if (rr.error) {
            if (out.artifact.error?.message !== rr.error.message) fail('readRaw error');
          } else {
            if (out.artifact.contentSha256 !== rr.contentSha256) fail('artifact sha256');
            if (out.artifact.contentBytes !== rr.contentBytes || out.artifact.lines !== rr.lines) fail('artifact bytes/lines');
            if (JSON.stringify(out.artifact.meta) !== JSON.stringify(rr.meta)) fail('artifact meta');
          }
          if (exp.artifact.compression === 'zstd') {
            const mine = (out.frames ?? []).map((r) => {
              const o: Record<string, unknown> = { index: r.index, start: r.start, end: r.end, checksumFlag: r.checksumFlag };
              if (r.error) o['error'] = r.error;
              else Object.assign(o, { plaintextBytes: r.plaintextBytes, records: r.records, plaintextSha256: r.plaintextSha256 });
              return o;
            });
            if (JSON.stringify(mine) !== JSON.stringify(exp.artifact.frames)) fail('frames');
            if ((out.tornFrame?.start ?? null) !== exp.artifact.tornStart) fail('tornStart');
            const tf = exp.artifact.tornFrame;
            if (tf) {
              const t = out.tornFrame;
              if (!t || t.bytes !== tf.bytes || t.recoveredPlaintextBytes !== tf.recoveredPlaintextBytes || t.recoveredCompleteRecords !== tf.recoveredCompleteRecords) fail('torn frame recovery');
            }
          }
        }
        expect(failures).toEqual([]);
      });

      it('inspect --json (meta, events, closers) equals expected.inspection, or its error class and message', async () => {
        const decoder = createDecoder(decoderName);
        const failures: string[] = [];
        for (const c of cases) {
          const exp = c.expected.inspection;
          const source = new FileSource(c.artifact);
          const r = await inspectSource(source, { rawPath: c.rawPath, decoder });
          source.close();
          const json = inspectJson({ ...r, target: { path: c.artifact }, warnings: [] }, 'logical') as any;
          if (exp.error) {
            if (json.error?.class !== exp.error.class || json.error?.message !== exp.error.message) failures.push(`${c.name}: error ${json.error?.class}: ${json.error?.message}`);
            continue;
          }
          if (json.error) {
            failures.push(`${c.name}: unexpected ${json.error.message}`);
            continue;
          }
          if (JSON.stringify(json.meta) !== JSON.stringify(exp.meta)) failures.push(`${c.name}: meta`);
          if (JSON.stringify(json.events) !== JSON.stringify(exp.events)) failures.push(`${c.name}: events`);
          if (JSON.stringify(json.closers) !== JSON.stringify(exp.closers)) failures.push(`${c.name}: closers`);
          if (json.storedEventCount !== exp.storedEventCount) failures.push(`${c.name}: storedEventCount`);
          const sf = c.expected.derived?.surface;
          if (sf && JSON.stringify([r.surface?.nodes, r.surface?.replaceGeneration, r.surface?.replacements]) !== JSON.stringify([sf.nodes, sf.replaceGeneration, sf.replacements])) {
            failures.push(`${c.name}: surface`);
          }
        }
        expect(failures).toEqual([]);
      });

      it('the repair plan reproduces what DSH load() wrote (file under repaired/)', async () => {
        const decoder = createDecoder(decoderName);
        const failures: string[] = [];
        let compared = 0;
        for (const c of cases) {
          const rep = c.expected.repair;
          if (rep.load?.error) continue;
          const source = new FileSource(c.artifact);
          const r = await inspectSource(source, { rawPath: c.rawPath, decoder });
          source.close();
          const plan = r.repairPlan!;
          if (plan.writes !== rep.fileChanged) {
            failures.push(`${c.name}: writes=${plan.writes} but DSH fileChanged=${rep.fileChanged}`);
            continue;
          }
          if (!rep.fileChanged) continue;
          const original = readFileSync(c.artifact);
          const repaired = readFileSync(path.join(CORPUS, rep.repairedArtifact));
          const cut = plan.truncateTo ?? original.length;
          if (!repaired.subarray(0, cut).equals(original.subarray(0, cut))) failures.push(`${c.name}: kept prefix differs`);
          const tail = repaired.subarray(cut);
          const appended = c.expected.artifact.compression === 'zstd' ? (tail.length ? (await decoder.decode(tail)).toString('utf8') : '') : tail.toString('utf8');
          if (appended !== plan.appendText) failures.push(`${c.name}: appended bytes differ`);
          if (repaired.length !== rep.bytesAfter) failures.push(`${c.name}: bytesAfter`);
          compared++;
        }
        expect(failures).toEqual([]);
        expect(compared).toBeGreaterThan(10);
      });
    });
  }
});

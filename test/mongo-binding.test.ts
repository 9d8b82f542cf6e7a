/**
 * The Node 20 zstd path loads `@mongodb-js/zstd`'s glibc binding directly (`directMongo`), skipping the
 * package loader's diagnostic report. The claim: it is the binding the package would use, called as the
 * package calls it: the same frames out (compress ignores a level, as the package's wrapper does), the
 * same bytes back, the same error text on damaged input; and the choice falls back to the package where
 * the direct path is not taken.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { corpusCases, HAVE_CORPUS } from './helpers/corpus.js';
import { directMongo, loadMongo, packageMongo } from '../src/physical/mongo.js';

const direct = directMongo();
const GLIBC_LINUX = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64') && typeof (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime === 'string';
if (!direct) console.warn(`the direct libzstd binding is not taken on ${process.platform}-${process.arch}${GLIBC_LINUX ? ' (glibc)' : ''}: its comparison with the package is skipped`);

async function outcome(p: Promise<Buffer>): Promise<string> {
  try {
    return `ok ${(await p).toString('base64')}`;
  } catch (e) {
    return `error ${(e as Error).message}`;
  }
}

describe('the libzstd binding dsh loads on Node 20', () => {
  it('is taken directly on a glibc Linux, else the package decides', () => {
    expect(direct !== undefined).toBe(GLIBC_LINUX);
    const used = loadMongo();
    expect(typeof used.decompress).toBe('function');
  });

  it.skipIf(!direct)('answers as the package does: frames, bytes and errors', async () => {
    const pkg = packageMongo();
    const d = direct!;
    const inputs: Buffer[] = [Buffer.alloc(0), Buffer.from('{"type":"turn/start","seq":0}\n'), randomBytes(70_000), Buffer.alloc(300_000, 'abc')];
    if (HAVE_CORPUS) for (const c of corpusCases().filter((c) => c.artifact.endsWith('.jsonl')).slice(0, 20)) inputs.push(readFileSync(c.artifact));
    let compared = 0;
    for (const input of inputs) {
      // A level is ignored by both (the package's wrapper never passes it on).
      const frame = await pkg.compress(input, 19);
      expect((await d.compress(input, 19)).equals(frame)).toBe(true);
      expect((await d.decompress(frame)).equals(input)).toBe(true);
      // Damaged frames: cut short, a flipped byte, not zstd at all.
      for (const bad of [frame.subarray(0, Math.max(1, frame.length - 3)), Buffer.from(frame).fill(0x55, 4, 6), Buffer.from('not a zstd frame')]) {
        expect(await outcome(d.decompress(bad))).toBe(await outcome(pkg.decompress(bad)));
      }
      compared++;
    }
    expect(compared).toBeGreaterThan(3);
    if (HAVE_CORPUS) {
      const zstd = corpusCases().filter((c) => c.artifact.endsWith('.zstd')).slice(0, 20);
      for (const c of zstd) {
        const bytes = readFileSync(c.artifact);
        expect(await outcome(d.decompress(bytes))).toBe(await outcome(pkg.decompress(bytes)));
      }
    }
  });
});

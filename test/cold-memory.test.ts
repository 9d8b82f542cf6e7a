/**
 * Issue #16, memory of the cold validating pass: peak RSS should follow what a command keeps (the
 * index, the surface), not large read buffers or payloads it need not hold. These tests pin the
 * mechanisms (they are deterministic, unlike an absolute RSS figure on a shared
 * machine); `bench/run.js` measures the RSS itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { BIN, runNode } from './helpers/cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-cold-memory-'));
const file = path.join(dir, 'root', '--home-dev-p--', 'cold', 'session.jsonl.zstd');
/** No compaction: ~70 tool outputs of 300-500 KB, every one still on the surface at the end (~28 MB of them). */
const bigTools = path.join(dir, 'root', '--home-dev-p--', 'big-tools', 'session.jsonl.zstd');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  await writeGeneratedArtifact(file, { seed: 16, id: 'cold', cwd: '/home/dev/p', targetBytes: 12_000_000, encoding: 'zstd' });
  await writeGeneratedArtifact(bigTools, { seed: 7, id: 'big-tools', cwd: '/home/dev/p', targetBytes: 30_000_000, encoding: 'zstd', randomFeatures: false, toolOutputBytes: [300_000, 500_000] });
}, 180_000);

/** test/helpers/heap-probe.cjs: the largest ArrayBuffer total seen (MiB). */
const PROBE = path.join(path.dirname(BIN), '..', 'test', 'helpers', 'heap-probe.cjs');

async function probe(args: string[]): Promise<{ code: number; stdout: string; arrayBuffersMiB: number }> {
  const r = await runNode(['--require', PROBE, BIN, ...args], { env: { DSH_NO_CACHE: '1' } });
  const m = /\nprobe (\{.*\})\s*$/.exec(r.stderr);
  if (!m) throw new Error(`no probe line in stderr: ${r.stderr.slice(-2000)}`);
  return { code: r.code, stdout: r.stdout, ...JSON.parse(m[1]!) };
}

describe('issue #16: memory of the cold pass', () => {
  it('the one-thread zstd pass holds a few MiB of read and decode buffers, not the frame walk\'s 8 MiB window', async () => {
    const r = await probe(['inspect', file, '-j', '1']);
    expect(r.code).toBe(0);
    expect(r.arrayBuffersMiB).toBeLessThan(4.5);
  }, 120_000);

  it('the one-thread fold keeps a tool/result on the surface without its output (S12 needs only the rest): 28 MB of outputs fit a 24 MiB heap', async () => {
    // The workers' path keeps a content-free key; before, the one-thread path kept every payload whole.
    // (inspect in text form: --json holds the events it prints until DSH's verdict.)
    for (const args of [['inspect', bigTools], ['check', bigTools, '--json']]) {
      const workers = await runNode([BIN, ...args, '-j', '2', '--parallel-min-bytes', '0'], { env: { DSH_NO_CACHE: '1', NO_COLOR: '1' } });
      expect(workers.code).toBe(0);
      const capped = await runNode(['--max-old-space-size=24', BIN, ...args, '-j', '1'], { env: { DSH_NO_CACHE: '1', NO_COLOR: '1' } });
      expect({ args: args[0], code: capped.code, stderr: capped.stderr.slice(0, 300) }).toEqual({ args: args[0], code: 0, stderr: '' });
      expect(capped.stdout).toBe(workers.stdout);
    }
  }, 180_000);
});

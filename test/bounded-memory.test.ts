/**
 * Views that used to hold the whole logical log now walk a re-read of it: on a
 * generated log of ~96 MB of logical text, each runs under a 64 MiB V8 heap
 * (holding the log takes ~4x its logical bytes, ~400 MB; the holding path also
 * refused any log past a fifth of the heap) and prints exactly what the
 * library's holding path computes in this (big-heap) process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { runCli } from './helpers/cli.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { auditCompactions } from '../src/views/compactions.js';
import { toJson } from '../src/core/json.js';

const HEAP_MIB = 64;
const LOGICAL_BYTES = 96_000_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-bounded-'));
const file = path.join(dir, '--home-dev-p--', 'big', 'session.jsonl');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const info = await writeGeneratedArtifact(file, { seed: 3, id: 'big', cwd: '/home/dev/p', targetBytes: LOGICAL_BYTES, encoding: 'none' });
  expect(info.logicalBytes).toBeGreaterThan(LOGICAL_BYTES * 0.95);
}, 300_000);

/** The CLI under a small heap, with no re-exec and no cache (a cold pass). */
const small = (args: string[]) => runCli(args, { env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}`, DSH_NO_REEXEC: '1', DSH_NO_CACHE: '1' } });

/** The logical events, held (in this process, whose heap is large). */
async function held() {
  const r = await inspectTarget(resolveTarget(file), { collect: true, keepReplacements: false });
  if (r.error || !r.events) throw new Error(`generated log refused: ${r.error?.message}`);
  return r;
}

describe(`bounded memory: a ${LOGICAL_BYTES / 1e6} MB log under a ${HEAP_MIB} MiB heap`, () => {
  it('compactions --json prints what the holding audit computes', async () => {
    const got = await small(['compactions', file, '--json']);
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const r = await held();
    const want = toJson(auditCompactions(r.events!, { sessionId: r.meta?.id ?? null })) + '\n';
    // The generated log compacts and prunes: the audit has something to say.
    expect(JSON.parse(want).attempts.length).toBeGreaterThan(5);
    expect(got.stdout).toBe(want);
  }, 300_000);
});

/**
 * Views that used to hold the whole logical log now walk a re-read of it: on a
 * generated log of ~48 MB of logical text, each runs under a 64 MiB V8 heap
 * (fork, which writes the ~48 MB child, and diff, which walks two such logs at once, under 96 MiB)
 * (holding the log takes ~4x its logical bytes, ~200 MB, three times the small heap and twice
 * the diff's; the holding path also refused any log past a fifth of the heap) and prints exactly
 * what the library's holding path computes in this (big-heap) process.
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGeneratedArtifact } from '../tools/generate.js';
import { runCli } from './helpers/cli.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { auditCompactions } from '../src/views/compactions.js';
import { childEvents, planFork } from '../src/views/fork.js';
import { deepEqualJson } from '../src/log/surface.js';
import { toJson } from '../src/core/json.js';
import { buildReplay } from '../src/views/replay.js';
import { diffSessions, diffSide } from '../src/views/diff.js';
import { loadedFromInspection } from '../src/views/messages.js';

const HEAP_MIB = 64;
const LOGICAL_BYTES = 48_000_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-bounded-'));
const root = path.join(dir, 'root');
const file = path.join(root, '--home-dev-p--', 'big', 'session.jsonl');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const info = await writeGeneratedArtifact(file, { seed: 3, id: 'big', cwd: '/home/dev/p', targetBytes: LOGICAL_BYTES, encoding: 'none' });
  expect(info.logicalBytes).toBeGreaterThan(LOGICAL_BYTES * 0.95);
}, 300_000);

/** The CLI under a small heap, with no cache (a cold pass). */
const small = (args: string[], heap = HEAP_MIB) => runCli(args, { env: { NODE_OPTIONS: `--max-old-space-size=${heap}`, DSH_NO_CACHE: '1' } });

let kept: Awaited<ReturnType<typeof inspectTarget>> | undefined;
/** The logical events, held (in this process, whose heap is large). */
async function held() {
  kept ??= await inspectTarget(resolveTarget(file), { collect: true, keepReplacements: true });
  if (kept.error || !kept.events || !kept.meta) throw new Error(`generated log refused: ${kept.error?.message}`);
  return { ...kept, events: kept.events, meta: kept.meta };
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

  it('fork --out writes the child of the holding plan, in several appends, and reads it back (under a 96 MiB heap: it re-reads the source three times and the child once)', async () => {
    const out = path.join(dir, 'out');
    const got = await small(['fork', file, '--out', out, '--id', 'kid', '--created-at', '7', '--encoding', 'none', '--json'], 96);
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const r = await held();
    const plan = planFork(r.meta, r.events, { childId: 'kid', createdAt: 7, storedEventCount: r.storedEventCount });
    const j = JSON.parse(got.stdout);
    expect(j).toMatchObject({ written: true, verified: true });
    expect(toJson(j.plan)).toBe(toJson(plan));
    // Most of the log is inherited: the child is far bigger than the heap that wrote it.
    expect(plan.seedLength).toBeGreaterThan(r.events.length * 0.9);
    const back = await inspectTarget(resolveTarget(j.path), { collect: true });
    expect(back.error).toBeFalsy();
    expect(deepEqualJson(back.events, childEvents(plan, r.events))).toBe(true);
    expect(deepEqualJson(back.meta, plan.child)).toBe(true);
  }, 300_000);

  it('replay --json prints every attempt the holding replay builds, streamed (holding them ran out of heap)', async () => {
    const got = await small(['replay', file, '--json']);
    expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
    const r = await held();
    const view = buildReplay(r.meta.id, r.events);
    expect(view.attempts.length).toBeGreaterThan(100);
    expect(got.stdout).toBe(toJson(view) + '\n');
  }, 300_000);

  it('diff --json of the log with itself, and with a copy cut short (the log before its last appends, either way round), prints what the comparison of the held logs computes, under a 96 MiB heap for two logs (holding them ran out of heap)', async () => {
    // The copy: the log's bytes up to a line boundary ~98% in (what the log was before its last appends).
    const size = statSync(file).size;
    const fd = openSync(file, 'r');
    const tail = Buffer.alloc(1 << 20);
    readSync(fd, tail, 0, tail.length, Math.floor(size * 0.98));
    const cutAt = Math.floor(size * 0.98) + tail.indexOf(0x0a) + 1;
    const head = Buffer.alloc(cutAt);
    readSync(fd, head, 0, cutAt, 0);
    closeSync(fd);
    const short = path.join(dir, 'short', 'session.jsonl');
    mkdirSync(path.dirname(short), { recursive: true });
    writeFileSync(short, head);
    const r = await held();
    const full = loadedFromInspection(r);
    const cut = await inspectTarget(resolveTarget(short), { collect: true, keepReplacements: true });
    const shortLoaded = loadedFromInspection(cut);
    for (const [a, b, wa, wb] of [
      [file, file, full, full],
      [file, short, full, shortLoaded],
      [short, file, shortLoaded, full],
    ] as const) {
      const got = await small(['diff', a, b, '--json'], 96);
      expect(got.code, got.stderr.slice(0, 2000)).toBe(0);
      const want = toJson(await diffSessions(diffSide(wa), diffSide(wb))) + '\n';
      expect(got.stdout.length).toBe(want.length);
      expect(got.stdout === want).toBe(true);
      if (a === b) expect(JSON.parse(got.stdout)).toMatchObject({ identical: true, dispatches: { firstDivergent: null }, transcript: { hunks: [] } });
      else expect(JSON.parse(got.stdout).transcript.hunks.length).toBeGreaterThan(0);
    }
  }, 1_500_000);
});

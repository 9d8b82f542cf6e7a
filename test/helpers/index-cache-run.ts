/**
 * Shared by test/index-cache.test.ts and test/index-cache-corpus.test.ts: the read commands the session
 * index serves, and the check that a cold run, the run that builds the index and a warm run print the same.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { runInProcess, type RunResult } from './cli.js';

export interface DispatchMark {
  key: string;
  firstChunkSeq: number;
  lastChunkSeq: number;
}

/** The read commands the index serves, for a log of `total` logical events and some of its dispatches. */
export function commandLines(file: string, total: number, dispatches: readonly DispatchMark[] = []): string[][] {
  const mid = Math.floor(total / 2);
  const last = Math.max(0, total - 1);
  const picks = dispatches.length > 2 ? [dispatches[0]!, dispatches[Math.floor(dispatches.length / 2)]!, dispatches[dispatches.length - 1]!] : dispatches;
  const request: string[][] = [
    ['request', file, '--list'],
    ['request', file, '--list', '--json'],
    ['request', file, '0'],
  ];
  for (const d of picks) {
    request.push(['request', file, String(d.firstChunkSeq), '--json']);
    request.push(['request', file, String(d.lastChunkSeq)]);
    request.push(['request', file, '--step', d.key, '--diff']);
    request.push(['request', file, '--step', d.key, '--diff', '--json']);
    request.push(['request', file, String(d.firstChunkSeq), '--body', 'deepseek']);
  }
  return [
    ...request,
    ['surface', file],
    ['surface', file, '--json'],
    ['surface', file, '--at', '0'],
    ['surface', file, '--at', String(mid), '--json'],
    ['surface', file, '--at', String(last)],
    ['surface', file, '--at', String(total + 3)],
    ['trace', file, '0'],
    ['trace', file, String(mid), '--json'],
    ['trace', file, String(last), '--all'],
    ['trace', file, String(total + 7)],
    ['history', file],
    ['history', file, '--max-messages', '1', '--before-seq', String(mid), '--json'],
    ['events', file, '--from', String(mid), '--to', String(mid + 5)],
    ['events', file, '--from', '0', '--to', '3', '--json'],
    ['events', file, '--from', String(Math.max(0, last - 2)), '--to', String(total + 3), '--json'],
    ['events', file, '--from', String(mid), '--to', String(mid + 40), '--turn', '2', '--label', 'current', 'log-only'],
    ['events', file, '--from', String(total + 5)],
  ];
}

export async function run(args: string[], cacheDir: string, extra: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return runInProcess(args, { DSH_CACHE_DIR: cacheDir, ...extra });
}

/** Cold without a cache, then the run that builds the index, then a warm run: all three equal. */
export async function expectSameEveryWay(lines: string[][], cacheDir: string): Promise<void> {
  for (const args of lines) {
    const cold = await run([...args, '--no-cache'], cacheDir);
    const build = await run(args, cacheDir);
    const warm = await run(args, cacheDir);
    expect({ args, ...build }).toEqual({ args, ...cold });
    expect({ args, ...warm }).toEqual({ args, ...cold });
  }
}

export function totalOf(expected: any): number {
  return Array.isArray(expected?.inspection?.events) ? expected.inspection.events.length : 3;
}

/** A scratch directory for one test file (removed after its tests), and fresh cache directories inside it. */
export function scratchDir(): { dir: string; freshCache(): string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-index-test-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  let dirs = 0;
  return { dir, freshCache: () => path.join(dir, `cache-${++dirs}`) };
}

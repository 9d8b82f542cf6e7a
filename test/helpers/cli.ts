import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { PROJECT_ROOT } from './corpus.js';
import { main } from '../../src/cli/main.js';

export const BIN = path.join(PROJECT_ROOT, 'bin', 'dsh.js');

/**
 * The session-index cache directory of tests (never ~/.cache): the runner's (vitest.config.ts sets
 * one per user in the temp directory), else the same fixed scratch directory. Content-keyed entries
 * and atomic writes make sharing it between test processes safe; eviction bounds it.
 */
export function testCacheDir(): string {
  return process.env['DSH_CACHE_DIR'] || path.join(os.tmpdir(), `dsh-vitest-cache-${process.getuid?.() ?? 'user'}`);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `bin/dsh.js` as a real process. */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; input?: Buffer; cwd?: string } = {}): Promise<RunResult> {
  return runNode([BIN, ...args], options);
}

/** Run a Node script as a process with the CLI tests' environment. */
export function runNode(args: string[], options: { env?: NodeJS.ProcessEnv; input?: Buffer; cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, NO_COLOR: '1', DSH_CACHE_DIR: testCacheDir(), ...options.env },
      cwd: options.cwd ?? PROJECT_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    if (options.input) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

class Capture extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(Buffer.from(chunk));
    cb();
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Run the CLI in-process (same code path as bin/dsh.js, captured streams). */
export async function runInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await main(['node', 'dsh', ...args], { stdout, stderr, env: { NO_COLOR: '1', DSH_CACHE_DIR: testCacheDir(), ...env } });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

export interface BatchResult {
  code: number;
  /** The sha256 of the run's stdout. */
  stdout: string;
  stderr: string;
  /** The reads that started workers during the run (the built modules' count; zeros for the bundle's). */
  parallel: { reads: number; groups: number; factGroups: number };
}

/**
 * Run many CLI invocations in one process of the compiled CLI (test/helpers/cli-batch.mjs): the
 * built modules (dist/cli/main.js), or with `bundle` the CLI bundle bin/dsh.js runs.
 */
export async function batchCli(runs: string[][], env: NodeJS.ProcessEnv = {}, bundle = false): Promise<BatchResult[]> {
  const r = await runNode([path.join(PROJECT_ROOT, 'test', 'helpers', 'cli-batch.mjs')], { env: { ...env, DSH_BATCH_BUNDLE: bundle ? '1' : '0' }, input: Buffer.from(JSON.stringify({ runs })) });
  if (r.code !== 0) throw new Error(`cli-batch exited ${r.code}: ${r.stderr.slice(0, 2000)}`);
  return JSON.parse(r.stdout) as BatchResult[];
}

/**
 * Progress of a long reading pass: drawn on stderr only when stderr is a terminal and the output
 * is not --json, only after about a second, erased when the pass ends; never in pipes.
 */
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { progressFor, PROGRESS_AFTER_MS } from '../src/cli/progress.js';
import { renderProgress } from '../src/cli/render/progress.js';
import { BIN, runCli } from './helpers/cli.js';
import { collectSession } from '../tools/generate.js';
import { ArtifactEncoder } from '../src/log/writer.js';

class Tty extends Writable {
  isTTY = true;
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

const io = (isTTY: boolean, env: NodeJS.ProcessEnv = {}) => {
  const stderr = new Tty();
  stderr.isTTY = isTTY;
  return { stdout: new Tty(), stderr, env };
};

async function writtenLog(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-progress-'));
  const file = path.join(dir, 'session.jsonl.zstd');
  const s = collectSession({ seed: 41, id: 'progress-41', targetBytes: 400_000, crash: null, maxBatchEvents: 40 });
  const enc = new ArtifactEncoder({ header: s.header, encoding: 'zstd' });
  const parts: Buffer[] = [await enc.header()];
  for (const b of s.batches) parts.push(await enc.batch(b));
  fs.writeFileSync(file, Buffer.concat(parts));
  return file;
}

describe('progress reporter', () => {
  it('on a TTY: nothing in the first second, then bytes, events and ETA; erased when the pass ends', () => {
    let now = 0;
    const t = io(true);
    const report = progressFor(t, {}, () => now)!;
    expect(report).toBeDefined();
    const total = 1_000_000_000;
    report({ bytes: 0, totalBytes: total, events: 0, done: false });
    now = PROGRESS_AFTER_MS - 1;
    report({ bytes: 100_000_000, totalBytes: total, events: 1000, done: false });
    expect(t.stderr.text).toBe('');
    now = 2000;
    report({ bytes: 200_000_000, totalBytes: total, events: 123_456, done: false });
    expect(t.stderr.text).toBe('\r\x1b[2Kreading 200.0 MB of 1.00 GB (20%), 123,456 events, ETA 8s');
    now = 2050; // redrawn at most every 200 ms
    report({ bytes: 210_000_000, totalBytes: total, events: 123_500, done: false });
    expect(t.stderr.text.split('reading').length).toBe(2);
    report({ bytes: total, totalBytes: total, events: 200_000, done: true });
    expect(t.stderr.text.endsWith('\r\x1b[2K')).toBe(true);
  });

  it('a pass shorter than a second draws nothing, and clears nothing', () => {
    let now = 0;
    const t = io(true);
    const report = progressFor(t, {}, () => now)!;
    report({ bytes: 10, totalBytes: 100, events: 1, done: false });
    now = 500;
    report({ bytes: 100, totalBytes: 100, events: 9, done: true });
    expect(t.stderr.text).toBe('');
  });

  it('never for a pipe or a file, with --json, or on a dumb terminal', () => {
    expect(progressFor(io(false), {})).toBeUndefined();
    expect(progressFor(io(true), { json: true })).toBeUndefined();
    expect(progressFor(io(true, { TERM: 'dumb' }), {})).toBeUndefined();
  });

  it('renders sizes and a long ETA', () => {
    expect(renderProgress({ bytes: 5_000, totalBytes: 2_000_000_000, events: 3, done: false }, 125)).toBe('reading 5 kB of 2.00 GB (0%), 3 events, ETA 2m05s');
    expect(renderProgress({ bytes: 5, totalBytes: 10, events: 3, done: false }, undefined)).toBe('reading 0 kB of 0 kB (50%), 3 events');
  });

  it('spawned with stderr a pipe: no progress, even when forced to draw at once', async () => {
    const file = await writtenLog();
    const now = ['--progress-after', '0'];
    for (const args of [['inspect', file], ['trace', file, '3', '--no-cache'], ['trace', file, '3', '--json', '--no-cache'], ['history', file, '--no-cache']]) {
      const r = await runCli([...args, ...now]);
      expect(r.code).toBe(0);
      expect(r.stderr).not.toMatch(/reading|\x1b/);
    }
  }, 60_000);

  const haveScript = spawnSync('script', ['--version']).status === 0;
  if (!haveScript) console.warn('util-linux `script` not found: the pseudo-terminal progress test is skipped');
  it.skipIf(!haveScript)('in a pseudo-terminal (util-linux script): drawn and erased, and the answer unchanged', async () => {
    const file = await writtenLog();
    const plain = await runCli(['inspect', file]);
    const env = { ...process.env, NO_COLOR: '1' };
    const cmd = `${process.execPath} ${BIN} inspect ${file} --progress-after 0`;
    const tty = execFileSync('script', ['-qec', cmd, '/dev/null'], { env }).toString('utf8');
    expect(tty).toMatch(/\r\x1b\[2Kreading [\d.]+ (kB|MB) of [\d.]+ (kB|MB) \(\d+%\), [\d,]+ events/);
    // Erased before the answer: what is left after the last erase is the answer itself.
    const after = tty.slice(tty.lastIndexOf('\r\x1b[2K') + 5).replace(/\r\n/g, '\n');
    expect(after).toBe(plain.stdout);
    const json = execFileSync('script', ['-qec', `${cmd} --json`, '/dev/null'], { env }).toString('utf8');
    expect(json).not.toMatch(/reading/);
  }, 60_000);
});

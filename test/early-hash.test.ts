/**
 * The content hash begun before a command asks for it (`prestartHash`, started by bin/dsh.js for a big
 * log named on the command line): taken over only by a hash of the same file hashed the same way,
 * stopped otherwise, and the key is the one a hash begun late gives either way.
 */
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { contentHash, lastEarlyHashOutcome, prestartHash, WORKER_MIN_BYTES } from '../src/log/index/content-hash.js';
import { FileSource } from '../src/physical/source.js';
import { prestart, wantsHashWorker } from '../src/cli/prestart.js';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-early-hash-'));
afterAll(() => fs.rmSync(TMP, { recursive: true, force: true }));
const CORES = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;

/** A file just big enough to be hashed early (sparse, with distinct bytes here and there). */
function bigFile(name: string, mark: number): string {
  const file = path.join(TMP, name);
  const fd = fs.openSync(file, 'w');
  fs.ftruncateSync(fd, WORKER_MIN_BYTES + (5 << 20) + 123);
  for (let at = 0; at < WORKER_MIN_BYTES; at += 7 << 20) fs.writeSync(fd, Buffer.from(`mark ${mark} at ${at}`), 0, undefined, at);
  fs.closeSync(fd);
  return file;
}

async function hashOf(file: string, prefixBytes?: number, background = false) {
  const source = new FileSource(file);
  try {
    if (!background) return await contentHash(source, prefixBytes);
    let help = () => {};
    const p = contentHash(source, prefixBytes, undefined, { background: true, started: (_c, h) => (help = h) });
    help();
    return await p;
  } finally {
    source.close();
  }
}

describe.skipIf(CORES < 2)('a content hash begun early', () => {
  const file = bigFile('a.bin', 1);
  const cut = (WORKER_MIN_BYTES >> 1) + 77;

  it('is taken over by the hash of the same file hashed the same way, and gives its key', async () => {
    const late = await hashOf(file);
    const lateCut = await hashOf(file, cut);
    expect(lateCut.sha256).toEqual(late.sha256);
    prestartHash(file, undefined);
    expect(await hashOf(file)).toEqual(late);
    expect(lastEarlyHashOutcome()).toBe('taken');
    prestartHash(file, cut);
    expect(await hashOf(file, cut, true)).toEqual(lateCut);
    expect(lastEarlyHashOutcome()).toBe('taken');
  });

  it('is stopped when the hash asked for is of another prefix or another file, which get their own keys', async () => {
    const late = await hashOf(file);
    const lateCut = await hashOf(file, cut);
    prestartHash(file, undefined);
    expect(await hashOf(file, cut)).toEqual(lateCut);
    expect(lastEarlyHashOutcome()).toBe('stopped');
    prestartHash(file, cut);
    expect(await hashOf(file, undefined, true)).toEqual(late);
    expect(lastEarlyHashOutcome()).toBe('stopped');
    // The path replaced by another file after the hash began: the other file's key.
    const other = bigFile('b.bin', 2);
    const otherLate = await hashOf(other);
    expect(otherLate.sha256).not.toEqual(late.sha256);
    const moved = path.join(TMP, 'c.bin');
    fs.copyFileSync(file, moved);
    prestartHash(moved, undefined);
    fs.renameSync(other, moved);
    expect(await hashOf(moved)).toEqual(otherLate);
    expect(lastEarlyHashOutcome()).toBe('stopped');
  });

  it('is not begun for a file too small for the worker', async () => {
    const small = path.join(TMP, 'small.bin');
    fs.writeFileSync(small, Buffer.alloc(1 << 20, 3));
    prestartHash(file, undefined);
    await hashOf(file);
    expect(lastEarlyHashOutcome()).toBe('taken');
    // Begun for the small file, the next hash (of another file) would stop it.
    prestartHash(small, undefined);
    await hashOf(file);
    expect(lastEarlyHashOutcome()).toBe('taken');
  });

  it('is begun by the CLI prestart for a big log named by path (not for a ZIP, nor with --no-cache)', async () => {
    const env = { DSH_CACHE_DIR: path.join(TMP, 'cache') };
    const log = bigFile('session.jsonl.zstd', 4);
    const fd = fs.openSync(log, 'r+');
    fs.writeSync(fd, Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), 0, 4, 0);
    fs.closeSync(fd);
    prestart(['trace', log, '7'], env);
    await hashOf(log);
    expect(lastEarlyHashOutcome()).toBe('taken');
    // Then each case that must not begin one: the next hash of another file would stop it.
    const zip = bigFile('export.zip', 5);
    const zfd = fs.openSync(zip, 'r+');
    fs.writeSync(zfd, Buffer.from('PK\x03\x04', 'latin1'), 0, 4, 0);
    fs.closeSync(zfd);
    for (const argv of [['trace', zip, '7'], ['trace', log, '7', '--no-cache'], ['inspect', log]]) {
      prestart(argv, env);
      await hashOf(file);
      expect({ argv, outcome: lastEarlyHashOutcome() }).toEqual({ argv, outcome: 'taken' });
      prestart(['trace', log, '7'], env);
      await hashOf(log);
    }
    prestart(['trace', log, '7'], { ...env, DSH_NO_CACHE: '1' });
    await hashOf(file);
    expect(lastEarlyHashOutcome()).toBe('taken');
  });

  it('is begun only for the invocations that read the index (events: a seq window, or NDJSON that is not turn-filtered, unlabelled or followed)', () => {
    const env = { DSH_CACHE_DIR: path.join(TMP, 'cache') };
    const log = path.join(TMP, 'session.jsonl.zstd');
    const reads = (...args: string[]) => wantsHashWorker(args, env);
    expect([reads('trace', log, '7'), reads('history', log), reads('report', log, '-o', '-')]).toEqual([true, true, true]);
    expect([reads('inspect', log), reads('check', log), reads('frames', log)]).toEqual([false, false, false]);
    expect([reads('events', log, '--from', '5'), reads('events', log, '--to=9'), reads('events', log, '--json')]).toEqual([true, true, true]);
    expect([reads('events', log), reads('events', log, '--json', '--turn', '2'), reads('events', log, '--json', '--no-labels'), reads('events', log, '--json', '-f')]).toEqual([false, false, false, false]);
    expect(reads('trace', log, '7', '--no-cache')).toBe(false);
  });
});

// One error document for a log DSH refuses: every read command's `--json` prints the same
// `{error: {class, message, cause?, note?}}` as `inspect --json`, and the text form names the cause.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './helpers/corpus.js';
import { runCli } from './helpers/cli.js';

const SOURCE = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-errdoc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The incident sample with one byte of its fourth frame's content checksum changed. */
async function corruptCopy(): Promise<string> {
  const frames = JSON.parse((await runCli(['frames', SOURCE, '--json'])).stdout).frames as { end: number; checksum: boolean }[];
  const frame = frames[3]!;
  expect(frame.checksum).toBe(true);
  const bytes = Buffer.from(readFileSync(SOURCE));
  bytes[frame.end - 1] ^= 0xff;
  const file = path.join(dir, 'session.jsonl.zstd');
  writeFileSync(file, bytes);
  return file;
}

const COMMANDS: string[][] = [
  ['surface'],
  ['events'],
  ['stats'],
  ['transcript', '--format', 'json'],
  ['compactions'],
  ['history'],
  ['secrets'],
  ['replay'],
  ['trace', '{file}', '1'],
  ['request', '{file}', '1'],
  ['request', '{file}', '--list'],
];

describe('the error document of a refused log', () => {
  it('is the same object in every read command as in inspect --json, with its cause', async () => {
    const file = await corruptCopy();
    const inspected = await runCli(['inspect', file, '--json'], { env: { DSH_NO_CACHE: '1' } });
    expect(inspected.code).toBe(1);
    const expected = JSON.parse(inspected.stdout);
    expect(expected.error.cause.message).toMatch(/checksum/i);
    for (const command of COMMANDS) {
      const args = command.includes('{file}') ? command.map((a) => (a === '{file}' ? file : a)) : [command[0]!, file, ...command.slice(1)];
      const r = await runCli([...args, '--json'], { env: { DSH_NO_CACHE: '1' } });
      expect({ args: command, code: r.code }).toEqual({ args: command, code: 1 });
      expect({ args: command, doc: JSON.parse(r.stdout) }).toEqual({ args: command, doc: expected });
    }
  }, 120_000);

  it('names the cause in text mode', async () => {
    const file = await corruptCopy();
    const cause = JSON.parse((await runCli(['inspect', file, '--json'], { env: { DSH_NO_CACHE: '1' } })).stdout).error.cause.message as string;
    for (const command of [['surface'], ['trace', '{file}', '1'], ['transcript'], ['request', '{file}', '1']]) {
      const args = command.includes('{file}') ? command.map((a) => (a === '{file}' ? file : a)) : [command[0]!, file, ...command.slice(1)];
      const r = await runCli(args, { env: { DSH_NO_CACHE: '1' } });
      expect(r.code).toBe(1);
      expect({ command, stderr: r.stderr }).toEqual({ command, stderr: expect.stringContaining(`failed validation\ndsh:   cause: ${cause}\n`) });
    }
  }, 60_000);
});

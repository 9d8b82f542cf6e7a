import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { abandonNewFile, prepareNewFile, publishNewFile, writeNewFile } from '../src/core/publish.js';
import { runCli } from './helpers/cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-newfile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const INCIDENT = 'fixtures/incident/--home-dev-acme-api--/session-incident-1';

describe('the one new-file publisher (export, report, export-otlp, redact)', () => {
  it('writes to a temporary sibling and publishes only when complete', () => {
    const file = path.join(dir, 'a.txt');
    const out = prepareNewFile(file, false);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(out.tmp)).toBe(true);
    expect(writeNewFile(out, ['he', Buffer.from('llo')], false)).toBe(5);
    expect(readFileSync(file, 'utf8')).toBe('hello');
    expect(readdirSync(dir)).toEqual(['a.txt']);
    // Abandoning after publishing removes nothing that was published.
    abandonNewFile(out);
    expect(readFileSync(file, 'utf8')).toBe('hello');
  });

  it('never replaces a file that appeared after the check, unless forced', () => {
    const file = path.join(dir, 'b.txt');
    const out = prepareNewFile(file, false);
    writeFileSync(file, 'theirs');
    expect(() => writeNewFile(out, ['mine'], false)).toThrow(/refusing to overwrite .*already exists/);
    expect(readFileSync(file, 'utf8')).toBe('theirs');
    expect(readdirSync(dir).filter((n) => n.includes('b.txt'))).toEqual(['b.txt']);
    const forced = prepareNewFile(file, true);
    publishNewFile(forced, true);
    expect(readFileSync(file, 'utf8')).toBe('');
  });

  it('abandon removes the temporary file and leaves no output', () => {
    const file = path.join(dir, 'c.txt');
    const out = prepareNewFile(file, false);
    abandonNewFile(out);
    abandonNewFile(out);
    expect(existsSync(out.tmp)).toBe(false);
    expect(existsSync(file)).toBe(false);
  });

  it('a failing writer leaves nothing behind', () => {
    const file = path.join(dir, 'd.txt');
    const out = prepareNewFile(file, false);
    function* parts() {
      yield 'partial';
      throw new Error('boom');
    }
    expect(() => writeNewFile(out, parts(), false)).toThrow('boom');
    expect(existsSync(file)).toBe(false);
    expect(existsSync(out.tmp)).toBe(false);
  });

  it('export --format otlp -o publishes through it: no temporary file left, an existing file refused (exit 2)', async () => {
    const file = path.join(dir, 'spans.json');
    const r = await runCli(['export', INCIDENT, '--format', 'otlp', '-o', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toHaveProperty('resourceSpans');
    expect(readdirSync(dir).filter((n) => n.startsWith('.spans.json'))).toEqual([]);
    const again = await runCli(['export', INCIDENT, '--format', 'otlp', '-o', file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exists/);
  });
});

/**
 * Every command's --help ends with two or three examples (as `dsh --help` does). The commands come from
 * the CLI itself (`dsh --help`'s command list), so a new command without examples fails here. Examples
 * that name the bundled fixtures are run as written (from a scratch directory holding a link to
 * fixtures/, so outputs they write land there): each must succeed and leave the fixtures unchanged.
 * `dsh --help` and the examples run as processes; each command's --help runs in-process (same main()).
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from './helpers/corpus.js';
import { runCli, runInProcess } from './helpers/cli.js';

const FIXTURES = path.join(PROJECT_ROOT, 'fixtures');

/** The command names listed under "Commands:" in `dsh --help` (commander's own `help` left out). */
function commandNames(help: string): string[] {
  const lines = help.split('\n');
  const start = lines.indexOf('Commands:');
  expect(start, 'dsh --help lists its commands').toBeGreaterThanOrEqual(0);
  const names: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!/^ {2}\S/.test(line)) {
      if (line.trim() === '') break;
      continue; // a wrapped description
    }
    const name = line.trim().split(/\s+/)[0]!;
    if (name !== 'help') names.push(name);
  }
  return names;
}

/** The lines of the help's final "Examples:" section; fails unless it is the last section. */
function examplesOf(help: string): string[] {
  const lines = help.replace(/\n+$/, '').split('\n');
  const at = lines.lastIndexOf('Examples:');
  expect(at, 'an "Examples:" section').toBeGreaterThanOrEqual(0);
  const rest = lines.slice(at + 1);
  for (const line of rest) expect(line, 'every line after "Examples:" is an example').toMatch(/^ {2}dsh \S/);
  return rest.map((l) => l.trim());
}

/** Shell-like split of one example: whitespace-separated words, "double quotes" grouping. */
function words(example: string): string[] {
  const out: string[] = [];
  for (const m of example.matchAll(/"([^"]*)"|(\S+)/g)) out.push(m[1] ?? m[2]!);
  return out;
}

function fixtureDigest(): string {
  const h = createHash('sha256');
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else h.update(`${path.relative(FIXTURES, p)}\0${st.mtimeMs}\0`).update(readFileSync(p));
    }
  };
  walk(FIXTURES);
  return h.digest('hex');
}

describe('--help examples', async () => {
  const top = await runCli(['--help']);
  const names = commandNames(top.stdout);

  it('dsh --help exits 0, lists the commands and ends with 2-3 examples', () => {
    expect(top.code).toBe(0);
    expect(names.length).toBeGreaterThan(0);
    const ex = examplesOf(top.stdout);
    expect(ex.length).toBeGreaterThanOrEqual(2);
    expect(ex.length).toBeLessThanOrEqual(3);
  });

  const helps = new Map<string, string>();
  const helpOf = async (name: string): Promise<string> => {
    if (!helps.has(name)) {
      const r = await runInProcess([name, '--help']);
      expect(r.code, `dsh ${name} --help: ${r.stderr}`).toBe(0);
      helps.set(name, r.stdout);
    }
    return helps.get(name)!;
  };

  it.each(names)('dsh %s --help ends with 2-3 examples, the first of that command', async (name) => {
    const ex = examplesOf(await helpOf(name));
    expect(ex.length).toBeGreaterThanOrEqual(2);
    expect(ex.length).toBeLessThanOrEqual(3);
    expect(words(ex[0]!)[1], ex[0]).toBe(name);
  });

  it('every example that names fixtures/ runs as written: exit 0, no stack trace, fixtures unchanged', async () => {
    const examples: string[] = [];
    for (const name of names) examples.push(...examplesOf(await helpOf(name)).filter((e) => e.includes('fixtures/')));
    expect(examples.length, 'examples on the bundled fixtures').toBeGreaterThan(0);
    const before = fixtureDigest();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-help-examples-'));
    try {
      symlinkSync(FIXTURES, path.join(dir, 'fixtures'), 'dir');
      for (const example of examples) {
        const r = await runCli(words(example).slice(1), { cwd: dir });
        expect(r.code, `${example}\n${r.stderr}`).toBe(0);
        expect(r.stdout + r.stderr, example).not.toMatch(/\n\s+at .+:\d+:\d+/);
        expect((r.stdout + r.stderr).trim(), `${example} prints something`).not.toBe('');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(fixtureDigest()).toBe(before);
  });
});

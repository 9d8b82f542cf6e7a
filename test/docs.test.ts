/**
 * The documentation stays true: README fits on a screen, every relative link and anchor of README.md and
 * docs/*.md resolves, every `dsh` example of README runs against the bundled fixtures with the exit code it
 * documents and prints the output lines it shows, the library example runs and prints what README says,
 * docs/architecture.md names only files and functions that exist, and docs/commands.md covers every command
 * and every option its `--help` prints. No network; the examples run in a temporary copy of the fixtures.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './helpers/corpus.js';

const BIN = path.join(PROJECT_ROOT, 'bin', 'dsh.js');
const README = path.join(PROJECT_ROOT, 'README.md');
const DOCS = path.join(PROJECT_ROOT, 'docs');

const read = (file: string): string => readFileSync(file, 'utf8');

interface Fence {
  lang: string;
  lines: string[];
  /** 1-based line of the first content line. */
  start: number;
}

/** Fenced code blocks (``` only) of a markdown text. */
function fences(text: string): Fence[] {
  const out: Fence[] = [];
  const lines = text.split('\n');
  let open: Fence | null = null;
  lines.forEach((line, i) => {
    const m = /^(\s*)```(.*)$/.exec(line);
    if (m) {
      if (open) {
        out.push(open);
        open = null;
      } else open = { lang: m[2]!.trim(), lines: [], start: i + 2 };
    } else if (open) open.lines.push(line);
  });
  return out;
}

/** The text with fenced blocks and inline code spans blanked, so links inside code are not links. */
function prose(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line.replace(/`[^`]*`/g, '``');
    })
    .join('\n');
}

/** GitHub's heading anchors of a markdown file (duplicates get -1, -2, …). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const DOC_FILES = [README, ...readdirSync(DOCS).filter((f) => f.endsWith('.md')).map((f) => path.join(DOCS, f))];

describe('README size', () => {
  it('README.md is at most 400 lines', () => {
    const lines = read(README).split('\n');
    if (lines.at(-1) === '') lines.pop();
    expect(lines.length).toBeLessThanOrEqual(400);
  });
});

describe('links', () => {
  it('covers README.md and the docs/ guides', () => {
    for (const name of ['architecture.md', 'commands.md', 'exactness.md', 'reliability.md']) {
      expect(DOC_FILES, name).toContain(path.join(DOCS, name));
    }
  });

  for (const file of DOC_FILES) {
    it(`every relative link of ${path.relative(PROJECT_ROOT, file)} resolves`, () => {
      const text = read(file);
      const broken: string[] = [];
      let count = 0;
      for (const m of prose(text).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        count += 1;
        const [rel, anchor] = target.split('#') as [string, string | undefined];
        const dest = rel === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(rel));
        if (!existsSync(dest)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (anchor !== undefined) {
          if (!dest.endsWith('.md') || statSync(dest).isDirectory()) broken.push(`${target}: anchor into a non-markdown file`);
          else if (!anchors(read(dest)).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${path.relative(PROJECT_ROOT, dest)}`);
        }
      }
      expect(broken).toEqual([]);
      if (file === README) expect(count).toBeGreaterThan(5);
    });
  }
});

// ---- README's dsh examples -------------------------------------------------------------------------------------

interface Example {
  /** The command as README prints it (without `$ `). */
  command: string;
  /** The exit code README documents (`# exit N`), else 0. */
  code: number;
  /** Output lines README shows under the command (text blocks only). */
  shown: string[];
  line: number;
}

function examples(text: string): Example[] {
  const out: Example[] = [];
  for (const fence of fences(text)) {
    if (fence.lang !== 'sh' && fence.lang !== 'text') continue;
    let current: Example | null = null;
    fence.lines.forEach((raw, i) => {
      const prompt = raw.startsWith('$ ');
      const line = prompt ? raw.slice(2) : raw;
      const isCommand = /^(npx )?dsh\s/.test(line) && (prompt || fence.lang === 'sh');
      if (isCommand) {
        const code = /#\s*exit (\d+)\b/.exec(line);
        current = { command: line, code: code ? Number(code[1]) : 0, shown: [], line: fence.start + i };
        out.push(current);
      } else if (prompt) current = null; // another program's command: its output is not ours
      else if (current && fence.lang === 'text') current.shown.push(raw);
    });
  }
  return out;
}

function run(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  const shell = command.replace(/^(npx )?dsh(?=\s)/, `"${process.execPath}" "${BIN}"`);
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', shell], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (d) => chunks.push(d));
    child.stderr.on('data', (d) => chunks.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out: Buffer.concat(chunks).toString('utf8') }));
  });
}


describe('README examples run against the fixtures', () => {
  const list = examples(read(README));
  let work = '';
  let env: NodeJS.ProcessEnv = {};
  let duckdbError: string | null = null;

  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), 'dsh-docs-'));
    cpSync(path.join(PROJECT_ROOT, 'fixtures'), path.join(work, 'fixtures'), { recursive: true });
    env = {
      ...process.env,
      NO_COLOR: '1',
      DSH_HOME: path.join(work, 'home'),
      DSH_CACHE_DIR: path.join(work, 'cache'),
    };
    delete env['FORCE_COLOR'];
    try {
      await import('@duckdb/node-api');
    } catch (error) {
      duckdbError = error instanceof Error ? error.message : String(error);
    }
  });
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('README has examples of the tour commands', () => {
    const commands = new Set(list.map((e) => /^(?:npx )?dsh (\S+)/.exec(e.command)![1]));
    for (const c of ['inspect', 'trace', 'request', 'surface', 'transcript', 'diff', 'check', 'report', 'stats', 'dataset', 'sql', 'export']) {
      expect(commands, c).toContain(c);
    }
  });

  it('no example writes outside its working directory', () => {
    for (const e of list) expect(e.command, `README line ${e.line}`).not.toMatch(/(^|\s)(-o|--out|--report)\s+[/~]/);
  });

  for (const example of list) {
    const needsDuckdb = /^(npx )?dsh sql\s/.test(example.command);
    it(`README line ${example.line}: ${example.command}`, async (ctx) => {
      if (needsDuckdb && duckdbError !== null) {
        const reason = `@duckdb/node-api does not load (${duckdbError}), so dsh sql cannot run`;
        console.warn(`skipped README line ${example.line}: ${reason}`);
        ctx.skip(reason);
        return;
      }
      expect([0, 1], 'README may only document exit 0 or 1').toContain(example.code);
      const { code, out } = await run(example.command, work, env);
      expect(code, out).toBe(example.code);
      const printed = new Set(out.split('\n').map((l) => l.trimEnd()));
      const missing = example.shown.filter((l) => l.trim() !== '' && !l.includes('…') && !printed.has(l.trimEnd()));
      expect(missing, `lines README shows that the command did not print:\n${out}`).toEqual([]);
    }, 60_000);
  }
});

describe('README library example', () => {
  it('runs and prints what README says it prints', async () => {
    const text = read(README);
    const block = fences(text).find((f) => f.lang === 'js' && f.lines.some((l) => l.includes("from 'dsh'")));
    expect(block).toBeDefined();
    const after = text.split('\n').slice(block!.start + block!.lines.length).join('\n');
    const claim = /^prints (.*)$/m.exec(after);
    expect(claim, 'a "prints `…`" line after the block').not.toBeNull();
    const expected = [...claim![1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    expect(expected.length).toBeGreaterThan(0);
    const result = await new Promise<{ code: number; out: string; err: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', block!.lines.join('\n')], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, DSH_NO_CACHE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    });
    expect(result.code, result.err).toBe(0);
    expect(result.out.trimEnd().split('\n')).toEqual(expected);
  }, 60_000);
});

// ---- docs/architecture.md names what exists ----------------------------------------------------------------------

describe('docs/architecture.md cites real files and functions', () => {
  const text = read(path.join(DOCS, 'architecture.md'));
  const PATH = /(?<![\w/.-])src\/[A-Za-z0-9_./-]*[A-Za-z0-9_/]/g;

  it('every src/ path exists', () => {
    const paths = [...new Set([...text.matchAll(PATH)].map((m) => m[0]))];
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((p) => !existsSync(path.join(PROJECT_ROOT, p)))).toEqual([]);
  });

  it('every `name()` is cited with its file (`name()` in src/…) and occurs in that file', () => {
    // Prose wraps, so a citation may run across a line break: read the text with whitespace collapsed.
    const flat = text.replace(/\s+/g, ' ');
    const bad: string[] = [];
    let cited = 0;
    for (const m of flat.matchAll(/`([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?)\(\)`( in (src\/[A-Za-z0-9_./-]+\.(?:ts|js|mjs)))?/g)) {
      const name = m[1]!.split('.').pop()!;
      const file = m[3];
      if (!file) {
        bad.push(`${m[0]}: a function is cited as \`name()\` in src/<file>`);
        continue;
      }
      cited += 1;
      const full = path.join(PROJECT_ROOT, file);
      if (!existsSync(full) || !new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`).test(read(full))) bad.push(`${name} not in ${file}`);
    }
    expect(cited).toBeGreaterThan(3);
    expect(bad).toEqual([]);
  });

  it('has a Mermaid diagram (its src/ paths are checked with the rest)', () => {
    const mermaid = fences(text).filter((f) => f.lang === 'mermaid');
    expect(mermaid.length).toBeGreaterThan(0);
  });
});

// ---- docs/commands.md covers every command and option ------------------------------------------------------------

describe('docs/commands.md covers the CLI', () => {
  const text = read(path.join(DOCS, 'commands.md'));

  function help(args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: PROJECT_ROOT, env: { ...process.env, NO_COLOR: '1' } });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.on('error', reject);
      child.on('close', () => resolve(out));
    });
  }

  /** The section of commands.md under `## <command>`, up to the next `## `. */
  function section(command: string): string | undefined {
    const m = new RegExp(`^## ${command}\\b[^\\n]*\\n([\\s\\S]*?)(?=^## |(?![\\s\\S]))`, 'm').exec(text);
    return m?.[1];
  }

  it('every command has a section listing every option its --help prints', async () => {
    const top = await help(['--help']);
    const listing = /^Commands:\n([\s\S]*?)(?:\n\n|(?![\s\S]))/m.exec(top)?.[1] ?? '';
    const commands = [...listing.matchAll(/^ {2}([a-z][a-z-]*) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    expect(commands.length).toBeGreaterThan(20);
    const helps = await Promise.all(commands.map((c) => help([c, '--help'])));
    const problems: string[] = [];
    commands.forEach((command, i) => {
      const body = section(command);
      if (body === undefined) {
        problems.push(`${command}: no "## ${command}" section`);
        return;
      }
      const options = new Set([...helps[i]!.matchAll(/^ {2}(?:-\w, )?(--[a-z][\w-]*)/gm)].map((m) => m[1]!));
      for (const option of options) if (option !== '--help' && !body.includes(option)) problems.push(`${command}: ${option} missing`);
    });
    expect(problems).toEqual([]);
  }, 120_000);
});

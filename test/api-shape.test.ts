/**
 * The shape of the library's types: payloads are typed (`SessionEvent` is a
 * union by `type`, `data` a view of what DSH writes), so `any` is kept to the
 * JSON boundary. This counts the `any` keywords in src/ (parsed with the
 * TypeScript compiler, so comments and words like "any" in strings do not
 * count), prints where they are, and fails when the count outside the
 * boundary rises above its ceiling.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from './helpers/corpus.js';

const SRC = path.join(PROJECT_ROOT, 'src');

/** The JSON boundary: serializing and copying values of any shape read from a log. */
const BOUNDARY = new Set(['core/json.ts']);

/**
 * `any` outside the boundary: none. Values of unchecked shape are `unknown`, read through the
 * log's views (`src/log/types.ts`) or `rec` (`src/core/records.ts`); a new `any` fails here.
 */
const CEILING = 0;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The `any` keywords of a source text, as 1-based line numbers. */
function anyLines(file: string, text: string): number[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines: number[] = [];
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) lines.push(sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return lines;
}

it('counts `any` in src/ (the JSON boundary apart) and keeps it at or under its ceiling', () => {
  let boundary = 0;
  const outside: string[] = [];
  for (const file of sources(SRC)) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    const lines = anyLines(file, readFileSync(file, 'utf8'));
    if (BOUNDARY.has(rel)) boundary += lines.length;
    else for (const l of lines) outside.push(`src/${rel}:${l}`);
  }
  console.log(`any in src/: ${boundary + outside.length} (JSON boundary ${boundary}, elsewhere ${outside.length}, ceiling ${CEILING})`);
  if (outside.length > 0) console.log(outside.join('\n'));
  expect(outside.length, outside.join('\n')).toBeLessThanOrEqual(CEILING);
});

it('sees an `any` in a type position, and none in comments or strings', () => {
  expect(anyLines('x.ts', 'let a: any;\nconst b = c as any;\nfunction f(x: Record<string, any>): any[] { return []; }\n')).toEqual([1, 2, 3, 3]);
  expect(anyLines('x.ts', '// any\nconst s = "any";\n/** any */ let t: unknown;\n')).toEqual([]);
});

/** The package's entry points (package.json `exports`), as the built modules a user imports. */
function entryPoints(): [string, string][] {
  const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { default: string }> };
  return Object.entries(pkg.exports).map(([name, e]) => [name, path.join(PROJECT_ROOT, e.default)]);
}

/**
 * Runtime names the entry points may export. Lower it as the CLI's commands move behind `Session` and
 * what only they used leaves the entry points; it never rises except for a new feature's API, named here.
 * The designed API is to stay within 100. 153 after #47's trim; +12 for #49 and #50, which landed beside it:
 * the check config loader the CLI's check and report read (7), BEHAVIOUR_CODES, the context view's
 * contextByTurn, headerCacheBreaks and CONTEXT_CATEGORIES, and jsonText (history --json in pieces).
 */
const EXPORT_CEILING = 165;

/**
 * The runtime names the public API exports, over all entry points (a name exported by two counts once).
 * The figure is printed so each change shows where it stands against {@link EXPORT_CEILING}.
 */
it('counts the runtime names the entry points export', async () => {
  const names = new Set<string>();
  const per: string[] = [];
  for (const [name, file] of entryPoints()) {
    const mod = (await import(file)) as Record<string, unknown>;
    const keys = Object.keys(mod);
    for (const k of keys) names.add(k);
    per.push(`${name} ${keys.length}`);
  }
  console.log(`runtime exports: ${names.size} distinct over ${per.length} entry points (${per.join(', ')}), ceiling ${EXPORT_CEILING}`);
  expect(names.size).toBeLessThanOrEqual(EXPORT_CEILING);
  expect(names.has('openSession')).toBe(true);
});

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** ../shared/corpus relative to the project root (CI lays shared/ beside the clone). */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CORPUS = process.env['DSH_CORPUS'] ?? path.resolve(PROJECT_ROOT, '..', 'shared', 'corpus');
export const HAVE_CORPUS = existsSync(path.join(CORPUS, 'README.md'));
export const SKIP_REASON = `../shared/corpus not found at ${CORPUS}: conformance tests skipped (set DSH_CORPUS to run them)`;

export interface CorpusCase {
  /** expected.json path */
  expectedPath: string;
  /** artifact path */
  artifact: string;
  /** `<root>/…` form DSH uses in messages */
  rawPath: string;
  name: string;
  expected: any;
}

let cache: CorpusCase[] | undefined;

export function corpusCases(): CorpusCase[] {
  if (!HAVE_CORPUS) return [];
  if (cache) return cache;
  const out: CorpusCase[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === 'expected.json') {
        const expected = JSON.parse(readFileSync(p, 'utf8'));
        const artifact = path.join(CORPUS, expected.artifact.path);
        const rootAbs = path.join(CORPUS, expected.artifact.root);
        out.push({
          expectedPath: p,
          artifact,
          rawPath: '<root>' + artifact.slice(rootAbs.length),
          name: path.relative(CORPUS, path.dirname(p)),
          expected,
        });
      }
    }
  };
  walk(CORPUS);
  cache = out;
  return out;
}

/** Directories that hold an expected-root.json (a DSH root). */
export function corpusRoots(): string[] {
  if (!HAVE_CORPUS) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === 'expected-root.json') out.push(dir);
    }
  };
  walk(CORPUS);
  return out.sort();
}

/** Every artifact file under the corpus (including `repaired/`), sorted. */
export function corpusArtifacts(): string[] {
  if (!HAVE_CORPUS) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === 'session.jsonl' || e.name === 'session.jsonl.zstd') out.push(p);
    }
  };
  walk(CORPUS);
  return out.sort();
}

/**
 * The CLI bundle (scripts/bundle-cli.mjs: dist/cli bundled into dist/cli/bundle, a few chunks
 * instead of ~100 modules) is what bin/dsh.js runs when it is at least as new as the build.
 * test/cli-bundle-parity.test.ts (npm run test:full) proves it prints exactly what the built modules print.
 */
import { describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from './helpers/corpus.js';
import { BIN, runNode } from './helpers/cli.js';

const BUNDLE = path.join(PROJECT_ROOT, 'dist', 'cli', 'bundle', 'main.js');
const BUILT = path.join(PROJECT_ROOT, 'dist', 'cli', 'main.js');
const HAVE_BUNDLE = existsSync(BUILT) && existsSync(BUNDLE);
if (!HAVE_BUNDLE) console.warn('dist/cli/bundle is not built (npm run build): the CLI bundle tests are skipped');

/**
 * The built modules run as bin/dsh.js runs its CLI, without the bundle: a script beside the tests'
 * temporary files that imports dist/cli/main.js itself.
 */
function builtEntry(): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'dsh-built-cli-')), 'dsh-built.mjs');
  writeFileSync(file, `import { main } from ${JSON.stringify(pathToFileURL(BUILT).href)};\nprocess.exitCode = await main(process.argv);\n`);
  return file;
}

/** Every file URL the process `args` loads as a module, main thread (a loader hook that names them on stderr); `entry` default bin/dsh.js. */
async function modulesLoaded(args: string[], entry = BIN): Promise<{ code: number; files: string[] }> {
  const hook = `export async function load(url, context, next) { if (url.startsWith('file:')) process.stderr.write('MODULE ' + url + '\\n'); return next(url, context); }`;
  const register = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(hook))});`;
  const r = await runNode(['--import', 'data:text/javascript,' + encodeURIComponent(register), entry, ...args]);
  const root = pathToFileURL(PROJECT_ROOT).href + '/';
  const files = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('MODULE '))
    .map((l) => l.slice('MODULE '.length).replace(root, ''));
  return { code: r.code, files };
}

describe.skipIf(!HAVE_BUNDLE)('the CLI bundle', () => {
  it('is what bin/dsh.js loads (not the built modules), which load a few times as many modules', async () => {
    const fixture = path.join(PROJECT_ROOT, 'fixtures', 'incident', '--home-dev-acme-api--', 'session-incident-1', 'session.jsonl.zstd');
    const bundled = await modulesLoaded(['inspect', fixture, '--no-cache']);
    const entry = builtEntry();
    const plain = await modulesLoaded(['inspect', fixture, '--no-cache'], entry);
    rmSync(path.dirname(entry), { recursive: true, force: true });
    expect(bundled.code).toBe(0);
    expect(plain.code).toBe(0);
    const ours = (files: string[]) => files.filter((f) => f.startsWith('dist/'));
    expect(ours(bundled.files)).toContain('dist/cli/bundle/main.js');
    expect(ours(bundled.files).filter((f) => !f.startsWith('dist/cli/bundle/'))).toEqual([]);
    expect(ours(plain.files)).toContain('dist/cli/main.js');
    expect(ours(plain.files).filter((f) => f.startsWith('dist/cli/bundle/'))).toEqual([]);
    // The point of it: a fraction of the module loads.
    expect(ours(bundled.files).length * 3).toBeLessThan(ours(plain.files).length);
  });

  it('is run only when it is at least as new as the build it was made from', async () => {
    // bin/dsh.js beside a stand-in dist/: each entry says which copy ran.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-bundle-choice-'));
    try {
      mkdirSync(path.join(dir, 'bin'));
      copyFileSync(BIN, path.join(dir, 'bin', 'dsh.js'));
      const entries = (sub: string, says: string) => {
        const at = path.join(dir, 'dist', 'cli', sub);
        mkdirSync(at, { recursive: true });
        writeFileSync(path.join(at, 'exit.js'), 'export const EXIT = { internal: 70 };\n');
        writeFileSync(path.join(at, 'main.js'), `export async function main() { process.stdout.write(${JSON.stringify(says)}); return 0; }\n`);
        return path.join(at, 'main.js');
      };
      const built = entries('', 'built');
      const bundle = entries('bundle', 'bundle');
      const run = async () => {
        const r = await runNode([path.join(dir, 'bin', 'dsh.js'), 'inspect', 'x']);
        expect(r.code).toBe(0);
        return r.stdout;
      };
      const at = (file: string, seconds: number) => utimesSync(file, seconds, seconds);
      at(built, 1_000_000);
      at(bundle, 1_000_000);
      expect(await run()).toBe('bundle');
      at(bundle, 999_999);
      expect(await run()).toBe('built');
      at(bundle, 1_000_001);
      expect(await run()).toBe('bundle');
      rmSync(path.join(dir, 'dist', 'cli', 'bundle'), { recursive: true });
      expect(await run()).toBe('built');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

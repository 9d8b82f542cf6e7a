#!/usr/bin/env node
// Bundles the built CLI (dist/cli, from `tsc`) into dist/cli/bundle: an entry for each module
// bin/dsh.js loads (main, exit) and a chunk for each command, split where they
// share code, so a command loads a few files instead of ~100 modules (Node 20's module loader pays
// per module; `dsh inspect` of a small log starts ~90 ms sooner). bin/dsh.js runs the bundle only
// when it is at least as new as dist/cli/main.js (else the built modules). Library code (`import … from 'dsh'`) and worker threads keep loading dist/ itself.
// Without rolldown (an install without dev dependencies) this says so and leaves no bundle.
import { readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const outdir = path.join(dist, 'cli', 'bundle');
const ENTRIES = ['main', 'exit'];

let build;
try {
  ({ build } = await import('rolldown'));
} catch {
  await rm(outdir, { recursive: true, force: true });
  process.stderr.write('bundle-cli: rolldown is not installed; bin/dsh.js runs dist/cli unbundled\n');
  process.exit(0);
}

// Each bundled module keeps its own address: `import.meta.url` in it is the address of the dist/
// module it was built from, so the workers, data files and modules it names relative to itself are
// where they were (a chunk's own address is dist/cli/bundle/<chunk>.js).
const ownUrl = {
  name: 'own-module-url',
  transform(code, id) {
    if (!id.startsWith(dist + path.sep) || !code.includes('import.meta.url')) return null;
    const rel = path.relative(outdir, id).split(path.sep).join('/');
    return { code: code.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), map: null };
  },
};

for (const e of ENTRIES) await readFile(path.join(dist, 'cli', `${e}.js`)); // built first (tsc), or fail here
// Written beside, then renamed into place: an interrupted build leaves no half bundle for bin/dsh.js
// to load (until the rename there is none, and it runs the built modules).
const staging = `${outdir}.tmp-${process.pid}`;
await rm(staging, { recursive: true, force: true });
await build({
  input: Object.fromEntries(ENTRIES.map((e) => [e, path.join(dist, 'cli', `${e}.js`)])),
  platform: 'node',
  // Packages stay imports (native bindings, optional DuckDB, `createRequire` users): only dist/ is bundled.
  external: (id) => !id.startsWith('.') && !path.isAbsolute(id),
  plugins: [ownUrl],
  // Names stay as written (`keepNames`): error classes and functions are reported by name.
  output: { dir: staging, format: 'esm', keepNames: true, entryFileNames: '[name].js', chunkFileNames: '[name]-[hash].js', sourcemap: false },
  logLevel: 'warn',
});
await rm(outdir, { recursive: true, force: true });
await rename(staging, outdir);

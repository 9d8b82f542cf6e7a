/**
 * Vitest global setup: the report writer inlines the compiled page script
 * (dist/report/page/main.js, see src/report/client.ts), also when tests run
 * the writer from src/. Compile it (tsc -p tsconfig.page.json, type-checked)
 * when it is missing or older than its sources, so tests never inline a
 * stale page. Likewise the CLI bundle bin/dsh.js runs (scripts/bundle-cli.mjs) when dist/cli is
 * newer than it (after a bare `tsc`), so process tests run the bundle of the code they test.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export default function setup(): void {
  buildPage();
  buildCliBundle();
}

function buildCliBundle(): void {
  const built = path.join(ROOT, 'dist', 'cli', 'main.js');
  if (!existsSync(built)) return;
  const bundle = path.join(ROOT, 'dist', 'cli', 'bundle', 'main.js');
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(built).mtimeMs) return;
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'bundle-cli.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`scripts/bundle-cli.mjs failed:\n${r.stdout}${r.stderr}`);
}

function buildPage(): void {
  const out = path.join(ROOT, 'dist', 'report', 'page', 'main.js');
  const pageDir = path.join(ROOT, 'src', 'report', 'page');
  const sources = [path.join(ROOT, 'tsconfig.page.json'), ...readdirSync(pageDir).map((f) => path.join(pageDir, f))];
  const built = existsSync(out) ? statSync(out).mtimeMs : -1;
  if (sources.every((f) => statSync(f).mtimeMs <= built)) return;
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.page.json')], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tsc -p tsconfig.page.json failed:\n${r.stdout}${r.stderr}`);
}

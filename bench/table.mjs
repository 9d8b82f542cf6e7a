// Prints README's benchmark table (Markdown) from bench/out/results.json, one column group per size:
// `node bench/table.mjs [results.json]`. Rows are matched by the start of their name.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const file = process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), 'out', 'results.json');
const report = JSON.parse(readFileSync(file, 'utf8'));
const ROWS = [
  ['baseline: decode + split + `JSON.parse` (in-process)', 'baseline'],
  ['streaming reader (stored view, in-process)', 'readArtifact'],
  ['structural frame scan (in-process; GB/s of zstd input)', 'structural frame scan'],
  ['inspect pass, one thread (in-process)', 'inspect pass, one thread'],
  ['`dsh inspect`', 'dsh inspect <log>', true],
  ['`dsh inspect -j 1` / `-j 2`', ['dsh inspect <log> -j 1', 'dsh inspect <log> -j 2']],
  ['`dsh check`', 'dsh check <log>', true],
  ['`dsh check -j 1` / `-j 2`', ['dsh check <log> -j 1', 'dsh check <log> -j 2']],
  ['`dsh check --secrets`', 'dsh check <log> --secrets'],
  ['`dsh inspect --json`', 'dsh inspect <log> --json', true],
  ['`dsh events --json`', 'dsh events <log> --json', true],
  ['`dsh events --json --no-labels` (one pass)', 'dsh events <log> --json --no-labels'],
  ['`dsh frames` (wall, incl. start-up and every row)', 'dsh frames'],
  ['`dsh request <last dispatch> --json`', 'dsh request'],
  ['`dsh trace <last summary> --json`', 'dsh trace'],
  ['`dsh surface --json`', 'dsh surface <log> --json'],
  ['`zstd -dc > /dev/null`', 'zstd -dc >'],
  ['`zstd -dc \\| jq -c .`', 'zstd -dc |'],
];
const sizes = report.sizes ?? report.results ?? [];
const find = (size, prefix, exact) => size.rows.find((r) => (exact ? r.name === prefix : r.name.startsWith(prefix)));
const cell = (size, r) => {
  if (!r) return ['', '', '', ''];
  const base = find(size, 'baseline');
  const s = (r.ms / 1000).toFixed(2);
  const rate = r.compressedGBPerSec !== undefined ? `${r.compressedGBPerSec.toFixed(r.compressedGBPerSec < 1 ? 2 : 1)} GB/s zstd` : Math.round(r.mbPerSec).toString();
  const x = base && r.compressedGBPerSec === undefined ? (base.ms / r.ms).toFixed(2) : '';
  return [s, rate, x, r.peakRssMiB ?? ''];
};
const head = ['measurement', ...sizes.flatMap((z) => [`${z.size}: s`, 'MB/s', 'x base', 'RSS MiB'])];
console.log(`| ${head.join(' | ')} |`);
console.log(`| --- | ${head.slice(1).map(() => '---:').join(' | ')} |`);
for (const [label, match, exact] of ROWS) {
  const cells = sizes.flatMap((z) => {
    if (Array.isArray(match)) {
      const parts = match.map((m) => cell(z, find(z, m, true)));
      return [0, 1, 2, 3].map((i) => parts.map((p) => p[i]).join(' / '));
    }
    return cell(z, find(z, match, exact));
  });
  console.log(`| ${label} | ${cells.join(' | ')} |`);
}

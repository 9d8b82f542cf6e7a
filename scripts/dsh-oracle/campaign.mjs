#!/usr/bin/env node
// Differential campaign for missing/null/mistyped nested fields: for every record
// shape in the corpus's raw roots (record type + field path, array indices folded),
// mutate up to --per instances (delete the field, set it to null, or to a value of
// each other JSON type), lay each mutation out as its own one-session root in a temp
// dir (never the corpus), and compare DSH's own `inspect(id)` (probe.mts under the
// oracle built by setup.mjs) with dsh's verdict for the same id (built dist/).
//   node scripts/dsh-oracle/campaign.mjs --oracle /tmp/dsh-oracle [--per 2] [--out /tmp/dsh-campaign] [--cli 40]
// Prints the agreement figure and writes disagreements to <out>/disagreements.ndjson.
// --cli N additionally checks N mutations (all disagreements first) through the
// spawned `dsh inspect --json`. Never run in CI: it needs DSH's sources.
import { spawnSync } from 'node:child_process';
import { dshVerdicts } from './oracle.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const oracle = path.resolve(opt('oracle', '/tmp/dsh-oracle'));
const per = Number(opt('per', '2'));
const out = path.resolve(opt('out', '/tmp/dsh-campaign'));
const cliChecks = Number(opt('cli', '40'));
const only = opt('type', undefined);
// --encoding zstd writes each mutation as DSH's zstd artifact (header frame, then one frame of the body).
const encoding = opt('encoding', 'none');
const { compressFrame } = await import(path.join(repo, 'dist/physical/encoder.js'));
const corpus = path.resolve(repo, '../shared/corpus');

function* rawArtifacts(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name === 'root-zstd' || e.name === 'repaired' || e.name === 'damaged') continue;
      yield* rawArtifacts(p);
    } else if (e.name === 'session.jsonl' && p.includes(`${path.sep}root-raw${path.sep}`)) yield p;
  }
}

/** Every field path in a record, arrays folded to their first element. */
function* fieldPaths(value, prefix = [], depth = 0) {
  if (depth > 7 || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    if (value.length > 0) {
      yield [...prefix, 0];
      yield* fieldPaths(value[0], [...prefix, 0], depth + 1);
    }
    return;
  }
  for (const key of Object.keys(value)) {
    yield [...prefix, key];
    yield* fieldPaths(value[key], [...prefix, key], depth + 1);
  }
}

const MUTATIONS = {
  delete: undefined,
  null: null,
  number: 7,
  negative: -1,
  fraction: 1.5,
  string: 'x',
  empty: '',
  boolean: true,
  array: [],
  object: {},
};

function mutate(record, p, kind) {
  const copy = structuredClone(record);
  let parent = copy;
  for (const k of p.slice(0, -1)) parent = parent[k];
  const last = p[p.length - 1];
  if (kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(last, 1);
    else delete parent[last];
  } else parent[last] = structuredClone(MUTATIONS[kind]);
  return copy;
}

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
const taken = new Map();
const jobs = [];
for (const file of rawArtifacts(corpus)) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  let header;
  try {
    header = JSON.parse(lines[0]);
  } catch {
    continue;
  }
  const sessionDir = path.dirname(file);
  const projectDir = path.dirname(sessionDir);
  const rel = path.relative(corpus, file);
  const records = lines.map((l) => {
    try {
      return l === '' ? undefined : JSON.parse(l);
    } catch {
      return undefined;
    }
  });
  const typeOf = (i) => (i === 0 ? 'header' : String(records[i]?.type));
  // Where a record sits decides which checks reach it: a fork's seed (before its
  // session/end-seed), the first or the last record of its type.
  const endSeed = records.findIndex((r, i) => i > 0 && r?.type === 'session/end-seed');
  const firstOf = new Map();
  const lastOf = new Map();
  records.forEach((r, i) => {
    if (r === undefined) return;
    if (!firstOf.has(typeOf(i))) firstOf.set(typeOf(i), i);
    lastOf.set(typeOf(i), i);
  });
  for (let i = 0; i < lines.length; i++) {
    const record = records[i];
    if (record === undefined) continue;
    const type = typeOf(i);
    if (only !== undefined && type !== only) continue;
    const place = i > 0 && i < endSeed ? 'seed' : firstOf.get(type) === i ? 'first' : lastOf.get(type) === i ? 'last' : undefined;
    if (place === undefined) continue;
    for (const p of fieldPaths(record)) {
      for (const kind of Object.keys(MUTATIONS)) {
        const shape = `${type} ${place} ${p.map((k) => (typeof k === 'number' ? '[]' : k)).join('.')} ${kind}`;
        const seen = taken.get(shape) ?? new Set();
        if (seen.size >= per || seen.has(rel)) continue;
        const mutated = mutate(record, p, kind);
        const text = [...lines];
        text[i] = JSON.stringify(mutated);
        seen.add(rel);
        taken.set(shape, seen);
        const key = `m${jobs.length}`;
        const root = path.join(out, key);
        const target = path.join(root, path.basename(projectDir), path.basename(sessionDir));
        fs.mkdirSync(target, { recursive: true });
        if (encoding === 'zstd') {
          const [head, ...body] = text.join('\n').split(/(?<=\n)/);
          const frames = [await compressFrame(Buffer.from(head))];
          if (body.length > 0) frames.push(await compressFrame(Buffer.from(body.join(''))));
          fs.writeFileSync(path.join(target, 'session.jsonl.zstd'), Buffer.concat(frames));
        } else fs.writeFileSync(path.join(target, 'session.jsonl'), text.join('\n'));
        jobs.push({ key, root, id: header.id, compression: encoding, shape, source: `${rel}:${i + 1}`, mutation: { line: i + 1, path: p, kind } });
      }
    }
  }
}
fs.writeFileSync(path.join(out, 'jobs.json'), JSON.stringify(jobs));
console.error(`${jobs.length} mutations over ${taken.size} shapes`);

// DSH's answers.
const theirs = dshVerdicts(oracle, path.join(out, 'jobs.json'));

// dsh's answers, in process through the same code the CLI runs.
const { resolveTarget } = await import(path.join(repo, 'dist/log/target.js'));
const { inspectTarget } = await import(path.join(repo, 'dist/log/session.js'));
const { createDecoder } = await import(path.join(repo, 'dist/physical/decoders.js'));
const decoder = createDecoder('auto');
async function ours(job) {
  try {
    const r = await inspectTarget(resolveTarget(job.id, { root: job.root, compression: job.compression }), { decoder });
    return r.error ? { ok: false, class: r.error.class, message: r.error.message } : { ok: true, events: r.storedEventCount + r.closers.length };
  } catch (e) {
    return { ok: false, class: e?.name, message: String(e?.message), thrown: true };
  }
}
const same = (a, b) => a.ok === b.ok && (a.ok ? a.events === b.events : a.message === b.message);
let agree = 0;
const bad = [];
const byType = new Map();
for (const job of jobs) {
  const d = theirs.get(job.key);
  const o = await ours(job);
  const t = job.shape.split(' ')[0];
  const row = byType.get(t) ?? { n: 0, agree: 0 };
  row.n++;
  if (same(d, o)) {
    agree++;
    row.agree++;
  } else bad.push({ ...job, dsh: d, ours: o });
  byType.set(t, row);
}
fs.writeFileSync(path.join(out, 'results.ndjson'), jobs.map((j) => JSON.stringify({ ...j, dsh: theirs.get(j.key) })).join('\n') + '\n');
fs.writeFileSync(path.join(out, 'disagreements.ndjson'), bad.map((b) => JSON.stringify(b)).join('\n') + (bad.length ? '\n' : ''));
for (const [t, r] of [...byType].sort()) console.log(`${t.padEnd(32)} ${r.agree}/${r.n}`);
console.log(`agreement: ${agree}/${jobs.length} (${((100 * agree) / jobs.length).toFixed(2)}%)`);

// The spawned CLI on a sample (disagreements first).
if (cliChecks > 0) {
  const sample = [...bad.map((b) => b.key), ...jobs.filter((_, i) => i % Math.max(1, Math.floor(jobs.length / cliChecks)) === 0).map((j) => j.key)].slice(0, cliChecks);
  let cliAgree = 0;
  for (const key of sample) {
    const job = jobs.find((j) => j.key === key);
    const r = spawnSync(process.execPath, [path.join(repo, 'bin/dsh.js'), 'inspect', '--json', '--compression', job.compression, '--root', job.root, job.id], { encoding: 'utf8', maxBuffer: 1 << 30 });
    let doc;
    try {
      doc = JSON.parse(r.stdout.trim().split('\n').pop());
    } catch {
      doc = {};
    }
    const d = theirs.get(key);
    const o = doc.error ? { ok: false, message: doc.error.message } : { ok: r.status === 0, events: doc.events?.length };
    if (same(d, o) && ((d.ok && r.status === 0) || (!d.ok && r.status === 1))) cliAgree++;
  }
  console.log(`cli sample: ${cliAgree}/${sample.length} agree with DSH (exit 1 for every refusal)`);
}

#!/usr/bin/env node
// The second half of `npm run lint:deps`: reads dependency-cruiser's JSON result on stdin
// (`depcruise src tools bin --config .dependency-cruiser.cjs -T json | node scripts/deps-report.mjs`),
// prints its rule violations as `depcruise` itself does, and adds the one rule the configuration
// cannot state exactly: the top-level folders of src/ (core, physical, log, views, the writers, api,
// cli; a file directly in src/ counts as its own folder) import nothing of each other in a circle,
// type-only imports included. dependency-cruiser's own folder rule (`no-folder-cycle` in
// .dependency-cruiser.cjs) sees every folder at every depth, but names an edge by the folder of the
// imported module, so a circle that closes only through a subfolder (src/views -> src/log/index,
// with src/log -> src/views) can slip past it; here each module is counted in its top-level folder.
// Exit code: dependency-cruiser's (its error count), else 1 when a folder cycle is found.
import { format } from 'dependency-cruiser';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const text = Buffer.concat(chunks).toString('utf8');
if (text.trim() === '') {
  process.stderr.write('deps-report: no dependency-cruiser result on stdin (did depcruise fail to start?)\n');
  process.exit(2);
}
const result = JSON.parse(text);
const report = await format(result, { outputType: 'err' });
process.stdout.write(report.output);

/** The top-level folder of a path under src/ (`src/x/...` -> `src/x`; `src/index.ts` stays itself), else undefined. */
function topFolder(p) {
  const m = /^src\/([^/]+)(\/)?/.exec(p);
  if (!m) return undefined;
  return m[2] ? `src/${m[1]}` : p;
}

/** The folder graph: folder -> folder -> the module imports that make the edge. */
function folderGraph(modules) {
  const graph = new Map();
  for (const m of modules) {
    const from = topFolder(m.source);
    if (!from) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const d of m.dependencies ?? []) {
      const to = topFolder(d.resolved);
      if (!to || to === from) continue;
      const edges = graph.get(from);
      if (!edges.has(to)) edges.set(to, []);
      edges.get(to).push(`${m.source} -> ${d.resolved}`);
      if (!graph.has(to)) graph.set(to, new Map());
    }
  }
  return graph;
}

/** Strongly connected components of more than one folder (Tarjan). */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v).keys()) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

const graph = folderGraph(result.modules ?? []);
const found = cycles(graph);
if (found.length === 0) {
  process.stdout.write(`✔ no folder cycles among the ${[...graph.keys()].filter((f) => !f.endsWith('.ts')).length} top-level folders of src/\n\n`);
} else {
  for (const scc of found) {
    const members = new Set(scc);
    process.stdout.write(`  error no-folder-cycle-top: the folders ${scc.join(', ')} import each other in a circle:\n`);
    for (const from of scc) {
      for (const [to, edges] of [...graph.get(from)].sort(([a], [b]) => (a < b ? -1 : 1))) {
        if (!members.has(to)) continue;
        process.stdout.write(`    ${from} -> ${to} (${edges.length} import${edges.length === 1 ? '' : 's'}, e.g. ${edges[0]})\n`);
      }
    }
  }
  process.stdout.write(`\nx ${found.length} folder cycle${found.length === 1 ? '' : 's'} among the top-level folders of src/\n\n`);
}
process.exitCode = report.exitCode > 0 ? report.exitCode : found.length > 0 ? 1 : 0;

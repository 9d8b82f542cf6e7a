#!/usr/bin/env node
// Keeps DSH's verdicts from a campaign run (campaign.mjs --out DIR) as a CI fixture:
// one mutation per distinct verdict template (quoted names and numbers folded) and
// record type, so `test/field-verdicts.test.ts` replays them against dsh without DSH.
//   node scripts/dsh-oracle/record.mjs DIR [DIR...] > test/data/dsh-field-verdicts.json
import fs from 'node:fs';
import path from 'node:path';

const template = (r) => (r.ok ? 'ok' : r.message.replace(/"(?:[^"\\]|\\.)*"/g, '"…"').replace(/\d+/g, 'N'));
const seen = new Set();
const cases = [];
for (const dir of process.argv.slice(2)) {
  for (const line of fs.readFileSync(path.join(dir, 'results.ndjson'), 'utf8').split('\n')) {
    if (line === '') continue;
    const r = JSON.parse(line);
    const type = r.shape.split(' ')[0];
    const key = `${r.compression} ${type} ${template(r.dsh)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const [source] = r.source.split(':');
    cases.push({
      source,
      encoding: r.compression,
      line: r.mutation.line,
      path: r.mutation.path,
      mutation: r.mutation.kind,
      dsh: r.dsh.ok ? { events: r.dsh.events } : { class: r.dsh.class, message: r.dsh.message.split(r.root).join('<root>') },
    });
  }
}
const head = JSON.stringify({ tag: 'dsh-v0.1.1-rc.2', note: "DSH's own inspect(id) verdicts on mutated corpus artifacts, recorded by scripts/dsh-oracle" }).slice(0, -1);
process.stdout.write(`${head},"cases":[\n${cases.map((c) => JSON.stringify(c)).join(',\n')}\n]}\n`);

#!/usr/bin/env node
// Regenerates fixtures/ with the project's own writer (deterministic: fixed
// seeds and times; re-running yields byte-identical files). Build first:
//   npm run build:tools && node scripts/make-fixtures.mjs
import { rm, readFile, readdir, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectSession, writeGeneratedArtifact } from '../build/tools/generate.js';
import { sessionPath } from '../dist/log/layout.js';
import { forkScript, incidentScript, rawScript } from './incident-story.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, '..', 'fixtures');
const incidentRoot = path.join(fixtures, 'incident');
const rawRoot = path.join(fixtures, 'raw-sample');

// One encoder on every Node version, so the bytes do not depend on the runtime's libzstd.
const small = { encoder: 'mongodb-js', randomFeatures: false, toolOutputBytes: [300, 2500], verbosity: 0.25, maxBatchEvents: 64 };

// The incident (its texts and tool outputs: scripts/incident-story.mjs): 4 turns;
// turn 1 investigates a failed nightly deploy; turn 2 switches the model (request
// header change), is rate-limited once (llm/retry) and fixes the bug; turn 3
// prunes a tool result and compacts turn 1 into a summary; turn 4 crashes with
// the deploy's durable tool/call and no result, and its next write is torn.
const incident = {
  ...small,
  seed: 20260601,
  id: 'session-incident-1',
  cwd: '/home/dev/acme-api',
  createdAt: 1785100000000,
  turns: 4,
  features: { 1: ['title'], 2: ['retry', 'header-change'], 3: ['prune', 'compaction'] },
  crash: 'mid-tool',
  tornTail: true,
  script: incidentScript,
};

// A fork child of the incident, seeded with its first two completed turns.
const parent = collectSession({ ...incident, tornTail: false });
const turn2End = parent.events.find((e) => e.type === 'turn/end' && e.data.turn === 2);
const fork = {
  ...small,
  seed: 20260602,
  id: 'session-incident-1-fork-1',
  cwd: incident.cwd,
  createdAt: 1785100900000,
  turns: 1,
  fork: { parentId: incident.id, seed: parent.events.slice(0, turn2End.seq + 1) },
  script: forkScript,
};

const raw = {
  ...small,
  seed: 20260603,
  id: 'session-raw-1',
  cwd: '/home/dev/acme-web',
  createdAt: 1785200000000,
  turns: 2,
  features: { 1: ['title'] },
  script: rawScript,
};

await rm(incidentRoot, { recursive: true, force: true });
await rm(rawRoot, { recursive: true, force: true });

const written = [];
for (const [root, opts, encoding] of [
  [incidentRoot, incident, 'zstd'],
  [incidentRoot, fork, 'zstd'],
  [rawRoot, raw, 'none'],
]) {
  const header = { version: 0, id: opts.id, createdAt: opts.createdAt, cwd: opts.cwd, delegationDepth: 0 };
  const file = sessionPath(root, header, encoding);
  const info = await writeGeneratedArtifact(file, { ...opts, encoding });
  written.push({ file, info });
}

let total = 0;
for (const { file, info } of written) {
  const bytes = await readFile(file);
  total += bytes.length;
  const sha = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  console.log(
    `${path.relative(process.cwd(), file)}  ${bytes.length} B  events=${info.events} durable=${info.durableEvents} batches=${info.batches}` +
      (info.tornAt !== null ? ` tornAt=${info.tornAt}` : '') +
      `  sha256=${sha}…`,
  );
}
console.log(`total ${total} B`);

// Runs the compiled CLI once per argv in one process, so a test can make thousands of CLI runs with
// worker threads available (they need the .js build): the built modules (dist/cli/main.js), or with
// DSH_BATCH_BUNDLE=1 the bundle bin/dsh.js runs (dist/cli/bundle/main.js).
// stdin: JSON {runs: string[][]}; stdout: JSON [{code, stdout, stderr, parallel}] where
// stdout is the sha256 of the run's stdout and parallel the reads that started workers during it.
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { parallelStats } from '../../dist/log/parallel.js';

// The bundle's modules are its own: its reads are not counted in dist/'s parallelStats (zeros).
const { main } = process.env.DSH_BATCH_BUNDLE === '1' ? await import('../../dist/cli/bundle/main.js') : await import('../../dist/cli/main.js');

class Capture extends Writable {
  chunks = [];
  _write(chunk, _enc, cb) {
    this.chunks.push(Buffer.from(chunk));
    cb();
  }
}

const input = JSON.parse(await new Promise((resolve) => {
  const parts = [];
  process.stdin.on('data', (d) => parts.push(d));
  process.stdin.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
}));
const results = [];
for (const argv of input.runs) {
  const stdout = new Capture();
  const stderr = new Capture();
  const before = { ...parallelStats() };
  const code = await main(['node', 'dsh', ...argv], { stdout, stderr, env: process.env });
  const after = parallelStats();
  results.push({
    code,
    stdout: createHash('sha256').update(Buffer.concat(stdout.chunks)).digest('hex'),
    stderr: Buffer.concat(stderr.chunks).toString('utf8'),
    parallel: { reads: after.reads - before.reads, groups: after.groups - before.groups, factGroups: after.factGroups - before.factGroups },
  });
}
process.stdout.write(JSON.stringify(results));

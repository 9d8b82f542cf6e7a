import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { readdirSync } from 'node:fs';
import { runCli } from './helpers/cli.js';
import { PROJECT_ROOT } from './helpers/corpus.js';
import { nodeZstdAvailable } from '../src/physical/decoders.js';

/** The bundled incident's zstd session file. */
function incidentLog(): string {
  const root = path.join(PROJECT_ROOT, 'fixtures', 'incident');
  const project = readdirSync(root)[0]!;
  const session = readdirSync(path.join(root, project))[0]!;
  return path.join(root, project, session, 'session.jsonl.zstd');
}

describe('choosing a decoder the running Node lacks', () => {
  it('--decoder node-zlib is a usage error (exit 2) where node:zlib has no zstd, and reads the log where it has', async () => {
    const log = incidentLog();
    for (const json of [false, true]) {
      const r = await runCli(['inspect', log, '--decoder', 'node-zlib', ...(json ? ['--json'] : []), '--no-cache']);
      expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
      if (nodeZstdAvailable()) {
        expect(r.code).toBe(0);
      } else {
        expect(r.code).toBe(2);
        if (json) expect(JSON.parse(r.stdout.trim()).error.class).toBe('UsageError');
        else expect(r.stderr).toMatch(/node-zlib decoder needs Node >= 22\.15/);
      }
    }
  });
});

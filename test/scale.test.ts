import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { constants } from 'node:buffer';
import path from 'node:path';
import os from 'node:os';
import { BIN } from './helpers/cli.js';
import { writeGeneratedArtifact } from '../tools/generate.js';

const SLOW = process.env['DSH_SLOW_TESTS'] === '1';
if (!SLOW) console.warn('scale tests skipped: set DSH_SLOW_TESTS=1 to generate a log larger than V8\'s maximum string length and stream it');

describe.skipIf(!SLOW)('streaming beyond V8 string limits', () => {
  it(
    'events --json over a log whose logical text exceeds the maximum string length completes, in bounded memory',
    async () => {
      const limit = constants.MAX_STRING_LENGTH;
      const dir = path.join(process.env['DSH_SCALE_DIR'] ?? os.tmpdir(), 'dsh-scale');
      mkdirSync(dir, { recursive: true });
      const file = path.join(dir, 'session.jsonl.zstd');
      const target = Math.ceil(limit * 1.1);
      if (!existsSync(file)) {
        await writeGeneratedArtifact(file, { seed: 77, id: 'scale', cwd: '/home/dev/scale', targetBytes: target, encoding: 'zstd' });
      }
      expect(statSync(file).size).toBeGreaterThan(0);
      let lines = 0;
      let bytes = 0;
      let peak = 0;
      const child = spawn(process.execPath, [BIN, 'events', file, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.on('data', (d: Buffer) => {
        bytes += d.length;
        for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) lines++;
      });
      const timer = setInterval(() => {
        try {
          const status = readFileSync(`/proc/${child.pid}/status`, 'utf8') as string;
          const m = /VmRSS:\s+(\d+)/.exec(status);
          if (m) peak = Math.max(peak, Number(m[1]) * 1024);
        } catch {
          /* process gone */
        }
      }, 200);
      const code: number = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? -1)));
      clearInterval(timer);
      expect(code, err).toBe(0);
      expect(bytes).toBeGreaterThan(limit);
      expect(lines).toBeGreaterThan(1_000_000);
      if (peak > 0) expect(peak).toBeLessThan(1024 * 1024 * 1024);
    },
    60 * 60 * 1000,
  );
});

/**
 * dispatches.cost_usd: the ledger's pricing applied to each dispatch of a
 * generated session whose calls fall inside the shipped price window, read
 * back with DuckDB; an unpriced dispatch (1970 clock, outside every window)
 * is null, never zero.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { duckRows, haveDuckdb } from './helpers/dataset.js';
import { collectSession } from '../tools/generate.js';
import { sessionPath, writeArtifactFile } from '../src/log/writer.js';
import { bucketsOf } from '../src/views/stats.js';
import { loadPriceTable, priceUsage } from '../src/views/prices.js';

const HAVE_DUCKDB = await haveDuckdb();
const T0 = 1785000000000; // 2026-07-25, inside the shipped DeepSeek price window

describe.skipIf(!HAVE_DUCKDB)('dataset dispatches carry the ledger cost' + (HAVE_DUCKDB ? '' : ' (skipped: @duckdb/node-api is not installed)'), () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'dsh-dataset-cost-'));
  const root = path.join(tmp, 'root');
  const out = path.join(tmp, 'out');
  beforeAll(async () => {
    for (const [id, createdAt] of [
      ['priced', T0],
      ['epoch', 0],
    ] as const) {
      const s = collectSession({ seed: 11, id, turns: 3, createdAt, toolOutputBytes: [100, 400], randomFeatures: false });
      await writeArtifactFile(sessionPath(root, s.header, 'zstd'), { header: s.header, encoding: 'zstd', batches: s.batches });
    }
    const r = await runCli(['dataset', root, '-o', out]);
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('cost_usd equals priceUsage of the dispatch usage at its first chunk time; unpriced is null', async () => {
    const rows = await duckRows(out, 'dispatches', 'session_id, "index"');
    const prices = loadPriceTable();
    const priced = rows.filter((r) => r['session_id'] === 'priced');
    const epoch = rows.filter((r) => r['session_id'] === 'epoch');
    expect(priced.length).toBeGreaterThan(0);
    expect(epoch.length).toBe(priced.length);
    let withUsage = 0;
    for (const r of priced) {
      const usage = r['usage_json'] === null ? null : JSON.parse(String(r['usage_json']));
      if (usage === null) {
        expect(r['cost_usd']).toBeNull();
        continue;
      }
      withUsage++;
      const p = priceUsage(bucketsOf(usage), r['model'] as string, r['provider'] as string, prices, { currency: 'USD', at: Number(new Date(r['start_time'] as string | number)) });
      expect(p.priced, JSON.stringify(r)).toBe(true);
      if (p.priced) expect(r['cost_usd']).toBeCloseTo(Number(p.atto) / 1e18, 12);
      expect(r['cost_usd'] as number).toBeGreaterThan(0);
    }
    expect(withUsage).toBeGreaterThan(0);
    for (const r of epoch) expect(r['cost_usd']).toBeNull();
  });
});

import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

/** Rows of one table of a dataset, read with DuckDB (an engine that did not write the files). */
export async function duckRows(dir: string, table: string, orderBy: string): Promise<Record<string, unknown>[]> {
  const tableDir = path.join(dir, table);
  if (!existsSync(tableDir) || readdirSync(tableDir).filter((f) => f.endsWith('.parquet')).length === 0) return [];
  const duck = await import('@duckdb/node-api');
  const instance = await duck.DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  try {
    const r = await c.runAndReadAll(`select * from read_parquet('${path.join(tableDir, '*.parquet').replace(/'/g, "''")}', union_by_name = true) order by ${orderBy}`);
    return r.getRowObjectsJS().map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])));
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

export async function haveDuckdb(): Promise<boolean> {
  try {
    await import('@duckdb/node-api');
    return true;
  } catch {
    return false;
  }
}

/**
 * A Python with pyarrow: imported if present, else installed from PyPI once
 * (`pip install pyarrow`, as .ci/run does). Returns the reason when neither works.
 */
export function pyarrowPython(): { python: string } | { skip: string } {
  for (const python of ['python3', 'python']) {
    const probe = spawnSync(python, ['-c', 'import pyarrow'], { encoding: 'utf8' });
    if (probe.error) continue;
    if (probe.status === 0) return { python };
    const install = spawnSync(python, ['-m', 'pip', 'install', '--quiet', 'pyarrow'], { encoding: 'utf8', timeout: 240_000 });
    if (install.status === 0 && spawnSync(python, ['-c', 'import pyarrow']).status === 0) return { python };
    return { skip: `pyarrow is not importable and pip install pyarrow failed: ${(install.stderr || String(install.error ?? '')).trim().split('\n').slice(-1)[0]}` };
  }
  return { skip: 'no python3 on PATH: the pyarrow reader test is skipped' };
}

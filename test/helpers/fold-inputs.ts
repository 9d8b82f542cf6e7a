/**
 * The logs the fold tests read (lean rows, the fold thread): every corpus artifact in place, the check
 * suite's rule mutations, and corpus logs with a packed row moved to another step or turn (the step
 * rules then fire on a row's members), written under a scratch folder removed after the run.
 */
import { afterAll } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases } from './corpus.js';
import { MUTATIONS } from './mutations.js';

const ROW = /^\{"type":"(text|reasoning|tool-call)-chunks"/;

/** `text` with its `n`-th packed row (counted over the rows, wrapping) moved to another step (odd `n`) or turn (even). */
function moveRow(text: string, n: number): string | undefined {
  const lines = text.split('\n');
  const rows = lines.flatMap((l, i) => (ROW.test(l) ? [i] : []));
  if (rows.length === 0) return undefined;
  const at = rows[n % rows.length] as number;
  const row = JSON.parse(lines[at] as string);
  if (n % 2 === 1) row.data.step += 1;
  else row.data.turn += 1;
  lines[at] = JSON.stringify(row);
  return lines.join('\n');
}


/** Every input: the corpus artifacts in place, the rule mutations and moved rows written to a scratch folder. */
export async function foldInputs(prefix: string): Promise<{ targets: [string, string][]; withRows: ReturnType<typeof corpusCases> }> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const targets: [string, string][] = [];
  for (const c of corpusCases()) targets.push([c.name, c.artifact]);
  for (const [i, m] of MUTATIONS.entries()) {
    const file = path.join(scratch, `m${i}`, m.name ?? 'session.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, await m.build());
    targets.push([`mutation ${m.rule} ${m.why}`, file]);
  }
  const withRows = corpusCases().filter((c) => c.artifact.endsWith('session.jsonl') && readFileSync(c.artifact, 'utf8').split('\n').some((l) => ROW.test(l)));
  for (let n = 0; n < 60 && withRows.length > 0; n++) {
    const c = withRows[(n * 7) % withRows.length]!;
    const moved = moveRow(readFileSync(c.artifact, 'utf8'), n);
    if (moved === undefined) continue;
    const file = path.join(scratch, `moved${n}`, 'session.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, moved);
    targets.push([`${c.name} with row ${n} moved`, file]);
  }
  return { targets, withRows };
}


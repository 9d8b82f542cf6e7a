/**
 * Issue #23: DSH's verdict on missing, null and mistyped fields, field by field.
 * `test/data/dsh-field-verdicts.json` holds DSH's own `inspect(id)` answers on
 * corpus artifacts mutated one field at a time (recorded by scripts/dsh-oracle
 * from DSH's sources at the tag: one case per distinct verdict and record type,
 * TypeErrors included). Each mutation is rebuilt here from the corpus by the
 * same edit, in a temp root, and dsh must give DSH's class and exact text.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CORPUS, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { compressFrame } from '../src/physical/encoder.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

interface Case {
  source: string;
  encoding: 'none' | 'zstd';
  line: number;
  path: (string | number)[];
  mutation: 'delete' | 'null' | 'number' | 'negative' | 'fraction' | 'string' | 'empty' | 'boolean' | 'array' | 'object';
  dsh: { events: number } | { class: string; message: string };
}

const VALUES: Record<Exclude<Case['mutation'], 'delete'>, unknown> = { null: null, number: 7, negative: -1, fraction: 1.5, string: 'x', empty: '', boolean: true, array: [], object: {} };
const recorded = JSON.parse(readFileSync(path.join(import.meta.dirname, 'data', 'dsh-field-verdicts.json'), 'utf8')) as { cases: Case[] };

function mutate(record: unknown, at: (string | number)[], kind: Case['mutation']): unknown {
  const copy = structuredClone(record) as Record<string | number, unknown>;
  let parent = copy;
  for (const k of at.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  const last = at[at.length - 1]!;
  if (kind !== 'delete') parent[last] = structuredClone(VALUES[kind]);
  else if (Array.isArray(parent)) parent.splice(last as number, 1);
  else delete parent[last];
  return copy;
}

describe.skipIf(!HAVE_CORPUS)("issue #23: DSH's verdict on every recorded field mutation", () => {
  it(`${recorded.cases.length} mutations (one per DSH verdict and record type) get DSH's class and text`, async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'dsh-field-verdicts-'));
    try {
      let n = 0;
      const kinds = new Set<string>();
      for (const c of recorded.cases) {
        const lines = readFileSync(path.join(CORPUS, c.source), 'utf8').split('\n');
        lines[c.line - 1] = JSON.stringify(mutate(JSON.parse(lines[c.line - 1]!), c.path, c.mutation));
        const id = JSON.parse(readFileSync(path.join(CORPUS, c.source), 'utf8').split('\n')[0]!).id as string;
        const root = path.join(scratch, `r${n++}`);
        const sessionDir = path.join(root, path.basename(path.dirname(path.dirname(c.source))), path.basename(path.dirname(c.source)));
        mkdirSync(sessionDir, { recursive: true });
        const text = lines.join('\n');
        if (c.encoding === 'zstd') {
          const cut = text.indexOf('\n') + 1;
          const frames = [await compressFrame(Buffer.from(text.slice(0, cut)))];
          if (cut < text.length) frames.push(await compressFrame(Buffer.from(text.slice(cut))));
          writeFileSync(path.join(sessionDir, 'session.jsonl.zstd'), Buffer.concat(frames));
        } else writeFileSync(path.join(sessionDir, 'session.jsonl'), text);
        const label = `${c.source}:${c.line} ${c.path.join('.')} ${c.mutation} (${c.encoding})`;
        const r = await runInProcess(['inspect', id, '--root', root, '--compression', c.encoding, '--json']);
        const doc = JSON.parse(r.stdout.trim().split('\n').pop()!);
        if ('events' in c.dsh) {
          expect(r.code, label).toBe(0);
          expect(doc.events.length, label).toBe(c.dsh.events);
        } else {
          expect(r.code, label).toBe(1);
          expect({ class: doc.error?.class, message: doc.error?.message }, label).toEqual({ class: c.dsh.class, message: c.dsh.message.split('<root>').join(root) });
          kinds.add(c.dsh.class);
        }
        rmSync(root, { recursive: true, force: true });
      }
      expect(kinds.size).toBeGreaterThan(1);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 300_000);
});

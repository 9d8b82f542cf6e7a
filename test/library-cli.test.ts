// The library and the CLI are one program: on every corpus artifact, each view's data through
// `openSession()` equals what the same command prints with --json (or its {error} document).
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { errorDocument, openSession, type Result, type Session } from '../src/index.js';

/** Plain JSON of a value, as `--json` prints it. */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

/** The library's answer as the CLI would print it: the value, or the `{error}` document. */
function asPrinted<T>(r: Result<T>, shape: (v: T) => unknown = (v) => v): unknown {
  return r.ok ? plain(shape(r.value)) : plain(errorDocument(r.error));
}

async function cli(args: string[], cache: string): Promise<unknown> {
  const r = await runInProcess([...args, '--json'], { DSH_CACHE_DIR: cache });
  expect([0, 1, 2], `${args.join(' ')}: ${r.stderr}`).toContain(r.code);
  return JSON.parse(r.stdout);
}

async function cliLines(args: string[], cache: string): Promise<unknown[]> {
  const r = await runInProcess([...args, '--json'], { DSH_CACHE_DIR: cache });
  expect([0, 1, 2], `${args.join(' ')}: ${r.stderr}`).toContain(r.code);
  return r.stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
}

/** Seqs worth tracing: the first and last event and one in the middle (none when the log is refused). */
async function seqsOf(session: Session): Promise<number[]> {
  const v = await session.verdict();
  if (v.error) return [0];
  const total = v.storedEventCount + v.closers.length;
  return [...new Set([0, Math.floor(total / 2), Math.max(0, total - 1)])];
}

describe.skipIf(!HAVE_CORPUS)(`library = CLI on every corpus artifact ${HAVE_CORPUS ? '' : SKIP_REASON}`, () => {
  it('inspect, events, trace (and --depth 2), surface, request --list, request, request --diff, stats, compactions, transcript and replay give the same data', async () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'dsh-libcli-'));
    let compared = 0;
    try {
      for (const c of corpusCases()) {
        const file = c.artifact;
        const opened = await openSession(file, { cache: { dir: cache, enabled: true, maxBytes: 1 << 30, note: () => {} } });
        if (!opened.ok) {
          expect(plain(errorDocument(opened.error)), c.name).toEqual(await cli(['inspect', file], cache));
          continue;
        }
        const s = opened.value;
        try {
          expect(asPrinted(await s.inspect()), `${c.name} inspect`).toEqual(await cli(['inspect', file], cache));
          const events = await s.events();
          const lines = await cliLines(['events', file], cache);
          if (events.ok) expect(plain(events.value), `${c.name} events`).toEqual(lines);
          else expect(plain(errorDocument(events.error)), `${c.name} events`).toEqual(lines[lines.length - 1]);
          for (const seq of await seqsOf(s)) {
            expect(asPrinted(await s.trace(seq)), `${c.name} trace ${seq}`).toEqual(await cli(['trace', file, String(seq)], cache));
            expect(
              asPrinted(await s.trace(seq, { depth: 2 }), (x) => ({ ...x.trace, provenance: x.tree, origins: x.origins })),
              `${c.name} trace ${seq} --depth 2`,
            ).toEqual(await cli(['trace', file, String(seq), '--depth', '2'], cache));
          }
          expect(asPrinted(await s.surface(), (v) => v.messages), `${c.name} surface`).toEqual(await cli(['surface', file], cache));
          const verdict = await s.verdict();
          const requests = await s.requests();
          expect(asPrinted(requests, (rows) => ({ sessionId: verdict.header?.id ?? null, requests: rows })), `${c.name} request --list`).toEqual(
            await cli(['request', file, '--list'], cache),
          );
          if (requests.ok && requests.value.length > 0) {
            const last = requests.value[requests.value.length - 1]!;
            const seq = String(last.firstChunkSeq);
            expect(asPrinted(await s.request(Number(seq))), `${c.name} request ${seq}`).toEqual(await cli(['request', file, seq], cache));
            expect(asPrinted(await s.requestDiff(Number(seq))), `${c.name} request ${seq} --diff`).toEqual(await cli(['request', file, seq, '--diff'], cache));
          }
          expect(asPrinted(await s.stats()), `${c.name} stats`).toEqual(await cli(['stats', file], cache));
          expect(asPrinted(await s.compactions()), `${c.name} compactions`).toEqual(await cli(['compactions', file], cache));
          expect(asPrinted(await s.transcript()), `${c.name} transcript`).toEqual(await cli(['transcript', file, '--format', 'json'], cache));
          expect(asPrinted(await s.replay()), `${c.name} replay`).toEqual(await cli(['replay', file], cache));
          compared++;
        } finally {
          s.close();
        }
      }
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
    expect(compared).toBeGreaterThan(200);
  }, 900_000);
});

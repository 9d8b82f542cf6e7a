/**
 * `transcript` and `history` print while they re-read the log (the final
 * fold from one validating pass or the saved session index), never holding
 * it. Their output must equal, byte for byte, what the holding path prints:
 * the library's collected views (`buildTranscript`, `allPages` over the held
 * logical events) rendered the way the commands rendered them before — on
 * every corpus artifact, cold and warm, in every format, and on mutated logs.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Chalk } from 'chalk';
import { corpusCases, HAVE_CORPUS, SKIP_REASON } from './helpers/corpus.js';
import { runInProcess } from './helpers/cli.js';
import { inspectTarget } from '../src/log/session.js';
import { resolveTarget } from '../src/log/target.js';
import { loadedFromInspection } from '../src/views/messages.js';
import { buildTranscript } from '../src/views/transcript.js';
import { allPages, DEFAULT_SIZE_LIMITS, pageSizeWarnings } from '../src/views/history.js';
import { renderTranscriptMarkdown, renderTranscriptText } from '../src/cli/render/transcript.js';
import { renderHistoryPage } from '../src/cli/render/history.js';
import { buildReplay } from '../src/views/replay.js';
import { renderReplay } from '../src/cli/render/replay.js';
import { failureJson, renderFailure } from '../src/cli/render/surface.js';
import { toJson } from '../src/core/json.js';
import { errorDocument } from '../src/core/errors.js';

if (!HAVE_CORPUS) console.warn(SKIP_REASON);

const plain = new Chalk({ level: 0 });
const scratch = mkdtempSync(path.join(os.tmpdir(), 'dsh-stream-views-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** What the holding `transcript` command printed (stdout, exit code) for one artifact. */
async function heldTranscript(file: string, format: 'text' | 'markdown' | 'json'): Promise<{ code: number; stdout: string }> {
  const r = await inspectTarget(resolveTarget(file), { collect: true });
  if (r.error) return { code: 1, stdout: format === 'json' ? failureJson(r.error) : '' };
  const t = buildTranscript(loadedFromInspection(r));
  if (format === 'json') return { code: 0, stdout: toJson(t) + '\n' };
  if (format === 'markdown') return { code: 0, stdout: renderTranscriptMarkdown(t) };
  return { code: 0, stdout: renderTranscriptText(t, plain, 104) };
}

/** What the holding `history --all-pages` printed. */
async function heldHistory(file: string, maxMessages: number, json: boolean): Promise<{ code: number; stdout: string; warnings: string[] }> {
  const r = await inspectTarget(resolveTarget(file), { collect: true, keepReplacements: true });
  if (r.error || !r.events || !r.meta) return { code: 1, stdout: json ? toJson(errorDocument(r.error!)) + '\n' : '', warnings: [] };
  const pages = allPages(r.events, undefined, maxMessages);
  const warnings = pages.flatMap((p) => pageSizeWarnings(p, DEFAULT_SIZE_LIMITS));
  if (json) return { code: 0, stdout: toJson({ sessionId: r.meta.id, pages }) + '\n', warnings };
  return { code: 0, stdout: pages.map((p, i) => renderHistoryPage(p, plain, i)).join('\n') + '* = counted append-origin message\n', warnings };
}

describe.skipIf(!HAVE_CORPUS)('streamed transcript', () => {
  it('prints what the holding path printed on every corpus artifact, in text, markdown and json, cold and warm', async () => {
    const cache = path.join(scratch, 'cache-transcript');
    let compared = 0;
    let accepted = 0;
    for (const c of corpusCases()) {
      for (const format of ['json', 'text', 'markdown'] as const) {
        const want = await heldTranscript(c.artifact, format);
        if (want.code === 0) accepted++;
        // --no-cache (cold, nothing saved), then a cold pass that saves the index, then warm.
        for (const env of [{ DSH_NO_CACHE: '1' }, { DSH_CACHE_DIR: cache }, { DSH_CACHE_DIR: cache }]) {
          const got = await runInProcess(['transcript', c.artifact, '--format', format], env);
          expect(got.code, `${c.name} ${format}`).toBe(want.code);
          expect(got.stdout, `${c.name} ${format}`).toBe(want.stdout);
          compared++;
        }
      }
      const r = await inspectTarget(resolveTarget(c.artifact));
      if (r.error) {
        const got = await runInProcess(['transcript', c.artifact], { DSH_NO_CACHE: '1' });
        expect(got.stderr).toContain(renderFailure(r.error).trim());
      }
    }
    expect(compared).toBe(9 * corpusCases().length);
    // The corpus has plenty of readable sessions with tool calls, prunes and compactions.
    expect(accepted).toBeGreaterThan(200 * 3);
  }, 600_000);

  it('prints what the holding path printed on mutated logs (single flipped bytes, truncations)', async () => {
    const picks = corpusCases().filter((c) => /compaction|prune|tool|crash|torn/.test(c.name)).slice(0, 12);
    expect(picks.length).toBeGreaterThan(3);
    let n = 0;
    for (const c of picks) {
      const bytes = readFileSync(c.artifact);
      const variants: Buffer[] = [];
      for (const at of [Math.floor(bytes.length / 3), Math.floor(bytes.length / 2), bytes.length - 3]) {
        const b = Buffer.from(bytes);
        b[at] = (b[at] as number) ^ 0x20;
        variants.push(b);
      }
      variants.push(bytes.subarray(0, Math.floor(bytes.length * 0.8)));
      for (const [i, v] of variants.entries()) {
        const dir = path.join(scratch, 'mut', `${path.basename(path.dirname(c.artifact))}-${i}`);
        mkdirSync(dir, { recursive: true });
        const file = path.join(dir, path.basename(c.artifact));
        writeFileSync(file, v);
        for (const format of ['json', 'text'] as const) {
          const want = await heldTranscript(file, format);
          const got = await runInProcess(['transcript', file, '--format', format], { DSH_NO_CACHE: '1' });
          expect(got.code, `${file} ${format}`).toBe(want.code);
          expect(got.stdout, `${file} ${format}`).toBe(want.stdout);
          n++;
        }
      }
    }
    expect(n).toBe(picks.length * 8);
  }, 300_000);
});

describe.skipIf(!HAVE_CORPUS)('streamed history --all-pages', () => {
  it('prints what the holding path printed on every corpus artifact (json and text, several page sizes), cold and warm', async () => {
    const cache = path.join(scratch, 'cache-history');
    let compared = 0;
    for (const c of corpusCases()) {
      for (const max of [1, 3, 50]) {
        for (const json of [true, false]) {
          const want = await heldHistory(c.artifact, max, json);
          for (const env of [{ DSH_NO_CACHE: '1' }, { DSH_CACHE_DIR: cache }]) {
            const got = await runInProcess(['history', c.artifact, '--all-pages', '--max-messages', String(max), ...(json ? ['--json'] : [])], env);
            expect(got.code, `${c.name} ${max} ${json}`).toBe(want.code);
            expect(got.stdout, `${c.name} ${max} ${json}`).toBe(want.stdout);
            for (const w of want.warnings.slice(0, 3)) expect(got.stderr).toContain(w);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(12 * corpusCases().length);
  }, 600_000);
});

/** What the holding `replay` printed. */
async function heldReplay(file: string, json: boolean, chunks: boolean): Promise<{ code: number; stdout: string }> {
  const r = await inspectTarget(resolveTarget(file), { collect: true, keepReplacements: true });
  if (r.error || !r.events || !r.meta) return { code: 1, stdout: json ? toJson(errorDocument(r.error!)) + '\n' : '' };
  const view = buildReplay(r.meta.id, r.events, { keepChunks: chunks });
  return { code: 0, stdout: json ? toJson({ ...view, attempts: view.attempts }) + '\n' : renderReplay(view, plain, view.attempts) };
}

describe.skipIf(!HAVE_CORPUS)('streamed replay', () => {
  it('prints what the holding path printed on every corpus artifact (json, json --chunks, text), cold and warm', async () => {
    const cache = path.join(scratch, 'cache-replay');
    let compared = 0;
    for (const c of corpusCases()) {
      for (const [json, chunks] of [[true, false], [true, true], [false, false]] as const) {
        const want = await heldReplay(c.artifact, json, chunks);
        for (const env of [{ DSH_NO_CACHE: '1' }, { DSH_CACHE_DIR: cache }, { DSH_CACHE_DIR: cache }]) {
          const got = await runInProcess(['replay', c.artifact, ...(json ? ['--json'] : []), ...(chunks ? ['--chunks'] : [])], env);
          expect(got.code, `${c.name} ${json} ${chunks}`).toBe(want.code);
          expect(got.stdout, `${c.name} ${json} ${chunks}`).toBe(want.stdout);
          compared++;
        }
      }
    }
    expect(compared).toBe(9 * corpusCases().length);
  }, 600_000);
});

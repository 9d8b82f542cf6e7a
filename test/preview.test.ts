import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { HAVE_CORPUS, SKIP_REASON, corpusCases } from './helpers/corpus.js';

const INCIDENT = 'fixtures/incident/--home-dev-acme-api--/session-incident-1';

/** seq → preview text of `events` human lines (seq, time, turn/step, label, type, preview). */
function eventsPreviews(stdout: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of stdout.split('\n')) {
    const m = /^\s*(\d+) {2}\S+ {2}\S+\s+\S+\s+\S+\s+(?:\[synthetic\] )?(.*)$/.exec(line);
    if (m) out.set(Number(m[1]), m[2]!);
  }
  return out;
}

/** seq → preview text of `history` human lines (mark, seq, type, preview). */
function historyPreviews(stdout: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of stdout.split('\n')) {
    const m = /^[* ] +(\d+) {2}\S+\s+(.*)$/.exec(line);
    if (m) out.set(Number(m[1]), m[2]!);
  }
  return out;
}

async function compare(target: string) {
  const ev = await runCli(['events', target, '--color', 'never']);
  const hi = await runCli(['history', target, '--all-pages', '--max-messages', '1000000', '--color', 'never']);
  expect(ev.code, ev.stderr).toBe(0);
  expect(hi.code, hi.stderr).toBe(0);
  const a = eventsPreviews(ev.stdout);
  const b = historyPreviews(hi.stdout);
  expect(b.size).toBeGreaterThan(0);
  let compared = 0;
  for (const [seq, text] of b) {
    if (!a.has(seq)) continue;
    expect(text, `seq ${seq}`).toBe(a.get(seq));
    compared++;
  }
  return compared;
}

describe('one event preview: events and history print the same event the same way', () => {
  it('on the bundled incident sample, every event history lists', async () => {
    expect(await compare(INCIDENT)).toBeGreaterThan(20);
  });

  it.skipIf(!HAVE_CORPUS)(`on corpus sessions with compactions and retries${HAVE_CORPUS ? '' : ` (${SKIP_REASON})`}`, async () => {
    const picks = corpusCases().filter((c) => /compaction|retry|subagent/.test(c.name) && !/damaged|repaired/.test(c.name)).slice(0, 4);
    expect(picks.length).toBeGreaterThan(0);
    for (const c of picks) expect(await compare(c.artifact)).toBeGreaterThan(0);
  });
});

/**
 * `dsh report A --compare B -o x.html`: a static, script-free page with the
 * two dispatch timelines side by side and the first divergent dispatch
 * highlighted; only the named output is written.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectSession } from '../tools/generate.js';
import { writeArtifactFile } from '../src/log/writer.js';
import type { SessionEvent } from '../src/log/types.js';
import { runCli } from './helpers/cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-diff-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function pair(sub: string): Promise<{ a: string; b: string; firstKey: string; pairs: number }> {
  const s = collectSession({ seed: 3, id: 'cmp-a', turns: 3, randomFeatures: false, toolOutputBytes: [200, 500] });
  const events = JSON.parse(JSON.stringify(s.events)) as SessionEvent[];
  // One attempt per step (no retries): one dispatch per step key.
  // The second turn's user message differs: the first dispatch of turn 2 diverges.
  const user = events.filter((e) => e.type === 'user/message')[1]!;
  user.data.content[0].text = 'Please <b>do</b> something else & stop';
  const a = path.join(dir, sub, 'a', 'session.jsonl.zstd');
  const b = path.join(dir, sub, 'b', 'session.jsonl');
  await writeArtifactFile(a, { header: s.header, encoding: 'zstd', batches: [s.events] });
  await writeArtifactFile(b, { header: { ...s.header, id: 'cmp-b' }, encoding: 'none', batches: [events] });
  const turns = new Map<string, number>();
  for (const e of s.events) if (e.type === 'assistant/chunk' && e.data.chunk.type === 'finish') turns.set(`${e.data.turn}/${e.data.step}`, 1);
  return { a, b, firstKey: '2/1#0', pairs: turns.size };
}

describe('dsh report --compare', () => {
  it('writes a script-free page: timelines side by side, first divergence highlighted and linked, text escaped', async () => {
    const { a, b, firstKey, pairs } = await pair('one');
    const out = path.join(dir, 'out', 'cmp.html');
    mkdirSync(path.dirname(out), { recursive: true });
    const r = await runCli(['report', a, '--compare', b, '-o', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const manifest = JSON.parse(r.stdout);
    expect(manifest).toMatchObject({ output: out, sessionIds: { a: 'cmp-a', b: 'cmp-b' }, firstDivergent: { a: firstKey, b: firstKey, differs: ['messages'] } });
    const html = readFileSync(out, 'utf8');
    expect(manifest.bytes).toBe(Buffer.byteLength(html));
    expect(html).not.toMatch(/<script/i);
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)![1]!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('script-src');
    const css = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(css).digest('base64')}'`);
    // one timeline row per aligned pair, exactly one highlighted as the first divergence
    expect(html.match(/<tr class="(same|differs)[^"]*"/g)!.length).toBe(pairs);
    expect(html.match(/class="differs first"/g)!.length).toBe(1);
    const first = /<tr class="differs first" id="first-divergence"[^>]*>([\s\S]*?)<\/tr>/.exec(html)![1]!;
    expect(first).toContain(`<b>${firstKey}</b>`);
    expect(first).toContain('first divergence');
    expect(html).toContain('href="#first-divergence"');
    // the changed user message, escaped
    expect(html).toContain('Please &lt;b&gt;do&lt;/b&gt; something else &amp; stop');
    expect(html).not.toContain('<b>do</b>');
    // nothing else written beside the inputs or the output
    expect(readdirSync(path.dirname(a))).toEqual(['session.jsonl.zstd']);
    expect(readdirSync(path.dirname(out))).toEqual(['cmp.html']);
    // an existing output is refused (exit 2) and left alone
    const again = await runCli(['report', a, '--compare', b, '-o', out]);
    expect(again.code).toBe(2);
    expect(readFileSync(out, 'utf8')).toBe(html);
  });

  it('a side DSH cannot read: its error for that side, exit 1, nothing written', async () => {
    const { a } = await pair('two');
    const bad = path.join(dir, 'bad', 'session.jsonl');
    mkdirSync(path.dirname(bad), { recursive: true });
    writeFileSync(bad, JSON.stringify({ version: 42, id: 'x', createdAt: 1 }) + '\n');
    const out = path.join(dir, 'never.html');
    const r = await runCli(['report', a, '--compare', bad, '-o', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^dsh: side b \(/);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes('never'))).toEqual([]);
  });
});

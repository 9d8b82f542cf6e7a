/**
 * HeldOutput (src/cli/stream.ts): output printed during a validating pass and released once the
 * verdict is in, holes filled or their lines dropped, byte for byte across its buffer boundaries.
 */
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { HeldOutput, HeldOutputFull } from '../src/cli/stream.js';

async function released(held: HeldOutput, fill: (seq: number) => Buffer | null): Promise<string> {
  const sink = new PassThrough();
  const parts: Buffer[] = [];
  sink.on('data', (d: Buffer) => parts.push(d));
  await held.release(sink, fill);
  sink.end();
  return Buffer.concat(parts).toString('utf8');
}

describe('HeldOutput', () => {
  it('fills holes and drops lines exactly, whatever the buffer size (multi-byte text included)', async () => {
    for (const chunk of [1, 3, 7, 64, 1 << 16]) {
      const held = new HeldOutput(1 << 20, chunk);
      const want: string[] = [];
      for (let seq = 0; seq < 200; seq++) {
        const body = `é${'x'.repeat(seq % 11)}✓${seq}`;
        if (seq % 3 === 0) {
          held.push(`plain ${body}\n`);
          want.push(`plain ${body}\n`);
          continue;
        }
        held.startLine();
        held.push(`<${seq}`);
        held.hole(seq);
        held.push(`|${body}`);
        held.push('>\n');
        held.endLine();
        if (seq % 3 === 1) want.push(`<${seq}[${seq}]|${body}>\n`);
      }
      const got = await released(held, (seq) => (seq % 3 === 1 ? Buffer.from(`[${seq}]`) : null));
      expect({ chunk, got }).toEqual({ chunk, got: want.join('') });
    }
  });

  it('refuses to hold more than its budget', () => {
    const held = new HeldOutput(10, 4);
    held.push('12345');
    expect(() => held.push('678901')).toThrow(HeldOutputFull);
  });
});

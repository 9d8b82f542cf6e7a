/**
 * The JSONL line format: a line split over any number of decoded chunks gives the text (and so the
 * event, or the defect) that the whole line gives. The scanner decodes a long line's pieces as they
 * arrive (so the line is never held as bytes and text at once); UTF-8 sequences cut between chunks,
 * invalid bytes and replacement characters must come out exactly as decoding the joined bytes does.
 */
import { describe, expect, it } from 'vitest';
import { LogScanner } from '../src/log/scanner.js';
import type { SessionEvent } from '../src/log/types.js';

const HEADER = Buffer.from(JSON.stringify({ type: 'session', version: 0, id: 's', createdAt: 1, cwd: '/p', delegationDepth: 0 }) + '\n');

/** Events (as JSON, with their line text) and the first defect, from `body` fed in pieces cut at `cuts`. */
function scan(body: Buffer, cuts: number[]): { events: string[]; texts: (string | undefined)[]; issue: string | undefined } {
  const events: string[] = [];
  const texts: (string | undefined)[] = [];
  const scanner = new LogScanner(HEADER, '/p/session.jsonl', (event: SessionEvent, line) => {
    events.push(JSON.stringify(event));
    texts.push(line.text);
  });
  let at = 0;
  for (const cut of [...cuts, body.length]) {
    scanner.write(body.subarray(at, cut));
    at = cut;
  }
  return { events, texts, issue: scanner.issue?.message };
}

const line = (seq: number, text: Buffer) => Buffer.concat([Buffer.from(`{"type":"user/message","seq":${seq},"time":1,"data":{"t":"`), text, Buffer.from('"}}\n')]);

describe('a line cut between chunks', () => {
  // Multi-byte characters, a lone continuation byte, a truncated sequence, an overlong form, a surrogate half.
  const odd = Buffer.concat([Buffer.from('é€😀 '), Buffer.from([0x80, 0x41, 0xe2, 0x82, 0x41, 0xc0, 0xaf, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98]), Buffer.from(' ok')]);
  const body = Buffer.concat([line(0, odd), line(1, Buffer.from('plain')), line(2, odd)]);
  const whole = scan(body, []);

  it('reads the lines of the body whole', () => {
    expect(whole.issue).toBeUndefined();
    expect(whole.events).toHaveLength(3);
    expect(whole.texts[0]).toBe(body.subarray(0, line(0, odd).length - 1).toString('utf8'));
  });

  it('gives the same text and events at every single cut and at every pair of cuts', () => {
    for (let a = 1; a < body.length; a++) {
      expect(scan(body, [a]), `cut at ${a}`).toEqual(whole);
      for (let b = a + 1; b < body.length; b += 7) expect(scan(body, [a, b]), `cuts at ${a}, ${b}`).toEqual(whole);
    }
  });

  it('gives the same text when every byte is its own chunk', () => {
    expect(scan(body, Array.from({ length: body.length - 1 }, (_, i) => i + 1))).toEqual(whole);
  });

  it('keeps a defect where it is: an unparsable line cut between chunks is unparsable', () => {
    const bad = Buffer.concat([line(0, odd), Buffer.from('{"type":"user/mess\n'), line(1, odd), Buffer.from('{"type":"turn/end","seq":2,"time":1,"data":{}}\n')]);
    const at = line(0, odd).length + 5;
    const a = (() => {
      try {
        return scan(bad, []);
      } catch (error) {
        return (error as Error).message;
      }
    })();
    const b = (() => {
      try {
        return scan(bad, [at, at + 3]);
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(b).toEqual(a);
    expect(a).toMatch(/unparsable committed event at line 2/);
  });
});

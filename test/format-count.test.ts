// formatCount: the digit grouping every text renderer prints, without ICU's start-up cost for
// integers. It must write exactly what toLocaleString('en-US') writes, for every number.
import { describe, expect, it } from 'vitest';
import { formatCount } from '../src/api/log.js';

describe('formatCount', () => {
  it('equals toLocaleString("en-US") on edge cases', () => {
    const cases = [0, -0, 1, -1, 12, 123, 999, 1000, -1000, 9999, 10000, 99999, 100000, 123456, 1234567, -1234567, 1e15, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 1e21, 1.5, 1234.5678, -0.001, NaN, Infinity, -Infinity, Number.MIN_VALUE];
    for (const x of cases) expect({ x, s: formatCount(x) }).toEqual({ x, s: x.toLocaleString('en-US') });
  });

  it('equals toLocaleString("en-US") on random integers of every length', () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 20_000; i++) {
      const digits = 1 + Math.floor(rand() * 16);
      const x = Math.floor(rand() * 10 ** digits) * (rand() < 0.2 ? -1 : 1);
      if (!Number.isSafeInteger(x)) continue;
      expect(formatCount(x)).toBe(x.toLocaleString('en-US'));
    }
  });
});

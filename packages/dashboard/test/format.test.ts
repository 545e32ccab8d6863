import { describe, expect, it } from '@jest/globals';
import { ago, duration } from '../src/format.js';

describe('duration', () => {
  it('keeps sub-second and short steps readable, longer ones coarse', () => {
    expect([0, 526, 999, 1_000, 4_250, 9_999, 12_000, 187_000, 7_500_000, 200_000_000].map(duration)).toEqual([
      '0ms',
      '526ms',
      '999ms',
      '1.0s',
      '4.2s',
      '9.9s',
      '12s',
      '3m 07s',
      '2h 05m',
      '2d 07h',
    ]);
  });

  it('never prints a negative or NaN time', () => {
    expect([duration(-5), duration(Number.NaN)]).toEqual(['0ms', '0ms']);
    expect(ago(1_000, 'not a date')).toBe('unknown');
  });
});

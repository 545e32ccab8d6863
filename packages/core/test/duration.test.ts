import { describe, expect, it } from '@jest/globals';
import { formatDuration } from '../src/duration.js';

describe('formatDuration', () => {
  it('keeps sub-second and short steps readable, longer ones coarse', () => {
    expect([0, 526, 999, 1_000, 4_250, 9_999, 12_000, 187_000, 7_500_000, 200_000_000].map(formatDuration)).toEqual([
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
    expect([formatDuration(-5), formatDuration(Number.NaN)]).toEqual(['0ms', '0ms']);
  });
});

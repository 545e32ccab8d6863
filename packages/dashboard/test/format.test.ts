import { describe, expect, it } from '@jest/globals';
import { ago } from '../src/format.js';

describe('ago', () => {
  it('says how long ago a stamp was, and never prints a negative or NaN time', () => {
    expect(ago(187_000, 0)).toBe('3m 07s ago');
    expect(ago(1_000, 5_000)).toBe('0ms ago');
    expect(ago(1_000, 'not a date')).toBe('unknown');
  });
});

import { describe, expect, it } from '@jest/globals';
import { checkedCount, checkedTimeoutMs } from '../src/outbound.js';

describe('outbound policy checks', () => {
  it('accepts a positive timeout and a whole count at or above its least value', () => {
    expect(checkedTimeoutMs('slack', 10_000)).toBe(10_000);
    expect(checkedCount('slack', 'retries', 0, 0)).toBe(0);
  });

  it('refuses a timeout that is not a positive finite number, naming the platform', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => checkedTimeoutMs('line', bad)).toThrow(/^line: the request timeout must be a positive number of ms/);
    expect(() => checkedTimeoutMs('callback', 0, 'the POST timeout')).toThrow(/callback: the POST timeout/);
  });

  it('refuses a count below its least value or not whole', () => {
    expect(() => checkedCount('callback', 'tries', 0, 1)).toThrow(
      /callback: tries must be a whole number of 1 or more, got 0/,
    );
    expect(() => checkedCount('slack', 'retries', 1.5, 0)).toThrow(/got 1.5/);
  });
});

import { describe, expect, it } from '@jest/globals';
import { absoluteTime, ago, clockTime, timeAgo } from '../src/format.js';

describe('ago', () => {
  it('says how long ago a stamp was, and never prints a negative or NaN time', () => {
    expect(ago(187_000, 0)).toBe('3m 07s ago');
    expect(ago(1_000, 5_000)).toBe('0ms ago');
    expect(ago(1_000, 'not a date')).toBe('unknown');
  });
});

describe('times on a page', () => {
  const now = Date.parse('2026-11-29T19:50:00.000Z');

  it('shows a friendly time, the absolute one (no milliseconds) on hover', () => {
    expect(absoluteTime('2026-11-29T19:45:54.123Z')).toBe('2026-11-29 19:45:54 UTC');
    expect(timeAgo(now, '2026-11-29T19:45:54.123Z').text).toBe(
      '<time datetime="2026-11-29T19:45:54.123Z" title="2026-11-29 19:45:54 UTC">4m 05s ago</time>',
    );
    expect(clockTime(now, '2026-11-29T19:45:54.123Z').text).toContain('>19:45:54 UTC</time>');
    expect(clockTime(now, '2026-11-27T08:05:54.123Z').text).toContain('>Nov 27 08:05 UTC</time>');
  });

  it('a stamp that is no time shows as unknown, and nothing of it reaches the markup unescaped', () => {
    expect(timeAgo(now, '<b>x</b>').text).toBe('<time>unknown</time>');
    expect(clockTime(now, 'nope').text).toBe('<time>unknown</time>');
  });
});

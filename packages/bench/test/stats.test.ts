import { describe, expect, it } from '@jest/globals';
import { percentile, shown, table } from '../src/stats.js';

describe('bench stats', () => {
  it('takes percentiles by nearest rank', () => {
    const values = Array.from({ length: 50 }, (_, i) => 50 - i);
    expect(percentile(values, 50)).toBe(25);
    expect(percentile(values, 95)).toBe(48);
    expect(percentile(values, 100)).toBe(50);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it('prints the table with met yes, no and n/a', () => {
    const text = table([
      { figure: 'a', measured: '1 s', target: '<= 2 s', met: true },
      { figure: 'bb', measured: '3 s', target: '<= 2 s', met: false },
      { figure: 'c', measured: 'skipped', target: '<= 60 s', met: undefined },
    ]);
    expect(text.split('\n')).toEqual([
      'figure  measured  target   met',
      '------  --------  -------  ---',
      'a       1 s       <= 2 s   yes',
      'bb      3 s       <= 2 s   no',
      'c       skipped   <= 60 s  n/a',
    ]);
    expect(shown(1_520)).toBe('1.52 s');
    expect(shown(840.2)).toBe('840 ms');
  });
});

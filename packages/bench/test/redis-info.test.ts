import { describe, expect, it } from '@jest/globals';
import { parseCommandStats } from '../src/redis-info.js';

describe('INFO commandstats', () => {
  it('reads calls and usec per command, most called first, subcommands kept apart', () => {
    const info = [
      '# Commandstats',
      'cmdstat_set:calls=33,usec=120,usec_per_call=3.64,rejected_calls=0,failed_calls=0',
      'cmdstat_get:calls=96,usec=150,usec_per_call=1.56,rejected_calls=0,failed_calls=0',
      'cmdstat_config|resetstat:calls=1,usec=51,usec_per_call=51.00,rejected_calls=0,failed_calls=0',
      '',
    ].join('\r\n');
    expect(parseCommandStats(info)).toEqual([
      { command: 'get', calls: 96, usec: 150 },
      { command: 'set', calls: 33, usec: 120 },
      { command: 'config|resetstat', calls: 1, usec: 51 },
    ]);
  });
});

import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { worstCaseMsOf } from '../src/outer-policy.js';

const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/tmp', hostname: 'h' }).config;

describe('worstCaseMsOf', () => {
  it('is every attempt at its real bound (both passes, every fix attempt, every check) plus the backoffs', () => {
    const config = parse(
      [
        'agents:\n  timeout_seconds: 600\n  claude:\n    timeout_seconds: 900',
        'verification:\n  step_timeout_seconds: 100',
        'worker:\n  max_retries: 2\n  max_fix_attempts: 3\n  backoff:\n    strategy: fixed\n    delay_seconds: 10\n',
      ].join('\n'),
    );
    // Per attempt: 7 checks before the agent; 3 fix attempts of pass 1 (the slowest agent,
    // 900 s, + install and build) and of pass 2 (900 s + five checks); one DoD command.
    const attempt = 7 * 100_000 + 3 * (900_000 + 2 * 100_000 + 900_000 + 5 * 100_000) + 100_000;
    expect(worstCaseMsOf(config)).toBe(3 * attempt + 2 * 10_000);
    // Far beyond the old bound (every attempt at the agent timeout), which healthy jobs passed.
    expect(worstCaseMsOf(config)).toBeGreaterThan(3 * 900_000 + 2 * 10_000);
  });

  it('counts every tier of the longest escalation chain', () => {
    const one = parse('worker:\n  max_retries: 0\n');
    const chained = parse(
      'worker:\n  max_retries: 0\nagents:\n  escalation: [command, claude]\n  chains:\n    big: [command, claude, codex]\n',
    );
    const before = 7 * 600_000;
    const dod = 600_000;
    expect(worstCaseMsOf(chained) - before - dod).toBe(3 * (worstCaseMsOf(one) - before - dod));
  });

  it('is the job budget when that is shorter', () => {
    const config = parse('agents:\n  timeout_seconds: 600\nworker:\n  max_retries: 2\n  job_budget_seconds: 900\n');
    expect(worstCaseMsOf(config)).toBe(900_000);
  });
});

import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { worstCaseMsOf } from '../src/outer-policy.js';

const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/tmp', hostname: 'h' }).config;

describe('worstCaseMsOf', () => {
  it('is every attempt at the agent timeout plus the backoffs between them', () => {
    const config = parse(
      'agents:\n  timeout_seconds: 600\nworker:\n  max_retries: 2\n  backoff:\n    strategy: fixed\n    delay_seconds: 10\n',
    );
    expect(worstCaseMsOf(config)).toBe(3 * 600_000 + 2 * 10_000);
  });

  it('is the job budget when that is shorter', () => {
    const config = parse('agents:\n  timeout_seconds: 600\nworker:\n  max_retries: 2\n  job_budget_seconds: 900\n');
    expect(worstCaseMsOf(config)).toBe(900_000);
  });
});

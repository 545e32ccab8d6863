import { describe, expect, it } from '@jest/globals';
import { requestKeyFamily } from '../src/index.js';

describe('requestKeyFamily', () => {
  it('joins the family and the parts with colons, as the stores have always held them', () => {
    expect(requestKeyFamily('slack-status')('job-1')).toBe('slack-status:job-1');
    expect(requestKeyFamily<[string, string]>('line:event')('abc', 'x')).toBe('line:event:abc:x');
  });

  it('refuses a family that is not lower-case words, and a key past 512 characters', () => {
    expect(() => requestKeyFamily('Slack')).toThrow(/lower-case/);
    expect(() => requestKeyFamily('')).toThrow(/lower-case/);
    expect(() => requestKeyFamily('api')('x'.repeat(600))).toThrow(/over 512/);
  });
});

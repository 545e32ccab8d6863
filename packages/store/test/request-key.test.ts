import { describe, expect, it } from '@jest/globals';
import { requestKeyFamily } from '../src/index.js';

describe('requestKeyFamily', () => {
  it("joins the package's namespace, the family and the parts with colons", () => {
    expect(requestKeyFamily('slack', 'status')('job-1')).toBe('slack:status:job-1');
    expect(requestKeyFamily<[string, string]>('line', 'event')('abc', 'x')).toBe('line:event:abc:x');
  });

  it('refuses a namespace or family that is not lower-case words, and a key past 512 characters', () => {
    expect(() => requestKeyFamily('Slack', 'status')).toThrow(/lower-case/);
    expect(() => requestKeyFamily('slack', '')).toThrow(/lower-case/);
    expect(() => requestKeyFamily('slack', 'a:b')).toThrow(/lower-case/);
    expect(() => requestKeyFamily('http-api', 'job')('x'.repeat(600))).toThrow(/over 512/);
  });
});

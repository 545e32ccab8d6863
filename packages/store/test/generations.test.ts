import { describe, expect, it } from '@jest/globals';
import { generationOf, runIdOf } from '../src/index.js';

describe('run generations', () => {
  it("names a job's runs and reads the names back, job ids with dots and digits included", () => {
    for (const [jobId, generation] of [
      ['job-1', 1],
      ['job-1', 2],
      ['a.2', 1],
      ['a.2', 12],
      ['issue:7:x', 3],
    ] as const) {
      expect(generationOf(runIdOf(jobId, generation))).toEqual({ jobId, generation });
    }
    expect(runIdOf('job-1', 1)).toBe('job-1');
    expect(runIdOf('job-1', 2)).toBe('job-1~2');
  });
});

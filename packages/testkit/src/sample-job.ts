import type { Job } from '@codefleet/core';

let counter = 0;

/** A valid job with a unique id and key, for conformance tests and benchmarks. */
export function sampleJob(overrides: Partial<Job> = {}): Job {
  counter += 1;
  const id = `job-${process.pid}-${Date.now().toString(36)}-${counter}`;
  // No cast: a field the job schema gains must be added here, or this stops compiling.
  const job: Job = {
    v: 1,
    id,
    idempotency_key: `key-${id}`,
    repo: 'acme/widgets',
    source: { kind: 'cli' },
    title: `sample job ${counter}`,
    body: '',
    type: 'feature',
    priority: 'normal',
    mode: 'change',
    requested_by: 'conformance',
    created_at: new Date().toISOString(),
    ...overrides,
  };
  return job;
}

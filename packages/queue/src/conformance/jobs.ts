import type { Job } from '@codefleet/core';

let counter = 0;

/** A valid job with a unique id and key, for conformance tests and benchmarks. */
export function sampleJob(overrides: Partial<Job> = {}): Job {
  counter += 1;
  const id = `job-${process.pid}-${Date.now().toString(36)}-${counter}`;
  return {
    v: 1,
    id,
    idempotency_key: `key-${id}`,
    repo: 'acme/widgets',
    source: { kind: 'cli' },
    title: `sample job ${counter}`,
    body: '',
    type: 'feature',
    priority: 'normal',
    requested_by: 'conformance',
    created_at: new Date().toISOString(),
    ...overrides,
  } as Job;
}

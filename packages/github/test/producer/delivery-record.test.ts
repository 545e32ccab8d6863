import { describe, expect, it } from '@jest/globals';
import { parseJob } from '@codefleet/core';
import { deliveryJob, deliveryOf } from '../../src/index.js';

describe('GitHub delivery records', () => {
  it('are record jobs, and one queued as an api job before kind record reads back the same', () => {
    const delivery = {
      id: 'd-1',
      event: 'issues',
      intent: { kind: 'label', repo: 'acme/widgets', issueNumber: 3, actor: 'alice', label: 'codefleet' },
    } as const;
    const job = deliveryJob(delivery, new Date('2026-01-01T00:00:00Z'));
    expect(job.source).toEqual({ kind: 'record', of: 'github-delivery' });
    expect(job.idempotency_key).toBe('github-delivery:d-1');
    const legacy = parseJob({ ...job, source: { kind: 'api', request_id: 'github-delivery:d-1' } });
    expect(deliveryOf(legacy)).toEqual(deliveryOf(job));
    expect(deliveryOf(job)).toMatchObject({ id: 'd-1', intent: { issueNumber: 3 } });
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import { CodefleetError } from '@codefleet/core';
import { runJob } from '../src/index.js';
import { createHarness, implementsFeature, type Harness, outcomeOf } from './harness.js';

// A final report the requester refuses is given up (the job's outcome stands) and written
// to the run store's journal, where the dashboard finds it; progress reports are not.
let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob: an undelivered final report is journaled', () => {
  it('records the run, the report, the requester and the error; a fenced-off writer is not recorded', async () => {
    h = await createHarness();
    // A refusal is not tried again, so no waiting: one try per report.
    h.deps.requester = {
      kind: 'refusing',
      handles: () => true,
      report: async (r) => {
        if (r.kind === 'finished')
          throw new CodefleetError('forge_rejected', 'issue is locked', { verdict: 'permanent' });
      },
    };
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    expect(await h.store.journal()).toEqual([
      {
        kind: 'undelivered_report',
        runId: job.id,
        jobId: job.id,
        report: 'finished',
        requester: 'refusing',
        error: 'forge_rejected: issue is locked',
        at: expect.any(String),
      },
    ]);
    // A redelivery on a worker whose task lease another worker holds: its re-sent report is
    // fenced off, which is not a failure to deliver (the owner reports).
    expect(await h.store.acquire(job.idempotency_key, 'the-owner', 3_600_000)).toBe(true);
    await runJob(h.deps, {
      job,
      attempt: 2,
      workerId: 'stale',
      leaseToken: 'stale-token',
      signal: new AbortController().signal,
    });
    expect(await h.store.rejections(job.idempotency_key)).toEqual([
      expect.objectContaining({ action: 'comment', token: 'stale-token' }),
    ]);
    expect(await h.store.journal()).toHaveLength(1);
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import { createIssueRequester } from '@codefleet/github';
import { type Report } from '@codefleet/requester';
import { runJob } from '../src/index.js';
import { createHarness, implementsFeature, type Harness } from './harness.js';

// A redelivery of finished work (the ack was lost, maybe with the worker before it told
// anyone) converges without redoing the job, and sends the final report again: the place
// that asked is told even then, and an idempotent requester shows it once.
let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob: the final report of finished work is sent again on redelivery', () => {
  it('a published job reports its pull request again; the task keeps one status comment', async () => {
    h = await createHarness();
    const reports: Report[] = [];
    const issues = createIssueRequester({ issues: h.forge, tasks: true });
    h.deps.requester = {
      kind: 'recording',
      handles: () => true,
      report: async (r) => {
        reports.push(r);
        await issues.report(r);
      },
    };
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    expect(reports.filter((r) => r.kind === 'finished')).toHaveLength(1);

    const again = await runJob(h.deps, { job, attempt: 2, workerId: 'w2', signal: new AbortController().signal });
    expect(again.action).toBe('ack');
    const finals = reports.filter((r) => r.kind === 'finished');
    expect(finals).toHaveLength(2);
    expect(finals[1]).toMatchObject({ pullRequest: { number: 1, draft: false } });
    expect(await h.forge.listComments(job.repo, { kind: 'task', key: job.idempotency_key })).toHaveLength(1);
  });

  it('a failed job reports its failure again when the dead-letter delivery repeats', async () => {
    h = await createHarness({ maxAttempts: 1 });
    const reports: Report[] = [];
    h.deps.requester = {
      kind: 'recording',
      handles: () => true,
      report: async (r) => {
        reports.push(r);
      },
    };
    await h.agent('// changes nothing');
    const job = h.job();
    await h.drain(job);
    const again = await runJob(h.deps, { job, attempt: 2, workerId: 'w2', signal: new AbortController().signal });
    expect(again.action).toBe('dead_letter');
    expect(
      reports.filter((r) => r.kind === 'failed').map((r) => (r as { error: { code: string } }).error.code),
    ).toEqual(['fix_attempts_exhausted', 'fix_attempts_exhausted']);
  });
});

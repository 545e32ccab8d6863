import { describe, expect, it } from '@jest/globals';
import { createJob, finish, newRun, startAttempt, type RunRecord } from '@codefleet/core';
import { summarizeStored } from '../src/query.js';
import { memoizedSummaries } from '../src/summary-memo.js';

const now = new Date(Date.UTC(2026, 0, 1));

function stored(n: number, pull?: number): string {
  const job = createJob(
    { repo: 'acme/widgets', source: { kind: 'cli' }, title: `task ${n}`, body: '', requested_by: 'me' },
    { id: `job-${n}`, now },
  );
  let run: RunRecord = startAttempt(newRun(job, { runId: `job-${n}`, now }), { workerId: 'w', now });
  run = finish(run, 'failed', { now, error: { code: 'test_failed', verdict: 'agent_fixable', message: 'no' } });
  if (pull !== undefined)
    run = { ...run, pull_request: { number: pull, url: `https://x/${pull}`, head: 'h', base: 'main', draft: true } };
  return JSON.stringify(run);
}

describe('memoized run summaries', () => {
  it('answer what summarizeStored answers, afresh for a changed text, a copy each time', () => {
    const summarize = memoizedSummaries(2);
    const one = stored(1, 7);
    expect(summarize('job-1', one)).toEqual(summarizeStored('job-1', one));
    // A caller that changes what it was given does not change the next answer.
    const first = summarize('job-1', one);
    first.title = 'changed';
    first.pullRequest!.number = 99;
    expect(summarize('job-1', one)).toMatchObject({ title: 'task 1', pullRequest: { number: 7 } });
    // The same run id with another text (a save, a hand edit) is summarized from that text.
    expect(summarize('job-1', stored(1, 8)).pullRequest?.number).toBe(8);
    const half = '{"run_id": "job-1", "job": {"title": "half';
    expect(summarize('job-1', half)).toMatchObject({
      title: '(unreadable run record)',
      unreadable: expect.stringContaining('run job-1'),
    });
    // The same text under another id is that run's: an unreadable one is named by its id.
    expect(summarize('job-2', half).unreadable).toContain('run job-2');
  });
});

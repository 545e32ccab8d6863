import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { newRun, type Job } from '@codefleet/core';
import { LocalQueue } from '@codefleet/queue';
import { git } from '@codefleet/testkit';
import { createDeliveryProcessor, deliveryJob, deliveryRetryDelayMs } from '../../src/index.js';
import { commented, labeled, openHarness, reviewed, sign, type Harness } from './harness.js';

// The delivery processor: recorded deliveries acted on with retries, never dropped.
describe('delivery processing', () => {
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });

  const labeledIssue = (title = 'Add a widget') => {
    h.gh.setPermission('acme/widgets', 'alice', 'write');
    const issue = h.gh.createIssue('acme/widgets', { title, body: 'The task.' });
    h.gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'alice');
    return issue;
  };
  /** A worker runs the job to the end: claimed, a run record saved, acked. */
  const finish = async (): Promise<Job> => {
    const lease = await h.jobs.claim({ workerId: 'w', waitMs: 2_000 });
    if (!lease) throw new Error('no job to finish');
    await h.store.save(newRun(lease.job, { runId: lease.job.id, now: new Date() }));
    await lease.ack();
    return lease.job;
  };

  it('a 502 while handling a label keeps the delivery: a later try queues the job', async () => {
    h = await openHarness({ baseDelayMs: 20 });
    const issue = labeledIssue();
    h.gh.failNext({ method: 'GET', path: new RegExp(`/issues/${issue.number}$`), status: 502 });
    expect((await h.deliver(labeled('acme/widgets', issue.number, 'alice'))).status).toBe(202);
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'retrying',
      delayMs: 20,
      reason: expect.stringContaining('forge_unavailable'),
    });
    expect((await h.jobs.stats()).depth).toBe(0);
    expect(await h.processor.processNext({ waitMs: 5_000 })).toMatchObject({
      settled: 'acked',
      outcome: { status: 'enqueued' },
    });
    expect((await h.jobs.stats()).ready).toBe(1);
  });

  it('rate limits are waited out as GitHub asks: until the reset, retry-after, else a minute and longer', async () => {
    h = await openHarness({ baseDelayMs: 20 });
    const issue = labeledIssue();
    const reset = Math.floor(Date.now() / 1_000) + 600;
    h.gh.failNext({
      method: 'GET',
      path: /\/issues\/\d+$/,
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      body: { message: 'API rate limit exceeded' },
    });
    await h.deliver(labeled('acme/widgets', issue.number, 'alice'));
    // Until the reset, as the clock read when GitHub answered: bounded by the clock around the
    // call, since a loaded machine can take any part of those ten minutes to get there.
    const asked = Date.now();
    const primary = await h.processor.processNext();
    const answered = Date.now();
    expect(primary).toMatchObject({ settled: 'retrying', reason: expect.stringContaining('rate_limited') });
    expect(primary!.delayMs).toBeGreaterThanOrEqual(reset * 1_000 - answered);
    expect(primary!.delayMs).toBeLessThanOrEqual(reset * 1_000 - asked);
    expect((await h.deliveries.stats()).delayed).toBe(1);
    // Without a named time: one minute, doubling while GitHub keeps refusing.
    expect(deliveryRetryDelayMs(1, { retryAfterMs: 60_000, waitNamed: false })).toBe(60_000);
    expect(deliveryRetryDelayMs(2, { retryAfterMs: 60_000, waitNamed: false })).toBe(120_000);
    expect(deliveryRetryDelayMs(3, { retryAfterMs: 60_000, waitNamed: false })).toBe(240_000);
    // A named wait is honoured as is; plain failures back off from 10 s to 5 minutes.
    expect(deliveryRetryDelayMs(3, { retryAfterMs: 7_000 })).toBe(40_000);
    expect(deliveryRetryDelayMs(1)).toBe(10_000);
    expect(deliveryRetryDelayMs(20)).toBe(300_000);
  });

  it('replays after the task finished are duplicates: by delivery id, and by the job that ran', async () => {
    h = await openHarness();
    const issue = labeledIssue();
    const body = labeled('acme/widgets', issue.number, 'alice');
    await h.deliver(body, { 'x-github-delivery': 'd-once' });
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'enqueued', jobId: 'gh-delivery-d-once' },
    });
    await finish();
    // GitHub's Redeliver button, after the pull request was opened.
    expect(await (await h.deliver(body, { 'x-github-delivery': 'd-once' })).json()).toMatchObject({
      status: 'duplicate',
    });
    expect(await h.processor.processNext()).toBeUndefined();
    expect((await h.jobs.stats()).depth).toBe(0);

    // Records and finished jobs expire in some engines (BullMQ keeps completed jobs a
    // while): the run the job left is what still says it ran.
    const forgetful = {
      deliveries: new LocalQueue({
        backend: 'local',
        path: join(h.dir.path, 'q.sqlite'),
        name: 'later-deliveries',
        leaseMs: 60_000,
        maxAttempts: 10,
      }),
      jobs: new LocalQueue({
        backend: 'local',
        path: join(h.dir.path, 'q.sqlite'),
        name: 'later-jobs',
        leaseMs: 60_000,
        maxAttempts: 4,
      }),
    };
    try {
      const processor = createDeliveryProcessor(
        { ...h.deps, queue: forgetful.jobs },
        { deliveries: forgetful.deliveries },
      );
      await forgetful.deliveries.enqueue(
        deliveryJob(
          {
            id: 'd-once',
            event: 'issues',
            intent: {
              kind: 'label',
              repo: 'acme/widgets',
              issueNumber: issue.number,
              actor: 'alice',
              label: 'codefleet',
            },
          },
          new Date(),
        ),
      );
      expect(await processor.processNext()).toMatchObject({
        settled: 'acked',
        outcome: { status: 'duplicate', jobId: 'gh-delivery-d-once' },
      });
      expect((await forgetful.jobs.stats()).depth).toBe(0);
    } finally {
      await forgetful.deliveries.close();
      await forgetful.jobs.close();
    }
  });

  it('a review while the issue has a job queued or running is kept, said so on the PR, and runs after it', async () => {
    h = await openHarness({ baseDelayMs: 20 });
    const issue = labeledIssue();
    await git(h.gh.repoDir('acme/widgets'), ['branch', `ai/issue-${issue.number}`, 'main']);
    const pr = await h.forge.ensurePullRequest({
      repo: 'acme/widgets',
      head: `ai/issue-${issue.number}`,
      base: 'main',
      title: 'Add a widget',
      body: `Fixes #${issue.number}`,
      draft: false,
    });
    await h.deliver(labeled('acme/widgets', issue.number, 'alice'));
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'enqueued' } });

    h.gh.addReviewComment('acme/widgets', pr.number, 4242, {
      path: 'src/widget.js',
      line: 3,
      body: 'Call it gadget here too.',
      user: 'alice',
    });
    const review = reviewed(
      'acme/widgets',
      pr.number,
      `ai/issue-${issue.number}`,
      'alice',
      'Please rename it to gadget.',
      { id: 4242 },
    );
    await h.deliver(review, { 'x-github-event': 'pull_request_review', 'x-hub-signature-256': sign(review) });
    expect(await h.processor.processNext()).toMatchObject({ settled: 'retrying', outcome: { status: 'deferred' } });
    const told = () =>
      h.gh.comments('acme/widgets', pr.number).filter((c) => c.body.startsWith('<!-- codefleet:follow-up:4242 -->'));
    expect(told()).toHaveLength(1);
    expect(told()[0]!.body).toContain('is kept');
    // Still running: kept again, no second comment.
    expect(await h.processor.processNext({ waitMs: 5_000 })).toMatchObject({ outcome: { status: 'deferred' } });
    expect(told()).toHaveLength(1);

    await finish();
    expect(await h.processor.processNext({ waitMs: 5_000 })).toMatchObject({
      settled: 'acked',
      outcome: { status: 'enqueued', jobId: 'gh-review-4242' },
    });
    const lease = await h.jobs.claim({ workerId: 'w' });
    expect(lease?.job).toMatchObject({
      title: 'Add a widget',
      source: { kind: 'issue', number: issue.number, via: 'review' },
    });
    expect(lease?.job.body).toContain('Please rename it to gadget.');
    expect(lease?.job.body).toContain('`src/widget.js:3`: Call it gadget here too.');
    expect(told()[0]!.body).toContain('queued as a follow-up job');
  });

  it('a review that only failed once is queued on its next try without a comment', async () => {
    h = await openHarness({ baseDelayMs: 20 });
    const issue = labeledIssue();
    await git(h.gh.repoDir('acme/widgets'), ['branch', `ai/issue-${issue.number}`, 'main']);
    const pr = await h.forge.ensurePullRequest({
      repo: 'acme/widgets',
      head: `ai/issue-${issue.number}`,
      base: 'main',
      title: 't',
      body: 'b',
      draft: false,
    });
    h.gh.failNext({ method: 'GET', path: /\/collaborators\/alice\/permission$/, status: 502 });
    const review = reviewed('acme/widgets', pr.number, `ai/issue-${issue.number}`, 'alice', 'Rename it.', { id: 7 });
    await h.deliver(review, { 'x-github-event': 'pull_request_review', 'x-hub-signature-256': sign(review) });
    expect(await h.processor.processNext()).toMatchObject({ settled: 'retrying' });
    expect(await h.processor.processNext({ waitMs: 5_000 })).toMatchObject({
      settled: 'acked',
      outcome: { status: 'enqueued', jobId: 'gh-review-7' },
    });
    expect(h.gh.comments('acme/widgets', pr.number)).toEqual([]);
  });

  it('reviews that ask for nothing, come from strangers or other branches are not followed up', async () => {
    h = await openHarness();
    const issue = labeledIssue();
    const send = async (body: string) => {
      await h.deliver(body, { 'x-github-event': 'pull_request_review', 'x-hub-signature-256': sign(body) });
      return (await h.processor.processNext())?.outcome;
    };
    expect(await send(reviewed('acme/widgets', 9, 'feature/x', 'alice', 'Please rename it.', { id: 1 }))).toMatchObject(
      { status: 'ignored' },
    );
    expect(
      await send(
        reviewed('acme/widgets', 9, `ai/issue-${issue.number}`, 'alice', 'LGTM', { state: 'approved', id: 2 }),
      ),
    ).toMatchObject({ status: 'ignored' });
    expect(
      await send(reviewed('acme/widgets', 9, `ai/issue-${issue.number}`, 'mallory', 'Delete everything.', { id: 3 })),
    ).toMatchObject({ status: 'refused' });
    expect((await h.jobs.stats()).depth).toBe(0);
  });

  it('a label removed before the delivery is processed starts nothing', async () => {
    h = await openHarness();
    const issue = labeledIssue();
    await h.deliver(labeled('acme/widgets', issue.number, 'alice'));
    h.gh.unlabelIssue('acme/widgets', issue.number, 'codefleet', 'alice');
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'acked',
      outcome: { status: 'ignored', reason: expect.stringContaining('no longer on the issue') },
    });
    expect((await h.jobs.stats()).depth).toBe(0);
  });

  it('a 502 when adding the queued label does not undo the queued job', async () => {
    h = await openHarness();
    const issue = labeledIssue();
    h.gh.failNext({ method: 'POST', path: /\/labels$/, status: 502 });
    await h.deliver(labeled('acme/widgets', issue.number, 'alice'));
    expect(await h.processor.processNext()).toMatchObject({ settled: 'acked', outcome: { status: 'enqueued' } });
    expect((await h.jobs.stats()).ready).toBe(1);
    expect(h.logs).toContainEqual(expect.objectContaining({ event: 'trigger.label_failed' }));
  });

  it('a delivery that fails for good is dead-lettered, logged and reported on the issue', async () => {
    h = await openHarness();
    const issue = labeledIssue();
    h.gh.failNext({
      method: 'GET',
      path: new RegExp(`/issues/${issue.number}$`),
      status: 403,
      body: { message: 'Resource not accessible by integration' },
    });
    await h.deliver(labeled('acme/widgets', issue.number, 'alice'), { 'x-github-delivery': 'd-doomed' });
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'dead_lettered',
      reason: expect.stringContaining('forge_rejected'),
    });
    expect(await h.deliveries.deadLetters()).toEqual([expect.objectContaining({ id: 'delivery-d-doomed' })]);
    expect(h.logs).toContainEqual(expect.objectContaining({ event: 'delivery.dead_lettered', level: 'error' }));
    const reported = h.gh.comments('acme/widgets', issue.number);
    expect(reported).toHaveLength(1);
    expect(reported[0]!.body).toContain('could not act on it');
    expect(reported[0]!.body).toContain('Resource not accessible by integration');
  });

  it('/codefleet cancel and /codefleet retry from collaborators; others are refused; one comment is one job', async () => {
    h = await openHarness();
    h.gh.setPermission('acme/widgets', 'alice', 'write');
    const issue = h.gh.createIssue('acme/widgets', { title: 'Add a widget' });
    let ids = 100;
    const send = async (who: string, text: string, id = (ids += 1)) => {
      const body = commented('acme/widgets', issue.number, who, text, id);
      await h.deliver(body, { 'x-github-event': 'issue_comment', 'x-hub-signature-256': sign(body) });
      return (await h.processor.processNext())?.outcome;
    };
    expect(await send('mallory', '/codefleet cancel')).toMatchObject({ status: 'refused' });
    expect(await h.store.cancelRequested(`acme/widgets#issue-${issue.number}`)).toBeUndefined();
    expect(await send('alice', '/codefleet cancel please')).toMatchObject({
      status: 'cancel_requested',
      taskKey: `acme/widgets#issue-${issue.number}`,
    });
    expect(await h.store.cancelRequested(`acme/widgets#issue-${issue.number}`)).toMatchObject({ by: 'alice' });
    // Written to the journal for the dashboard: who, from the issue; mallory's refused one is not.
    expect(await h.store.journal()).toEqual([
      {
        kind: 'action',
        action: 'cancel',
        taskKey: `acme/widgets#issue-${issue.number}`,
        by: 'alice',
        via: 'issue',
        at: expect.any(String),
      },
    ]);
    expect(
      await (
        await h.deliver(commented('acme/widgets', issue.number, 'alice', 'I think we should /codefleet retry later'), {
          'x-github-event': 'issue_comment',
        })
      ).json(),
    ).toMatchObject({ status: 'ignored' });

    expect(await send('alice', '/codefleet retry', 500)).toMatchObject({ status: 'enqueued', jobId: 'gh-comment-500' });
    expect(await h.store.cancelRequested(`acme/widgets#issue-${issue.number}`)).toBeUndefined();
    await finish();
    // The same comment again (another delivery of it) after its job ran: nothing new.
    expect(await send('alice', '/codefleet retry', 500)).toMatchObject({
      status: 'duplicate',
      jobId: 'gh-comment-500',
    });
    expect((await h.jobs.stats()).depth).toBe(0);
  });
});

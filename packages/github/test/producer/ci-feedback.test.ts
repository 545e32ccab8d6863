import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { newRun, type Job } from '@codefleet/core';
import { pushedMarker } from '@codefleet/forge';
import { git } from '@codefleet/testkit';
import { ciJobId, readDelivery, trimJobLog } from '../../src/index.js';
import { checkRunCompleted, checkSuiteCompleted, openHarness, sign, statusEvent, type Harness } from './harness.js';

// CI failures fed back: GitHub's check_run / check_suite / status payloads (webhooks
// examples) about commits on the GitHub STAND-IN, through the real webhook receiver,
// delivery journal, processor and Octokit forge; follow-up jobs land in a real SQLite queue.
describe('CI feedback', () => {
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });
  const repo = 'acme/widgets';

  /** A commit on `branch` of the stand-in's repository, pushed with plain git (codefleet's or a human's). */
  const push = async (branch: string, file: string, author = 'codefleet'): Promise<string> => {
    const work = join(h.dir.path, `work-${Math.random().toString(36).slice(2)}`);
    await git(h.dir.path, ['clone', '--quiet', h.gh.repoDir(repo), work]);
    const exists = (await git(work, ['ls-remote', '--heads', 'origin', branch])) !== '';
    await git(work, exists ? ['checkout', '--quiet', branch] : ['checkout', '--quiet', '-b', branch]);
    await git(work, [
      '-c',
      `user.name=${author}`,
      '-c',
      `user.email=${author}@example.com`,
      'commit',
      '--quiet',
      '--allow-empty',
      '-m',
      file,
    ]);
    await git(work, ['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`]);
    return git(work, ['rev-parse', 'HEAD']);
  };
  /** What a codefleet job leaves: a push, and the pull request's body naming that commit. */
  const codefleetPush = async (issue: number, file: string) => {
    const branch = `ai/issue-${issue}`;
    const sha = await push(branch, file);
    const pr = await h.forge.ensurePullRequest({
      repo,
      head: branch,
      base: 'main',
      title: 'Add a widget',
      body: `Fixes #${issue}\n\n${pushedMarker(sha)}`,
      draft: false,
    });
    return { sha, pr: pr.number, branch };
  };
  const codefleetPullRequest = async () => {
    const issue = h.gh.createIssue(repo, { title: 'Add a widget', body: 'Add widget() to src/widget.js.' });
    return { issue: issue.number, ...(await codefleetPush(issue.number, 'first')) };
  };
  /** An Actions job fails on `sha`, and GitHub delivers its check_run event. */
  const failJob = async (sha: string, branch: string, pulls: number[], name = 'test', delivery?: string) => {
    const run = await h.gh.addCheckRun(repo, {
      ref: sha,
      name,
      conclusion: 'failure',
      log:
        '2026-11-24T10:00:01.1234567Z ##[group]Run npm test\n2026-11-24T10:00:02.0000000Z npm test\n' +
        "2026-11-24T10:00:03.0000000Z src/widget.js(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n" +
        '2026-11-24T10:00:04.0000000Z ##[error]Process completed with exit code 2.\n',
    });
    const body = checkRunCompleted(repo, run, branch, pulls);
    const answer = await h.deliver(body, {
      'x-github-event': 'check_run',
      'x-hub-signature-256': sign(body),
      ...(delivery ? { 'x-github-delivery': delivery } : {}),
    });
    expect(answer.status).toBe(202);
    return { run, body };
  };
  const suite = async (sha: string, branch: string, conclusion: string, pulls: number[]) => {
    const body = checkSuiteCompleted(repo, sha, branch, conclusion, pulls);
    expect((await h.deliver(body, { 'x-github-event': 'check_suite', 'x-hub-signature-256': sign(body) })).status).toBe(
      202,
    );
  };
  /** A worker runs the follow-up to the end: claimed, a run record saved, acked. */
  const finish = async (): Promise<Job> => {
    const lease = await h.jobs.claim({ workerId: 'w', waitMs: 2_000 });
    if (!lease) throw new Error('no job to finish');
    await h.store.save(newRun(lease.job, { runId: lease.job.id, now: new Date() }));
    await lease.ack();
    return lease.job;
  };
  const ciComments = (pr: number) => h.gh.comments(repo, pr).filter((c) => c.body.startsWith('<!-- codefleet:ci-'));

  it('a failing Actions job becomes one follow-up job on the branch with its trimmed log; repeats add nothing', async () => {
    h = await openHarness();
    const { issue, sha, pr, branch } = await codefleetPullRequest();
    const { body } = await failJob(sha, branch, [pr], 'test', 'd-ci-1');
    // Another App's check fails too: its output is what it says.
    await h.gh.addCheckRun(repo, {
      ref: sha,
      name: 'coverage',
      app: 'codecov',
      conclusion: 'failure',
      output: { title: 'Coverage 61%', summary: 'Below the 80% target.' },
    });

    expect(await h.processor.processNext()).toMatchObject({
      settled: 'acked',
      outcome: { status: 'enqueued', jobId: ciJobId(repo, pr, sha) },
    });
    // The same failure again: GitHub's redelivery, the suite's event, the other check's event.
    expect(
      await (
        await h.deliver(body, {
          'x-github-event': 'check_run',
          'x-hub-signature-256': sign(body),
          'x-github-delivery': 'd-ci-1',
        })
      ).json(),
    ).toMatchObject({ status: 'duplicate' });
    await suite(sha, branch, 'failure', [pr]);
    await failJob(sha, branch, [pr], 'lint');
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'duplicate' } });
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'duplicate' } });
    expect(await h.processor.processNext()).toBeUndefined();
    expect((await h.jobs.stats()).ready).toBe(1);

    const job = (await h.jobs.claim({ workerId: 'w' }))!.job;
    expect(job).toMatchObject({
      id: ciJobId(repo, pr, sha),
      branch,
      base_branch: 'main',
      source: { kind: 'issue', number: issue, via: 'ci' },
      title: 'Add a widget',
      requested_by: 'codefleet-ci',
    });
    expect(job.body).toContain('Add widget() to src/widget.js.');
    expect(job.body).toContain(`## CI failed on pull request #${pr}`);
    expect(job.body).toContain("src/widget.js(3,7): error TS2322: Type 'string' is not assignable to type 'number'.");
    expect(job.body).toContain('Below the 80% target.');
    expect(job.body).not.toContain('2026-11-24T10:00:03');
    const said = ciComments(pr);
    expect(said).toHaveLength(1);
    expect(said[0]!.body).toContain(`Round 1 of 2`);
    expect(said[0]!.body).toContain(sha.slice(0, 7));
    expect(h.gh.labels(repo, issue)).toContain('codefleet:queued');
  });

  it("a failure on a chat's pull request becomes a ci job of it, keyed by the pull request as before", async () => {
    h = await openHarness();
    const branch = 'ai/add-a-gadget-1a2b3c4d';
    const sha = await push(branch, 'first');
    const pr = await h.forge.ensurePullRequest({
      repo,
      head: branch,
      base: 'main',
      title: 'Add a gadget',
      body: pushedMarker(sha),
      draft: false,
    });
    await failJob(sha, branch, [pr.number]);
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'enqueued' } });
    const job = (await h.jobs.claim({ workerId: 'w' }))!.job;
    expect(job).toMatchObject({
      source: { kind: 'ci', pull: pr.number },
      idempotency_key: `${repo}#pull-${pr.number}`,
      branch,
      title: 'Add a gadget',
    });
  });

  it("a round waits for the commit's other checks: one that fails later reaches the agent too", async () => {
    h = await openHarness({ baseDelayMs: 1 });
    const { sha, pr, branch } = await codefleetPullRequest();
    const lint = await h.gh.addCheckRun(repo, { ref: sha, name: 'lint', status: 'in_progress' });
    await failJob(sha, branch, [pr], 'test');
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'retrying',
      outcome: { status: 'deferred', reason: expect.stringContaining('1 check of') },
    });
    expect((await h.jobs.stats()).depth).toBe(0);
    expect(ciComments(pr)).toEqual([]);

    // Lint finishes later, failing too: its event, and the kept delivery asked again.
    const done = h.gh.completeCheckRun(repo, lint.id, {
      conclusion: 'failure',
      log: '2026-11-24T10:05:00.0000000Z src/widget.js:4:7 error no-unused-vars\n',
    });
    const body = checkRunCompleted(repo, done, branch, [pr]);
    expect((await h.deliver(body, { 'x-github-event': 'check_run', 'x-hub-signature-256': sign(body) })).status).toBe(
      202,
    );
    const outcomes = [
      await h.processor.processNext({ waitMs: 5_000 }),
      await h.processor.processNext({ waitMs: 5_000 }),
    ]
      .map((p) => p?.outcome?.status)
      .sort();
    expect(outcomes).toEqual(['duplicate', 'enqueued']);
    const job = await finish();
    expect(job.body).toContain('TS2322');
    expect(job.body).toContain('no-unused-vars');
    expect(ciComments(pr)).toHaveLength(1);
  });

  it('a check stuck pending past forge.github.ci_feedback.settle_seconds does not stall the round, which says so', async () => {
    h = await openHarness({ ciFeedback: { enabled: true, maxRounds: 2, logBytes: 4096, settleMs: 0 } });
    const { sha, pr, branch } = await codefleetPullRequest();
    await h.gh.addCheckRun(repo, { ref: sha, name: 'deploy-preview', app: 'netlify', status: 'queued' });
    await failJob(sha, branch, [pr], 'test');
    expect(await h.processor.processNext()).toMatchObject({ settled: 'acked', outcome: { status: 'enqueued' } });
    expect((await finish()).body).toContain('1 more check had not finished when this round started');
  });

  it('two rounds per pull request: the third failure queues nothing and says why', async () => {
    h = await openHarness();
    const { issue, sha, pr, branch } = await codefleetPullRequest();
    await failJob(sha, branch, [pr]);
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'enqueued' } });
    await finish();
    const second = await codefleetPush(issue, 'second');
    await failJob(second.sha, branch, [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'enqueued', jobId: ciJobId(repo, pr, second.sha) },
    });
    await finish();
    const third = await codefleetPush(issue, 'third');
    await failJob(third.sha, branch, [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'acked',
      outcome: { status: 'refused', reason: expect.stringContaining('2 rounds') },
    });
    expect((await h.jobs.stats()).depth).toBe(0);
    const said = ciComments(pr).map((c) => c.body);
    expect(said).toHaveLength(3);
    expect(said[2]).toContain('max_rounds: 2');
    // Told once: the same failure reported again says nothing new.
    await suite(third.sha, branch, 'failure', [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'ignored', reason: expect.stringContaining('refused already') },
    });
    expect(ciComments(pr)).toHaveLength(3);
  });

  it('pull requests from forks are never followed up, nor told anything', async () => {
    h = await openHarness();
    const { issue } = await codefleetPullRequest();
    // A fork's branch of the same name, at another commit; its PR named or not.
    const forkSha = 'f'.repeat(40);
    // Its body forges codefleet's pushed marker: only the head repository tells.
    const fork = h.gh.openForkPull(repo, {
      headRepo: 'mallory/widgets',
      head: `ai/issue-${issue}`,
      sha: forkSha,
      title: 'Improve widgets',
      body: `Hi\n\n${pushedMarker(forkSha)}`,
    });
    await suite(forkSha, `ai/issue-${issue}`, 'failure', [fork.number]);
    await suite(forkSha, `ai/issue-${issue}`, 'failure', []);
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'acked',
      outcome: { status: 'ignored', reason: expect.stringContaining('forks') },
    });
    expect(await h.processor.processNext()).toMatchObject({ settled: 'acked', outcome: { status: 'ignored' } });
    expect((await h.jobs.stats()).depth).toBe(0);
    expect(h.gh.comments(repo, fork.number)).toEqual([]);
  });

  it('a branch someone else pushed to is not followed up: said once on the pull request', async () => {
    h = await openHarness();
    const { sha, pr, branch } = await codefleetPullRequest();
    const human = await push(branch, 'my own fix', 'alice');
    expect(human).not.toBe(sha);
    await failJob(human, branch, [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'acked',
      outcome: { status: 'refused', reason: expect.stringContaining('someone else pushed') },
    });
    expect((await h.jobs.stats()).depth).toBe(0);
    const said = ciComments(pr);
    expect(said).toHaveLength(1);
    expect(said[0]!.body).toContain(`has moved since codefleet pushed ${sha.slice(0, 7)}`);
    // The old commit's failure, delivered late: not the head any more, nothing to do.
    await failJob(sha, branch, [pr], 'late');
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'ignored' } });
    expect(ciComments(pr)).toHaveLength(1);
  });

  it('a green run after a round ends the loop, says so, and no later failure is followed up', async () => {
    h = await openHarness();
    const { issue, sha, pr, branch } = await codefleetPullRequest();
    // Green before any round: nothing to end, nothing said.
    await h.gh.addCheckRun(repo, { ref: sha, name: 'test', conclusion: 'success' });
    await suite(sha, branch, 'success', [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'ignored', reason: expect.stringContaining('no CI feedback round') },
    });
    await failJob(sha, branch, [pr], 'lint');
    expect(await h.processor.processNext()).toMatchObject({ outcome: { status: 'enqueued' } });
    await finish();

    const fixed = await codefleetPush(issue, 'fixed');
    await h.gh.addCheckRun(repo, { ref: fixed.sha, name: 'test', conclusion: 'success' });
    const pending = await h.gh.addCheckRun(repo, { ref: fixed.sha, name: 'lint', status: 'in_progress' });
    // One suite passed while another check still runs: not green yet.
    await suite(fixed.sha, branch, 'success', [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'ignored', reason: expect.stringContaining('not every check') },
    });
    expect(pending.status).toBe('in_progress');
    await h.gh.addCheckRun(repo, { ref: fixed.sha, name: 'lint', conclusion: 'success' });
    await suite(fixed.sha, branch, 'success', [pr]);
    expect(await h.processor.processNext()).toMatchObject({ settled: 'acked', outcome: { status: 'ended' } });
    expect(
      ciComments(pr)
        .map((c) => c.body)
        .at(-1),
    ).toContain('has ended');

    // A flaky re-run fails later: the loop is over.
    await failJob(fixed.sha, branch, [pr], 'flaky');
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'refused', reason: expect.stringContaining('ended') },
    });
    expect((await h.jobs.stats()).depth).toBe(0);
    expect(ciComments(pr)).toHaveLength(3);
  });

  it('a failing commit status (a CI service without checks) is followed up with what it says', async () => {
    h = await openHarness();
    const { sha, pr, branch } = await codefleetPullRequest();
    await h.gh.setStatus(repo, sha, {
      context: 'ci/jenkins',
      state: 'failure',
      description: 'Build #12 failed: 3 tests',
    });
    const body = statusEvent(repo, sha, ['main', branch], 'failure', 'ci/jenkins');
    await h.deliver(body, { 'x-github-event': 'status', 'x-hub-signature-256': sign(body) });
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'enqueued', jobId: ciJobId(repo, pr, sha) },
    });
    expect((await h.jobs.claim({ workerId: 'w' }))!.job.body).toContain('Build #12 failed: 3 tests');
    // Statuses and checks of other branches are not recorded at all.
    const other = statusEvent(repo, sha, ['main'], 'failure', 'ci/jenkins');
    expect(
      await (await h.deliver(other, { 'x-github-event': 'status', 'x-hub-signature-256': sign(other) })).json(),
    ).toMatchObject({ status: 'ignored' });
  });

  it('a log GitHub fails to hand out keeps the delivery for a later try; an expired one falls back to what the check says', async () => {
    h = await openHarness({ baseDelayMs: 20 });
    const { issue, sha, pr, branch } = await codefleetPullRequest();
    h.gh.failNext({ method: 'GET', path: /\/actions\/jobs\/\d+\/logs$/, status: 502 });
    await failJob(sha, branch, [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      settled: 'retrying',
      reason: expect.stringContaining('forge_unavailable'),
    });
    // Nothing half-done: no job, no round counted.
    expect((await h.jobs.stats()).depth).toBe(0);
    expect(ciComments(pr)).toEqual([]);
    expect(await h.processor.processNext({ waitMs: 5_000 })).toMatchObject({
      settled: 'acked',
      outcome: { status: 'enqueued' },
    });
    expect(ciComments(pr)).toHaveLength(1);

    const later = await codefleetPush(issue, 'later');
    const run = await h.gh.addCheckRun(repo, {
      ref: later.sha,
      name: 'e2e',
      conclusion: 'failure',
      output: { title: 'e2e failed', summary: 'login page timed out' },
    });
    h.gh.failNext({
      method: 'GET',
      path: new RegExp(`/actions/jobs/${run.id}/logs$`),
      status: 410,
      body: { message: 'Gone' },
    });
    const body = checkRunCompleted(repo, run, branch, [pr]);
    await h.deliver(body, { 'x-github-event': 'check_run', 'x-hub-signature-256': sign(body) });
    await finish();
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'enqueued', jobId: ciJobId(repo, pr, later.sha) },
    });
    expect((await h.jobs.claim({ workerId: 'w' }))!.job.body).toContain('login page timed out');
  });

  it('switched off, check events change nothing', async () => {
    h = await openHarness({ ciFeedback: { enabled: false, maxRounds: 2, logBytes: 4096 } });
    const { sha, pr, branch } = await codefleetPullRequest();
    await failJob(sha, branch, [pr]);
    expect(await h.processor.processNext()).toMatchObject({
      outcome: { status: 'ignored', reason: expect.stringContaining('off') },
    });
    expect((await h.jobs.stats()).depth).toBe(0);
    expect(ciComments(pr)).toEqual([]);
  });
});

describe('job logs for the agent', () => {
  it('lose their timestamps and are trimmed like verification feedback', () => {
    const log =
      Array.from({ length: 5_000 }, (_, i) => `2026-11-24T10:00:00.${String(i).padStart(7, '0')}Z step ${i} ok`).join(
        '\n',
      ) +
      '\n2026-11-24T10:01:00.0000000Z FAIL test/widget.test.js\n2026-11-24T10:01:00.0000000Z ##[error]Process completed with exit code 1.\n';
    const trimmed = trimJobLog(log, 2048);
    expect(Buffer.byteLength(trimmed)).toBeLessThanOrEqual(2048);
    expect(trimmed).toContain('Process completed with exit code 1.');
    expect(trimmed).not.toMatch(/2026-11-24T/);
  });
});

describe('check events as the receiver reads them', () => {
  const sha = 'c'.repeat(40);
  const read = (name: string, body: string) => readDelivery(name, JSON.parse(body), 'codefleet');
  const run = { id: 7, name: 'test', headSha: sha, conclusion: 'failure' as string | null, suiteId: 8 };
  it('records finished failures on ai/ branches and passed suites; nothing else', () => {
    expect(read('check_run', checkRunCompleted('acme/widgets', run, 'ai/issue-3', [4]))).toEqual({
      kind: 'act',
      intent: {
        kind: 'ci',
        repo: 'acme/widgets',
        actor: 'github-actions[bot]',
        sha,
        branch: 'ai/issue-3',
        pullNumbers: [4],
        outcome: 'failed',
        check: 'test',
      },
    });
    expect(
      read('check_run', checkRunCompleted('acme/widgets', { ...run, conclusion: 'timed_out' }, 'ai/issue-3', [])),
    ).toMatchObject({ kind: 'act', intent: { outcome: 'failed' } });
    // One check run passing says nothing of the others; a suite does.
    expect(
      read('check_run', checkRunCompleted('acme/widgets', { ...run, conclusion: 'success' }, 'ai/issue-3', [4])),
    ).toMatchObject({ kind: 'ignore' });
    expect(read('check_suite', checkSuiteCompleted('acme/widgets', sha, 'ai/issue-3', 'success', [4]))).toMatchObject({
      kind: 'act',
      intent: { outcome: 'passed' },
    });
    expect(read('check_suite', checkSuiteCompleted('acme/widgets', sha, 'ai/issue-3', 'cancelled', [4]))).toMatchObject(
      { kind: 'ignore' },
    );
    expect(read('check_suite', checkSuiteCompleted('acme/widgets', sha, 'feature/x', 'failure', [4]))).toMatchObject({
      kind: 'ignore',
    });
    const created = { ...JSON.parse(checkRunCompleted('acme/widgets', run, 'ai/issue-3', [4])), action: 'created' };
    expect(readDelivery('check_run', created, 'codefleet')).toMatchObject({ kind: 'ignore' });
    expect(read('status', statusEvent('acme/widgets', sha, ['ai/issue-3'], 'pending', 'ci/jenkins'))).toMatchObject({
      kind: 'ignore',
    });
    expect(
      read('status', statusEvent('acme/widgets', sha, ['main', 'ai/issue-3'], 'error', 'ci/jenkins')),
    ).toMatchObject({ kind: 'act', intent: { branch: 'ai/issue-3', outcome: 'failed', check: 'ci/jenkins' } });
    expect(
      read('status', statusEvent('acme/widgets', 'not-a-sha', ['ai/issue-3'], 'error', 'ci/jenkins')),
    ).toMatchObject({ kind: 'invalid' });
  });
});

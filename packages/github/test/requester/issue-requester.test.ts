import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  advance,
  ciFollowUpRequestId,
  classify,
  CodefleetError,
  createJob,
  finish,
  newRun,
  startAttempt,
  type Job,
} from '@codefleet/core';
import { createLocalForge, parseMarker } from '@codefleet/forge';
import { requesterConformance } from '@codefleet/requester/conformance';
import { createTempDir, gitTestEnv, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { createGithubForge, createIssueRequester } from '../../src/index.js';

const labels = {
  queued: 'codefleet:queued',
  running: 'codefleet:running',
  prOpened: 'codefleet:pr-opened',
  failed: 'codefleet:failed',
};
const secret = 'sk-test-0123456789abcdef';
const marks = { running: labels.running, done: labels.prOpened, failed: labels.failed };
const body = (text: string) => text.replace(/^<!-- codefleet:[^>]* -->\n/, '');

function issueJob(repo: string, number: number, options: { id?: string; title?: string } = {}): Job {
  return createJob(
    { repo, source: { kind: 'issue', number }, title: options.title ?? 'Fix the parser', requested_by: 'alice' },
    { id: options.id ?? `job-${randomBytes(3).toString('hex')}`, now: new Date() },
  );
}

// The GitHub adapter (Octokit) against the GitHub STAND-IN on loopback.
let gh: GithubStandIn;
beforeAll(async () => {
  gh = await startGithubStandIn();
});
afterAll(async () => {
  await gh?.close();
});

requesterConformance({
  name: 'issue on GitHub (Octokit against the stand-in)',
  open: async () => {
    const repo = `acme/widgets-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo, { 'README.md': '# sample\n' });
    const issue = gh.createIssue(repo, { title: 'Fix the parser' });
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' }),
    });
    const requester = createIssueRequester({ issues: forge.issues, labels, secrets: [secret] });
    return {
      requester,
      job: (options) => issueJob(repo, issue.number, options),
      foreignJob: createJob(
        {
          repo,
          source: { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: '1.2' },
          title: 't',
          requested_by: 'U1',
        },
        { id: 'chat-1', now: new Date() },
      ),
      observe: async (job) => {
        const comments = await forge.issues.listComments(repo, {
          kind: 'issue',
          number: (job.source as { number: number }).number,
        });
        return { messages: comments.map((c) => body(c.body)), marks: [...gh.labels(repo, issue.number)].sort() };
      },
      secret,
      // The answer sits in a code block longer than any backtick run in it (the forge's fence(),
      // tested there), so nothing in it is live Markdown; Slack's syntax means nothing here.
      activeSyntax: [],
      marks,
      dispose: async () => {},
    };
  },
});

requesterConformance({
  name: 'issue and task on the local forge',
  open: async () => {
    const dir = await createTempDir('requester');
    const forge = createLocalForge({
      dbPath: join(dir.path, 'forge.sqlite'),
      gitEnv: gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' }),
    });
    const repo = join(dir.path, 'origin.git');
    const requester = createIssueRequester({ issues: forge, labels, tasks: true, secrets: [secret] });
    return {
      requester,
      job: (options) => issueJob(repo, 7, options),
      foreignJob: createJob(
        { repo, source: { kind: 'api', callback_url: 'https://ci.example/hook' }, title: 't', requested_by: 'ci' },
        { id: 'api-1', now: new Date() },
      ),
      observe: async () => ({
        messages: (await forge.listComments(repo, { kind: 'issue', number: 7 })).map((c) => body(c.body)),
        marks: await forge.listLabels(repo, { kind: 'issue', number: 7 }),
      }),
      secret,
      activeSyntax: [],
      marks,
      dispose: async () => {
        forge.close();
        await dir.dispose();
      },
    };
  },
});

describe('issue requester', () => {
  it('on a locked issue (GitHub refuses the comment: 403) the progress label still moves, and the refusal is thrown', async () => {
    const repo = `acme/locked-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo, { 'README.md': '# sample\n' });
    const issue = gh.createIssue(repo, { title: 'Fix the parser' });
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' }),
    });
    const requester = createIssueRequester({ issues: forge.issues, labels });
    const job = issueJob(repo, issue.number);
    await requester.report({ kind: 'started', job, attempt: 1 });
    gh.lockIssue(repo, issue.number);
    const at = { now: new Date() };
    const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
    const run = finish(
      stages.reduce(
        (r, stage) => advance(r, stage, at),
        startAttempt(newRun(job, { runId: job.id, ...at }), { workerId: 'w1', ...at }),
      ),
      'succeeded',
      { ...at, dodResult: 'passed' },
    );
    await expect(
      requester.report({
        kind: 'finished',
        job,
        run,
        pullRequest: { number: 9, url: `${gh.url}/${repo}/pull/9`, draft: false },
      }),
    ).rejects.toMatchObject({ code: 'forge_rejected', details: { status: 403 } });
    expect(gh.labels(repo, issue.number)).toEqual([labels.prOpened]);
    expect(gh.comments(repo, issue.number)).toEqual([]);
  });

  it("a CI follow-up of a chat's pull request reports on the pull request (GitHub), no label touched", async () => {
    const repo = `acme/ci-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo, { 'README.md': '# sample\n' });
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' }),
    });
    const requester = createIssueRequester({ issues: forge.issues, labels });
    const pull = gh.createIssue(repo, { title: 'Stands in for the pull request: one number space' });
    const job = createJob(
      {
        repo,
        source: { kind: 'ci', pull: pull.number },
        title: 'Continue',
        requested_by: 'codefleet-ci',
      },
      { id: 'ci-1', now: new Date() },
    );
    expect(requester.handles(job)).toBe(true);
    // One queued as an api job before kind ci is the same follow-up.
    expect(
      requester.handles({ ...job, source: { kind: 'api', request_id: ciFollowUpRequestId(repo, pull.number) } }),
    ).toBe(true);
    // Another repository's id, or a job with a callback of its own, is not one.
    expect(
      requester.handles({
        ...job,
        source: { kind: 'api', request_id: ciFollowUpRequestId('acme/other', pull.number) },
      }),
    ).toBe(false);
    expect(
      requester.handles({
        ...job,
        source: {
          kind: 'api',
          request_id: ciFollowUpRequestId(repo, pull.number),
          callback_url: 'https://ci.example/hook',
        },
      }),
    ).toBe(false);
    const at = { now: new Date() };
    const reason = `pull request #${pull.number} was merged after this job was queued`;
    const error = classify(new CodefleetError('git_conflict', reason, { verdict: 'permanent' }));
    const run = finish(startAttempt(newRun(job, { runId: job.id, ...at }), { workerId: 'w1', ...at }), 'failed', {
      ...at,
      error,
    });
    await requester.report({ kind: 'failed', job, run, error, reason });
    const comments = gh.comments(repo, pull.number);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain('was merged after this job was queued');
    expect(gh.labels(repo, pull.number)).toEqual([]);
  });

  it('writes the one status comment under the status marker, and CLI jobs to the task on the local forge only', async () => {
    const dir = await createTempDir('requester');
    const forge = createLocalForge({
      dbPath: join(dir.path, 'forge.sqlite'),
      gitEnv: gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' }),
    });
    try {
      const repo = join(dir.path, 'origin.git');
      const cliJob = createJob(
        { repo, source: { kind: 'cli' }, title: 't', requested_by: 'me' },
        { id: 'cli-1', now: new Date() },
      );
      expect(createIssueRequester({ issues: forge }).handles(cliJob)).toBe(false);
      const requester = createIssueRequester({ issues: forge, tasks: true });
      await requester.report({ kind: 'cancelled', job: cliJob, by: 'me' });
      const comments = await forge.listComments(repo, { kind: 'task', key: cliJob.idempotency_key });
      expect(comments.map((c) => parseMarker(c.body))).toEqual(['status']);
    } finally {
      forge.close();
      await dir.dispose();
    }
  });
});

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { pushedMarker } from '@codefleet/forge';
import { silentLogger } from '@codefleet/log';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import {
  createTempDir,
  git,
  gitTestEnv,
  startGithubStandIn,
  type GithubStandIn,
  type TempDir,
} from '@codefleet/testkit';
import { ciJobId, createGithubForge, createIssueRequester, createPoller, type PollDeps } from '../../src/index.js';

const labels = {
  queued: 'codefleet:queued',
  running: 'codefleet:running',
  prOpened: 'codefleet:pr-opened',
  failed: 'codefleet:failed',
};

// Polling mode against the GitHub stand-in, with the cursor in a real file.
describe('polling producer', () => {
  let gh: GithubStandIn;
  let dir: TempDir;
  let queue: LocalQueue;
  let deps: PollDeps;
  let ciForge: ReturnType<typeof createGithubForge>;
  beforeEach(async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets');
    dir = await createTempDir('poll');
    queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'q.sqlite'),
      name: 'p',
      leaseMs: 60_000,
      maxAttempts: 4,
    });
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: { ...gitTestEnv(), PATH: process.env.PATH ?? '' },
    });
    deps = {
      issues: forge.issues,
      queue,
      log: silentLogger(),
      requester: createIssueRequester({ issues: forge.issues, labels }),
    };
    ciForge = forge;
  });
  afterEach(async () => {
    await queue.close();
    await dir.dispose();
    await gh.close();
  });
  const poller = () =>
    createPoller(deps, {
      repos: ['acme/widgets'],
      triggerLabel: 'codefleet',
      cursorPath: join(dir.path, 'state', 'cursor.json'),
    });

  it('picks up a labeled issue once, also across a restart', async () => {
    gh.setPermission('acme/widgets', 'alice', 'write');
    const issue = gh.createIssue('acme/widgets', { title: 'Add a widget', body: 'Please.' });
    gh.createIssue('acme/widgets', { title: 'Unrelated' });
    expect(await poller().pollOnce()).toEqual([]);
    gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'alice');

    const first = await poller().pollOnce();
    expect(first).toEqual([expect.objectContaining({ status: 'enqueued' })]);
    expect(await poller().pollOnce()).toEqual([]);
    // A restart: a new poller on the same cursor file.
    expect(
      await createPoller(deps, {
        repos: ['acme/widgets'],
        triggerLabel: 'codefleet',
        cursorPath: join(dir.path, 'state', 'cursor.json'),
      }).pollOnce(),
    ).toEqual([]);
    expect((await queue.stats()).ready).toBe(1);
    expect((await queue.claim({ workerId: 'w' }))?.job).toMatchObject({
      title: 'Add a widget',
      requested_by: 'alice',
      source: { kind: 'issue', number: issue.number },
    });
  });

  it('one issue that cannot become a job does not stop the others, and is told why', async () => {
    gh.setPermission('acme/widgets', 'alice', 'write');
    const odd = gh.createIssue('acme/widgets', { title: 'Out of reach' });
    const fine = gh.createIssue('acme/widgets', { title: 'Add a widget' });
    const later = gh.createIssue('acme/widgets', { title: 'Add a gadget' });
    for (const issue of [odd, fine, later]) gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'alice');
    // A permanent refusal for one issue (a token without access to it, say).
    gh.failNext({
      method: 'GET',
      path: new RegExp(`/issues/${odd.number}$`),
      status: 403,
      body: { message: 'Resource not accessible by integration' },
    });

    const outcomes = await poller().pollOnce();
    expect(outcomes).toHaveLength(3);
    expect(outcomes).toContainEqual({ status: 'failed', reason: expect.stringContaining('forge_rejected') });
    expect(outcomes.filter((o) => o.status === 'enqueued')).toHaveLength(2);
    expect((await queue.stats()).ready).toBe(2);
    const told = gh.comments('acme/widgets', odd.number);
    expect(told).toHaveLength(1);
    expect(told[0]!.body).toContain('could not start work on this issue');
    expect(told[0]!.body).toContain('Resource not accessible by integration');
    // Reported once: the next poll leaves it alone.
    expect(await poller().pollOnce()).toEqual([]);
  });

  it('a transient failure on one issue leaves it for the next poll and goes on with the rest', async () => {
    gh.setPermission('acme/widgets', 'alice', 'write');
    const first = gh.createIssue('acme/widgets', { title: 'First' });
    const second = gh.createIssue('acme/widgets', { title: 'Second' });
    for (const issue of [first, second]) gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'alice');
    gh.failNext({ method: 'GET', path: new RegExp(`/issues/${second.number}$`), status: 502 });
    expect(await poller().pollOnce()).toEqual([expect.objectContaining({ status: 'enqueued' })]);
    expect(await poller().pollOnce()).toEqual([expect.objectContaining({ status: 'enqueued' })]);
    const titles = [
      (await queue.claim({ workerId: 'w' }))?.job.title,
      (await queue.claim({ workerId: 'w' }))?.job.title,
    ].sort();
    expect(titles).toEqual(['First', 'Second']);
  });

  it('checks the permission of whoever added the label', async () => {
    const issue = gh.createIssue('acme/widgets', { title: 't' });
    gh.labelIssue('acme/widgets', issue.number, 'codefleet', 'stranger');
    expect(await poller().pollOnce()).toEqual([expect.objectContaining({ status: 'refused' })]);
    expect((await queue.stats()).depth).toBe(0);
  });

  it('picks up /codefleet commands from new comments once; older comments are history', async () => {
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    try {
      gh.setPermission('acme/widgets', 'alice', 'write');
      const issue = gh.createIssue('acme/widgets', { title: 'Add a widget' });
      gh.commentAs('acme/widgets', issue.number, 'alice', '/codefleet retry');
      const withCancels = { ...deps, cancels: store };
      const make = () =>
        createPoller(withCancels, {
          repos: ['acme/widgets'],
          triggerLabel: 'codefleet',
          cursorPath: join(dir.path, 'state', 'cursor.json'),
        });
      // The first poll starts from now: the old comment is not a command any more.
      expect(await make().pollOnce()).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      gh.commentAs('acme/widgets', issue.number, 'alice', '/codefleet cancel');
      gh.commentAs('acme/widgets', issue.number, 'mallory', '/codefleet retry');
      expect(await make().pollOnce()).toEqual([
        expect.objectContaining({ status: 'cancel_requested' }),
        expect.objectContaining({ status: 'refused' }),
      ]);
      expect(await store.cancelRequested(`acme/widgets#issue-${issue.number}`)).toMatchObject({ by: 'alice' });
      gh.commentAs('acme/widgets', issue.number, 'alice', '/codefleet retry');
      expect(await make().pollOnce()).toEqual([expect.objectContaining({ status: 'enqueued' })]);
      expect(await make().pollOnce()).toEqual([]);
      expect(await store.cancelRequested(`acme/widgets#issue-${issue.number}`)).toBeUndefined();
    } finally {
      await store.close();
    }
  });
  it('without webhooks, a failing check on a codefleet pull request is followed up once; then the green run ends it', async () => {
    const issue = gh.createIssue('acme/widgets', { title: 'Add a widget' });
    const work = join(dir.path, 'work');
    await git(dir.path, ['clone', '--quiet', gh.repoDir('acme/widgets'), work]);
    await git(work, ['checkout', '--quiet', '-b', `ai/issue-${issue.number}`]);
    await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'widget']);
    await git(work, ['push', '--quiet', 'origin', 'HEAD']);
    const sha = await git(work, ['rev-parse', 'HEAD']);
    const pr = await ciForge.ensurePullRequest({
      repo: 'acme/widgets',
      head: `ai/issue-${issue.number}`,
      base: 'main',
      title: 'Add a widget',
      body: `Fixes #${issue.number}\n\n${pushedMarker(sha)}`,
      draft: false,
    });
    const withCi = { ...deps, checks: ciForge.checks, ciFeedback: { enabled: true, maxRounds: 2, logBytes: 4096 } };
    const make = () =>
      createPoller(withCi, {
        repos: ['acme/widgets'],
        triggerLabel: 'codefleet',
        cursorPath: join(dir.path, 'state', 'cursor.json'),
      });
    const run = await gh.addCheckRun('acme/widgets', { ref: sha, name: 'test', status: 'in_progress' });
    // Still running: nothing yet.
    expect(await make().pollOnce()).toEqual([]);
    expect(run.status).toBe('in_progress');
    await gh.addCheckRun('acme/widgets', {
      ref: sha,
      name: 'test',
      conclusion: 'failure',
      log: 'Error: widget() is not defined\n',
    });
    expect(await make().pollOnce()).toEqual([{ status: 'enqueued', jobId: ciJobId('acme/widgets', pr.number, sha) }]);
    expect(await make().pollOnce()).toEqual([]);
    expect((await queue.stats()).ready).toBe(1);
    expect((await queue.claim({ workerId: 'w' }))?.job.body).toContain('widget() is not defined');
    // A re-run passes: the loop ends, once.
    await gh.addCheckRun('acme/widgets', { ref: sha, name: 'test', conclusion: 'success' });
    expect(await make().pollOnce()).toEqual([expect.objectContaining({ status: 'ended' })]);
    expect(await make().pollOnce()).toEqual([]);
    expect(gh.comments('acme/widgets', pr.number).map((c) => c.body.split('\n')[0])).toEqual([
      `<!-- codefleet:ci-round:${sha} -->`,
      '<!-- codefleet:ci-ended -->',
    ]);
  });
});

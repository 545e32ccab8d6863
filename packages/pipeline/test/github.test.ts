import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createJob } from '@codefleet/core';
import { pushedShaOf } from '@codefleet/forge';

const labels = {
  queued: 'codefleet:queued',
  running: 'codefleet:running',
  prOpened: 'codefleet:pr-opened',
  failed: 'codefleet:failed',
};
import { createGithubForge, createIssueRequester, githubCredentialEnv } from '@codefleet/github';
import { createLogger } from '@codefleet/log';
import { git, gitTestEnv, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { branchName, createWorkspaceManager } from '@codefleet/workspace';
import { runJob } from '../src/index.js';
import { createHarness, projectFiles, type Harness } from './harness.js';

// The whole pipeline publishing to the GitHub STAND-IN through the real Octokit adapter:
// clone and push over smart HTTP with the token from a credential helper, the pull request
// and the status comment through the REST API.
let h: Harness | undefined;
let gh: GithubStandIn | undefined;
afterEach(async () => {
  await h?.dispose();
  await gh?.close();
  h = undefined;
  gh = undefined;
});

/**
 * The harness's pipeline on the GitHub stand-in through the real adapter: the forge, the
 * issue requester (with `progress` labels when given) and working copies fetched with the token.
 */
function onGithub(harness: Harness, standIn: GithubStandIn, progress?: typeof labels) {
  const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '', HOME: harness.dir.path };
  const forge = createGithubForge({
    token: standIn.token,
    apiUrl: standIn.url,
    gitUrl: standIn.url,
    gitEnv: env,
    gitTimeoutMs: 30_000,
  });
  const deps = {
    ...harness.deps,
    forge,
    requester: createIssueRequester({ issues: forge.issues, ...(progress === undefined ? {} : { labels: progress }) }),
    workspaces: createWorkspaceManager({
      cacheDir: join(harness.dir.path, 'gh-cache'),
      reuse: true,
      gitEnv: env,
      remoteGitEnv: githubCredentialEnv(env, standIn.token, standIn.url),
    }),
  };
  return { deps, forge, env };
}

describe('runJob on GitHub (stand-in)', () => {
  it('an issue becomes one pull request with Fixes #N and a status comment that ends in done; the token appears nowhere', async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets', projectFiles);
    const issue = gh.createIssue('acme/widgets', {
      title: 'Add two()',
      body: 'Add `two()` to src/lib.js. $(touch /tmp/pwned)',
      user: 'alice',
    });
    h = await createHarness();
    await h.agent(`
if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const two = () => 2;\\n');
if (pass === 'test') fs.writeFileSync(path.join(workdir, 'test', 'two.test.js'), "import { test } from 'node:test';\\nimport assert from 'node:assert/strict';\\nimport { two } from '../src/lib.js';\\ntest('two', () => assert.equal(two(), 2));\\n");
`);
    const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '', HOME: h.dir.path };
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: env,
      gitTimeoutMs: 30_000,
    });
    // Every log line at trace level, with masking OFF: the token must not be in any of them.
    const logged: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logged.push(chunk.toString('utf8'));
        done();
      },
    });
    const deps = {
      ...h.deps,
      forge,
      requester: createIssueRequester({ issues: forge.issues }),
      log: createLogger({ level: 'trace', destination: sink, secrets: [] }),
      workspaces: createWorkspaceManager({
        cacheDir: join(h.dir.path, 'gh-cache'),
        reuse: true,
        gitEnv: env,
        remoteGitEnv: githubCredentialEnv(env, gh.token, gh.url),
      }),
    };
    const job = createJob(
      {
        repo: 'acme/widgets',
        source: { kind: 'issue', number: issue.number },
        title: issue.title,
        body: issue.body,
        requested_by: 'alice',
      },
      { id: `gh-${Date.now()}`, now: new Date() },
    );

    const first = await runJob(deps, { job, attempt: 1, workerId: 'w1', signal: new AbortController().signal });
    expect(first.action).toBe('ack');
    // Delivered again (a lost ack): converges on the same PR.
    const again = await runJob(
      { ...deps, store: h.store },
      { job, attempt: 2, workerId: 'w2', signal: new AbortController().signal },
    );
    expect(again.action).toBe('ack');

    const pulls = gh.pulls('acme/widgets');
    expect(pulls).toHaveLength(1);
    expect(gh.prCreations('acme/widgets', branchName(job))).toBe(1);
    expect(branchName(job)).toBe(`ai/issue-${issue.number}`);
    expect(pulls[0]).toMatchObject({ title: 'Add two()', draft: false, base: { ref: 'main' } });
    expect(pulls[0]!.body).toContain(`Fixes #${issue.number}`);
    const comments = gh.comments('acme/widgets', issue.number);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toMatch(/Status: done\s*$/);
    expect(logged.length).toBeGreaterThan(5);
    for (const text of [pulls[0]!.body, comments[0]!.body, JSON.stringify(await h.store.get(job.id)), logged.join('')])
      expect(text).not.toContain(gh.token);
  });

  it('a job pinned to an older commit starts there on GitHub too, and its pull request targets main', async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets', projectFiles);
    h = await createHarness();
    const bare = gh.repoDir('acme/widgets');
    const base = await git(h.dir.path, ['--git-dir', bare, 'rev-parse', 'main']);
    // main moves on after the commit the job is pinned to.
    const work = join(h.dir.path, 'later');
    await git(h.dir.path, ['clone', '--quiet', bare, work]);
    await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'later work']);
    await git(work, ['push', '--quiet', 'origin', 'main']);
    const later = await git(work, ['rev-parse', 'main']);
    await h.agent(`
const head = (await import('node:child_process')).execFileSync('git', ['rev-parse', 'HEAD'], { cwd: workdir, encoding: 'utf8' }).trim();
if (pass === 'implement') { fs.writeFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'head.txt'), head); fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const two = () => 2;\\n'); }
`);
    const { deps } = onGithub(h, gh);
    const job = createJob(
      { repo: 'acme/widgets', base_commit: base, source: { kind: 'cli' }, title: 'Add two()', requested_by: 'alice' },
      { id: `gh-pinned-${Date.now()}`, now: new Date() },
    );
    const result = await runJob(deps, { job, attempt: 1, workerId: 'w1', signal: new AbortController().signal });
    expect(result.action).toBe('ack');
    expect(await readFile(join(h.agentModule(), '..', 'head.txt'), 'utf8')).toBe(base);
    const [pull] = gh.pulls('acme/widgets');
    expect(pull).toMatchObject({ base: { ref: 'main' } });
    const pushed = await git(h.dir.path, ['--git-dir', bare, 'rev-parse', `${branchName(job)}^`]);
    expect(pushed).toBe(base);
    expect(pushed).not.toBe(later);
  });

  it('a job that fails for good says so on the issue: failed label, failure comment ending in failed', async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets', projectFiles);
    const issue = gh.createIssue('acme/widgets', { title: 'Do something impossible' });
    gh.labelIssue('acme/widgets', issue.number, 'codefleet:queued', 'codefleet[bot]');
    h = await createHarness({ labels });
    await h.agent('// changes nothing');
    const { deps } = onGithub(h, gh, labels);
    const job = createJob(
      {
        repo: 'acme/widgets',
        source: { kind: 'issue', number: issue.number },
        title: issue.title,
        body: '',
        requested_by: 'alice',
      },
      { id: `gh-f-${Date.now()}`, now: new Date() },
    );
    const result = await runJob(deps, { job, attempt: 1, workerId: 'w1', signal: new AbortController().signal });
    expect(result.action).toBe('dead_letter');
    expect(gh.labels('acme/widgets', issue.number)).toEqual(['codefleet:failed']);
    const comments = gh.comments('acme/widgets', issue.number);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toMatch(/Status: failed\s*$/);
    expect(gh.pulls('acme/widgets')).toEqual([]);
  });

  it('a job cancelled on the issue leaves no progress label behind, and says so', async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets', projectFiles);
    const issue = gh.createIssue('acme/widgets', { title: 'Never mind' });
    gh.labelIssue('acme/widgets', issue.number, 'codefleet:queued', 'codefleet[bot]');
    h = await createHarness({ labels });
    const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '', HOME: h.dir.path };
    const forge = createGithubForge({
      token: gh.token,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: env,
      gitTimeoutMs: 30_000,
    });
    const deps = { ...h.deps, forge, requester: createIssueRequester({ issues: forge.issues, labels }) };
    const job = createJob(
      {
        repo: 'acme/widgets',
        source: { kind: 'issue', number: issue.number },
        title: issue.title,
        body: '',
        requested_by: 'alice',
      },
      { id: `gh-c-${Date.now()}`, now: new Date() },
    );
    await h.store.requestCancel(job.idempotency_key, 'alice');
    const result = await runJob(deps, { job, attempt: 1, workerId: 'w1', signal: new AbortController().signal });
    expect(result).toMatchObject({ action: 'ack', run: { outcome: 'cancelled' } });
    expect(gh.labels('acme/widgets', issue.number)).toEqual([]);
    expect(gh.comments('acme/widgets', issue.number)[0]!.body).toMatch(/Status: cancelled\s*$/);
  });
  it('a follow-up job on the PR branch commits on top and updates the same pull request, recording the commit it pushed', async () => {
    gh = await startGithubStandIn();
    await gh.createRepo('acme/widgets', projectFiles);
    const issue = gh.createIssue('acme/widgets', {
      title: 'Add two()',
      body: 'Add `two()` to src/lib.js.',
      user: 'alice',
    });
    h = await createHarness();
    // The follow-up's task says what CI reported: that run adds three() instead.
    await h.agent(`
const task = fs.readFileSync(path.join(workdir, '.codefleet', 'task.md'), 'utf8');
const fn = task.includes('CI failed') ? 'three' : 'two';
if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const ' + fn + ' = () => 0;\\n');
`);
    const { deps, forge } = onGithub(h, gh);
    const run = (job: ReturnType<typeof createJob>) =>
      runJob(deps, { job, attempt: 1, workerId: 'w1', signal: new AbortController().signal });
    const first = createJob(
      {
        repo: 'acme/widgets',
        source: { kind: 'issue', number: issue.number },
        title: issue.title,
        body: issue.body,
        requested_by: 'alice',
      },
      { id: `gh-1-${Date.now()}`, now: new Date() },
    );
    expect((await run(first)).action).toBe('ack');
    const branch = `ai/issue-${issue.number}`;
    const head = async () => (await forge.findBranch('acme/widgets', branch))!.sha;
    const pushedFirst = await head();
    expect(pushedShaOf(gh.pulls('acme/widgets')[0]!.body)).toBe(pushedFirst);

    // What the producer queues when CI fails: the same issue, the PR's branch and base.
    const followUp = createJob(
      {
        repo: 'acme/widgets',
        source: { kind: 'issue', number: issue.number },
        title: issue.title,
        branch,
        base_branch: 'main',
        body: `${issue.body}\n\n## CI failed on pull request #1`,
        requested_by: 'codefleet-ci',
      },
      { id: `gh-2-${Date.now()}`, now: new Date() },
    );
    expect((await run(followUp)).action).toBe('ack');
    const pushedSecond = await head();
    expect(pushedSecond).not.toBe(pushedFirst);
    // On top of what was pushed before, not from the base again.
    expect(await git(h.dir.path, ['--git-dir', gh.repoDir('acme/widgets'), 'rev-parse', `${pushedSecond}^`])).toBe(
      pushedFirst,
    );
    const lib = await git(h.dir.path, ['--git-dir', gh.repoDir('acme/widgets'), 'show', `${pushedSecond}:src/lib.js`]);
    expect(lib).toContain('two');
    expect(lib).toContain('three');
    expect(gh.pulls('acme/widgets')).toHaveLength(1);
    expect(gh.prCreations('acme/widgets', branch)).toBe(1);
    expect(pushedShaOf(gh.pulls('acme/widgets')[0]!.body)).toBe(pushedSecond);
  });
});

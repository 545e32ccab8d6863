import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createJob, type Job } from '@codefleet/core';
import { pushedShaOf, taskTrailer } from '@codefleet/forge';
import { createGithubForge, createIssueRequester, githubCredentialEnv } from '@codefleet/github';
import { git, gitTestEnv, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { createWorkspaceManager, type WorkspaceManager } from '@codefleet/workspace';
import { runJob } from '../src/index.js';
import { createHarness, projectFiles, type Harness } from './harness.js';

// A follow-up (a CI round, a review) is queued while its pull request is open and its branch
// is codefleet's; these tests change that world after the queueing, on the GitHub STAND-IN
// (real Octokit, real git over smart HTTP), and check that the worker looks again.
let h: Harness | undefined;
let gh: GithubStandIn | undefined;
afterEach(async () => {
  await h?.dispose();
  await gh?.close();
  h = undefined;
  gh = undefined;
});

const repo = 'acme/widgets';

/**
 * A commit on `branch` written straight into the bare repository behind the stand-in: a
 * human's, or (with a task trailer in `message`) an earlier attempt's. It adds `file`.
 */
async function humanPush(
  bareDir: string,
  branch: string,
  message = 'A human fixes it by hand',
  file = 'HUMAN.md',
): Promise<string> {
  const at = ['--git-dir', bareDir];
  const blob = execFileSync('git', [...at, 'hash-object', '-w', '--stdin'], {
    input: `${message}\n`,
    env: gitTestEnv(),
  })
    .toString()
    .trim();
  const listing = await git(bareDir, [...at, 'ls-tree', `refs/heads/${branch}^{tree}`]);
  const entries = `${listing}\n100644 blob ${blob}\t${file}\n`;
  const tree = execFileSync('git', [...at, 'mktree'], { input: entries, env: gitTestEnv() })
    .toString()
    .trim();
  const commit = await git(bareDir, [...at, 'commit-tree', tree, '-p', `refs/heads/${branch}`, '-m', message]);
  await git(bareDir, [...at, 'update-ref', `refs/heads/${branch}`, commit]);
  return commit;
}

/** The stand-in with an issue whose first job opened codefleet's pull request, and a follow-up for it. */
async function published(wrap: (m: WorkspaceManager) => WorkspaceManager = (m) => m) {
  gh = await startGithubStandIn();
  await gh.createRepo(repo, projectFiles);
  const issue = gh.createIssue(repo, { title: 'Add two()', body: 'Add `two()` to src/lib.js.', user: 'alice' });
  h = await createHarness();
  // Each run adds a line of its own, so a follow-up always has something to push.
  await h.agent(
    "if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const n' + Date.now() + ' = () => 0;\\n');",
  );
  const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '', HOME: h.dir.path };
  const forge = createGithubForge({
    token: gh.token,
    apiUrl: gh.url,
    gitUrl: gh.url,
    gitEnv: env,
    gitTimeoutMs: 30_000,
  });
  // What happens on GitHub right after a push lands (the test sets it).
  const afterPush = { run: async () => {} };
  const push = forge.ensureBranch.bind(forge);
  forge.ensureBranch = async (req) => {
    const pushed = await push(req);
    await afterPush.run();
    return pushed;
  };
  const workspaces = createWorkspaceManager({
    cacheDir: join(h.dir.path, 'gh-cache'),
    reuse: true,
    gitEnv: env,
    remoteGitEnv: githubCredentialEnv(env, gh.token, gh.url),
  });
  const deps = {
    ...h.deps,
    forge,
    requester: createIssueRequester({ issues: forge.issues }),
    workspaces: wrap(workspaces),
  };
  const run = (job: Job) => runJob(deps, { job, attempt: 1, workerId: 'w1', signal: new AbortController().signal });
  const first = createJob(
    {
      repo,
      source: { kind: 'issue', number: issue.number },
      title: issue.title,
      body: issue.body,
      requested_by: 'alice',
    },
    { id: 'gh-first', now: new Date() },
  );
  expect((await run(first)).action).toBe('ack');
  const branch = `ai/issue-${issue.number}`;
  const pull = gh.pulls(repo)[0]!;
  const pushed = pushedShaOf(pull.body)!;
  // What the producer queues when CI fails on that pull request.
  const followUp = createJob(
    {
      repo,
      source: { kind: 'issue', number: issue.number },
      title: issue.title,
      branch,
      base_branch: 'main',
      body: `${issue.body}\n\n## CI failed on pull request #${pull.number}`,
      requested_by: 'codefleet-ci',
    },
    { id: 'gh-ci-follow-up', now: new Date() },
  );
  const head = async () => git(h!.dir.path, ['--git-dir', gh!.repoDir(repo), 'rev-parse', `refs/heads/${branch}`]);
  return { gh, issue, branch, pull, pushed, followUp, run, head, afterPush };
}

describe('a follow-up looks at its pull request again when it publishes', () => {
  it.each(['merged', 'closed'] as const)(
    'a pull request %s after the follow-up was queued: no push, no second pull request, the issue told why',
    async (ended) => {
      const { gh, issue, branch, pull, pushed, followUp, run, head } = await published();
      if (ended === 'merged') gh.mergePull(repo, pull.number);
      else gh.closePull(repo, pull.number);

      const result = await run(followUp);
      expect(result).toMatchObject({
        action: 'dead_letter',
        run: { outcome: 'failed', error: { code: 'git_conflict', verdict: 'permanent' } },
      });
      expect(await head()).toBe(pushed);
      expect(gh.pulls(repo)).toHaveLength(1);
      expect(gh.prCreations(repo, branch)).toBe(1);
      const comments = gh.comments(repo, issue.number);
      expect(comments).toHaveLength(1);
      expect(comments[0]!.body).toContain(`was ${ended} after this job was queued`);
    },
  );

  it('a pull request merged while the follow-up pushes: no second pull request opens beside it', async () => {
    const { gh, issue, branch, pull, followUp, run, afterPush } = await published();
    afterPush.run = async () => gh.mergePull(repo, pull.number);

    expect(await run(followUp)).toMatchObject({
      action: 'dead_letter',
      run: { error: { code: 'git_conflict', verdict: 'permanent' } },
    });
    expect(gh.pulls(repo)).toHaveLength(1);
    expect(gh.prCreations(repo, branch)).toBe(1);
    expect(gh.comments(repo, issue.number)[0]!.body).toContain('was merged while this job pushed');
  });

  it('a job queued after its pull request was closed (the issue triggered again) still publishes, as before', async () => {
    const { gh, issue, branch, pull, run } = await published();
    gh.closePull(repo, pull.number);
    const again = createJob(
      {
        repo,
        source: { kind: 'issue', number: issue.number },
        title: issue.title,
        body: issue.body,
        requested_by: 'alice',
      },
      { id: 'gh-again', now: new Date(Date.now() + 60_000) },
    );
    expect((await run(again)).action).toBe('ack');
    expect(gh.prCreations(repo, branch)).toBe(2);
  });

  it('a human pushed after the follow-up was queued: the branch is left as they left it, and the issue told why', async () => {
    const { gh, issue, branch, pushed, followUp, run, head } = await published();
    const human = await humanPush(gh.repoDir(repo), branch);

    const result = await run(followUp);
    expect(result).toMatchObject({
      action: 'dead_letter',
      run: { error: { code: 'git_conflict', verdict: 'permanent' } },
    });
    expect(await head()).toBe(human);
    expect(pushedShaOf(gh.pulls(repo)[0]!.body)).toBe(pushed);
    const comments = gh.comments(repo, issue.number);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(
      `has moved since codefleet pushed ${pushed.slice(0, 7)} (it is at ${human.slice(0, 7)})`,
    );
  });

  it('a human pushes while the follow-up runs: the push itself is leased on the commit codefleet pushed, and refused', async () => {
    let humanAt: string | undefined;
    let armed = false;
    // Right after the follow-up's working copy is prepared, before its agent runs.
    const wrap = (m: WorkspaceManager): WorkspaceManager =>
      Object.assign(Object.create(m) as WorkspaceManager, {
        prepare: async (req: Parameters<WorkspaceManager['prepare']>[0]) => {
          const ws = await m.prepare(req);
          if (armed) humanAt = await humanPush(gh!.repoDir(repo), req.branch);
          return ws;
        },
      });
    const { gh: standIn, issue, pushed, followUp, run, head } = await published(wrap);
    armed = true;

    const result = await run(followUp);
    expect(result).toMatchObject({
      action: 'dead_letter',
      run: { error: { code: 'git_conflict', verdict: 'permanent' } },
    });
    expect(humanAt).toBeDefined();
    expect(await head()).toBe(humanAt);
    expect(standIn.pulls(repo)).toHaveLength(1);
    expect(standIn.comments(repo, issue.number)[0]!.body).toContain(
      `has moved since codefleet pushed ${pushed.slice(0, 7)}`,
    );
  });

  it("past the commit its pull request names only by an earlier attempt of the same task (pushed, then the worker died): that is codefleet's", async () => {
    const { gh, branch, followUp, run, head } = await published();
    // The earlier attempt's push landed; its pull request update did not.
    const earlier = await humanPush(
      gh.repoDir(repo),
      branch,
      `Earlier attempt\n\n${taskTrailer(followUp.idempotency_key)}`,
      'EARLIER.md',
    );
    expect((await run(followUp)).action).toBe('ack');
    const now = await head();
    expect(await git(h!.dir.path, ['--git-dir', gh.repoDir(repo), 'rev-parse', `${now}^`])).toBe(earlier);
    expect(pushedShaOf(gh.pulls(repo)[0]!.body)).toBe(now);
    expect(gh.prCreations(repo, branch)).toBe(1);
  });

  it("on an open pull request whose branch is codefleet's, the follow-up pushes on top and updates it", async () => {
    const { gh, branch, pushed, followUp, run, head } = await published();
    expect((await run(followUp)).action).toBe('ack');
    const now = await head();
    expect(await git(h!.dir.path, ['--git-dir', gh.repoDir(repo), 'rev-parse', `${now}^`])).toBe(pushed);
    expect(pushedShaOf(gh.pulls(repo)[0]!.body)).toBe(now);
    expect(gh.prCreations(repo, branch)).toBe(1);
  });
});

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, git, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { createGithubForge, maxJobLogBytes } from '../../src/index.js';
import { forgeGitEnv } from '@codefleet/forge/contract';
import { githubDescription, responseSchema, validate } from './openapi-check.js';

// What CI feedback reads of GitHub, through the real Octokit adapter against the GitHub
// STAND-IN: check runs and statuses of a commit, a fork's pull request, and an Actions job
// log behind its 302 redirect; every JSON answer checked against GitHub's description.
let gh: GithubStandIn;
beforeAll(async () => {
  gh = await startGithubStandIn();
});
afterAll(async () => {
  await gh?.close();
});

describe('GitHub checks (stand-in)', () => {
  it('reads failing checks, pending ones and job logs; the log download carries no token', async () => {
    const repo = 'acme/checked';
    const { bareDir } = await gh.createRepo(repo, { 'README.md': '# checked\n' });
    const scratch = await createTempDir('gh-checks');
    const forge = createGithubForge({ token: gh.token, apiUrl: gh.url, gitUrl: gh.url, gitEnv: forgeGitEnv() });
    try {
      const work = join(scratch.path, 'work');
      await git(scratch.path, ['clone', '--quiet', bareDir, work]);
      await git(work, ['checkout', '--quiet', '-b', 'ai/issue-1']);
      await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'x']);
      const { sha } = await forge.ensureBranch({ repo, workdir: work, branch: 'ai/issue-1' });
      const pr = await forge.ensurePullRequest({
        repo,
        head: 'ai/issue-1',
        base: 'main',
        title: 'Add a widget',
        body: 'Fixes #1',
        draft: false,
      });

      const tests = await gh.addCheckRun(repo, {
        ref: sha,
        name: 'test',
        conclusion: 'failure',
        log: '2026-11-24T10:00:00.0000000Z ##[error]Process completed with exit code 1.\n',
      });
      await gh.addCheckRun(repo, { ref: sha, name: 'lint', conclusion: 'success' });
      await gh.addCheckRun(repo, { ref: sha, name: 'build', status: 'in_progress' });
      await gh.addCheckRun(repo, {
        ref: sha,
        name: 'coverage',
        app: 'codecov',
        conclusion: 'timed_out',
        output: { title: 'Coverage fell', summary: '61% < 80%' },
      });
      await gh.setStatus(repo, sha, { context: 'ci/jenkins', state: 'error', description: 'Build broke' });
      const checks = await forge.checks.commitChecks(repo, sha);
      expect(checks).toEqual({
        pending: 1,
        passed: 1,
        // The first failure: the test job, which finished before the others.
        firstFailedAt: tests.completedAt,
        failed: expect.arrayContaining([
          expect.objectContaining({ name: 'test', kind: 'actions', jobId: tests.id, conclusion: 'failure' }),
          expect.objectContaining({
            name: 'coverage',
            kind: 'app',
            conclusion: 'timed_out',
            text: 'Coverage fell\n\n61% < 80%',
          }),
          expect.objectContaining({ name: 'ci/jenkins', kind: 'status', conclusion: 'error', text: 'Build broke' }),
        ]),
      });
      expect(checks.failed).toHaveLength(3);

      expect(await forge.checks.jobLog(repo, tests.id)).toContain('Process completed with exit code 1.');
      const download = gh.requests.filter((r) => r.path.startsWith('/_standin/job-logs/'));
      expect(download).toHaveLength(1);
      expect(download[0]!.credentials).toBe(false);
      await expect(forge.checks.jobLog(repo, 424242)).rejects.toMatchObject({ code: 'forge_not_found' });

      // A huge log: its end is kept, where the failing step is.
      const big = await gh.addCheckRun(repo, {
        ref: sha,
        name: 'big',
        conclusion: 'failure',
        log: `${'noise line\n'.repeat(600_000)}the real error\n`,
      });
      const tail = await forge.checks.jobLog(repo, big.id);
      expect(tail.length).toBeLessThanOrEqual(maxJobLogBytes);
      expect(tail.endsWith('the real error\n')).toBe(true);
      expect(tail.startsWith('noise line\n')).toBe(true);

      expect(await forge.checks.pull(repo, pr.number)).toMatchObject({
        headRef: 'ai/issue-1',
        headSha: sha,
        headRepo: repo,
        baseRef: 'main',
        state: 'open',
      });
      expect(await forge.checks.openPullFor(repo, 'ai/issue-1')).toMatchObject({ number: pr.number });
      const fork = gh.openForkPull(repo, {
        headRepo: 'mallory/checked',
        head: 'ai/issue-1',
        sha: 'b'.repeat(40),
        title: 'Totally legit',
      });
      expect(await forge.checks.pull(repo, fork.number)).toMatchObject({
        headRef: 'ai/issue-1',
        headRepo: 'mallory/checked',
        headSha: 'b'.repeat(40),
      });
      // A fork's head of the same name is not this repository's branch.
      expect(await forge.checks.openPullFor(repo, 'ai/issue-1')).toMatchObject({ number: pr.number });
      expect((await forge.checks.openPulls(repo)).map((p) => p.number)).toEqual([pr.number, fork.number]);
    } finally {
      forge.close();
      await scratch.dispose();
    }

    const spec = githubDescription();
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const exchange of gh.exchanges) {
      seen.add(`${exchange.method} ${exchange.route} ${exchange.status}`);
      // The redirect has no body; GitHub's description leaves the logs' 404 out, though GitHub answers one.
      if (exchange.status === 302 || (exchange.status === 404 && exchange.route.endsWith('/logs'))) continue;
      const schema = responseSchema(spec, exchange.method, exchange.route, exchange.status);
      if (typeof schema === 'string') problems.push(schema);
      else
        problems.push(
          ...validate(spec, schema, exchange.body).map(
            (p) => `${exchange.method} ${exchange.path} ${exchange.status}: ${p}`,
          ),
        );
    }
    expect([...new Set(problems)].slice(0, 20)).toEqual([]);
    expect([...seen]).toEqual(
      expect.arrayContaining([
        'GET /repos/{owner}/{repo}/commits/{ref}/check-runs 200',
        'GET /repos/{owner}/{repo}/commits/{ref}/status 200',
        'GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs 302',
      ]),
    );
  });
});

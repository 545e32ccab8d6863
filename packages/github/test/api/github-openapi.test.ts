import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, git, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { createGithubForge, createGithubPullHistory, githubAppTokens } from '../../src/index.js';
import { forgeGitEnv } from '@codefleet/forge/contract';
import { githubDescription, responseSchema, validate } from './openapi-check.js';

// The GitHub STAND-IN answers as GitHub's official OpenAPI description says GitHub does:
// the real adapter runs every operation it uses against the stand-in, then every answer
// the stand-in gave is checked against the schema GitHub documents for that operation
// and status. A stand-in that drops a field GitHub always sends fails here, not in
// production.
let gh: GithubStandIn;
beforeAll(async () => {
  gh = await startGithubStandIn();
});
afterAll(async () => {
  await gh?.close();
});

describe("the GitHub stand-in against GitHub's OpenAPI description", () => {
  it('every answer to the operations the adapter uses fits the documented schema', async () => {
    const repo = 'acme/described';
    const { bareDir } = await gh.createRepo(repo, { 'README.md': '# described\n' });
    const scratch = await createTempDir('gh-openapi');
    const app = gh.createApp();
    const tokens = githubAppTokens({
      appId: app.appId,
      privateKey: app.privateKey,
      installationId: app.installationId,
      apiUrl: gh.url,
      tokenFile: join(scratch.path, 'token'),
    });
    const forge = createGithubForge({
      tokens,
      tokenFile: join(scratch.path, 'token'),
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: forgeGitEnv(),
    });
    try {
      gh.setPermission(repo, 'alice', 'maintain');
      const issue = gh.createIssue(repo, { title: 'Add a widget', body: 'Please.', user: 'bob', labels: ['bug'] });
      gh.labelIssue(repo, issue.number, 'codefleet', 'alice');
      for (let n = 0; n < 35; n += 1) gh.commentAs(repo, issue.number, 'bob', `note ${n}`);
      const target = { kind: 'issue' as const, number: issue.number };

      expect(await forge.issues.getTask(repo, issue.number)).toMatchObject({
        title: 'Add a widget',
        labels: ['bug', 'codefleet'],
      });
      expect(await forge.issues.labeledIssues(repo, 'codefleet')).toEqual([issue.number]);
      expect(await forge.issues.labelEvents(repo, issue.number, 'codefleet')).toEqual([
        expect.objectContaining({ actor: 'alice' }),
      ]);
      expect((await forge.issues.commentsSince(repo, undefined)).length).toBe(35);
      expect(await forge.issues.permission(repo, 'alice')).toBe('maintain');
      await forge.issues.ensureComment({ repo, target, marker: 'status', body: 'queued' });
      await forge.issues.ensureComment({ repo, target, marker: 'status', body: 'running' });
      expect((await forge.issues.listComments(repo, target)).length).toBe(36);
      await forge.issues.ensureLabels({ repo, target, add: ['codefleet:queued'], remove: ['bug'] });

      const work = join(scratch.path, 'work');
      await git(scratch.path, ['clone', '--quiet', bareDir, work]);
      await git(work, ['checkout', '--quiet', '-b', 'ai/issue-1']);
      await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'x']);
      await forge.ensureBranch({ repo, workdir: work, branch: 'ai/issue-1' });
      const pr = await forge.ensurePullRequest({
        repo,
        head: 'ai/issue-1',
        base: 'main',
        title: 'Add a widget',
        body: 'Fixes #1',
        draft: true,
      });
      await forge.ensurePullRequest({
        repo,
        head: 'ai/issue-1',
        base: 'main',
        title: 'Add a widget (v2)',
        body: 'Fixes #1',
        draft: false,
      });
      expect(await forge.findPullRequest(repo, 'ai/issue-1')).toMatchObject({ number: pr.number, draft: false });
      expect(await forge.getPullRequest(repo, pr.number)).toMatchObject({ title: 'Add a widget (v2)' });
      gh.addReviewComment(repo, pr.number, 77, { path: 'README.md', line: 1, body: 'Rename it.', user: 'alice' });
      expect(await forge.issues.reviewComments(repo, pr.number, 77)).toEqual([
        expect.objectContaining({ path: 'README.md', line: 1 }),
      ]);
      // Merged, it is read back as history: a closed pull request naming its merge commit.
      const merged = await gh.landPull(repo, pr.number, 'merge');
      const history = createGithubPullHistory({ tokens, tokenFile: join(scratch.path, 'token'), apiUrl: gh.url });
      expect((await history.closedPulls(repo)).pulls).toEqual([
        expect.objectContaining({ number: pr.number, mergeCommitSha: merged }),
      ]);
      expect(await history.issues.getTask(repo, pr.number)).toMatchObject({ isPullRequest: true });
      // Error answers are documented too.
      await expect(forge.getPullRequest(repo, 999)).rejects.toMatchObject({ code: 'forge_not_found' });
      await expect(forge.issues.getTask(repo, 999)).rejects.toMatchObject({ code: 'forge_not_found' });
    } finally {
      forge.close();
      await scratch.dispose();
    }

    const spec = githubDescription();
    const seen = new Set<string>();
    const problems: string[] = [];
    for (const exchange of gh.exchanges) {
      if (exchange.route === '/graphql') continue;
      seen.add(`${exchange.method} ${exchange.route}`);
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
    // The check covered what the adapter uses, errors included.
    expect([...seen].sort()).toEqual(
      expect.arrayContaining([
        'GET /repos/{owner}/{repo}/issues',
        'GET /repos/{owner}/{repo}/issues/{issue_number}',
        'GET /repos/{owner}/{repo}/issues/{issue_number}/events',
        'GET /repos/{owner}/{repo}/issues/comments',
        'GET /repos/{owner}/{repo}/issues/{issue_number}/comments',
        'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
        'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}',
        'GET /repos/{owner}/{repo}/issues/{issue_number}/labels',
        'POST /repos/{owner}/{repo}/issues/{issue_number}/labels',
        'DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}',
        'GET /repos/{owner}/{repo}/pulls',
        'POST /repos/{owner}/{repo}/pulls',
        'GET /repos/{owner}/{repo}/pulls/{pull_number}',
        'PATCH /repos/{owner}/{repo}/pulls/{pull_number}',
        'GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments',
        'GET /repos/{owner}/{repo}/collaborators/{username}/permission',
        'POST /app/installations/{installation_id}/access_tokens',
      ]),
    );
    expect(gh.exchanges.some((e) => e.status === 404)).toBe(true);
  });
});

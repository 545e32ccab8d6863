import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { createTempDir, gitTestEnv, startGithubStandIn, type GithubStandIn, type TempDir } from '../src/index.js';

// The stand-in itself is tested with plain fetch and the real git client, so the forge
// adapter's tests can trust what it answers.
describe('GitHub stand-in', () => {
  let gh: GithubStandIn;
  let dir: TempDir;
  beforeEach(async () => {
    gh = await startGithubStandIn();
    dir = await createTempDir('gh');
    await gh.createRepo('acme/widgets', { 'README.md': '# widgets\n' });
  });
  afterEach(async () => {
    await gh.close();
    await dir.dispose();
  });
  const api = (method: string, path: string, body?: unknown, token = gh.token) =>
    fetch(`${gh.url}${path}`, {
      method,
      headers: { authorization: `token ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  // The token goes in a header for this one command, never into the URL.
  const gitAuth = (token: string) => [
    '-c',
    `http.extraHeader=Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
  ];
  const git = (args: string[], cwd = dir.path) => execa('git', args, { cwd, env: gitTestEnv(), reject: false });

  it('refuses requests without the token', async () => {
    expect((await api('GET', '/repos/acme/widgets', undefined, 'wrong')).status).toBe(401);
    expect((await git(['clone', '--quiet', `${gh.url}/acme/widgets.git`, 'nope'])).exitCode).not.toBe(0);
  });

  it('issues, comments edited in place, labels, collaborator permission', async () => {
    const issue = gh.createIssue('acme/widgets', {
      title: 'Add a widget',
      body: 'Please.',
      user: 'alice',
      labels: ['bug'],
    });
    expect(await (await api('GET', `/repos/acme/widgets/issues/${issue.number}`)).json()).toMatchObject({
      title: 'Add a widget',
      user: { login: 'alice' },
    });
    const created = (await (
      await api('POST', `/repos/acme/widgets/issues/${issue.number}/comments`, { body: 'working' })
    ).json()) as { id: number };
    await api('PATCH', `/repos/acme/widgets/issues/comments/${created.id}`, { body: 'done' });
    expect(gh.comments('acme/widgets', issue.number).map((c) => c.body)).toEqual(['done']);
    await api('POST', `/repos/acme/widgets/issues/${issue.number}/labels`, { labels: ['codefleet:queued'] });
    expect((await api('DELETE', `/repos/acme/widgets/issues/${issue.number}/labels/bug`)).status).toBe(200);
    expect(gh.labels('acme/widgets', issue.number)).toEqual(['codefleet:queued']);
    gh.setPermission('acme/widgets', 'alice', 'maintain');
    expect(await (await api('GET', '/repos/acme/widgets/collaborators/alice/permission')).json()).toMatchObject({
      permission: 'write',
      role_name: 'maintain',
    });
    expect(await (await api('GET', '/repos/acme/widgets/collaborators/mallory/permission')).json()).toMatchObject({
      permission: 'none',
    });
  });

  it('clone and push over smart HTTP; one open pull request per head, creations counted', async () => {
    expect((await git([...gitAuth(gh.token), 'clone', '--quiet', `${gh.url}/acme/widgets.git`, 'work'])).exitCode).toBe(
      0,
    );
    const work = `${dir.path}/work`;
    await git(['checkout', '--quiet', '-b', 'ai/issue-1'], work);
    await execa('sh', ['-c', 'echo hi > hi.txt'], { cwd: work });
    await git(['add', '.'], work);
    await git(['commit', '--quiet', '-m', 'hi'], work);
    const push = await git([...gitAuth(gh.token), 'push', '--quiet', 'origin', 'ai/issue-1'], work);
    expect(push.stderr).toBe('');
    expect(push.exitCode).toBe(0);

    const first = await api('POST', '/repos/acme/widgets/pulls', {
      title: 'Add hi',
      head: 'ai/issue-1',
      base: 'main',
      body: 'Fixes #1',
    });
    expect(first.status).toBe(201);
    const again = await api('POST', '/repos/acme/widgets/pulls', {
      title: 'Add hi',
      head: 'acme:ai/issue-1',
      base: 'main',
    });
    expect(again.status).toBe(422);
    expect(JSON.stringify(await again.json())).toContain('already exists');
    expect(gh.prCreations('acme/widgets', 'ai/issue-1')).toBe(1);
    expect(await (await api('GET', '/repos/acme/widgets/pulls?head=acme:ai/issue-1&state=open')).json()).toEqual([
      expect.objectContaining({ number: 1, draft: false }),
    ]);
    expect(
      (await api('POST', '/repos/acme/widgets/pulls', { title: 'x', head: 'no-such-branch', base: 'main' })).status,
    ).toBe(422);
  });

  it('pages lists as GitHub does: 30 by default, at most 100, Link headers to next and last', async () => {
    const issue = gh.createIssue('acme/widgets', { title: 'busy' });
    for (let n = 0; n < 130; n += 1) gh.commentAs('acme/widgets', issue.number, 'alice', `comment ${n}`);
    const path = `/repos/acme/widgets/issues/${issue.number}/comments`;
    const first = await api('GET', path);
    expect(((await first.json()) as unknown[]).length).toBe(30);
    expect(first.headers.get('link')).toMatch(/<[^>]*[?&]page=2[^>]*>; rel="next", <[^>]*[?&]page=5[^>]*>; rel="last"/);
    const capped = await api('GET', `${path}?per_page=500`);
    expect(((await capped.json()) as unknown[]).length).toBe(100);
    const last = await api('GET', `${path}?per_page=100&page=2`);
    expect(((await last.json()) as { body: string }[]).map((c) => c.body)).toEqual(
      Array.from({ length: 30 }, (_, i) => `comment ${100 + i}`),
    );
    expect(last.headers.get('link')).not.toContain('rel="next"');
    expect(last.headers.get('link')).toContain('rel="first"');
    // One page only: no Link header at all.
    expect((await api('GET', `/repos/acme/widgets/issues/${issue.number}/labels`)).headers.get('link')).toBeNull();
  });

  it('refuses drafts where the repository cannot have them, and comments on locked issues', async () => {
    await gh.createRepo('acme/private', { 'README.md': '# p\n' }, { private: true, draftPullRequests: false });
    expect((await git([...gitAuth(gh.token), 'clone', '--quiet', `${gh.url}/acme/private.git`, 'p'])).exitCode).toBe(0);
    const work = `${dir.path}/p`;
    await git(['checkout', '--quiet', '-b', 'ai/issue-9'], work);
    await git(['commit', '--quiet', '--allow-empty', '-m', 'x'], work);
    expect((await git([...gitAuth(gh.token), 'push', '--quiet', 'origin', 'ai/issue-9'], work)).exitCode).toBe(0);
    const draft = await api('POST', '/repos/acme/private/pulls', {
      title: 'x',
      head: 'ai/issue-9',
      base: 'main',
      draft: true,
    });
    expect(draft.status).toBe(422);
    expect(await draft.json()).toMatchObject({ message: 'Draft pull requests are not supported in this repository.' });
    expect(
      (await api('POST', '/repos/acme/private/pulls', { title: 'x', head: 'ai/issue-9', base: 'main' })).status,
    ).toBe(201);

    const issue = gh.createIssue('acme/widgets', { title: 'heated' });
    gh.lockIssue('acme/widgets', issue.number);
    const refused = await api('POST', `/repos/acme/widgets/issues/${issue.number}/comments`, { body: 'hello' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ message: 'Unable to create comment because issue is locked.' });
    expect(gh.comments('acme/widgets', issue.number)).toEqual([]);
  });

  it('injects faults: a secondary rate limit with retry-after, then normal answers', async () => {
    gh.failNext({
      method: 'GET',
      path: /\/issues\/\d+$/,
      status: 403,
      headers: { 'retry-after': '1' },
      body: { message: 'You have exceeded a secondary rate limit.' },
    });
    const issue = gh.createIssue('acme/widgets', { title: 't' });
    const limited = await api('GET', `/repos/acme/widgets/issues/${issue.number}`);
    expect(limited.status).toBe(403);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((await api('GET', `/repos/acme/widgets/issues/${issue.number}`)).status).toBe(200);
  });
  it('check runs, the combined status, and job logs behind a 302 to a download URL that needs no token', async () => {
    const run = await gh.addCheckRun('acme/widgets', {
      ref: 'main',
      name: 'test',
      conclusion: 'failure',
      log: 'boom\n',
    });
    await gh.addCheckRun('acme/widgets', { ref: 'main', name: 'lint', app: 'codecov', status: 'queued' });
    await gh.setStatus('acme/widgets', 'main', { context: 'ci/jenkins', state: 'pending' });
    await gh.setStatus('acme/widgets', 'main', { context: 'ci/jenkins', state: 'error', description: 'broke' });
    const listed = (await (await api('GET', `/repos/acme/widgets/commits/${run.headSha}/check-runs`)).json()) as {
      total_count: number;
      check_runs: { id: number; conclusion: string | null; app: { slug: string } }[];
    };
    expect(listed.total_count).toBe(2);
    expect(listed.check_runs).toContainEqual(
      expect.objectContaining({
        id: run.id,
        conclusion: 'failure',
        app: expect.objectContaining({ slug: 'github-actions' }),
      }),
    );
    // The latest status per context counts.
    expect(await (await api('GET', '/repos/acme/widgets/commits/main/status')).json()).toMatchObject({
      state: 'failure',
      total_count: 1,
      statuses: [{ state: 'error', description: 'broke' }],
    });

    const redirect = await fetch(`${gh.url}/repos/acme/widgets/actions/jobs/${run.id}/logs`, {
      headers: { authorization: `token ${gh.token}` },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get('location')!;
    expect(await (await fetch(location)).text()).toBe('boom\n');
    expect((await api('GET', `/repos/acme/widgets/actions/jobs/${run.id}/logs`, undefined, 'wrong')).status).toBe(401);
    // Only Actions jobs have logs.
    const other = listed.check_runs.find((r) => r.app.slug === 'codecov')!;
    expect(
      (
        await fetch(`${gh.url}/repos/acme/widgets/actions/jobs/${other.id}/logs`, {
          headers: { authorization: `token ${gh.token}` },
          redirect: 'manual',
        })
      ).status,
    ).toBe(404);
  });
});

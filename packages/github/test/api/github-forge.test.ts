import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, git, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createGithubForge, githubCredentialEnv } from '../../src/index.js';
import { forgeContract, forgeGitEnv } from '@codefleet/forge/contract';

// The real Octokit adapter against the GitHub STAND-IN (testkit): GitHub's REST subset on
// loopback and real git smart HTTP with token auth. One stand-in for the file, a fresh
// repository per test.
let gh: GithubStandIn;
beforeAll(async () => {
  gh = await startGithubStandIn();
});
afterAll(async () => {
  await gh?.close();
});

const forgeFor = (token = gh.token) =>
  createGithubForge({ token, apiUrl: gh.url, gitUrl: gh.url, gitEnv: forgeGitEnv(), gitTimeoutMs: 30_000 });

forgeContract({
  name: 'github (Octokit against the stand-in)',
  open: async () => {
    const repo = `acme/widgets-${randomBytes(4).toString('hex')}`;
    const { bareDir } = await gh.createRepo(repo, {
      'README.md': '# sample\n',
      'src/index.js': 'export const answer = 42;\n',
    });
    const issue = gh.createIssue(repo, { title: 'An issue to comment on' });
    const scratch = await createTempDir('gh-forge');
    let clones = 0;
    const forge = forgeFor();
    return {
      forge,
      issues: forge.issues,
      repo,
      base: 'main',
      issueNumber: issue.number,
      originDir: bareDir,
      makeWorkdir: async (branch) => {
        clones += 1;
        const path = join(scratch.path, `work-${clones}`);
        await git(scratch.path, ['clone', '--quiet', bareDir, path]);
        await git(path, ['checkout', '--quiet', '-b', branch, 'origin/main']);
        await git(path, ['commit', '--quiet', '--allow-empty', '-m', `work ${clones} on ${branch}`]);
        return path;
      },
      pullRequestCreations: async (head) => gh.prCreations(repo, head),
      settlePullRequest: async (number, how) => {
        if (how === 'merged') gh.mergePull(repo, number);
        else gh.closePull(repo, number);
      },
      dispose: () => scratch.dispose(),
    };
  },
});

describe('GitHub forge specifics', () => {
  it('never puts the token in a URL: the API sees it in a header, git through the credential helper', async () => {
    const repo = `acme/secret-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo);
    const forge = forgeFor();
    expect(await forge.findBranch(repo, 'main')).toMatchObject({ sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const seen = gh.requests.filter((r) => r.path.includes(repo));
    expect(seen.every((r) => !r.path.includes(gh.token))).toBe(true);
    // git asks without credentials first, gets 401, then asks the credential helper.
    expect(seen.some((r) => r.path.endsWith('/info/refs') && r.authorized)).toBe(true);
  });

  it('the credential helper answers only for the forge host: a redirected remote gets no token', async () => {
    const env = githubCredentialEnv(
      forgeGitEnv(),
      'ghp_secretsecretsecretsecretsecret000',
      'https://ghe.example.com:8443',
    );
    // `git credential fill`: what git itself asks the helpers before it authenticates.
    const fill = (input: string) => {
      const r = spawnSync('git', ['credential', 'fill'], {
        input,
        env: { ...env, GIT_TERMINAL_PROMPT: '0' },
        encoding: 'utf8',
        timeout: 10_000,
      });
      return { exitCode: r.status, outputTail: `${r.stdout}${r.stderr}` };
    };
    const own = fill('protocol=https\nhost=ghe.example.com:8443\n\n');
    expect(own.outputTail).toContain('password=ghp_secretsecretsecretsecretsecret000');
    for (const other of [
      'protocol=https\nhost=evil.example\n\n',
      'protocol=http\nhost=ghe.example.com:8443\n\n',
      'protocol=https\nhost=ghe.example.com\n\n',
    ]) {
      const asked = fill(other);
      expect(asked.exitCode).not.toBe(0);
      expect(asked.outputTail).not.toContain('ghp_secret');
    }

    // End to end: an agent planted `url.<evil>.insteadOf <forge>` in the working copy's
    // config. The push goes to the other server and fails there, without the token.
    const evil = await startGithubStandIn();
    const scratch = await createTempDir('gh-redirect');
    try {
      const repo = `acme/redirect-${randomBytes(4).toString('hex')}`;
      const { bareDir } = await gh.createRepo(repo);
      await evil.createRepo(repo);
      const work = join(scratch.path, 'work');
      await git(scratch.path, ['clone', '--quiet', bareDir, work]);
      await git(work, ['checkout', '--quiet', '-b', 'ai/redirect']);
      await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'x']);
      await git(work, ['config', `url.${evil.url}/.insteadOf`, `${gh.url}/`]);
      await expect(forgeFor().ensureBranch({ repo, workdir: work, branch: 'ai/redirect' })).rejects.toMatchObject({
        code: 'forge_rejected',
      });
      expect(evil.requests.length).toBeGreaterThan(0);
      expect(evil.requests.some((r) => r.credentials)).toBe(false);
    } finally {
      await scratch.dispose();
      await evil.close();
    }
  });

  it('git with the token ignores ~/.gitconfig, where an agent could plant a proxy', async () => {
    // A "proxy" that records what reaches it and refuses it.
    const seen: string[] = [];
    const proxy = createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''} ${req.headers.authorization ? 'with credentials' : ''}`);
      res.writeHead(502).end();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const scratch = await createTempDir('gh-home');
    try {
      const port = (proxy.address() as { port: number }).port;
      await writeFile(join(scratch.path, '.gitconfig'), `[http]\n\tproxy = http://127.0.0.1:${port}\n`);
      // The worker's environment as the CLI builds it: HOME, no GIT_CONFIG_GLOBAL.
      const { GIT_CONFIG_GLOBAL: _global, ...base } = forgeGitEnv();
      const forge = createGithubForge({
        token: gh.token,
        apiUrl: gh.url,
        gitUrl: gh.url,
        gitEnv: { ...base, HOME: scratch.path },
        gitTimeoutMs: 30_000,
      });
      const repo = `acme/home-${randomBytes(4).toString('hex')}`;
      await gh.createRepo(repo);
      expect(await forge.findBranch(repo, 'main')).toMatchObject({ sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
      expect(seen).toEqual([]);
    } finally {
      await scratch.dispose();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('a wrong token is forge_rejected for the API and git_failed or forge_rejected for git, without echoing it', async () => {
    const repo = `acme/auth-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo);
    const forge = forgeFor('ghp_wrongwrongwrongwrongwrongwrongwrong0');
    const api = await forge.issues.listLabels(repo, { kind: 'issue', number: 1 }).catch((e: unknown) => e);
    expect(api).toMatchObject({ code: 'forge_rejected', verdict: 'permanent' });
    const push = await forge.findBranch(repo, 'main').catch((e: unknown) => e);
    expect((push as Error).message).not.toContain('ghp_wrong');
  });

  it('rate limits are transient with the reset time; 5xx transient; a missing repo is forge_not_found', async () => {
    const repo = `acme/limits-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo);
    const issue = gh.createIssue(repo, { title: 't' });
    const forge = forgeFor();
    const target = { kind: 'issue' as const, number: issue.number };
    gh.failNext({
      method: 'GET',
      path: /\/labels$/,
      status: 403,
      headers: { 'retry-after': '7' },
      body: { message: 'You have exceeded a secondary rate limit.' },
    });
    expect(await forge.issues.listLabels(repo, target).catch((e: unknown) => e)).toMatchObject({
      code: 'rate_limited',
      verdict: 'transient',
      retryAfterMs: 7_000,
    });
    const reset = Math.floor(Date.now() / 1_000) + 60;
    gh.failNext({
      method: 'GET',
      path: /\/labels$/,
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      body: { message: 'API rate limit exceeded' },
    });
    // Until the reset, as the clock read when the answer came: bounded by the clock around the
    // call, since a loaded machine can take any part of the minute to get there.
    const asked = Date.now();
    const primary = (await forge.issues.listLabels(repo, target).catch((e: unknown) => e)) as {
      code: string;
      details: { retryAfterMs: number };
    };
    const answered = Date.now();
    expect(primary.code).toBe('rate_limited');
    expect(primary.details.retryAfterMs).toBeGreaterThanOrEqual(reset * 1_000 - answered);
    expect(primary.details.retryAfterMs).toBeLessThanOrEqual(reset * 1_000 - asked);
    gh.failNext({ method: 'GET', path: /\/labels$/, status: 502 });
    expect(await forge.issues.listLabels(repo, target).catch((e: unknown) => e)).toMatchObject({
      code: 'forge_unavailable',
      verdict: 'transient',
    });
    expect(await forge.issues.listLabels(repo, target)).toEqual([]);
    expect(await forge.issues.listLabels('acme/no-such-repo', target).catch((e: unknown) => e)).toMatchObject({
      code: 'forge_not_found',
      verdict: 'permanent',
    });
  });

  it("rate limits follow GitHub's rules: a bare 429 is a limit, a limit naming no time waits a minute", async () => {
    const repo = `acme/limits2-${randomBytes(4).toString('hex')}`;
    await gh.createRepo(repo);
    const issue = gh.createIssue(repo, { title: 't' });
    const forge = forgeFor();
    const target = { kind: 'issue' as const, number: issue.number };
    // 429 is "too many requests" by its status, with or without rate-limit headers.
    gh.failNext({ method: 'GET', path: /\/labels$/, status: 429, body: { message: 'Too Many Requests' } });
    expect(await forge.issues.listLabels(repo, target).catch((e: unknown) => e)).toMatchObject({
      code: 'rate_limited',
      verdict: 'transient',
      retryAfterMs: 60_000,
      details: { rateLimit: 'secondary', waitNamed: false },
    });
    // A secondary limit without retry-after: at least one minute, not the worker's 10 s.
    gh.failNext({
      method: 'GET',
      path: /\/labels$/,
      status: 403,
      body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.' },
    });
    expect(await forge.issues.listLabels(repo, target).catch((e: unknown) => e)).toMatchObject({
      code: 'rate_limited',
      retryAfterMs: 60_000,
    });
    // A reset time counts only with x-ratelimit-remaining 0: otherwise the limit hit is a secondary one.
    const reset = Math.floor(Date.now() / 1_000) + 3_000;
    gh.failNext({
      method: 'GET',
      path: /\/labels$/,
      status: 403,
      headers: { 'x-ratelimit-remaining': '12', 'x-ratelimit-reset': String(reset) },
      body: { message: 'You have exceeded a secondary rate limit.' },
    });
    expect(await forge.issues.listLabels(repo, target).catch((e: unknown) => e)).toMatchObject({
      code: 'rate_limited',
      retryAfterMs: 60_000,
    });
    gh.failNext({
      method: 'GET',
      path: /\/labels$/,
      status: 429,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
    });
    const primary = (await forge.issues.listLabels(repo, target).catch((e: unknown) => e)) as {
      retryAfterMs: number;
      details: { rateLimit: string };
    };
    expect(primary.details.rateLimit).toBe('primary');
    expect(primary.retryAfterMs).toBeGreaterThan(2_900_000);
    // A plain 403 (no access) is no rate limit.
    gh.failNext({
      method: 'GET',
      path: /\/labels$/,
      status: 403,
      body: { message: 'Resource not accessible by integration' },
    });
    expect(await forge.issues.listLabels(repo, target).catch((e: unknown) => e)).toMatchObject({
      code: 'forge_rejected',
      verdict: 'permanent',
    });
  });

  it('where GitHub refuses drafts, the pull request is opened marked (label, title prefix, comment) and unmarked later', async () => {
    const repo = `acme/free-${randomBytes(4).toString('hex')}`;
    const { bareDir } = await gh.createRepo(
      repo,
      { 'README.md': '# free\n' },
      { private: true, draftPullRequests: false },
    );
    const scratch = await createTempDir('gh-free');
    try {
      const work = join(scratch.path, 'work');
      await git(scratch.path, ['clone', '--quiet', bareDir, work]);
      for (const branch of ['ai/issue-1', 'ai/issue-2']) {
        await git(work, ['checkout', '--quiet', '-B', branch, 'origin/main']);
        await git(work, ['commit', '--quiet', '--allow-empty', '-m', branch]);
      }
      const forge = forgeFor();
      await forge.ensureBranch({
        repo,
        workdir: work,
        branch: 'ai/issue-1',
        sha: (await git(work, ['rev-parse', 'ai/issue-1'])).trim(),
      });
      await forge.ensureBranch({ repo, workdir: work, branch: 'ai/issue-2' });
      const req = { repo, head: 'ai/issue-1', base: 'main', title: 'Add a widget', body: 'DoD failed', draft: true };

      const opened = await forge.ensurePullRequest(req);
      expect(opened).toMatchObject({ created: true, draft: true, title: '[Draft] Add a widget' });
      const onGithub = () => gh.pulls(repo).find((p) => p.number === opened.number)!;
      expect(onGithub()).toMatchObject({ draft: false, title: '[Draft] Add a widget' });
      expect(gh.labels(repo, opened.number)).toEqual(['codefleet:draft']);
      const marks = () =>
        gh.comments(repo, opened.number).filter((c) => c.body.startsWith('<!-- codefleet:draft-refused -->'));
      expect(marks()).toHaveLength(1);
      expect(marks()[0]!.body).toContain('do not merge it as it is');
      // A retry converges: same pull request, one comment, one prefix; it reads as a draft.
      expect(await forge.ensurePullRequest(req)).toMatchObject({
        created: false,
        number: opened.number,
        draft: true,
        title: '[Draft] Add a widget',
      });
      expect(marks()).toHaveLength(1);
      expect(await forge.getPullRequest(repo, opened.number)).toMatchObject({ draft: true });
      expect(gh.prCreations(repo, 'ai/issue-1')).toBe(1);

      // A later run passes the definition of done: the marks go.
      expect(await forge.ensurePullRequest({ ...req, draft: false })).toMatchObject({
        draft: false,
        title: 'Add a widget',
      });
      expect(onGithub().title).toBe('Add a widget');
      expect(gh.labels(repo, opened.number)).toEqual([]);
      expect(marks()[0]!.body).toContain('no longer stands for a draft');

      // An open, ready pull request asked to become a draft: GraphQL refuses, so it is marked.
      const ready = await forge.ensurePullRequest({ ...req, head: 'ai/issue-2', draft: false });
      expect(ready.draft).toBe(false);
      expect(await forge.ensurePullRequest({ ...req, head: 'ai/issue-2', draft: true })).toMatchObject({
        number: ready.number,
        draft: true,
        title: '[Draft] Add a widget',
      });
      expect(gh.labels(repo, ready.number)).toEqual(['codefleet:draft']);
    } finally {
      await scratch.dispose();
    }
  });

  it('refuses repos that are not owner/name and task targets', async () => {
    const forge = forgeFor();
    await expect(forge.issues.listLabels('/srv/repo.git', { kind: 'issue', number: 1 })).rejects.toMatchObject({
      code: 'forge_rejected',
    });
    await expect(
      forge.issues.ensureComment({ repo: 'acme/x', target: { kind: 'task', key: 'k' }, marker: 'status', body: 'b' }),
    ).rejects.toMatchObject({ code: 'forge_rejected' });
  });
});

describe('GitHub failures and the outer retry policy', () => {
  it('a secondary rate limit is retried no sooner than GitHub asked', async () => {
    const { classify, decideOuter } = await import('@codefleet/core');
    const { githubFailure } = await import('../../src/index.js');
    const limited = githubFailure(
      'list labels',
      Object.assign(new Error('limited'), {
        status: 403,
        response: { headers: { 'retry-after': '90' }, data: { message: 'You have exceeded a secondary rate limit.' } },
      }),
    );
    const decision = decideOuter(
      { maxRetries: 3, backoff: { strategy: 'fixed', delayMs: 10_000 } },
      { attemptsMade: 1, error: classify(limited) },
      () => 0.5,
    );
    expect(decision).toEqual({ action: 'retry', delayMs: 90_000 });
  });
});

describe('GitHub App authentication (stand-in)', () => {
  it('exchanges a signed JWT for installation tokens, refreshes them before they expire, and pushes with them', async () => {
    const { githubAppTokens } = await import('../../src/index.js');
    const repo = `acme/app-${randomBytes(4).toString('hex')}`;
    const { bareDir } = await gh.createRepo(repo);
    const app = gh.createApp();
    const scratch = await createTempDir('gh-app');
    let clock = Date.now();
    const tokens = githubAppTokens({
      appId: app.appId,
      privateKey: app.privateKey,
      installationId: app.installationId,
      apiUrl: gh.url,
      tokenFile: join(scratch.path, 'token'),
      now: () => clock,
    });
    const forge = createGithubForge({
      tokens,
      tokenFile: join(scratch.path, 'token'),
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: forgeGitEnv(),
    });
    try {
      const issue = gh.createIssue(repo, { title: 't' });
      expect(await forge.issues.listLabels(repo, { kind: 'issue', number: issue.number })).toEqual([]);
      const first = await tokens.token();
      expect(gh.installationTokens).toEqual([first]);
      // Git authenticates with the installation token through the token file.
      const work = join(scratch.path, 'work');
      await git(scratch.path, ['clone', '--quiet', bareDir, work]);
      await git(work, ['checkout', '--quiet', '-b', 'ai/app-push']);
      await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'x']);
      expect(await forge.ensureBranch({ repo, workdir: work, branch: 'ai/app-push' })).toMatchObject({ updated: true });
      // 56 minutes later the hour-long token is about to expire: a new one is fetched.
      clock += 56 * 60_000;
      const second = await tokens.token();
      expect(second).not.toBe(first);
      expect(await forge.issues.listLabels(repo, { kind: 'issue', number: issue.number })).toEqual([]);
    } finally {
      forge.close();
      await scratch.dispose();
    }
  });

  it('a token GitHub refuses mid-job (revoked) is replaced once, for the API and for git; refused for good, the failure is permanent', async () => {
    const { githubAppTokens } = await import('../../src/index.js');
    const repo = `acme/app-${randomBytes(4).toString('hex')}`;
    const { bareDir } = await gh.createRepo(repo);
    const app = gh.createApp();
    const scratch = await createTempDir('gh-app');
    const tokenFile = join(scratch.path, 'token');
    const tokens = githubAppTokens({
      appId: app.appId,
      privateKey: app.privateKey,
      installationId: app.installationId,
      apiUrl: gh.url,
      tokenFile,
    });
    const forge = createGithubForge({
      tokens,
      tokenFile,
      apiUrl: gh.url,
      gitUrl: gh.url,
      gitEnv: forgeGitEnv(),
      gitTimeoutMs: 30_000,
    });
    try {
      const issue = gh.createIssue(repo, { title: 't' });
      const target = { kind: 'issue' as const, number: issue.number };
      const first = await tokens.token();
      const minted = gh.installationTokens.length;
      const work = join(scratch.path, 'work');
      await git(scratch.path, ['clone', '--quiet', bareDir, work]);
      await git(work, ['checkout', '--quiet', '-b', 'ai/app-push']);
      await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'x']);

      // Revoked while still "valid" by its expiry: the API call gets a fresh token and succeeds.
      gh.revokeInstallationTokens();
      expect(await forge.issues.listLabels(repo, target)).toEqual([]);
      const second = await tokens.token();
      expect(second).not.toBe(first);
      // So does the push, whose git reads the token file.
      gh.revokeInstallationTokens();
      expect(await forge.ensureBranch({ repo, workdir: work, branch: 'ai/app-push' })).toMatchObject({ updated: true });
      expect(gh.installationTokens).toHaveLength(minted + 2);

      // Suspended: no fresh token either. One exchange each, then a permanent failure that says why.
      gh.revokeInstallationTokens({ suspend: true });
      await git(work, ['commit', '--quiet', '--allow-empty', '-m', 'y']);
      const lease = (await git(bareDir, ['rev-parse', 'ai/app-push'])).trim();
      await expect(
        forge.ensureBranch({ repo, workdir: work, branch: 'ai/app-push', expectedSha: lease }),
      ).rejects.toMatchObject({
        code: 'forge_rejected',
        verdict: 'permanent',
        message: expect.stringMatching(/suspended/),
      });
      await expect(forge.issues.listLabels(repo, target)).rejects.toMatchObject({
        code: 'forge_rejected',
        verdict: 'permanent',
      });
      expect((await git(bareDir, ['rev-parse', 'ai/app-push'])).trim()).toBe(lease);
    } finally {
      gh.revokeInstallationTokens();
      forge.close();
      await scratch.dispose();
    }
  });

  it('a key that cannot sign is invalid_config; a wrong installation is forge_rejected', async () => {
    const { githubAppTokens } = await import('../../src/index.js');
    const app = gh.createApp();
    const bad = githubAppTokens({
      appId: app.appId,
      privateKey: 'not a key',
      installationId: app.installationId,
      apiUrl: gh.url,
    });
    await expect(bad.token()).rejects.toMatchObject({ code: 'invalid_config' });
    const wrong = githubAppTokens({ appId: app.appId, privateKey: app.privateKey, installationId: 1, apiUrl: gh.url });
    // What is asserted is the stand-in's refusal. An exchange that got no answer at all is
    // `network` (transient: a job's retry takes it); on a machine loaded enough to starve
    // this process past fetch's 10 s connect timeout, even a loopback one can, so it is asked again.
    const refusal = async () => {
      for (let tries = 1; ; tries += 1) {
        const error = await wrong.token().then(
          () => undefined,
          (e: unknown) => e as { code?: string },
        );
        if (error?.code !== 'network' || tries === 3) return error;
      }
    };
    expect(await refusal()).toMatchObject({ code: 'forge_rejected' });
    bad.close();
    wrong.close();
  });
});

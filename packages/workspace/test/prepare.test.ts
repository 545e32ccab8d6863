import { mkdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { branchNameProblem } from '@codefleet/core';
import { git } from '@codefleet/testkit';
import { branchName, createWorkspaceManager, type Workspace } from '../src/index.js';
import { createFixture, exists, sampleFiles, testGitEnv, type Fixture } from './helpers.js';

const author = { name: 'codefleet bot', email: 'bot@codefleet.invalid' };

describe('prepare', () => {
  let fixture: Fixture | undefined;
  const workspaces: Workspace[] = [];
  afterEach(async () => {
    for (const ws of workspaces.splice(0)) await ws.release();
    await fixture?.dispose();
    fixture = undefined;
  });
  const setup = async (reuse: boolean) => (fixture = await createFixture(sampleFiles, reuse));

  it.each([true, false])('checks out the base on the job branch in the cache (reuse %s)', async (reuse) => {
    const { origin, cache, manager } = await setup(reuse);
    const branch = branchName({ id: 'job-1', title: 'Add a greeting', source: { kind: 'issue', number: 7 } });
    const ws = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch });
    workspaces.push(ws);

    expect(branch).toBe('ai/issue-7');
    expect(branchNameProblem(ws.branch)).toBeUndefined();
    expect(ws.dir.startsWith(join(cache.path, 'worktrees'))).toBe(true);
    expect(ws.baseBranch).toBe('main');
    expect(ws.baseSha).toBe(await origin.git(['rev-parse', 'HEAD']));
    expect(ws.startSha).toBe(ws.baseSha);
    expect(ws.existingRemoteSha).toBeUndefined();
    expect(await git(ws.dir, ['branch', '--show-current'])).toBe('ai/issue-7');
    expect(await readFile(join(ws.dir, 'src/index.js'), 'utf8')).toBe(sampleFiles['src/index.js']);
    expect(await ws.changedFiles()).toEqual([]);
    // A worktree of the repository's mirror in the cache.
    const common = await git(ws.dir, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
    expect(common.startsWith(join(cache.path, 'mirrors'))).toBe(true);
  });

  it('refuses credentials in the URL and GitHub shorthand, naming the problem', async () => {
    const { manager } = await setup(true);
    const request = { jobId: 'j', branch: 'ai/x' };
    await expect(manager.prepare({ ...request, repoUrl: 'https://user:secret@example.com/o/r.git' })).rejects.toThrow(
      /credentials/,
    );
    await expect(manager.prepare({ ...request, repoUrl: 'owner/name' })).rejects.toThrow(/local path or git URL/);
    await expect(
      manager.prepare({ ...request, repoUrl: 'https://user:secret@example.com/o/r.git' }),
    ).rejects.not.toThrow(/secret/);
  });

  it('maps a missing repository to a permanent git_failed error', async () => {
    const { manager, cache } = await setup(true);
    const error = await manager
      .prepare({ jobId: 'j', repoUrl: join(cache.path, 'nope'), branch: 'ai/x' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'git_failed', verdict: 'permanent' });
    // git's reason, on the first line (listings show only that line).
    expect((error as Error).message.split('\n')[0]).toMatch(
      /failed \(exit 128, not found\): fatal: '.*nope' does not appear to be a git repository/,
    );
  });

  it('refuses an empty repository (no commit, no branch) permanently, saying so, with or without a base branch', async () => {
    const { manager, cache } = await setup(true);
    const empty = join(cache.path, 'empty.git');
    await git(cache.path, ['init', '--quiet', '--bare', '-b', 'main', empty]);
    for (const baseBranch of [undefined, 'main']) {
      const error = await manager
        .prepare({ jobId: 'j', repoUrl: empty, branch: 'ai/x', ...(baseBranch === undefined ? {} : { baseBranch }) })
        .catch((e: unknown) => e);
      // Not set-head's "Cannot determine remote HEAD", retried as transient.
      expect(error).toMatchObject({ code: 'git_failed', verdict: 'permanent' });
      expect((error as Error).message).toMatch(/^the repository is empty: it has no commits/);
    }
    // Once someone pushes, the same mirror serves the job.
    const seed = join(cache.path, 'seed');
    await git(cache.path, ['init', '--quiet', '-b', 'main', seed]);
    await writeFile(join(seed, 'README.md'), 'first\n');
    await git(seed, ['add', 'README.md']);
    await git(seed, ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '--quiet', '-m', 'first']);
    await git(seed, ['push', '--quiet', empty, 'main']);
    const ws = await manager.prepare({ jobId: 'j', repoUrl: empty, branch: 'ai/x' });
    workspaces.push(ws);
    expect(ws.baseBranch).toBe('main');
  });

  it('a retry starts from the pushed work branch and converges on it', async () => {
    const { origin, manager } = await setup(true);
    const branch = 'ai/add-greeting-1a2b3c4d';
    const first = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch });
    await writeFile(join(first.dir, 'src/greeting.js'), 'export const hi = "hi";\n');
    const sha = await first.commit('Add greeting', author);
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    await git(first.dir, ['push', '--quiet', 'origin', branch]);
    await first.release();

    await origin.commit({ 'src/later.js': 'later\n' }, 'base moves on');
    const second = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch });
    workspaces.push(second);
    expect(second.existingRemoteSha).toBe(sha);
    expect(second.startSha).toBe(sha);
    expect(await git(second.dir, ['rev-parse', 'HEAD'])).toBe(sha);
    expect(await readFile(join(second.dir, 'src/greeting.js'), 'utf8')).toContain('hi');
    // Changed vs. where the branch forked from the base: the earlier attempt's work only.
    expect(await second.changedFiles()).toEqual(['src/greeting.js']);
    expect(await second.commit('nothing new', author)).toBeUndefined();
  });

  it('gives concurrent jobs different copies that do not see each other', async () => {
    const { origin, manager } = await setup(true);
    const [a, b] = await Promise.all([
      manager.prepare({ jobId: 'job-a', repoUrl: origin.path, branch: 'ai/a-00000001' }),
      manager.prepare({ jobId: 'job-b', repoUrl: origin.path, branch: 'ai/b-00000002' }),
    ]);
    workspaces.push(a, b);
    expect(a.dir).not.toBe(b.dir);
    await writeFile(join(a.dir, 'only-a.txt'), 'a\n');
    await writeFile(join(b.dir, 'README.md'), '# changed by b\n');
    expect(await exists(join(b.dir, 'only-a.txt'))).toBe(false);
    expect(await readFile(join(a.dir, 'README.md'), 'utf8')).toBe(sampleFiles['README.md']);
    expect(await a.changedFiles()).toEqual(['only-a.txt']);
    expect(await b.changedFiles()).toEqual(['README.md']);
  });

  it('writes context files, never commits or reports them, and keeps tracked ones', async () => {
    const { origin, manager } = await setup(false);
    await origin.commit({ 'CLAUDE.md': '# the project own instructions\n' }, 'add CLAUDE.md');
    const ws = await manager.prepare({
      jobId: 'job-ctx',
      repoUrl: origin.path,
      branch: 'ai/ctx-00000003',
      context: { '.codefleet/task.md': '# Task\nDo it.\n', 'CLAUDE.md': '# ours\n', 'AGENTS.md': '# agents\n' },
    });
    workspaces.push(ws);
    expect(ws.skippedContext).toEqual(['CLAUDE.md']);
    expect(ws.contextFiles).toEqual(['.codefleet/task.md', 'AGENTS.md']);
    expect(await readFile(join(ws.dir, 'CLAUDE.md'), 'utf8')).toBe('# the project own instructions\n');
    expect(await readFile(join(ws.dir, '.codefleet/task.md'), 'utf8')).toContain('Do it.');
    expect(await ws.changedFiles()).toEqual([]);
    expect(await ws.commit('only context', author)).toBeUndefined();
    // Files codefleet writes there later (an agent's prompt and feedback) are not work either,
    // but a `.codefleet` directory deeper in the tree is the project's own.
    await writeFile(join(ws.dir, '.codefleet/prompt-implement-1.md'), 'the prompt\n');
    await mkdir(join(ws.dir, 'src/.codefleet'), { recursive: true });
    await writeFile(join(ws.dir, 'src/.codefleet/notes.md'), 'notes\n');
    expect(await ws.changedFiles()).toEqual(['src/.codefleet/notes.md']);
    await rm(join(ws.dir, 'src/.codefleet'), { recursive: true });

    await writeFile(join(ws.dir, 'src/index.js'), 'export const answer = 43;\n');
    const sha = await ws.commit('change the answer', author);
    expect(sha).toBeDefined();
    expect((await git(ws.dir, ['show', '--name-only', '--format=', 'HEAD'])).split('\n')).toEqual(['src/index.js']);
    expect(await git(ws.dir, ['log', '-1', '--format=%an <%ae>'])).toBe('codefleet bot <bot@codefleet.invalid>');
    expect(await exists(join(ws.dir, '.codefleet/task.md'))).toBe(true);
  });

  it("commits memory bank files (.codefleet/memory/*.md) but never codefleet's own run files", async () => {
    const { origin, manager } = await setup(false);
    await origin.commit({ '.codefleet/memory/conventions.md': '# Conventions\nTabs.\n' }, 'memory bank');
    const ws = await manager.prepare({
      jobId: 'job-mem',
      repoUrl: origin.path,
      branch: 'ai/mem-00000005',
      context: { '.codefleet/task.md': '# Task\n' },
    });
    workspaces.push(ws);
    await writeFile(join(ws.dir, '.codefleet/prompt-implement-1.md'), 'the prompt\n');
    await writeFile(join(ws.dir, '.codefleet/memory/pitfalls.md'), '# Pitfalls\nESM only.\n');
    await writeFile(join(ws.dir, '.codefleet/memory/conventions.md'), '# Conventions\nSpaces.\n');
    await mkdir(join(ws.dir, '.codefleet/memory/deeper'), { recursive: true });
    await writeFile(join(ws.dir, '.codefleet/memory/deeper/x.md'), 'not a memory file\n');
    await writeFile(join(ws.dir, '.codefleet/memory/notes.txt'), 'not a memory file\n');
    expect(await ws.changedFiles()).toEqual(['.codefleet/memory/conventions.md', '.codefleet/memory/pitfalls.md']);
    expect(await ws.commit('memory update', author)).toBeDefined();
    expect((await git(ws.dir, ['show', '--name-only', '--format=', 'HEAD'])).split('\n').sort()).toEqual([
      '.codefleet/memory/conventions.md',
      '.codefleet/memory/pitfalls.md',
    ]);
  });

  it('refuses context paths that leave the copy', async () => {
    const { origin, manager } = await setup(true);
    for (const path of ['../escape.md', '/etc/x', '.git/config', 'a/../../b']) {
      const error = await manager
        .prepare({ jobId: 'j', repoUrl: origin.path, branch: 'ai/x-00000004', context: { [path]: 'x' } })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'workspace_failed', verdict: 'permanent' });
    }
  });

  it('commit returns undefined when nothing changed, and a new sha otherwise', async () => {
    const { origin, manager } = await setup(true);
    const ws = await manager.prepare({ jobId: 'job-c', repoUrl: origin.path, branch: 'ai/c-00000005' });
    workspaces.push(ws);
    expect(await ws.commit('nothing', author)).toBeUndefined();
    await writeFile(join(ws.dir, 'new.txt'), 'new\n');
    await writeFile(join(ws.dir, 'src/util.js'), 'changed\n');
    await rm(join(ws.dir, 'docs/guide.md'));
    const changed = ['docs/guide.md', 'new.txt', 'src/util.js'];
    expect(await ws.changedFiles()).toEqual(changed);
    const sha = await ws.commit('three files', author);
    expect(sha).toBe(await git(ws.dir, ['rev-parse', 'HEAD']));
    expect(await git(ws.dir, ['show', '--name-status', '--format=', 'HEAD'])).toBe(
      'D\tdocs/guide.md\nA\tnew.txt\nM\tsrc/util.js',
    );
    expect(await ws.commit('again', author)).toBeUndefined();
    // Committed work still counts as changed vs. the base.
    expect(await ws.changedFiles()).toEqual(changed);
  });

  it('uses the given base branch, and fails permanently for one that does not exist', async () => {
    const { origin, manager } = await setup(true);
    await origin.git(['branch', 'develop']);
    const ws = await manager.prepare({
      jobId: 'job-d',
      repoUrl: origin.path,
      branch: 'ai/d-00000006',
      baseBranch: 'develop',
    });
    workspaces.push(ws);
    expect(ws.baseBranch).toBe('develop');
    const error = await manager
      .prepare({ jobId: 'job-e', repoUrl: origin.path, branch: 'ai/e-00000007', baseBranch: 'nope' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'git_failed', verdict: 'permanent' });
  });

  it('stops on abort with a cancelled error', async () => {
    const { origin } = await setup(true);
    const manager = createWorkspaceManager({ cacheDir: fixture?.cache.path ?? '', reuse: true, gitEnv: testGitEnv() });
    const controller = new AbortController();
    controller.abort();
    const error = await manager
      .prepare({ jobId: 'job-f', repoUrl: origin.path, branch: 'ai/f-00000008', signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'cancelled' });
  });

  it('only the fetch gets the credentials, and a filter an agent configures in a copy never runs', async () => {
    const { origin, cache } = await setup(true);
    // The remote environment is the only one that can reach the origin (through an
    // insteadOf rewrite of a made-up URL), and it carries a stand-in token.
    const fakeUrl = 'https://git.example.invalid/acme/widgets.git';
    const remoteGitEnv = {
      ...testGitEnv(),
      CODEFLEET_GIT_TOKEN: 'ghp_not_for_local_git',
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: `url.${origin.path}.insteadOf`,
      GIT_CONFIG_VALUE_0: fakeUrl,
    };
    const manager = createWorkspaceManager({ cacheDir: cache.path, reuse: true, gitEnv: testGitEnv(), remoteGitEnv });
    const ws = await manager.prepare({ jobId: 'job-c', repoUrl: fakeUrl, branch: 'ai/c-00000009' });
    workspaces.push(ws);
    expect(await readFile(join(ws.dir, 'src', 'index.js'), 'utf8')).toBe(sampleFiles['src/index.js']);

    // The "agent" plants a clean filter, which git would run to compare a changed file with
    // the index (the listing of changed files the pipeline asks for after the agent) and
    // again on commit, with whatever environment codefleet's git has. The mirror's
    // info/attributes unsets every filter: it never runs, so it cannot see a token either.
    const spy = join(cache.path, 'filter-env.txt');
    await git(ws.dir, ['config', 'filter.spy.clean', `sh -c 'env >> "${spy}"; cat'`]);
    await writeFile(join(ws.dir, '.gitattributes'), '* filter=spy\n');
    await writeFile(join(ws.dir, 'src', 'index.js'), 'export const answer = 43;\n');
    expect(await ws.changedFiles()).toEqual(['.gitattributes', 'src/index.js']);
    await ws.commit('Change the answer', { name: 'codefleet', email: 'codefleet@test.invalid' });
    expect(await readFile(spy, 'utf8').catch(() => 'not run')).toBe('not run');
  });

  it("commits a file's bytes even after an agent rewrote the mirror's info/attributes", async () => {
    const { manager } = await setup(true);
    const ws = await manager.prepare({ jobId: 'job-attr', repoUrl: fixture!.origin.path, branch: 'ai/attr-00000010' });
    workspaces.push(ws);
    const mirror = await git(ws.dir, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
    // Without a sandbox an agent can write the shared mirror: ident and CRLF-to-LF back on.
    await writeFile(join(mirror, 'info', 'attributes'), '* ident text eol=lf\n');
    const content = '$Id: 0123456789abcdef0123456789abcdef01234567 $\r\n';
    await writeFile(join(ws.dir, 'src', 'index.js'), content);
    const sha = await ws.commit('Change the answer', { name: 'codefleet', email: 'codefleet@test.invalid' });
    expect(await git(ws.dir, ['rev-parse', `${sha}:src/index.js`])).toBe(
      await git(ws.dir, ['hash-object', '--no-filters', 'src/index.js']),
    );
    expect(await readFile(join(mirror, 'info', 'attributes'), 'utf8')).not.toContain('ident text');
  });

  it('git config an agent planted is gone before the commit and the next fetch: origin, rewrites, proxies, includes', async () => {
    const { origin, manager } = await setup(true);
    const ws = await manager.prepare({
      jobId: 'job-g',
      repoUrl: origin.path,
      branch: 'ai/g-00000010',
      scope: { exclude: ['secrets/**'], read: [] },
    });
    // Another repository an attacker controls, with other content on main.
    const attacker = await createFixture({ 'src/index.js': 'export const answer = "pwned";\n' }, true);
    try {
      const mirror = await git(ws.dir, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
      for (const args of [
        ['remote', 'set-url', 'origin', attacker.origin.path],
        ['config', `url.${attacker.origin.path}.insteadOf`, origin.path],
        ['config', 'http.proxy', 'http://127.0.0.1:9'],
        ['config', 'include.path', '/tmp/evil.gitconfig'],
        ['config', 'core.sshCommand', 'touch /tmp/pwned-ssh'],
        ['config', '--worktree', 'http.sslVerify', 'false'],
      ])
        await git(ws.dir, args);
      await writeFile(join(ws.dir, 'src', 'index.js'), 'export const answer = 43;\n');
      expect(await ws.commit('change the answer', author)).toMatch(/^[0-9a-f]{40}$/);

      const shared = await git(ws.dir, ['config', '--file', join(mirror, 'config'), '--list']);
      expect(shared.split('\n').sort()).toEqual([
        'core.filemode=true',
        'core.repositoryformatversion=1',
        'extensions.worktreeconfig=true',
        'gc.auto=0',
        'maintenance.auto=false',
        `remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*`,
        'remote.origin.tagopt=--no-tags',
        `remote.origin.url=${origin.path}`,
      ]);
      const own = await git(ws.dir, ['config', '--worktree', '--list']);
      expect(own.split('\n').sort()).toEqual(['core.sparsecheckout=true', 'core.sparsecheckoutcone=false']);
      await ws.release();

      // Planted again between jobs: the next prepare fetches from the real origin.
      await git(mirror, ['remote', 'set-url', 'origin', attacker.origin.path]);
      const next = await manager.prepare({ jobId: 'job-h', repoUrl: origin.path, branch: 'ai/h-00000011' });
      workspaces.push(next);
      expect(await readFile(join(next.dir, 'src', 'index.js'), 'utf8')).toBe(sampleFiles['src/index.js']);
      expect(await git(mirror, ['config', 'remote.origin.url'])).toBe(origin.path);
    } finally {
      await attacker.dispose();
    }
    expect(await exists('/tmp/pwned-ssh')).toBe(false);
  });

  it("puts the copy's .git link back before committing when a run pointed it somewhere else", async () => {
    const { origin, manager } = await setup(true);
    const ws = await manager.prepare({ jobId: 'job-i', repoUrl: origin.path, branch: 'ai/i-00000012' });
    workspaces.push(ws);
    const elsewhere = await createFixture({ 'a.txt': 'a\n' }, true);
    try {
      await writeFile(join(ws.dir, '.git'), `gitdir: ${join(elsewhere.origin.path, '.git')}\n`);
      await writeFile(join(ws.dir, 'src', 'index.js'), 'export const answer = 44;\n');
      const sha = await ws.commit('x', author);
      expect(sha).toMatch(/^[0-9a-f]{40}$/);
      // The commit is on the work branch of this copy's mirror, and the other repository is untouched.
      expect((await git(ws.dir, ['log', '-1', '--format=%H', 'ai/i-00000012'])).trim()).toBe(sha);
      expect(await readFile(join(ws.dir, '.git'), 'utf8')).toMatch(/^gitdir: .*\/worktrees\//);
      expect((await git(elsewhere.origin.path, ['log', '--format=%s'])).trim().split('\n')).not.toContain('x');
    } finally {
      await elsewhere.dispose();
    }
  });

  it('refuses a file over 100 MB before git copies it into the mirror, naming it', async () => {
    const { origin, manager } = await setup(true);
    const ws = await manager.prepare({ jobId: 'job-huge', repoUrl: origin.path, branch: 'ai/huge-00000013' });
    workspaces.push(ws);
    // Sparse: 150 MB on paper, nothing on disk.
    await writeFile(join(ws.dir, 'big.bin'), '');
    await truncate(join(ws.dir, 'big.bin'), 150 * 1024 * 1024);
    await writeFile(join(ws.dir, 'src', 'index.js'), 'export const answer = 43;\n');
    await expect(ws.commit('huge', author)).rejects.toMatchObject({
      code: 'forge_rejected',
      message: expect.stringContaining('big.bin is 150 MB'),
    });
    expect((await git(ws.dir, ['log', '-1', '--format=%s'])).trim()).not.toBe('huge');
  });

  it("a submodule's repository a run made (a clean filter in its config) never runs in codefleet's git, nor survives", async () => {
    const { origin, manager } = await setup(true);
    const head = (await git(origin.path, ['rev-parse', 'HEAD'])).trim();
    await git(origin.path, ['update-index', '--add', '--cacheinfo', `160000,${head},sub`]);
    await git(origin.path, ['commit', '--quiet', '-m', 'add a submodule entry']);
    const ws = await manager.prepare({ jobId: 'job-sub', repoUrl: origin.path, branch: 'ai/sub-00000014' });
    workspaces.push(ws);
    const marker = join(origin.path, '..', `filter-ran-${process.pid}-${Date.now()}`);
    // What an agent does inside its sandbox: a repository at the gitlink, with a filter.
    const sub = join(ws.dir, 'sub');
    await mkdir(sub, { recursive: true });
    await git(sub, ['init', '--quiet']);
    await writeFile(join(sub, 'f'), 'x\n');
    await writeFile(join(sub, '.gitattributes'), 'f filter=x\n');
    await git(sub, ['add', '.']);
    await git(sub, ['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '--quiet', '-m', 'x']);
    await git(sub, ['config', 'filter.x.clean', `sh -c 'touch ${marker}; cat'`]);
    await writeFile(join(sub, 'f'), 'changed\n');
    // And a clone of its own elsewhere in the copy, which git would add as a gitlink.
    await mkdir(join(ws.dir, 'vendor', 'clone'), { recursive: true });
    await git(join(ws.dir, 'vendor', 'clone'), ['init', '--quiet']);
    await writeFile(join(ws.dir, 'vendor', 'clone', 'a.txt'), 'a\n');
    await writeFile(join(ws.dir, 'src', 'index.js'), 'export const answer = 45;\n');
    await ws.restoreGitLink();
    expect(await ws.changedFiles()).toEqual(['src/index.js']);
    await ws.fingerprint();
    await ws.commit('work', author);
    expect(await exists(marker)).toBe(false);
    expect(await exists(join(sub, '.git'))).toBe(false);
    expect((await git(ws.dir, ['show', '--name-only', '--format=', 'HEAD'])).trim()).toBe('src/index.js');
    // Made again after the commit, and again once the index is unchanged since the last sweep
    // (which then reuses its listing): each time gone before codefleet's git runs.
    for (const round of [1, 2]) {
      await git(sub, ['init', '--quiet']);
      await ws.restoreGitLink();
      expect({ round, left: await exists(join(sub, '.git')) }).toEqual({ round, left: false });
    }
  });
});

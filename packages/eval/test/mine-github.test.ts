import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createGithubPullHistory } from '@codefleet/github';
import { createTempDir, git, gitTestEnv, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { linkedIssues, mineGithubPulls, type Instance, type MineGithubOptions } from '../src/index.js';

// Mining merged pull requests on the GitHub STAND-IN: the real Octokit client reads the
// pulls and issues, and the history is a real bare repository the stand-in merged into.

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '' };
const name = 'acme/widgets';

let gh: GithubStandIn;
beforeEach(async () => {
  gh = await startGithubStandIn();
  await gh.createRepo(name, { 'README.md': '# widgets\n', 'src/parse.js': 'export {};\n' });
});
afterEach(async () => {
  await gh.close();
});

/** Pushes branch `head` (one commit of `files` on main) and opens a pull request from it. */
async function propose(head: string, files: Record<string, string>, pull: { title: string; body?: string }) {
  await gh.pushBranch(name, { branch: head, files, message: pull.title });
  return gh.openPull(name, { head, ...pull });
}

/** Mines the stand-in's repository from its bare copy; `extra` overrides. */
async function mine(extra: Partial<MineGithubOptions> = {}) {
  const mined: Instance[] = [];
  const progress = await mineGithubPulls({
    gitDir: gh.repoDir(name),
    repo: name,
    github: name,
    reads: createGithubPullHistory({ token: gh.token, apiUrl: gh.url }),
    env,
    sleep: async () => {},
    onInstance: async (instance) => {
      mined.push(instance);
    },
    ...extra,
  });
  return { mined, progress };
}

/** Issue #1; #2 fixes it (squash); #3 has no issue (merge); #4 names a pull request; #5 closed; #6 docs only. */
async function history(): Promise<Record<string, string>> {
  const issue = gh.createIssue(name, { title: 'parse fails on blank input', body: 'parse("  ") throws.' });
  const sha: Record<string, string> = {};
  const fix = await propose(
    'trim',
    { 'src/parse.js': 'export const parse = (s) => s.trim();\n', 'test/parse.test.js': "test('blank', () => {});\n" },
    { title: 'Trim input', body: `Fixes #${issue.number}.` },
  );
  sha.squash = await gh.landPull(name, fix.number, 'squash');
  const plain = await propose(
    'add-b',
    { 'lib/b.py': 'B = 1\n', 'tests/test_b.py': 'def test_b():\n    assert True\n' },
    { title: 'Add b', body: 'B is needed.' },
  );
  sha.merge = await gh.landPull(name, plain.number, 'merge');
  const named = await propose(
    'add-c',
    { 'src/c.js': 'export const c = 3;\n', 'test/c.test.js': "test('c', () => {});\n" },
    { title: 'Add c', body: `Fixes #${plain.number}, closes other/repo#1` },
  );
  sha.named = await gh.landPull(name, named.number, 'merge');
  const dropped = await propose('drop', { 'src/d.js': '1\n', 'test/d.test.js': '2\n' }, { title: 'Drop d' });
  gh.closePull(name, dropped.number);
  const docs = await propose('docs', { 'README.md': '# w\n', 'test/e.test.js': '3\n' }, { title: 'Docs' });
  sha.docs = await gh.landPull(name, docs.number, 'squash');
  return sha;
}

describe('eval mine from GitHub pull requests', () => {
  it('states a task by its linked issue, else by the pull request, and passes over what is not a task', async () => {
    const sha = await history();
    const { mined, progress } = await mine({ holdoutShare: 0.34 });
    expect(progress).toMatchObject({ read: 4, total: 4, mined: 3 });
    expect(progress.skipped).toEqual({ 'not merged': 1, 'no change outside tests and docs': 1 });
    const parentOf = (commit = '') => git(gh.repoDir(name), ['rev-parse', `${commit}^1`]);
    expect(mined.map((i) => [i.instance_id, i.statement_source, i.split])).toEqual([
      ['acme__widgets-4', 'pull_request', 'holdout'],
      ['acme__widgets-3', 'pull_request', 'dev'],
      ['acme__widgets-2', 'issue', 'dev'],
    ]);
    const [named, plain, fixed] = mined;
    expect(fixed?.problem_statement).toBe('parse fails on blank input\n\nparse("  ") throws.');
    expect(fixed?.base_commit).toBe(await parentOf(sha.squash));
    expect(fixed?.patch).toContain('+++ b/src/parse.js');
    expect(fixed?.test_patch).toContain('+++ b/test/parse.test.js');
    expect(plain?.problem_statement).toBe('Add b\n\nB is needed.');
    expect(plain?.base_commit).toBe(await parentOf(sha.merge));
    expect(plain?.patch).toContain('+++ b/lib/b.py');
    // #3 is a pull request and other/repo#1 another repository's issue: the pull request states it.
    expect(named?.problem_statement).toBe('Add c\n\nFixes #3, closes other/repo#1');
    // The stand-in saw the token on every call, and no call for the unmerged pull request's text.
    expect(gh.requests.every((r) => r.authorized)).toBe(true);
    expect(gh.requests.filter((r) => r.path.startsWith('/repos/acme/widgets/issues/')).map((r) => r.path)).toEqual([
      '/repos/acme/widgets/issues/3',
      '/repos/acme/widgets/issues/1',
    ]);

    // A clone that lacks the newest merge passes it over, saying so.
    const clone = await createTempDir('mine-github-clone');
    try {
      await git(clone.path, ['clone', '--quiet', '--bare', gh.repoDir(name), '.']);
      const late = await propose('late', { 'src/l.js': '1\n', 'test/l.test.js': '2\n' }, { title: 'Late' });
      await gh.landPull(name, late.number, 'merge');
      const stale = await mine({ gitDir: clone.path });
      expect(stale.progress.skipped['merge commit not in the clone']).toBe(1);
    } finally {
      await clone.dispose();
    }
  });

  it('resumes without asking for what it made before, and reads nothing merged before --since', async () => {
    await history();
    const { mined, progress } = await mine({ done: new Set(['acme__widgets-2', 'acme__widgets-4']) });
    expect(mined.map((i) => i.instance_id)).toEqual(['acme__widgets-3']);
    expect(progress.mined).toBe(3);
    expect(gh.requests.some((r) => r.path.startsWith('/repos/acme/widgets/issues/'))).toBe(false);

    const later = await mine({ since: new Date(Date.now() + 60_000) });
    expect(later.progress).toMatchObject({ read: 0, total: 0, mined: 0 });
    expect(later.mined).toEqual([]);
  });

  it('follows the Link header past a page of 100 closed pull requests', async () => {
    const fix = await propose(
      'trim',
      { 'src/parse.js': 'export const parse = (s) => s.trim();\n', 'test/parse.test.js': "test('p', () => {});\n" },
      { title: 'Trim input' },
    );
    await gh.landPull(name, fix.number, 'squash');
    // Updated after the merge: they fill the first page, most recently updated first.
    for (let n = 0; n < 101; n += 1) {
      const pull = gh.openPull(name, { head: `idea-${n}`, title: `Idea ${n}` });
      gh.closePull(name, pull.number);
    }
    const { mined, progress } = await mine();
    expect(mined.map((i) => i.instance_id)).toEqual(['acme__widgets-1']);
    expect(progress.skipped).toEqual({ 'not merged': 101 });
    expect(gh.requests.filter((r) => r.path === '/repos/acme/widgets/pulls')).toHaveLength(2);
  });

  it('tries a rate-limited or failing read again after the wait GitHub names, and gives up after four tries', async () => {
    await history();
    const reset = Math.ceil(Date.now() / 1_000) + 30;
    gh.failNext({
      method: 'GET',
      path: /^\/repos\/acme\/widgets\/pulls$/,
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      body: { message: 'API rate limit exceeded for installation.' },
    });
    gh.failNext({ method: 'GET', path: /^\/repos\/acme\/widgets\/issues\/1$/, status: 502 });
    const waits: number[] = [];
    const waited = await mine({ sleep: async (ms) => void waits.push(ms) });
    expect(waited.mined.map((i) => [i.instance_id, i.statement_source])).toContainEqual(['acme__widgets-2', 'issue']);
    expect(waits).toHaveLength(2);
    // The rate limit waits until its reset; the 502 a backoff of at most two seconds.
    expect(waits[0]).toBeGreaterThan(25_000);
    expect(waits[1]).toBeLessThanOrEqual(2_000);

    gh.failNext({ method: 'GET', path: /^\/repos\/acme\/widgets\/pulls$/, status: 503, times: 4 });
    const before = gh.requests.length;
    await expect(mine()).rejects.toMatchObject({ code: 'forge_unavailable' });
    expect(gh.requests.slice(before).filter((r) => r.path === '/repos/acme/widgets/pulls')).toHaveLength(4);
  });
});

describe('linkedIssues', () => {
  it('reads the closing keywords GitHub links, for this repository only', () => {
    const body = [
      'Fixes #3 and closes acme/widgets#4.',
      'Resolved: https://github.com/ACME/widgets/issues/5',
      'fixes other/repo#6, refs #7, hotfix #8, see #9',
      'CLOSE #3 again; resolves #10x',
    ].join('\n');
    expect(linkedIssues(body, 'acme/widgets')).toEqual([3, 4, 5]);
    expect(linkedIssues('', 'acme/widgets')).toEqual([]);
  });
});

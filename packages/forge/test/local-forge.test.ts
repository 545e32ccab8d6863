import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, git, startFixture, waitFor } from '@codefleet/testkit';
import { awkwardMarkdown, forgeContract, forgeGitEnv } from './contract/index.js';
import { createLocalForge } from '../src/index.js';
import { openLocal } from './local-harness.js';

forgeContract({ name: 'local (bare origin + SQLite)', open: openLocal });

describe('LocalForge specifics', () => {
  const cleanups: (() => Promise<void>)[] = [];
  const open = async () => {
    const opened = await openLocal();
    cleanups.push(() => opened.dispose());
    return opened;
  };
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('three processes ensuring the same pull request at once create exactly one', async () => {
    const script = fileURLToPath(new URL('./fixtures/race-forge.mjs', import.meta.url));
    const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    if (!existsSync(dist)) throw new Error(`${dist} is missing: run \`npm run build\` before the tests`);
    const o = await open();
    // Several heads, so each run holds several independent races, not just one.
    const heads = ['ai/issue-7', 'ai/issue-8', 'ai/issue-9', 'ai/fix-typo-1f3a'];
    const workdir = await o.makeWorkdir('race');
    for (const branch of heads) await o.forge.ensureBranch({ repo: o.repo, workdir, branch });
    const startAt = Date.now() + 1_500;
    const workers = [1, 2, 3].map((worker) =>
      startFixture(script, [
        JSON.stringify({
          dbPath: o.dbPath,
          gitEnv: forgeGitEnv(),
          repo: o.repo,
          heads,
          base: o.base,
          startAt,
          worker,
        }),
      ]),
    );
    const exits = await Promise.all(workers.map((w) => w.exited));
    // stderr rides along so a crashing fixture explains itself in the diff.
    expect({ exits: exits.map((e) => e.exitCode), stderr: workers.map((w) => w.stderr) }).toMatchObject({
      exits: [0, 0, 0],
    });
    type Line = { head: string; pr: { number: number; created: boolean }; comment: { id: number; created: boolean } };
    const lines = workers.flatMap((w) =>
      w.lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Line),
    );
    expect(lines).toHaveLength(3 * heads.length);
    for (const head of heads) {
      const mine = lines.filter((l) => l.head === head);
      expect(new Set(mine.map((l) => l.pr.number)).size).toBe(1);
      expect(mine.filter((l) => l.pr.created)).toHaveLength(1);
      expect(mine.filter((l) => l.comment.created)).toHaveLength(1);
      expect(o.forge.pullRequestCreations(o.repo, head)).toBe(1);
      const pr = await o.forge.findPullRequest(o.repo, head);
      expect(await o.forge.issues.listComments(o.repo, { kind: 'pull', number: pr!.number })).toHaveLength(1);
    }
    // Four numbers, one per head. A process that loses the race to open a head leaves the
    // number it claimed in the origin unused: unique, not gapless (see pull-numbers.ts).
    expect(new Set(lines.map((l) => l.pr.number)).size).toBe(4);
  });

  it('keeps bodies verbatim across processes: a second forge on the same file reads them back', async () => {
    const o = await open();
    const workdir = await o.makeWorkdir('feature/ünïcode');
    await o.forge.ensureBranch({ repo: o.repo, workdir, branch: 'feature/ünïcode' });
    const pr = await o.forge.ensurePullRequest({
      repo: o.repo,
      head: 'feature/ünïcode',
      base: 'main',
      title: '✅ «done»',
      body: awkwardMarkdown,
      draft: true,
    });
    const target = { kind: 'task' as const, key: 'cli/1f3a' };
    await o.forge.issues.ensureComment({ repo: o.repo, target, marker: 'status', body: awkwardMarkdown });
    const other = createLocalForge({ dbPath: o.dbPath, gitEnv: forgeGitEnv() });
    try {
      expect(await other.getPullRequest(o.repo, pr.number)).toMatchObject({
        body: awkwardMarkdown,
        title: '✅ «done»',
        draft: true,
      });
      expect((await other.issues.listComments(o.repo, target))[0]?.body).toBe(
        `<!-- codefleet:status -->\n${awkwardMarkdown}`,
      );
    } finally {
      other.close();
    }
  });

  it('a ref lock left by a killed push: a fresh one is a transient failure, an old one is cleared and the push lands', async () => {
    const o = await open();
    const workdir = await o.makeWorkdir('ai/issue-11');
    const lock = join(o.repo, 'refs', 'heads', 'ai', 'issue-11.lock');
    await mkdir(join(o.repo, 'refs', 'heads', 'ai'), { recursive: true });
    await writeFile(lock, '');
    await expect(o.forge.ensureBranch({ repo: o.repo, workdir, branch: 'ai/issue-11' })).rejects.toMatchObject({
      code: 'git_failed',
    });
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    const pushed = await o.forge.ensureBranch({ repo: o.repo, workdir, branch: 'ai/issue-11' });
    expect((await git(o.repo, ['rev-parse', 'refs/heads/ai/issue-11'])).trim()).toBe(pushed.sha);
    expect(existsSync(lock)).toBe(false);
  });

  it('merge and close: status stays observable, and a closed head gets a new pull request', async () => {
    const o = await open();
    const workdir = await o.makeWorkdir('ai/issue-9');
    await o.forge.ensureBranch({ repo: o.repo, workdir, branch: 'ai/issue-9' });
    const req = { repo: o.repo, head: 'ai/issue-9', base: 'main', title: 'Nine', body: 'b', draft: false };
    const first = await o.forge.ensurePullRequest(req);
    expect(first.url).toBe(`local://${o.repo}/pull/1`);
    expect(o.forge.closePullRequest(o.repo, first.number).state).toBe('closed');
    expect(await o.forge.findPullRequest(o.repo, 'ai/issue-9')).toMatchObject({ number: 1, state: 'closed' });
    const second = await o.forge.ensurePullRequest(req);
    expect(second).toMatchObject({ number: 2, created: true, state: 'open' });
    expect(await o.forge.findPullRequest(o.repo, 'ai/issue-9')).toMatchObject({ number: 2, state: 'open' });
    expect(o.forge.mergePullRequest(o.repo, 2).state).toBe('merged');
    expect(o.forge.mergePullRequest(o.repo, 2).state).toBe('merged');
    expect(await o.forge.findPullRequest(o.repo, 'ai/issue-9')).toMatchObject({ number: 2, state: 'merged' });
    expect(() => o.forge.closePullRequest(o.repo, 2)).toThrow(expect.objectContaining({ code: 'forge_rejected' }));
    expect(() => o.forge.mergePullRequest(o.repo, 3)).toThrow(expect.objectContaining({ code: 'forge_not_found' }));
    expect(o.forge.pullRequestCreations(o.repo, 'ai/issue-9')).toBe(2);
  });

  it('numbers pull requests per repository and treats path spellings of one repo alike', async () => {
    const a = await open();
    const b = await open();
    for (const [o, head] of [
      [a, 'one'],
      [a, 'two'],
      [b, 'three'],
    ] as const) {
      const workdir = await o.makeWorkdir(head);
      await o.forge.ensureBranch({ repo: o.repo, workdir, branch: head });
    }
    const pr = (o: typeof a, repo: string, head: string) =>
      o.forge.ensurePullRequest({ repo, head, base: 'main', title: head, body: '', draft: false });
    expect((await pr(a, a.repo, 'one')).number).toBe(1);
    expect((await pr(a, `${a.repo}/`, 'two')).number).toBe(2);
    expect(await pr(a, a.repo.replace('/origin.git', '//origin.git/'), 'one')).toMatchObject({
      number: 1,
      created: false,
    });
    // Another repo in the same database starts at 1.
    expect((await pr(a, b.repo, 'three')).number).toBe(1);
    // Each new one claims its number in the origin with a few git calls: room for a loaded host.
  });

  it('works with file:// URLs', async () => {
    const o = await open();
    const repo = `file://${o.repo}`;
    const workdir = await o.makeWorkdir('via-url');
    const { sha } = await o.forge.ensureBranch({ repo, workdir, branch: 'via-url' });
    expect(await o.forge.findBranch(repo, 'via-url')).toEqual({ sha });
    const pr = await o.forge.ensurePullRequest({
      repo,
      head: 'via-url',
      base: 'main',
      title: 'URL',
      body: '',
      draft: false,
    });
    expect(pr.url).toBe(`local://${repo}/pull/1`);
  });

  it('refuses to push to the checked-out branch of a non-bare repository, with a hint', async () => {
    const o = await open();
    const nonBare = await createTempRepo({ branch: 'main' });
    cleanups.push(() => nonBare.dispose());
    const workdir = await o.makeWorkdir('to-main');
    const base = await nonBare.git(['rev-parse', 'HEAD']);
    const push = o.forge.ensureBranch({ repo: nonBare.path, workdir, branch: 'main', expectedSha: base });
    await expect(push).rejects.toMatchObject({
      code: 'forge_rejected',
      message: expect.stringContaining('bare origin'),
    });
    // Any other branch of a non-bare repository is fine.
    const other = await o.forge.ensureBranch({ repo: nonBare.path, workdir, branch: 'ai/work' });
    expect(await git(nonBare.path, ['rev-parse', 'refs/heads/ai/work'])).toBe(other.sha);
  });

  it('maps a missing repository to forge_not_found and refuses GitHub refs and URL credentials', async () => {
    const o = await open();
    const workdir = await o.makeWorkdir('lost');
    const missing = join(o.scratch, 'nowhere.git');
    await expect(o.forge.ensureBranch({ repo: missing, workdir, branch: 'lost' })).rejects.toMatchObject({
      code: 'forge_not_found',
    });
    await expect(o.forge.findBranch(missing, 'lost')).rejects.toMatchObject({ code: 'forge_not_found' });
    await expect(o.forge.findBranch('acme/widgets', 'main')).rejects.toMatchObject({
      code: 'forge_rejected',
      message: expect.stringContaining('github'),
    });
    const leaked = o.forge.findBranch('https://bot:ghp_SECRET123@example.invalid/x.git', 'main');
    await expect(leaked).rejects.toMatchObject({ code: 'forge_rejected' });
    await expect(leaked).rejects.not.toMatchObject({ message: expect.stringContaining('ghp_SECRET123') });
    await expect(o.forge.findBranch('relative/path/', 'main')).rejects.toMatchObject({ code: 'forge_rejected' });
  });

  it('stops a hanging git at gitTimeoutMs with a transient git_failed that quotes no environment', async () => {
    const o = await open();
    const fakeGit = join(o.scratch, 'hanging-git');
    // Unique per run: it is also how the test finds the fake git's process, wherever it got to.
    const secret = `s3cr3t-value-${process.pid}-${Date.now()}`;
    await writeFile(fakeGit, `#!/bin/sh\necho "starting with $CODEFLEET_TEST_SECRET" >/dev/null\nexec sleep 300\n`);
    await chmod(fakeGit, 0o755);
    const forge = createLocalForge({
      dbPath: join(o.scratch, 'hang.sqlite'),
      gitEnv: { ...forgeGitEnv(), CODEFLEET_TEST_SECRET: secret },
      gitPath: fakeGit,
      gitTimeoutMs: 300,
    });
    try {
      const error = await forge.findBranch(o.repo, 'main').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({
        code: 'git_failed',
        verdict: 'transient',
        message: expect.stringContaining('timed out'),
      });
      expect(JSON.stringify(error)).not.toContain(secret);
      expect(String((error as Error).message)).not.toContain(secret);
      // Stopped, not waited out: no process carrying the fake git's environment is left,
      // however far it got before the timeout (on a loaded machine, perhaps not past its
      // first line), long before its sleep would end.
      await waitFor(async () => (await processesWithEnv(`CODEFLEET_TEST_SECRET=${secret}`)).length === 0, {
        what: 'the hanging git killed',
      });
    } finally {
      forge.close();
    }
  });

  it('refuses an invalid timeout and labels both added and removed', async () => {
    const o = await open();
    expect(() => createLocalForge({ dbPath: join(o.scratch, 'x.sqlite'), gitEnv: {}, gitTimeoutMs: 0 })).toThrow(
      /gitTimeoutMs/,
    );
    await expect(
      o.forge.issues.ensureLabels({ repo: o.repo, target: { kind: 'issue', number: 1 }, add: ['a'], remove: ['A'] }),
    ).rejects.toMatchObject({ code: 'forge_rejected' });
    await expect(o.forge.issues.listLabels(o.repo, { kind: 'issue', number: 0 })).rejects.toMatchObject({
      code: 'forge_rejected',
    });
    await expect(o.forge.issues.listLabels(o.repo, { kind: 'task', key: '' })).rejects.toMatchObject({
      code: 'forge_rejected',
    });
  });
});

/** Live processes whose environment holds `entry` (`NAME=value`); zombies have none left. */
async function processesWithEnv(entry: string): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const found: number[] = [];
  for (const pid of pids) {
    const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
    if (environ.split('\0').includes(entry)) found.push(Number(pid));
  }
  return found;
}

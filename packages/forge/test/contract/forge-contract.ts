/**
 * The forge contract suite. Every adapter runs the same tests against a real origin:
 *
 *   forgeContract({ name: 'local', open: async () => ({ forge, repo, base, ... }) });
 *
 * Imported by the local adapter's tests in this folder's parent and, as
 * `@codefleet/forge/contract`, by other packages' adapter tests; it is test code, so it lives
 * outside src/ and never reaches dist/.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git, writeFiles } from '@codefleet/testkit';
import type { Forge, IssueTracker } from '../../src/port.js';
import { convergeContract } from './converge-contract.js';

/** A fresh origin and forge, opened for one test. */
export interface OpenedForge {
  forge: Forge;
  /** The same forge's issues (comments and labels). */
  issues: IssueTracker;
  /** The repo string the adapter is given (a path, a URL, `owner/name`). */
  repo: string;
  /** A branch that exists on the origin, used as the pull requests' base (e.g. `main`). */
  base: string;
  /** An issue that exists on the forge, for comment and label targets. */
  issueNumber: number;
  /**
   * The bare repository behind the forge, on this host: where a test lands a push as a dead
   * worker's would (straight in, or from a hook while another push is received).
   */
  originDir: string;
  /**
   * A clone of the origin, checked out on a new local `branch` started from `base`, with
   * one new commit of its own. Resolves to the clone's path; git runs there as the test
   * user, so tests can add commits.
   */
  makeWorkdir(branch: string): Promise<string>;
  /** How many pull requests the forge ever created for `head` (from its store or stand-in). */
  pullRequestCreations(head: string): Promise<number>;
  /** A person merges, or closes without merging, pull request `number` (on the forge's side). */
  settlePullRequest(number: number, how: 'merged' | 'closed'): Promise<void>;
  dispose(): Promise<void>;
}

/** How the suite reaches one adapter. */
export interface ForgeContractHarness {
  name: string;
  open(): Promise<OpenedForge>;
}

/** Markdown that has broken naive storage and templating elsewhere. */
export const awkwardMarkdown = [
  '# Résumé ✅ — 变更说明 — עברית — 🧑‍💻🏳️‍🌈',
  '',
  '```sh',
  'echo "$(touch /tmp/pwned)" `id`; rm -rf ~ && printf \'%s\\n\' "${HOME}"',
  '```',
  '<!-- codefleet:status --> <details><summary>x</summary>\t<b>y</b></details>',
  '| a | b |\r\n|---|---|\r\n| \\| | `|` |',
  'zero\u200bwidth, nbsp\u00a0, trailing spaces   ',
  '',
].join('\n');

/** Registers the contract tests for one adapter. */
export function forgeContract(harness: ForgeContractHarness): void {
  const cleanups: (() => Promise<void>)[] = [];
  const open = async () => {
    const opened = await harness.open();
    cleanups.push(() => opened.dispose());
    return opened;
  };
  // Unique per test so a stand-in shared between tests never sees a branch twice.
  const branchName = (what: string) => `codefleet-test/${what}-${randomBytes(4).toString('hex')}`;
  const commit = async (workdir: string, what: string) => {
    await writeFiles(workdir, { [`${what}.txt`]: `${what} ${randomBytes(8).toString('hex')}\n` });
    await git(workdir, ['add', '--all']);
    await git(workdir, ['commit', '--quiet', '-m', what]);
    return git(workdir, ['rev-parse', 'HEAD']);
  };
  /** A pushed head branch, ready for pull requests. */
  const pushedBranch = async (o: OpenedForge, what: string) => {
    const branch = branchName(what);
    const workdir = await o.makeWorkdir(branch);
    const { sha } = await o.forge.ensureBranch({ repo: o.repo, workdir, branch });
    return { branch, workdir, sha };
  };

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  describe(`forge contract: ${harness.name}`, () => {
    describe('ensureBranch', () => {
      it('pushes HEAD to a new branch and returns its sha', async () => {
        const o = await open();
        const branch = branchName('new');
        const workdir = await o.makeWorkdir(branch);
        const head = await git(workdir, ['rev-parse', 'HEAD']);
        expect(await o.forge.findBranch(o.repo, branch)).toBeUndefined();
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir, branch })).toEqual({ sha: head, updated: true });
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: head });
      });

      it('converges when the sha already landed, even with the lease it started from', async () => {
        const o = await open();
        const { branch, workdir, sha: first } = await pushedBranch(o, 'retry');
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir, branch })).toEqual({ sha: first, updated: false });
        const second = await commit(workdir, 'more');
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir, branch, expectedSha: first })).toEqual({
          sha: second,
          updated: true,
        });
        // The push landed but the worker crashed before recording it: the retry still holds
        // the old lease, and must succeed rather than report a conflict with itself.
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir, branch, expectedSha: first })).toEqual({
          sha: second,
          updated: false,
        });
      });

      it('rejects a stale expectedSha with git_conflict and leaves the branch alone', async () => {
        const o = await open();
        const { branch, workdir, sha: first } = await pushedBranch(o, 'fenced');
        const newer = await commit(workdir, 'newer');
        await o.forge.ensureBranch({ repo: o.repo, workdir, branch, expectedSha: first });
        // A worker that paused past its lease still believes the branch is at `first`.
        const stale = await o.makeWorkdir(branch);
        await expect(
          o.forge.ensureBranch({ repo: o.repo, workdir: stale, branch, expectedSha: first }),
        ).rejects.toMatchObject({ code: 'git_conflict' });
        await expect(o.forge.ensureBranch({ repo: o.repo, workdir: stale, branch })).rejects.toMatchObject({
          code: 'git_conflict',
        });
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: newer });
      });

      it('replaces unrelated history when the lease matches', async () => {
        const o = await open();
        const { branch, sha: first } = await pushedBranch(o, 'rewrite');
        const other = await o.makeWorkdir(branch);
        const rewritten = await git(other, ['rev-parse', 'HEAD']);
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir: other, branch, expectedSha: first })).toEqual({
          sha: rewritten,
          updated: true,
        });
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: rewritten });
      });

      it('stops with cancelled when the signal is aborted, pushing nothing', async () => {
        const o = await open();
        const branch = branchName('abort');
        const workdir = await o.makeWorkdir(branch);
        const signal = AbortSignal.abort();
        await expect(o.forge.ensureBranch({ repo: o.repo, workdir, branch, signal })).rejects.toMatchObject({
          code: 'cancelled',
        });
        expect(await o.forge.findBranch(o.repo, branch)).toBeUndefined();
      });

      it('refuses invalid branch names and lease values before running git', async () => {
        const o = await open();
        const workdir = await o.makeWorkdir(branchName('bad'));
        for (const branch of ['-f', 'a..b', 'x y', 'refs/heads/../x', '']) {
          await expect(o.forge.ensureBranch({ repo: o.repo, workdir, branch })).rejects.toMatchObject({
            code: 'forge_rejected',
          });
        }
        await expect(
          o.forge.ensureBranch({ repo: o.repo, workdir, branch: 'ok', expectedSha: 'HEAD~1' }),
        ).rejects.toMatchObject({ code: 'forge_rejected' });
      });
    });

    convergeContract(open);

    describe('ensurePullRequest', () => {
      it('creates once, then updates title, body and draft in place', async () => {
        const o = await open();
        const { branch, sha } = await pushedBranch(o, 'pr');
        const req = { repo: o.repo, head: branch, base: o.base, title: 'Add a widget', body: 'first', draft: true };
        const first = await o.forge.ensurePullRequest(req);
        expect(first).toMatchObject({
          created: true,
          head: branch,
          base: o.base,
          title: 'Add a widget',
          body: 'first',
          draft: true,
          state: 'open',
          headSha: sha,
        });
        expect(first.number).toBeGreaterThan(0);
        expect(first.url).not.toBe('');
        expect(Number.isNaN(Date.parse(first.createdAt))).toBe(false);

        const second = await o.forge.ensurePullRequest({
          ...req,
          title: 'Add a widget (v2)',
          body: 'second',
          draft: false,
        });
        expect(second).toMatchObject({
          created: false,
          number: first.number,
          title: 'Add a widget (v2)',
          body: 'second',
          draft: false,
          state: 'open',
        });
        const { created: _created, ...stored } = second;
        expect(await o.forge.findPullRequest(o.repo, branch)).toEqual(stored);
        expect(await o.forge.getPullRequest(o.repo, first.number)).toEqual(stored);
        expect(await o.pullRequestCreations(branch)).toBe(1);
      });

      it('opens exactly one pull request for five concurrent calls', async () => {
        const o = await open();
        const { branch } = await pushedBranch(o, 'race');
        const bodies = [1, 2, 3, 4, 5].map((n) => `attempt ${n}`);
        const results = await Promise.all(
          bodies.map((body) =>
            o.forge.ensurePullRequest({ repo: o.repo, head: branch, base: o.base, title: 'Race', body, draft: false }),
          ),
        );
        expect(new Set(results.map((r) => r.number)).size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(await o.pullRequestCreations(branch)).toBe(1);
        expect(bodies).toContain((await o.forge.findPullRequest(o.repo, branch))?.body);
      });

      it('records the new head sha when the branch moved', async () => {
        const o = await open();
        const { branch, workdir, sha } = await pushedBranch(o, 'moved');
        const req = { repo: o.repo, head: branch, base: o.base, title: 'Moves', body: 'b', draft: false };
        await o.forge.ensurePullRequest(req);
        const next = await commit(workdir, 'fix');
        await o.forge.ensureBranch({ repo: o.repo, workdir, branch, expectedSha: sha });
        expect(await o.forge.ensurePullRequest(req)).toMatchObject({ created: false, headSha: next });
      });

      it('stores Markdown and unicode bodies verbatim', async () => {
        const o = await open();
        const { branch } = await pushedBranch(o, 'verbatim');
        const pr = await o.forge.ensurePullRequest({
          repo: o.repo,
          head: branch,
          base: o.base,
          title: 'Ünïcødé ✅ `code` <b>',
          body: awkwardMarkdown,
          draft: false,
        });
        const found = await o.forge.getPullRequest(o.repo, pr.number);
        expect(found.body).toBe(awkwardMarkdown);
        expect(found.title).toBe('Ünïcødé ✅ `code` <b>');
      });

      it('refuses a head that was never pushed, and invalid input', async () => {
        const o = await open();
        const req = { repo: o.repo, head: branchName('missing'), base: o.base, title: 't', body: 'b', draft: false };
        await expect(o.forge.ensurePullRequest(req)).rejects.toMatchObject({ code: 'forge_rejected' });
        const { branch } = await pushedBranch(o, 'invalid');
        const valid = { ...req, head: branch };
        await expect(o.forge.ensurePullRequest({ ...valid, title: ' ' })).rejects.toMatchObject({
          code: 'forge_rejected',
        });
        await expect(o.forge.ensurePullRequest({ ...valid, title: 'x'.repeat(257) })).rejects.toMatchObject({
          code: 'forge_rejected',
        });
        await expect(o.forge.ensurePullRequest({ ...valid, body: 'x'.repeat(65_537) })).rejects.toMatchObject({
          code: 'forge_rejected',
        });
        await expect(o.forge.ensurePullRequest({ ...valid, base: branch })).rejects.toMatchObject({
          code: 'forge_rejected',
        });
        expect(await o.pullRequestCreations(branch)).toBe(0);
      });

      it("tells a pull request's state: open, merged, closed without merge", async () => {
        const o = await open();
        const opened = await Promise.all(
          ['state-a', 'state-b'].map(async (what) => {
            const { branch } = await pushedBranch(o, what);
            return o.forge.ensurePullRequest({
              repo: o.repo,
              head: branch,
              base: o.base,
              title: what,
              body: 'b',
              draft: false,
            });
          }),
        );
        const [a, b] = opened.map((pr) => pr.number) as [number, number];
        expect(await o.forge.pullRequestState(o.repo, a)).toBe('open');
        await o.settlePullRequest(a, 'merged');
        await o.settlePullRequest(b, 'closed');
        expect(await o.forge.pullRequestState(o.repo, a)).toBe('merged');
        expect(await o.forge.pullRequestState(o.repo, b)).toBe('closed');
        await expect(o.forge.pullRequestState(o.repo, 9_999)).rejects.toMatchObject({ code: 'forge_not_found' });
        await expect(o.forge.pullRequestState(o.repo, a, AbortSignal.abort())).rejects.toMatchObject({
          code: 'cancelled',
        });
      });

      it('finds nothing for an unknown head or number', async () => {
        const o = await open();
        expect(await o.forge.findPullRequest(o.repo, branchName('none'))).toBeUndefined();
        await expect(o.forge.getPullRequest(o.repo, 9_999)).rejects.toMatchObject({ code: 'forge_not_found' });
      });
    });

    describe('ensureComment', () => {
      const openPull = async (o: OpenedForge) => {
        const { branch } = await pushedBranch(o, 'comments');
        const pr = await o.forge.ensurePullRequest({
          repo: o.repo,
          head: branch,
          base: o.base,
          title: 'Comments',
          body: 'b',
          draft: false,
        });
        return { kind: 'pull' as const, number: pr.number };
      };

      it('keeps one comment per marker, edited in place, with a hidden marker line', async () => {
        const o = await open();
        const target = await openPull(o);
        const first = await o.issues.ensureComment({ repo: o.repo, target, marker: 'status', body: 'running…' });
        expect(first.created).toBe(true);
        const second = await o.issues.ensureComment({ repo: o.repo, target, marker: 'status', body: 'done ✅' });
        expect(second).toEqual({ id: first.id, created: false });
        const comments = await o.issues.listComments(o.repo, target);
        expect(comments).toHaveLength(1);
        expect(comments[0]).toMatchObject({
          id: first.id,
          marker: 'status',
          body: '<!-- codefleet:status -->\ndone ✅',
        });
      });

      it('keeps different markers apart, oldest first', async () => {
        const o = await open();
        const target = await openPull(o);
        const status = await o.issues.ensureComment({ repo: o.repo, target, marker: 'status', body: 'a' });
        const failure = await o.issues.ensureComment({ repo: o.repo, target, marker: 'failure', body: 'b' });
        expect(failure.id).not.toBe(status.id);
        const comments = await o.issues.listComments(o.repo, target);
        expect(comments.map((c) => [c.id, c.marker])).toEqual([
          [status.id, 'status'],
          [failure.id, 'failure'],
        ]);
      });

      it('never matches a marker quoted inside another body', async () => {
        const o = await open();
        const target = await openPull(o);
        const quoting = await o.issues.ensureComment({
          repo: o.repo,
          target,
          marker: 'log',
          body: 'see:\n<!-- codefleet:status -->',
        });
        const status = await o.issues.ensureComment({ repo: o.repo, target, marker: 'status', body: 'mine' });
        expect(status.created).toBe(true);
        expect(status.id).not.toBe(quoting.id);
        expect((await o.issues.listComments(o.repo, target))[0]?.body).toBe(
          '<!-- codefleet:log -->\nsee:\n<!-- codefleet:status -->',
        );
      });

      it('comments on issues, and stores bodies verbatim', async () => {
        const o = await open();
        const target = { kind: 'issue' as const, number: o.issueNumber };
        await o.issues.ensureComment({ repo: o.repo, target, marker: 'failure', body: awkwardMarkdown });
        const comments = await o.issues.listComments(o.repo, target);
        expect(comments.map((c) => c.body)).toEqual([`<!-- codefleet:failure -->\n${awkwardMarkdown}`]);
      });

      it('refuses markers that could break out of the HTML comment, and missing pull requests', async () => {
        const o = await open();
        const target = { kind: 'issue' as const, number: o.issueNumber };
        for (const marker of ['', 'a -->', 'two\nlines', 'x'.repeat(101), '<b>']) {
          await expect(o.issues.ensureComment({ repo: o.repo, target, marker, body: 'b' })).rejects.toMatchObject({
            code: 'forge_rejected',
          });
        }
        await expect(
          o.issues.ensureComment({
            repo: o.repo,
            target: { kind: 'pull', number: 9_999 },
            marker: 'status',
            body: 'b',
          }),
        ).rejects.toMatchObject({ code: 'forge_not_found' });
        expect(await o.issues.listComments(o.repo, target)).toEqual([]);
      });
    });

    describe('ensureLabels', () => {
      it('moves labels through a lifecycle, idempotently and case-insensitively', async () => {
        const o = await open();
        const target = { kind: 'issue' as const, number: o.issueNumber };
        const ensure = (add: string[], remove: string[] = []) =>
          o.issues.ensureLabels({ repo: o.repo, target, add, remove });
        expect(await ensure(['codefleet:queued'])).toEqual({ labels: ['codefleet:queued'] });
        expect(await ensure(['codefleet:queued'])).toEqual({ labels: ['codefleet:queued'] });
        expect(await ensure(['codefleet:running'], ['codefleet:queued', 'not-there'])).toEqual({
          labels: ['codefleet:running'],
        });
        expect(await ensure(['CODEFLEET:RUNNING', 'bug'])).toEqual({ labels: ['bug', 'codefleet:running'] });
        expect(await o.issues.listLabels(o.repo, target)).toEqual(['bug', 'codefleet:running']);
        await expect(ensure([' '])).rejects.toMatchObject({ code: 'forge_rejected' });
      });
    });
  });
}

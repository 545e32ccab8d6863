// pushFenced against real bare origins: convergence when the branch already holds the
// commit, the lease otherwise, and a push that dies with its worker.
import { randomBytes } from 'node:crypto';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git, startFixture, waitFor } from '@codefleet/testkit';
import { pushFenced, remoteBranches, type GitOptions } from '../src/git/git.js';
import { forgeGitEnv } from './contract/index.js';
import { createOrigin } from './local-harness.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const options: GitOptions = { env: forgeGitEnv(), timeoutMs: 60_000 };

/** A bare origin on `main` and a clone whose HEAD is one commit past it. */
async function setUp() {
  const { origin, scratch, dispose } = await createOrigin();
  cleanups.push(dispose);
  const workdir = join(scratch, 'work');
  await git(scratch, ['clone', '--quiet', origin, workdir]);
  // A change of content: a tip with exactly this tree would count as this work.
  await writeFile(join(workdir, 'work.txt'), 'the work\n');
  await git(workdir, ['add', 'work.txt']);
  await git(workdir, ['commit', '--quiet', '-m', 'the work']);
  const sha = await git(workdir, ['rev-parse', 'HEAD']);
  const main = await git(workdir, ['rev-parse', 'origin/main']);
  return { origin, scratch, workdir, sha, main };
}

/**
 * Makes the origin set `refs/heads/<branch>` to `sha` while a push is being received, as an
 * orphaned earlier push landing first would: the pushed ref then fails the server's own
 * compare-and-swap ("reference already exists"). `sha` must already be in the origin.
 */
async function raceOnOrigin(origin: string, branch: string, sha: string): Promise<void> {
  const hook = join(origin, 'hooks', 'pre-receive');
  // Outside the quarantine git refuses ref updates; the object is in the main store already.
  await writeFile(
    hook,
    `#!/bin/sh\nunset GIT_QUARANTINE_PATH\ngit update-ref refs/heads/${branch} ${sha}\ncat >/dev/null\n`,
  );
  await chmod(hook, 0o755);
}

/** Pids of this user's processes whose environment carries `NAME=value`. */
async function processesWith(name: string, value: string): Promise<number[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  const pids = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  const marked = await Promise.all(
    pids.map(async (pid) => (await readFile(`/proc/${pid}/environ`).catch(() => Buffer.alloc(0))).includes(needle)),
  );
  return pids.filter((_, i) => marked[i]).map(Number);
}

describe('pushFenced', () => {
  it('converges when the branch is already at the commit, even under a must-not-exist lease', async () => {
    const o = await setUp();
    await git(o.workdir, ['push', '--quiet', o.origin, `${o.sha}:refs/heads/ai/issue-7`]);
    await expect(pushFenced(options, { workdir: o.workdir, remote: o.origin, branch: 'ai/issue-7' })).resolves.toEqual({
      sha: o.sha,
      updated: false,
    });
  });

  it('converges when an earlier push of the same commit wins the race for the ref', async () => {
    const o = await setUp();
    // The commit is on the origin already (as a landing orphaned push leaves it).
    await git(o.workdir, ['push', '--quiet', o.origin, `${o.sha}:refs/heads/elsewhere`]);
    await raceOnOrigin(o.origin, 'ai/issue-7', o.sha);
    await expect(pushFenced(options, { workdir: o.workdir, remote: o.origin, branch: 'ai/issue-7' })).resolves.toEqual({
      sha: o.sha,
      updated: false,
    });
  });

  it('still fails when the branch ends up at another commit', async () => {
    const o = await setUp();
    // The lease, checked by git before sending: git_conflict.
    await git(o.workdir, ['push', '--quiet', o.origin, `${o.main}:refs/heads/taken`]);
    await expect(pushFenced(options, { workdir: o.workdir, remote: o.origin, branch: 'taken' })).rejects.toMatchObject({
      code: 'git_conflict',
    });
    // The server's compare-and-swap, lost to another commit: the same fact, a conflict too.
    await raceOnOrigin(o.origin, 'raced', o.main);
    await expect(pushFenced(options, { workdir: o.workdir, remote: o.origin, branch: 'raced' })).rejects.toMatchObject({
      code: 'git_conflict',
      message: expect.stringContaining('failed to update ref'),
      details: expect.objectContaining({ remote_sha: o.main }),
    });
    expect(await remoteBranches(options, o.origin, ['taken', 'raced'])).toEqual(
      new Map([
        ['taken', o.main],
        ['raced', o.main],
      ]),
    );
  });

  it('pushes a given sha from a bare repository, and refuses one it does not hold', async () => {
    const o = await setUp();
    const bare = join(o.scratch, 'mirror.git');
    await git(o.scratch, ['clone', '--quiet', '--bare', o.workdir, bare]);
    // HEAD of the bare clone is the work commit; push its parent to show the sha is what counts.
    const pushed = await pushFenced(options, { workdir: bare, remote: o.origin, branch: 'ai/issue-8', sha: o.main });
    expect(pushed).toEqual({ sha: o.main, updated: true });
    expect(await remoteBranches(options, o.origin, ['ai/issue-8'])).toEqual(new Map([['ai/issue-8', o.main]]));
    const absent = 'f'.repeat(40);
    await expect(
      pushFenced(options, { workdir: bare, remote: o.origin, branch: 'x', sha: absent }),
    ).rejects.toMatchObject({ code: 'forge_rejected' });
    await expect(
      pushFenced(options, { workdir: bare, remote: o.origin, branch: 'x', sha: 'HEAD' }),
    ).rejects.toMatchObject({ code: 'forge_rejected' });
    const tree = await git(bare, ['rev-parse', `${o.sha}^{tree}`]);
    await expect(
      pushFenced(options, { workdir: bare, remote: o.origin, branch: 'x', sha: tree }),
    ).rejects.toMatchObject({ code: 'forge_rejected' });
    expect(await remoteBranches(options, o.origin, ['x'])).toEqual(new Map());
  });

  it('reads results from git stdout only: look-alike lines on stderr are not data', async () => {
    const o = await setUp();
    await git(o.workdir, ['push', '--quiet', o.origin, `${o.sha}:refs/heads/ai/issue-9`]);
    // A git that warns before and after its output, in lines one character away from data.
    const wrapper = join(o.scratch, 'chatty-git');
    const warn = [
      `printf 'remote: *\\t${o.sha}:refs/heads/ai/issue-9\\t[new branch]\\n' >&2`,
      `printf ' ${o.main}\\trefs/heads/ai/issue-9\\n' >&2`,
      `printf '${o.main}\\trefs/heads/ai/issue-9\\tx\\n' >&2`,
    ];
    await writeFile(wrapper, ['#!/bin/sh', ...warn, 'git "$@"', 'code=$?', ...warn, 'exit $code', ''].join('\n'));
    await chmod(wrapper, 0o755);
    const chatty: GitOptions = { ...options, gitPath: wrapper };
    expect(await remoteBranches(chatty, o.origin, ['ai/issue-9'])).toEqual(new Map([['ai/issue-9', o.sha]]));
    expect(
      await pushFenced(chatty, { workdir: o.workdir, remote: o.origin, branch: 'ai/issue-9', expectedSha: o.sha }),
    ).toEqual({ sha: o.sha, updated: false });
  });

  it('a push dies with its worker: nothing of it is left running after a SIGKILL', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/push-fenced.mjs', import.meta.url));
    if (!existsSync(fileURLToPath(new URL('../dist/git/git.js', import.meta.url))))
      throw new Error('dist is missing: run `npm run build` before the tests');
    const o = await setUp();
    // Every process of the push inherits git's environment, so this finds them all.
    const mark = randomBytes(8).toString('hex');
    cleanups.push(async () => {
      for (const pid of await processesWith('CODEFLEET_TEST_PUSH', mark)) process.kill(pid, 'SIGKILL');
    });
    const started = join(o.scratch, 'receiving');
    const hook = join(o.origin, 'hooks', 'pre-receive');
    // The origin takes its time receiving, so the worker dies in the middle of the push.
    await writeFile(hook, `#!/bin/sh\ntouch '${started}'\nexec sleep 600\n`);
    await chmod(hook, 0o755);
    const worker = startFixture(fixture, [
      JSON.stringify({
        gitEnv: { ...forgeGitEnv(), CODEFLEET_TEST_PUSH: mark },
        workdir: o.workdir,
        remote: o.origin,
        branch: 'ai/issue-10',
      }),
    ]);
    await waitFor(() => existsSync(started), {
      what: `the push to reach the origin (worker stderr: ${worker.stderr})`,
    });
    expect((await processesWith('CODEFLEET_TEST_PUSH', mark)).length).toBeGreaterThan(0);
    worker.kill('SIGKILL');
    await worker.exited;
    await waitFor(async () => (await processesWith('CODEFLEET_TEST_PUSH', mark)).length === 0, {
      what: 'the push processes killed',
    });
    expect(await remoteBranches(options, o.origin, ['ai/issue-10'])).toEqual(new Map());
  });
});

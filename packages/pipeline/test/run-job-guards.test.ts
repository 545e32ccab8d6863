import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SqliteRunStore } from '@codefleet/store';
import { git, waitFor } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { cancelRequested } from '@codefleet/core';
import { runJob } from '../src/index.js';
import { createHarness, implementsFeature, type Harness, outcomeOf } from './harness.js';
import { agentStarted, pauseUntilGo } from './agent-pause.js';

// Scripted agents (stand-ins for a language model): each test writes the module the
// real `script` adapter runs, so the pipeline, workspace, verification, forge and queue
// under test are all the real code.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob: one job, one PR; task text, scope, fencing and cancel', () => {
  it('the same job delivered twice gives one branch and one PR, even when the first run was forgotten', async () => {
    h = await createHarness();
    await h.agent(`
const lib = path.join(workdir, 'src', 'lib.js');
if (pass === 'implement' && !fs.readFileSync(lib, 'utf8').includes('two')) fs.appendFileSync(lib, 'export const two = () => 2;\\n');
`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const branch = branchName(job);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    // Redelivery after a lost ack: the run store knows the job is done.
    const again = await runJob(h.deps, { job, attempt: 2, workerId: 'other', signal: new AbortController().signal });
    expect(again.action).toBe('ack');
    // Redelivery where the run record was lost too (a fresh store): converge on the same
    // branch, update the PR, never open a second one.
    const fresh = new SqliteRunStore(join(h.dir.path, 'fresh-runs.sqlite'));
    try {
      const third = await runJob(
        { ...h.deps, store: fresh },
        { job, attempt: 2, workerId: 'other', signal: new AbortController().signal },
      );
      expect(third.action).toBe('ack');
    } finally {
      await fresh.close();
    }
    const refs = await git(h.dir.path, [
      '--git-dir',
      h.origin,
      'for-each-ref',
      '--format=%(refname)',
      'refs/heads/ai/',
    ]);
    expect(refs.split('\n').filter(Boolean)).toEqual([`refs/heads/${branch}`]);
    expect(await h.forge.pullRequestCreations(job.repo, branch)).toBe(1);
  });

  it('task text with shell metacharacters is data: nothing executes', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const marker = `/tmp/codefleet-pwned-${randomUUID()}`;
    const job = h.job({
      title: `Fix $(touch ${marker}) and \`touch ${marker}\``,
      body: `; touch ${marker}; rm -rf ~\n$(touch ${marker})`,
    });
    await h.drain(job);
    expect(existsSync(marker)).toBe(false);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
  });

  it('scope: excluded files are absent for the agent, read-only files stay as they were in the PR', async () => {
    h = await createHarness({ scope: { exclude: ['secrets/'], read: ['vendor/'] } });
    // The agent reports what it could see and do in a file of its own, then implements.
    await h.agent(`
const seen = { secret: fs.existsSync(path.join(workdir, 'secrets', 'prod.env')) };
try { fs.writeFileSync(path.join(workdir, 'vendor', 'locked.js'), 'export const locked = false;\\n'); seen.vendorWrite = 'written'; }
catch (e) { seen.vendorWrite = e.code; }
fs.writeFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'seen-' + pass + '.json'), JSON.stringify(seen));
${implementsFeature}`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(outcomeOf(run)).toBe('succeeded');
    const seen = JSON.parse(readFileSync(join(h.dir.path, 'agent', 'seen-implement.json'), 'utf8')) as {
      secret: boolean;
      vendorWrite: string;
    };
    expect(seen.secret).toBe(false);
    // chmod stops any user but root, and root too in the sandbox (it has no capabilities
    // there); without one, a root worker's write lands on disk but never in the PR.
    expect(seen.vendorWrite).toBe(h.deps.sandbox.mode === 'none' && process.getuid?.() === 0 ? 'written' : 'EACCES');
    const branch = branchName(job);
    const files = await git(h.dir.path, ['--git-dir', h.origin, 'diff', '--name-only', `main...${branch}`]);
    expect(files.split('\n').sort()).toEqual(['src/lib.js', 'test/two.test.js']);
    expect(await git(h.dir.path, ['--git-dir', h.origin, 'show', `${branch}:vendor/locked.js`])).toBe(
      'export const locked = true;',
    );
    expect(await git(h.dir.path, ['--git-dir', h.origin, 'show', `${branch}:secrets/prod.env`])).toBe(
      'API_KEY=do-not-ship',
    );
    if (seen.vendorWrite === 'written') {
      expect(run!.stages.find((s) => s.stage === 'publishing')?.note).toContain('vendor/locked.js');
    }
  });

  it('fencing: a worker paused past its task lease is refused at publish, and the refusal is recorded', async () => {
    h = await createHarness();
    // The agent "pauses" in pass 1 until the test has let the task lease run out.
    await h.agent(`${pauseUntilGo}\n${implementsFeature}`);
    const job = h.job({ title: 'Add two()' });
    expect(await h.store.acquire(job.idempotency_key, 'paused-token', 300)).toBe(true);
    const running = runJob(h.deps, {
      job,
      attempt: 1,
      workerId: 'paused',
      signal: new AbortController().signal,
      leaseToken: 'paused-token',
    });
    // Meanwhile the lease expired and another worker took the task over.
    await agentStarted(h);
    await waitFor(() => h!.store.acquire(job.idempotency_key, 'rescuer-token', 60_000), {
      what: 'the lease to expire',
    });
    await writeFile(join(dirname(h.agentModule()), 'go'), '');
    const result = await running;
    expect(result.action).toBe('release');
    const branch = branchName(job);
    expect(await h.forge.findPullRequest(job.repo, branch)).toBeUndefined();
    await expect(
      git(h.dir.path, ['--git-dir', h.origin, 'rev-parse', '--verify', `refs/heads/${branch}`]),
    ).rejects.toThrow();
    // Its progress reports after the take-over were refused too (a stale worker must not
    // edit a status message back), then the push that ended it.
    const rejected = (await h.store.rejections(job.idempotency_key)).map((r) => [r.token, r.action, r.runId]);
    expect(rejected.at(-1)).toEqual(['paused-token', 'push', job.id]);
    expect(rejected.slice(0, -1).every(([token, action]) => token === 'paused-token' && action === 'comment')).toBe(
      true,
    );
  });

  it('fencing: the owner of the task lease publishes normally', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    // Nothing renews this lease here (a worker's heartbeat would), so it has to outlast the
    // whole job on a loaded machine: an hour.
    expect(await h.store.acquire(job.idempotency_key, 'owner-token', 3_600_000)).toBe(true);
    const result = await runJob(h.deps, {
      job,
      attempt: 1,
      workerId: 'owner',
      signal: new AbortController().signal,
      leaseToken: 'owner-token',
    });
    expect(result.action).toBe('ack');
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toMatchObject({ number: 1 });
    expect(await h.store.rejections(job.idempotency_key)).toEqual([]);
  });

  it('cancel: a job cancelled before it runs ends cancelled, says so, publishes nothing, and is not retried', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.store.requestCancel(job.idempotency_key, 'alice');
    const result = await runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal });
    expect(result.action).toBe('ack');
    expect(result.run).toMatchObject({ stage: 'cancelled', outcome: 'cancelled' });
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
    const comments = await h.forge.listComments(job.repo, { kind: 'task', key: job.idempotency_key });
    expect(comments.map((c) => c.body)).toEqual([
      expect.stringMatching(/@alice asked to cancel[\s\S]*Status: cancelled$/),
    ]);
  });

  it('cancel: a running job stopped through its signal (the worker saw the request) ends cancelled too', async () => {
    h = await createHarness();
    await h.agent(pauseUntilGo);
    const job = h.job({ title: 'Add two()' });
    const controller = new AbortController();
    const running = runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: controller.signal });
    await agentStarted(h);
    controller.abort(cancelRequested('alice'));
    const result = await running;
    expect(result.action).toBe('ack');
    expect(result.run.outcome).toBe('cancelled');
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createScriptAgent } from '@codefleet/agents';
import { parseConfig } from '@codefleet/config';
import { afterEach, describe, expect, it } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SqliteRunStore } from '@codefleet/store';
import { git, waitFor } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { cancelRequested } from '@codefleet/core';
import { reportDeadLetters, runJob } from '../src/index.js';
import { createHarness, implementsFeature, projectFiles, type Harness } from './harness.js';

// Scripted agents (stand-ins for a language model): each test writes the module the
// real `script` adapter runs, so the pipeline, workspace, verification, forge and queue
// under test are all the real code.

// An agent body that says it started, then waits in pass 1 until the test writes `go`
// beside it: the test acts while the agent is running, whatever the machine's speed.
const pauseUntilGo = `
const here = path.dirname(counterFile);
if (pass === 'implement') {
  fs.writeFileSync(path.join(here, 'started'), '');
  while (!fs.existsSync(path.join(here, 'go'))) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
}`;

const agentStarted = (harness: Harness) =>
  waitFor(() => existsSync(join(dirname(harness.agentModule()), 'started')), { what: 'the agent to start' });

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob (two-pass loop on real parts)', () => {
  it('succeeds first try: branch pushed, PR opened with the task note, run recorded', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    // No DoD of its own: the DoD is the verification pass 2 passed (build and test here).
    expect(run).toMatchObject({ stage: 'done', outcome: 'succeeded', dod_result: 'passed' });
    expect(run!.stages.map((s) => s.stage)).toEqual([
      'queued',
      'preparing',
      'planning',
      'implementing',
      'testing',
      'validating',
      'publishing',
      'done',
    ]);
    expect(run!.stages.find((s) => s.stage === 'validating')?.note).toBe(
      'definition of done: the verification steps pass 2 passed (build, test)',
    );
    expect(run!.agent_runs.map((a) => [a.pass, a.inner_attempt, a.outcome])).toEqual([
      ['implement', 1, 'changed'],
      ['test', 1, 'changed'],
    ]);
    const branch = branchName(job);
    const pr = await h.forge.findPullRequest(job.repo, branch);
    expect(pr).toMatchObject({ title: 'Add two()', draft: false, base: 'main' });
    expect(pr!.body).toContain('Add two()');
    expect(pr!.body).toContain('| Outcome | succeeded |');
    expect(pr!.body).toContain('| DoD | passed |');
    const files = await git(h.dir.path, ['--git-dir', h.origin, 'diff', '--name-only', `main...${branch}`]);
    expect(files.split('\n').sort()).toEqual(['src/lib.js', 'test/two.test.js']);
    expect(files).not.toContain('.codefleet');
    expect((await h.queue.stats()).completed).toBe(1);
  });

  it('a build failure is fed back and fixed on the 2nd inner attempt', async () => {
    h = await createHarness();
    await h.agent(`
const lib = path.join(workdir, 'src', 'lib.js');
if (pass === 'implement' && attempt === 1) fs.appendFileSync(lib, 'export const two = () => {;\\n');
if (pass === 'implement' && attempt === 2) {
  if (!feedback.includes('SyntaxError')) throw new Error('no build error in the feedback: ' + feedback);
  fs.writeFileSync(lib, 'export const one = () => 1;\\nexport const two = () => 2;\\n');
}
`);
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run?.outcome).toBe('succeeded');
    const builds = run!.verification.filter((v) => v.pass === 'implement' && v.step === 'build');
    expect(builds.map((v) => [v.inner_attempt, v.passed])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  it('inner attempts exhausted: permanent failure, failure comment, dead letter', async () => {
    h = await createHarness();
    await h.agent(
      `if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'syntax error here (\\n');`,
    );
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({
      stage: 'failed',
      outcome: 'failed',
      error: { code: 'fix_attempts_exhausted', verdict: 'permanent' },
    });
    expect(run!.agent_runs).toHaveLength(3);
    const dead = await h.queue.deadLetters();
    expect(dead.map((d) => d.id)).toEqual([job.id]);
    expect(dead[0]!.reason).toMatch(/fix_attempts_exhausted/);
    const comments = await h.forge.listComments(job.repo, { kind: 'task', key: job.idempotency_key });
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toMatch(/could not complete[\s\S]*Last failing check[\s\S]*codefleet dlq redrive/);
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
  });

  it('a job redriven out of the dead-letter queue runs again as a new run; its failed run stays failed', async () => {
    h = await createHarness();
    await h.agent(
      `if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'syntax error here (\\n');`,
    );
    const job = h.job();
    await h.drain(job);
    expect(await h.store.get(job.id)).toMatchObject({ stage: 'failed', error: { code: 'fix_attempts_exhausted' } });

    // The same failed delivery again (its dead-letter move was lost): converges, no rerun.
    const again = await runJob(h.deps, { job, attempt: 2, workerId: 'w', signal: new AbortController().signal });
    expect(again).toMatchObject({ action: 'dead_letter', run: { run_id: job.id } });

    // The agent is fixed and an operator redrives the job: it runs, as run <id>~2.
    await h.agent(implementsFeature);
    expect(await h.queue.redrive(job.id)).toEqual({ status: 'redriven', id: job.id });
    await h.drain();
    expect(await h.store.get(job.id)).toMatchObject({ stage: 'failed', outcome: 'failed' });
    const second = await h.store.get(`${job.id}~2`);
    expect(second).toMatchObject({ stage: 'done', outcome: 'succeeded', job: { id: job.id } });
    expect(second!.stages[0]!.note).toMatch(
      /redriven from the dead-letter queue; the previous run .* failed \(fix_attempts_exhausted\)/,
    );
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toMatchObject({ draft: false });
    expect(await h.queue.deadLetters()).toEqual([]);

    // A lost ack of the redriven run converges on it too.
    expect(
      await runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal }),
    ).toMatchObject({ action: 'ack', run: { run_id: `${job.id}~2` } });
  });

  it('a job dead-lettered before any run of it finished is reported once: run failed, failure comment', async () => {
    h = await createHarness();
    const job = h.job();
    await h.queue.enqueue(job);
    // What a claim does when a job's attempts were all spent by expired leases.
    await (await h.queue.claim({ workerId: 'w', waitMs: 1_000 }))!.deadLetter(
      'attempts exhausted: the lease expired 3 times',
    );
    expect(await reportDeadLetters(h.deps, await h.queue.deadLetters())).toEqual([job.id]);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({
      stage: 'failed',
      outcome: 'failed',
      error: { code: 'lease_lost', message: expect.stringContaining('the lease expired 3 times') },
    });
    const comments = await h.forge.listComments(job.repo, { kind: 'task', key: job.idempotency_key });
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toMatch(/after 1 attempt\(s\); its worker stopped or lost the job each time/);
    expect(await reportDeadLetters(h.deps, await h.queue.deadLetters())).toEqual([]);
  });

  it('agent timeout is transient: the outer retry succeeds', async () => {
    h = await createHarness();
    await h.agent('setInterval(() => {}, 1000);\nawait new Promise(() => {});', 'hangs');
    await h.agent(implementsFeature);
    // Only the first attempt's agent, the one that hangs, gets a short deadline: the retry's
    // good agent keeps the harness's, which a slow start on a loaded machine cannot miss.
    const first = createScriptAgent({ module: h.agentModule('hangs'), timeoutMs: 1_500 });
    const retry = createScriptAgent({ module: h.agentModule() });
    let calls = 0;
    h.deps.agentFor = () => (++calls === 1 ? first : retry);
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ stage: 'done', outcome: 'succeeded' });
    expect(run!.attempts.map((a) => a.outcome)).toEqual(['retrying', 'succeeded']);
    expect(run!.attempts[0]!.error?.code).toBe('agent_timeout');
    expect(run!.agent_runs[0]).toMatchObject({ outcome: 'timeout', exit_code: 124, timed_out: true });
    expect(run!.stages.map((s) => s.stage)).toContain('retry_wait');
  });

  it('a checker that is not installed is not fed back to the agent: transient, with the fix named', async () => {
    h = await createHarness(
      {},
      { ...projectFiles, '.codefleet.yml': 'verify:\n  test: [codefleet-no-such-checker, --run]\n' },
    );
    await h.agent(implementsFeature);
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'verify_failed', verdict: 'transient' } });
    expect(run!.error!.message).toMatch(
      /the test step could not start `codefleet-no-such-checker --run`: .*install codefleet-no-such-checker on the worker/,
    );
    // Every attempt ran the test pass once: no fix attempts spent on it.
    expect(run!.attempts).toHaveLength(3);
    expect(run!.agent_runs.filter((a) => a.pass === 'test').map((a) => [a.attempt, a.inner_attempt])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });

  it('an agent that changes nothing ends as no_changes, not success', async () => {
    h = await createHarness();
    await h.agent('// does nothing');
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run!.agent_runs.every((a) => a.outcome === 'no_changes')).toBe(true);
    expect(run!.outcome).not.toBe('succeeded');
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
  });

  it('the same job delivered twice gives one branch and one PR, even when the first run was forgotten', async () => {
    h = await createHarness();
    await h.agent(`
const lib = path.join(workdir, 'src', 'lib.js');
if (pass === 'implement' && !fs.readFileSync(lib, 'utf8').includes('two')) fs.appendFileSync(lib, 'export const two = () => 2;\\n');
`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const branch = branchName(job);
    expect((await h.store.get(job.id))?.outcome).toBe('succeeded');
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
    expect((await h.store.get(job.id))?.outcome).toBe('succeeded');
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
    expect(run?.outcome).toBe('succeeded');
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
    expect(await h.store.acquire(job.idempotency_key, 'owner-token', 60_000)).toBe(true);
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

  it('a job carrying a patch is applied by the patch engine and verified like any attempt', async () => {
    h = await createHarness();
    await h.agent('throw new Error("the model agent must not run for a patch job");');
    const patch = [
      'Here you go:',
      '```js:src/lib.js',
      'export const one = () => 1;',
      'export const two = () => 2;',
      '```',
      '```js:test/two.test.js',
      "import { test } from 'node:test';",
      "import assert from 'node:assert/strict';",
      "import { two } from '../src/lib.js';",
      "test('two', () => assert.equal(two(), 2));",
      '```',
    ].join('\n');
    const job = h.job({ title: 'Add two()', patch });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'succeeded' });
    expect(run!.agent_runs.map((a) => [a.agent, a.pass, a.outcome])).toEqual([
      ['patch', 'implement', 'changed'],
      ['patch', 'test', 'no_changes'],
    ]);
    expect(run!.verification.some((v) => v.step === 'test' && v.passed)).toBe(true);
    const files = await git(h.dir.path, ['--git-dir', h.origin, 'diff', '--name-only', `main...${branchName(job)}`]);
    expect(files.split('\n').sort()).toEqual(['src/lib.js', 'test/two.test.js']);
  });

  it("a patch job follows config's patch: safeguards: a protected file is refused, the rest applied (continue mode), the plan shown", async () => {
    h = await createHarness({
      patchPolicy: {
        onError: 'continue',
        protectedPatterns: ['*.secret'],
        onProtected: 'error',
        shellTimeoutMs: 60_000,
        gitTimeoutMs: 30_000,
        showPlan: true,
      },
      maxAttempts: 1,
    });
    await h.agent('throw new Error("the model agent must not run for a patch job");');
    const patch = [
      '```text:db.secret',
      'password=hunter22',
      '```',
      '```js:src/lib.js',
      'export const one = () => 1;',
      'export const two = () => 2;',
      '```',
    ].join('\n');
    const job = h.job({ title: 'Add two() and a secret', patch });
    await h.drain(job);
    const run = await h.store.get(job.id);
    // Every attempt refuses the protected file: the same patch cannot do better.
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'fix_attempts_exhausted' } });
    const first = run!.agent_runs[0]!;
    expect(first).toMatchObject({ agent: 'patch', outcome: 'failed' });
    expect(first.output_tail).toMatch(/^plan /m);
    expect(first.output_tail).toMatch(/failed .*db\.secret|protected/);
    expect(first.changed_files).toEqual(['src/lib.js']);
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
  });

  it('a job past its wall-clock budget is stopped and fails with budget_exceeded, not a hang', async () => {
    // The budget must outlast prepare on a loaded machine (no baseline run: nothing but the
    // agent should be left to stop); the agent would wait far longer.
    const { config } = parseConfig('verification:\n  baseline: false\n', { env: {}, baseDir: '/', hostname: 'h' });
    h = await createHarness({ jobBudgetMs: 10_000, verification: config.verification });
    await h.agent('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 170000);');
    const job = h.job();
    const result = await runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal });
    expect(result.action).toBe('dead_letter');
    expect(result.run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded' } });
    // Stopped, not waited for: the agent's run ended by the abort.
    expect(result.run.agent_runs[0]).toMatchObject({ outcome: 'error', timed_out: false });
  }, 180_000);
});

describe('live output', () => {
  it("ctx.onOutput receives the agent's output and each check's, named by its source", async () => {
    h = await createHarness();
    await h.agent(`${implementsFeature}\nconsole.log('agent at work: ' + pass);`);
    const job = h.job({ dod: [['node', '-e', "console.log('dod ran')"]] });
    await h.queue.enqueue(job);
    const lease = await h.queue.claim({ workerId: 'test-worker', waitMs: 200 });
    const seen: [string, string][] = [];
    const result = await runJob(h.deps, {
      job: lease!.job,
      attempt: lease!.attempt,
      workerId: 'test-worker',
      signal: new AbortController().signal,
      onOutput: (source, chunk) => seen.push([source, chunk]),
    });
    expect(result.run.outcome).toBe('succeeded');
    const from = (source: string) =>
      seen
        .filter(([s]) => s === source)
        .map(([, chunk]) => chunk)
        .join('');
    expect(from('agent')).toContain('agent at work: implement');
    expect(from('agent')).toContain('agent at work: test');
    expect(from('test')).not.toBe('');
    expect(from('dod')).toContain('dod ran');
    // Each step is named when it starts, before it prints anything, and the base commit's
    // run of the checks is named apart: a live line never shows the step before it.
    const sources = seen.map(([source]) => source);
    expect(sources).toContain('baseline test');
    expect(seen.find(([source]) => source === 'baseline test')).toEqual(['baseline test', '']);
    expect(sources.indexOf('baseline test')).toBeLessThan(sources.indexOf('agent'));
  });
});

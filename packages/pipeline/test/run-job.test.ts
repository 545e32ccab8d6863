import { createScriptAgent } from '@codefleet/agents';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { reportDeadLetters, runJob } from '../src/index.js';
import { createHarness, implementsFeature, npmProjectFiles, outcomeOf, projectFiles, type Harness } from './harness.js';

// Scripted agents (stand-ins for a language model): each test writes the module the
// real `script` adapter runs, so the pipeline, workspace, verification, forge and queue
// under test are all the real code.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob (two-pass loop on real parts): outcomes', () => {
  it('succeeds first try: branch pushed, PR opened with the task note, run recorded', async () => {
    // The project's own npm scripts, checked by the config's default commands.
    h = await createHarness({}, npmProjectFiles);
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
    expect(run!.verification.filter((v) => v.pass === 'test').map((v) => v.command.join(' '))).toEqual([
      'npm run build',
      'npm test',
    ]);
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
    expect(outcomeOf(run)).toBe('succeeded');
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
    expect(second).toMatchObject({ stage: 'done', outcome: 'succeeded', job: { id: job.id }, redriven_from: job.id });
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
});

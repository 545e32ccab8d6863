import { parseConfig } from '@codefleet/config';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git, withTimeoutsUntil } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { runJob } from '../src/index.js';
import { createHarness, implementsFeature, type Harness, outcomeOf } from './harness.js';

// Scripted agents (stand-ins for a language model): each test writes the module the
// real `script` adapter runs, so the pipeline, workspace, verification, forge and queue
// under test are all the real code.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob: patches and the wall-clock budget', () => {
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
    // The budget must stop the agent (no baseline run: nothing but the agent should be left to
    // stop); the agent would wait far longer, and its own timeout is longer still. A loaded
    // machine can spend a short budget on prepare before the agent starts: such a run is
    // repeated with a longer budget.
    const { config } = parseConfig('verification:\n  baseline: false\n', { env: {}, baseDir: '/', hostname: 'h' });
    const { result } = await withTimeoutsUntil(
      [10_000, 40_000, 120_000],
      async (jobBudgetMs) => {
        await h?.dispose();
        h = await createHarness({ jobBudgetMs, agentTimeoutMs: 600_000, verification: config.verification });
        await h.agent('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 170000);');
        const job = h.job();
        return runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal });
      },
      (run) => run.run.agent_runs.length > 0,
    );
    expect(result.action).toBe('dead_letter');
    expect(result.run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded' } });
    // Stopped, not waited for: the agent's run ended by the abort.
    expect(result.run.agent_runs[0]).toMatchObject({ outcome: 'error', timed_out: false });
  });
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
    expect(outcomeOf(result.run)).toBe('succeeded');
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

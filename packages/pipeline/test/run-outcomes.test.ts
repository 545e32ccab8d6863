import { afterEach, describe, expect, it } from '@jest/globals';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, npmProjectFiles, type Harness } from './harness.js';

// What a finished run says and shows: the definition of done it met, and no secret in
// anything it wrote out. Scripted agents (stand-ins for a model) on real parts, as in
// run-job.test.ts.
let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob: the definition of done (enforced, AM)', () => {
  it("a job's own DoD runs after verification: passed, recorded with its commands under the attempt that passed", async () => {
    h = await createHarness({}, npmProjectFiles);
    // Pass 2's first test fails, the fix attempt passes: the DoD belongs to attempt 1.2.
    await h.agent(`${implementsFeature}
if (pass === 'test' && attempt === 1) fs.writeFileSync(path.join(workdir, 'test', 'bad.test.js'), "import { test } from 'node:test';\\ntest('bad', () => { throw new Error('no'); });\\n");
if (pass === 'test' && attempt === 2) fs.rmSync(path.join(workdir, 'test', 'bad.test.js'));
`);
    const job = h.job({
      dod: [
        ['node', '-e', 'process.exit(0)'],
        ['npm', 'test'],
      ],
    });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'succeeded', dod_result: 'passed' });
    expect(run!.stages.find((s) => s.stage === 'validating')?.note).toBe("definition of done: the job's 2 command(s)");
    expect(
      run!.verification
        .filter((v) => v.step === 'dod')
        .map((v) => [v.command.join(' '), v.passed, v.pass, v.inner_attempt]),
    ).toEqual([
      ['node -e process.exit(0)', true, 'test', 2],
      ['npm test', true, 'test', 2],
    ]);
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toMatchObject({ draft: false });
  });

  it('a DoD command that changes files fails the job: what is pushed is what verification passed', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const job = h.job({
      dod: [['node', '-e', "require('fs').appendFileSync('src/lib.js', 'export const three = () => 3;\\n')"]],
    });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'dod_failed', error: { code: 'dod_failed' } });
    expect(run!.error!.message).toContain('changed files after verification passed');
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
  });

  it('a failed DoD opens a draft PR, not a ready one, and ends dod_failed without retries', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const job = h.job({ dod: [['node', '-e', 'process.exit(3)']] });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ stage: 'done', outcome: 'dod_failed', dod_result: 'failed' });
    expect(run!.attempts).toHaveLength(1);
    expect(run!.verification.find((v) => v.step === 'dod')).toMatchObject({ exit_code: 3, passed: false });
    const pr = await h.forge.findPullRequest(job.repo, branchName(job));
    expect(pr).toMatchObject({ draft: true });
    expect(pr!.body).toContain('| DoD | failed |');
    expect(pr!.body).toContain('| Outcome | dod\\_failed |');
  });

  it('a failed DoD with on_dod_failure none opens no PR and says why', async () => {
    h = await createHarness({ onDodFailure: 'none' });
    await h.agent(implementsFeature);
    const job = h.job({ dod: [['node', '-e', 'process.exit(3)']] });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'dod_failed', dod_result: 'failed', error: { code: 'dod_failed' } });
    expect(run!.error!.message).toContain('on_dod_failure: none');
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toBeUndefined();
  });

  it('a repository with nothing to verify and no DoD: skipped, and the record says why', async () => {
    h = await createHarness({}, { 'README.md': '# notes\n', 'docs/guide.md': 'Read me.\n' });
    await h.agent("fs.appendFileSync(path.join(workdir, 'docs', 'guide.md'), 'More.\\n');");
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'succeeded', dod_result: 'skipped' });
    expect(run!.verification).toEqual([]);
    expect(run!.stages.find((s) => s.stage === 'validating')?.note).toBe(
      'definition of done: nothing to run (no DoD commands, no verification steps detected)',
    );
  });
});

describe('runJob: secrets an agent or a check prints never leave the worker', () => {
  const apiKey = 'sk-ant-api03-not-a-real-key-but-long-enough';
  const ghToken = `ghp_${'a1B2'.repeat(9)}`;

  it('masked in the run record and the PR body', async () => {
    h = await createHarness({ secrets: [apiKey] });
    await h.agent(`console.log('using key ${apiKey} and ${ghToken}');\n${implementsFeature}`);
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'succeeded' });
    expect(run!.agent_runs[0]!.output_tail).toContain('using key ***');
    const stored = JSON.stringify(run);
    const pr = await h.forge.findPullRequest(job.repo, branchName(job));
    for (const text of [stored, pr!.body]) {
      expect(text).not.toContain(apiKey);
      expect(text).not.toContain(ghToken);
    }
  });

  it('masked in the failure comment and the dead-letter reason', async () => {
    h = await createHarness({ secrets: [apiKey] });
    // The build fails every time, printing the key: it reaches the feedback, the error and the comment.
    await h.agent(
      `if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'throw new Error("key ${apiKey}");\\n');`,
    );
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'fix_attempts_exhausted' } });
    const comments = await h.forge.listComments(job.repo, { kind: 'task', key: job.idempotency_key });
    const dead = await h.queue.deadLetters();
    expect(comments[0]!.body).toContain('key ***');
    for (const text of [JSON.stringify(run), comments[0]!.body, dead[0]!.reason]) expect(text).not.toContain(apiKey);
  });
});

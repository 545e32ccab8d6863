import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, projectFiles, type Harness, outcomeOf } from './harness.js';

// Verification against the untouched base commit, on whole jobs: a check that fails there
// too is the repository's, not the agent's (SWE-bench's PASS_TO_PASS idea).
// Whole jobs, several per test: the package's timeout guards against a hang only.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const withScripts = (scripts: Record<string, string>, files: Record<string, string> = {}) => ({
  ...projectFiles,
  ...files,
  'package.json': JSON.stringify(
    {
      name: 'sample',
      private: true,
      type: 'module',
      scripts: { build: 'node build.mjs', test: 'node --test', ...scripts },
    },
    null,
    2,
  ),
});
const verificationWith = (text: string) =>
  parseConfig(text, { env: {}, baseDir: '/', hostname: 'h' }).config.verification;

describe('runJob: verification knows the baseline', () => {
  it('a lint script that already fails on the base commit is reported as pre-existing, never fed back', async () => {
    // A lint finding in the base's own code: it ran, and the change did not cause it.
    const files = withScripts({
      lint: 'node -e "console.error(\'src/lib.js:1:14: error: prefer-function-declaration\'); process.exit(2)"',
    });
    h = await createHarness({}, files);
    await h.agent(`${implementsFeature}
if (feedback !== '') fs.appendFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'feedback.log'), feedback);`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect([run.outcome, run.error?.message]).toEqual(['succeeded', undefined]);
    // One agent run per pass: nobody told it to fix lint.
    expect(run.agent_runs.map((r) => [r.pass, r.inner_attempt])).toEqual([
      ['implement', 1],
      ['test', 1],
    ]);
    const lint = run.verification.filter((v) => v.step === 'lint');
    expect(lint.length).toBeGreaterThan(0);
    expect(lint.every((v) => v.passed === false && v.preexisting === true)).toBe(true);
    // The check after it ran: the change was still tested.
    expect(run.verification.some((v) => v.step === 'test' && v.pass === 'test' && v.passed)).toBe(true);
    expect((await git(h.origin, ['ls-tree', '-r', '--name-only', branchName(job)])).split('\n')).toContain(
      'test/two.test.js',
    );

    // The same repository with baselines off: the agent is held to lint and the job fails.
    await h.dispose();
    h = await createHarness({ verification: verificationWith('verification:\n  baseline: false\n') }, files);
    await h.agent(implementsFeature);
    const blind = h.job({ title: 'Add two()' });
    await h.drain(blind);
    expect((await h.store.get(blind.id))?.error?.code).toBe('fix_attempts_exhausted');
  });

  it('a test the change breaks is still its fault, though the base has a failing test of its own', async () => {
    h = await createHarness(
      {},
      withScripts(
        {},
        {
          'test/flaky.test.js':
            "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\ntest('needs the network', () => assert.fail('offline'));\n",
        },
      ),
    );
    await h.agent(`${implementsFeature}
if (feedback !== '') fs.appendFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'feedback.log'), feedback);
fs.writeFileSync(path.join(workdir, 'src', 'lib.js'), 'export const one = () => 111;\\nexport const two = () => 2;\\n');`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect(run.error?.code).toBe('fix_attempts_exhausted');
    expect(run.error?.message).toMatch(/one/);
    // The feedback names the base's own failing test apart, as not the agent's to fix.
    const told = await readFile(join(h.dir.path, 'agent', 'feedback.log'), 'utf8');
    expect(told).toMatch(
      /These fail on the base commit too, before any change: leave them, fix the others\.\n- .*needs the network/,
    );
    expect(told).not.toMatch(/leave them, fix the others\.\n(- .*\n)*- .*\bone\b/);
    expect(
      run.verification.filter((v) => v.step === 'test' && v.pass === 'test').every((v) => v.preexisting === undefined),
    ).toBe(true);
  });

  it("a formatter's rewrites of files the task never touched stay out of the pull request", async () => {
    // A whole-repository formatter, like `cargo fmt`: it normalizes every source file.
    const fmt =
      "import fs from 'node:fs';\nfor (const f of fs.readdirSync('src')) fs.writeFileSync('src/' + f, fs.readFileSync('src/' + f, 'utf8').replace(/ {2,}/g, ' '));\n";
    h = await createHarness(
      {},
      withScripts({ format: 'node fmt.mjs' }, { 'fmt.mjs': fmt, 'src/other.js': 'export const  three  = () => 3;\n' }),
    );
    await h.agent(`${implementsFeature}
if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const  four = () => 4;\\n');`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    expect(outcomeOf(await h.store.get(job.id))).toBe('succeeded');
    const files = (await git(h.origin, ['diff', '--name-only', `main...${branchName(job)}`])).trim().split('\n');
    expect(files.sort()).toEqual(['src/lib.js', 'test/two.test.js']);
    // The file the change holds was formatted.
    expect(await git(h.origin, ['show', `${branchName(job)}:src/lib.js`])).toContain('export const four');
  });

  it('a fix attempt that changes nothing is recorded so and not verified again', async () => {
    h = await createHarness({});
    // Pass 2 writes a failing test once, then changes nothing.
    await h.agent(`
const lib = path.join(workdir, 'src', 'lib.js');
if (pass === 'implement') fs.appendFileSync(lib, 'export const two = () => 2;\\n');
if (pass === 'test' && attempt === 1) fs.writeFileSync(path.join(workdir, 'test', 'two.test.js'),
  "import { test } from 'node:test';\\nimport assert from 'node:assert/strict';\\nimport { two } from '../src/lib.js';\\ntest('two', () => assert.equal(two(), 3));\\n");`);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect(run.error?.code).toBe('fix_attempts_exhausted');
    const first = run.attempts.length === 1 ? run : run;
    const testRuns = first.agent_runs.filter((r) => r.pass === 'test');
    expect(testRuns.slice(0, 3).map((r) => r.outcome)).toEqual(['changed', 'no_changes', 'no_changes']);
    // Only the first attempt's tree was verified in pass 2 of the first delivery.
    const checked = new Set(
      run.verification.filter((v) => v.pass === 'test' && v.attempt === 1).map((v) => v.inner_attempt),
    );
    expect([...checked]).toEqual([1]);
    expect(run.error?.message).toContain('You changed nothing since the last attempt');
  });

  it('a check that cannot run on this worker (its tool missing on base and change) did not check the change: a draft PR says so', async () => {
    h = await createHarness({}, withScripts({ test: 'codefleet-no-such-runner --run' }));
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect([run.outcome, run.dod_result]).toEqual(['dod_failed', 'failed']);
    expect(run.pull_request?.draft).toBe(true);
    expect(run.verification.some((v) => v.step === 'test' && v.unverifiable === true && v.preexisting === true)).toBe(
      true,
    );
    expect(run.stages.some((t) => /test \(`npm test`\) cannot run on this worker/.test(t.note ?? ''))).toBe(true);
    // Never fed back: the agent ran once per pass.
    expect(run.agent_runs).toHaveLength(2);
  });

  it('dependencies that do not install on the base commit either end the job as an environment problem, not feedback', async () => {
    const files = withScripts(
      {},
      {
        'package-lock.json': JSON.stringify({
          name: 'sample',
          lockfileVersion: 3,
          requires: true,
          packages: {
            '': { name: 'sample', dependencies: { dep: 'file:vendor/missing' } },
            'node_modules/dep': { resolved: 'vendor/missing', link: true },
          },
        }),
      },
    );
    const manifest = JSON.parse(files['package.json']!) as Record<string, unknown>;
    files['package.json'] = JSON.stringify({ ...manifest, dependencies: { dep: 'file:vendor/missing' } }, null, 2);
    h = await createHarness({}, files);
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect(run.error?.code).toBe('verify_failed');
    expect(run.error?.message).toMatch(
      /the dependencies cannot be installed: `npm ci .*` fails on the base commit too/,
    );
    // Never the agent's to fix, and permanent: not retried, not fed back.
    expect(run.attempts).toHaveLength(1);
    expect(run.agent_runs.every((r) => r.inner_attempt === 1)).toBe(true);
    expect(run.error?.message).not.toMatch(/complete log of this run/);
  });
});

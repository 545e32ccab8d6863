import { afterEach, describe, expect, it } from '@jest/globals';
import { hostNpmEnv } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, projectFiles, type Harness } from './harness.js';

// No check counts as evidence unless it ran: a check that fails on the base and the change
// alike without running on the code (a tool missing behind make, vitest unable to start) is
// unverifiable, and a job it could not check is not a verified success. Whole jobs in the
// real sandbox, one installing vitest from the registry (the package's timeout is a guard
// against a hang only).

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('runJob: a check that cannot run is no evidence', () => {
  it('`make lint` whose tool is missing (exit 2, no known words) leaves a draft PR that says which check could not run and why', async () => {
    // As found on a real repository: make runs pixi, which this worker does not have.
    h = await createHarness(
      {},
      {
        ...projectFiles,
        Makefile: 'lint:\n\tcodefleet-no-such-pixi run lint\n',
        '.codefleet.yml': 'verify:\n  lint: [make, lint]\n',
      },
    );
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = (await h.store.get(job.id))!;
    expect([run.outcome, run.dod_result, run.pull_request?.draft]).toEqual(['dod_failed', 'failed', true]);
    const lint = run.verification.filter((v) => v.step === 'lint' && v.pass === 'test');
    expect(lint.length).toBeGreaterThan(0);
    expect(lint.every((v) => v.exit_code === 2 && v.unverifiable === true)).toBe(true);
    const note = run.stages.find((t) => t.stage === 'validating')?.note ?? '';
    expect(note).toMatch(
      /^definition of done not met: lint \(`make lint`\) cannot run on this worker .*lint: make: codefleet-no-such-pixi: No such file or directory/,
    );
    expect(note).not.toMatch(/pass 2 passed/);
    // The pull request says so too, and never that the definition of done passed.
    const pr = await h.forge.findPullRequest(job.repo, branchName(job));
    expect(pr?.draft).toBe(true);
    expect(pr?.body).toContain(
      'could not run on this worker (it fails the same way on the base commit): it did not check this change',
    );
    expect(pr?.body).not.toMatch(/DoD[^\n]*passed/);
    // Never fed back: nothing the agent could fix.
    expect(run.agent_runs).toHaveLength(2);

    // With DoD commands of the job's own, those decide; the note still names what checked nothing.
    const own = h.job({ title: 'Add two() again', dod: [['node', '--test']] });
    await h.drain(own);
    const ownRun = (await h.store.get(own.id))!;
    expect([ownRun.outcome, ownRun.dod_result]).toEqual(['succeeded', 'passed']);
    expect(ownRun.stages.find((t) => t.stage === 'validating')?.note).toMatch(
      /^definition of done: the job's 1 command\(s\); not checked by lint \(`make lint`\), which cannot run on this worker \(lint: make: codefleet-no-such-pixi/,
    );
  });

  it('vitest with a TypeScript config starts in the sandbox: a wrong change fails on its test, a right one passes', async () => {
    // Shaped like pillarjs/path-to-regexp: ESM, vitest 3, `vitest.config.mts` importing vite.
    h = await createHarness({ maxFixAttempts: 2 }, vitestProject);
    h.deps.settings.verifyEnv = { ...h.deps.settings.verifyEnv, ...hostNpmEnv() };
    await h.agent(subAgent('right'));
    const right = h.job({ title: 'Add sub()' });
    await h.drain(right);
    const done = (await h.store.get(right.id))!;
    expect([done.outcome, done.error?.message, done.dod_result, done.pull_request?.draft]).toEqual([
      'succeeded',
      undefined,
      'passed',
      false,
    ]);
    const tested = done.verification.filter((v) => v.step === 'test' && v.pass === 'test');
    // vitest ran: its summary, two tests, no start-up error.
    expect(tested.at(-1)?.output_tail).toMatch(/Tests\s+2 passed/);
    expect(done.verification.some((v) => v.unverifiable === true || v.preexisting === true)).toBe(false);

    // Tests added, the fix missing: what got a non-draft PR with "DoD passed" before.
    await h.agent(subAgent('wrong'));
    const wrong = h.job({ title: 'Add sub()' });
    await h.drain(wrong);
    const failed = (await h.store.get(wrong.id))!;
    // The test the change added fails, and says so: fed back, then the job fails. No PR.
    expect(failed.error?.code).toBe('fix_attempts_exhausted');
    expect(failed.error?.message).toMatch(/sub > subtracts/);
    expect(failed.pull_request).toBeUndefined();
    expect(
      failed.verification.some((v) => v.step === 'test' && (v.preexisting === true || v.unverifiable === true)),
    ).toBe(false);
  });
});

// Adds sub() (or, `wrong`, only a comment) in pass 1, and its test in pass 2.
function subAgent(change: 'right' | 'wrong'): string {
  const code =
    change === 'right' ? 'export const sub = (a: number, b: number): number => a - b;' : '// sub: see the issue';
  return `
if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'index.ts'), ${JSON.stringify(`${code}\n`)});
if (pass === 'test') fs.writeFileSync(path.join(workdir, 'src', 'sub.spec.ts'), ${JSON.stringify('import { describe, expect, it } from "vitest";\nimport { sub } from "./index.js";\n\ndescribe("sub", () => {\n  it("subtracts", () => {\n    expect(sub(3, 1)).toBe(2);\n  });\n});\n')});`;
}

const vitestProject: Record<string, string> = {
  'package.json': JSON.stringify(
    {
      name: 'vitest-ts-config',
      version: '1.0.0',
      private: true,
      type: 'module',
      scripts: { test: 'vitest run' },
      devDependencies: { vitest: '^3.0.5' },
    },
    null,
    2,
  ),
  'vitest.config.mts':
    '/// <reference types="vitest" />\nimport { defineConfig } from "vite";\n\nexport default defineConfig({\n  test: {\n    include: ["src/**/*.spec.ts"],\n  },\n});\n',
  'src/index.ts': 'export const add = (a: number, b: number): number => a + b;\n',
  'src/index.spec.ts':
    'import { describe, expect, it } from "vitest";\nimport { add } from "./index.js";\n\ndescribe("add", () => {\n  it("adds", () => {\n    expect(add(1, 2)).toBe(3);\n  });\n});\n',
  '.gitignore': 'node_modules\n',
};

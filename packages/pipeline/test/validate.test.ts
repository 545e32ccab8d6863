import { describe, expect, it } from '@jest/globals';
import type { StepResult, VerifyPlan } from '@codefleet/verify';
import { dodNote } from '../src/validate.js';

// The timeline note of `validating`: what the definition of done is for this job, in the
// order dodNote's doc gives (own commands, a check that ran on nothing, the passed steps,
// nothing). The run-job suites reach each case through a whole job; this pins the wording.
describe('dodNote', () => {
  const plan = (over: Partial<VerifyPlan> = {}): VerifyPlan => ({
    toolchain: 'node',
    steps: [
      { name: 'install', command: ['npm', 'ci'] },
      { name: 'build', command: ['npm', 'run', 'build'] },
      { name: 'test', command: ['npm', 'test'] },
      { name: 'test', command: ['npm', 'run', 'test:e2e'] },
    ],
    dod: [],
    env: {},
    source: 'detected',
    ...over,
  });
  const step = (name: StepResult['name'], command: string[], over: Partial<StepResult> = {}): StepResult => ({
    name,
    command,
    exitCode: 1,
    signal: null,
    timedOut: false,
    durationMs: 5,
    outputTail: '',
    passed: false,
    ...over,
  });
  const lint = step('lint', ['make', 'lint'], {
    unverifiable: true,
    unverifiableReason: 'make: pixi:\n  No such file',
  });

  it("names the DoD's own commands, and a check that could not run beside them", () => {
    expect(dodNote(plan({ dod: [['make', 'dod']], source: 'job' }), { preexisting: [], unverifiable: [] })).toBe(
      "definition of done: the job's 1 command(s)",
    );
    expect(dodNote(plan({ dod: [['a'], ['b']], source: 'repo' }), { preexisting: [], unverifiable: [lint] })).toBe(
      "definition of done: the repository's 2 command(s); not checked by lint (`make lint`), which cannot run on this worker (lint: make: pixi: No such file)",
    );
  });

  it('without DoD commands, a check that ran on nothing means the DoD is not met', () => {
    expect(dodNote(plan(), { preexisting: [], unverifiable: [lint] })).toBe(
      'definition of done not met: lint (`make lint`) cannot run on this worker (it fails the same way on the base commit without running on the code: lint: make: pixi: No such file), so the change was not checked by it',
    );
  });

  it('otherwise names the verification steps once each, and what fails on the base too', () => {
    expect(dodNote(plan(), { preexisting: [], unverifiable: [] })).toBe(
      'definition of done: the verification steps pass 2 passed (build, test)',
    );
    const known = step('test', ['npm', 'test'], { preexisting: true });
    expect(dodNote(plan(), { preexisting: [known], unverifiable: [] })).toBe(
      'definition of done: the verification steps pass 2 passed (build, test), but for what fails on the base commit too: test (`npm test`)',
    );
  });

  it('says when there is nothing to run (an install checks nothing)', () => {
    const installOnly = plan({ steps: [{ name: 'install', command: ['npm', 'ci'] }] });
    expect(dodNote(installOnly, { preexisting: [], unverifiable: [] })).toBe(
      'definition of done: nothing to run (no DoD commands, no verification steps detected)',
    );
  });
});

import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, writeFiles, type TempDir } from '@codefleet/testkit';
import { compareWithBase, isStale, planKey, readBaseline, runBaseline, runVerification, stepKey, toolStamp, writeBaseline, type PlannedStep } from '../src/index.js';
import { nodeScript, testEnv } from './helpers.js';

const dirs: TempDir[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => dir.dispose()));
});

async function workdir(files: Record<string, string> = {}): Promise<string> {
  const dir = await createTempDir('verify-baseline');
  dirs.push(dir);
  await writeFiles(dir.path, files);
  return dir.path;
}

const options = { env: testEnv, timeoutMs: 10_000 };
// Reads the state of the copy, as a repository's checks do: `lint.fail` makes lint fail,
// `failing.txt` names the tests that fail (node:test's TAP "not ok" lines).
const lint: PlannedStep = { name: 'lint', command: nodeScript("const fs = require('fs'); if (fs.existsSync('lint.fail')) { console.error('lint: no such command'); process.exit(1); } console.log('lint ok')") };
const tests: PlannedStep = {
  name: 'test',
  command: nodeScript("const fs = require('fs'); const names = fs.existsSync('failing.txt') ? fs.readFileSync('failing.txt', 'utf8').split('\\n').filter(Boolean) : []; names.forEach((n, i) => console.log(`not ok ${i + 1} - ${n}`)); process.exit(names.length > 0 ? 1 : 0)"),
};
const build: PlannedStep = { name: 'build', command: nodeScript("console.log('built')") };

describe('verification against the base commit', () => {
  it('runs every check at the base, past a failing one, and records what failed with its tests', async () => {
    const dir = await workdir({ 'lint.fail': '', 'failing.txt': 'flaky network test\n' });
    const { baseline, results } = await runBaseline(dir, [{ name: 'install', command: ['false'] }, build, { name: 'format', command: ['false'] }, lint, tests], options);
    expect(results.map((r) => [r.name, r.passed])).toEqual([['build', true], ['lint', false], ['test', false]]);
    expect(baseline.ran).toEqual([stepKey(build), stepKey(lint), stepKey(tests)]);
    expect(baseline.failing).toEqual({
      [stepKey(lint)]: { failingTests: [], exitCode: 1, errors: [] },
      [stepKey(tests)]: { failingTests: [expect.stringContaining('flaky network test')], exitCode: 1, errors: expect.any(Array) },
    });
    expect(baseline.at).toEqual(expect.any(String));
  });

  it('a check that fails at the base too is pre-existing: the run goes on past it and passes', async () => {
    const dir = await workdir({ 'lint.fail': '' });
    const { baseline } = await runBaseline(dir, [lint, tests], options);
    const outcome = await runVerification(dir, [build, lint, tests], { ...options, baseline });
    expect(outcome.passed).toBe(true);
    expect(outcome.results.map((r) => [r.name, r.passed, r.preexisting ?? false])).toEqual([['build', true, false], ['lint', false, true], ['test', true, false]]);
    expect(outcome.preexisting.map((r) => r.name)).toEqual(['lint']);
    // Without a baseline, the same tree fails at lint: the agent would be told to fix it.
    const blind = await runVerification(dir, [build, lint, tests], options);
    expect([blind.passed, blind.failed?.name]).toEqual([false, 'lint']);
  });

  it('a test the change breaks still fails, even where the base had failing tests of its own', async () => {
    const dir = await workdir({ 'failing.txt': 'flaky network test\n' });
    const { baseline } = await runBaseline(dir, [tests], options);
    await writeFile(join(dir, 'failing.txt'), 'flaky network test\nadds two numbers\n');
    const outcome = await runVerification(dir, [tests], { ...options, baseline });
    expect(outcome.passed).toBe(false);
    expect(outcome.failed?.preexisting).toBeUndefined();
    // The same failing tests as the base: pre-existing.
    await writeFile(join(dir, 'failing.txt'), 'flaky network test\n');
    expect((await runVerification(dir, [tests], { ...options, baseline })).passed).toBe(true);
  });

  it('a failure of another shape (no test names where the base named some) is not pre-existing', () => {
    const baseline = { ran: [stepKey(tests)], failing: { [stepKey(tests)]: { failingTests: ['a'] } } };
    const crashed = { name: 'test' as const, command: tests.command, exitCode: 1, signal: null, timedOut: false, durationMs: 1, outputTail: 'SyntaxError', passed: false, findings: { failingTests: [], omittedTests: 0, errors: [], omittedErrors: 0 } };
    expect(compareWithBase(crashed, baseline) === 'preexisting').toBe(false);
    expect(compareWithBase({ ...crashed, findings: { ...crashed.findings, failingTests: ['a'] } }, baseline) === 'preexisting').toBe(true);
    // A check that passed at the base, or another command under the same step name, is the change's.
    expect(compareWithBase({ ...crashed, command: ['npm', 'test'] }, baseline) === 'preexisting').toBe(false);
    expect(compareWithBase({ ...crashed, spawnError: 'not found' }, baseline) === 'preexisting').toBe(false);
  });

  it('another exit code, a new error line, or a timeout is the change\'s, not pre-existing', () => {
    const base = { ran: [stepKey(lint)], failing: { [stepKey(lint)]: { failingTests: [], exitCode: 1, errors: ['src/a.rs:#:#: error: needless return'] } } };
    const failed = (exitCode: number, outputTail: string, extra = {}) => ({
      name: 'lint' as const, command: lint.command, exitCode, signal: null, timedOut: false, durationMs: 1, outputTail, passed: false, ...extra,
    });
    expect(compareWithBase(failed(1, 'src/a.rs:12:5: error: needless return\n'), base)).toBe('preexisting');
    // The same error moved by the change (other numbers) is still the base's.
    expect(compareWithBase(failed(1, 'src/a.rs:40:9: error: needless return\n'), base)).toBe('preexisting');
    expect(compareWithBase(failed(1, 'src/a.rs:12:5: error: needless return\nsrc/b.rs:3:1: error: ptr_arg\n'), base)).toBe('new');
    expect(compareWithBase(failed(4, 'src/a.rs:12:5: error: needless return\n'), base)).toBe('new');
    expect(compareWithBase(failed(124, '', { timedOut: true }), base)).toBe('new');
  });

  it('a check that could not really run at the base (tool missing, a timeout) is unverifiable when it fails the same way, never pre-existing', async () => {
    const dir = await workdir();
    const missingTool: PlannedStep = { name: 'test', command: ['sh', '-c', 'echo "sh: 1: pnpm: not found" >&2; exit 127'] };
    const { baseline } = await runBaseline(dir, [missingTool], options);
    expect(baseline.failing[stepKey(missingTool)]?.unavailable).toBe('pnpm: not found');
    const outcome = await runVerification(dir, [missingTool], { ...options, baseline });
    expect(outcome.passed).toBe(true);
    expect(outcome.unverifiable.map((r) => [r.name, r.preexisting, r.unverifiable])).toEqual([['test', true, true]]);
    // The change broke it otherwise: its own failure.
    const other = { ...baseline, failing: { [stepKey(missingTool)]: { ...baseline.failing[stepKey(missingTool)]!, unavailable: 'pytest: not found' } } };
    expect((await runVerification(dir, [missingTool], { ...options, baseline: other })).passed).toBe(false);
    // A check that cannot start at all is no failure of the base.
    const absent: PlannedStep = { name: 'lint', command: ['codefleet-no-such-linter'] };
    expect((await runBaseline(dir, [absent], options)).baseline.failing).toEqual({});
  });

  it('a baseline is trusted for a day', () => {
    const now = new Date('2026-11-24T12:00:00Z');
    expect(isStale({ failing: {}, ran: [], at: '2026-11-24T01:00:00Z' }, now)).toBe(false);
    expect(isStale({ failing: {}, ran: [], at: '2026-11-23T11:00:00Z' }, now)).toBe(true);
    expect(isStale({ failing: {}, ran: [] }, now)).toBe(true);
  });

  it('is cached as a file read back only when it is one, and keyed by the plan', async () => {
    const dir = await workdir();
    const file = join(dir, 'cache', 'b.json');
    const baseline = { ran: [stepKey(lint)], failing: { [stepKey(lint)]: { failingTests: [] } } };
    await writeBaseline(file, baseline);
    expect(await readBaseline(file)).toEqual(baseline);
    await writeFile(file, '{"failing": 1}');
    expect(await readBaseline(file)).toBeUndefined();
    expect(await readBaseline(join(dir, 'missing.json'))).toBeUndefined();
    expect(planKey([lint])).not.toBe(planKey([lint, tests]));
    expect(planKey([lint], { PATH: '/a' })).not.toBe(planKey([lint], { PATH: '/b' }));
    expect(planKey([lint], {}, 'sandbox a')).not.toBe(planKey([lint], {}, 'sandbox b'));
    // Installing a tool changes the stamp of the checks that run it.
    const bin = join(dir, 'bin');
    const flake = { name: 'lint' as const, command: ['cf-test-flake8'] };
    const before = await toolStamp([flake], bin);
    await writeFiles(dir, { 'bin/cf-test-flake8': '#!/bin/sh\n' });
    await chmod(join(bin, 'cf-test-flake8'), 0o755);
    expect(await toolStamp([flake], bin)).not.toBe(before);
  });
});

describe('the format step with a scope', () => {
  it("keeps the formatter's changes only in files the change holds; others are put back", async () => {
    const dir = await workdir({ 'a.js': 'a  =  1\n', 'b.js': 'b  =  2\n' });
    const changed = new Set(['a.js']);
    const restored: string[][] = [];
    const formatter: PlannedStep = { name: 'format', command: nodeScript("const fs = require('fs'); for (const f of ['a.js', 'b.js']) fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace(/ +/g, ' '))") };
    const outcome = await runVerification(dir, [formatter], {
      ...options,
      formatScope: {
        changedFiles: async () => [...changed, ...((await readFile(join(dir, 'b.js'), 'utf8')) === 'b = 2\n' ? ['b.js'] : [])],
        restore: async (files) => {
          restored.push([...files]);
          for (const file of files) await writeFile(join(dir, file), 'b  =  2\n');
        },
      },
    });
    expect(outcome.passed).toBe(true);
    expect(restored).toEqual([['b.js']]);
    expect(await readFile(join(dir, 'a.js'), 'utf8')).toBe('a = 1\n');
    expect(await readFile(join(dir, 'b.js'), 'utf8')).toBe('b  =  2\n');
    expect(outcome.results[0]?.outputTail).toContain("the formatter's changes to files the change does not touch were undone: b.js");
  });
});

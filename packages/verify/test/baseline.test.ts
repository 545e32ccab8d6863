import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, writeFiles, type TempDir } from '@codefleet/testkit';
import { isPreexisting, planKey, readBaseline, runBaseline, runVerification, stepKey, writeBaseline, type PlannedStep } from '../src/index.js';
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
    expect(baseline.failing).toEqual({ [stepKey(lint)]: { failingTests: [] }, [stepKey(tests)]: { failingTests: [expect.stringContaining('flaky network test')] } });
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
    expect(isPreexisting(crashed, baseline)).toBe(false);
    expect(isPreexisting({ ...crashed, findings: { ...crashed.findings, failingTests: ['a'] } }, baseline)).toBe(true);
    // A check that passed at the base, or another command under the same step name, is the change's.
    expect(isPreexisting({ ...crashed, command: ['npm', 'test'] }, baseline)).toBe(false);
    expect(isPreexisting({ ...crashed, spawnError: 'not found' }, baseline)).toBe(false);
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

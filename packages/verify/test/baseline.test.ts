import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, writeFiles, type TempDir } from '@codefleet/testkit';
import {
  compareWithBase,
  isStale,
  LogScanner,
  notRunReason,
  planKey,
  ranOnCode,
  readBaseline,
  runBaseline,
  runVerification,
  stepKey,
  toolStamp,
  writeBaseline,
  type PlannedStep,
} from '../src/index.js';
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
// Reads the state of the copy, as a repository's checks do: `lint.fail` makes lint fail on a
// line of the code, `failing.txt` names the tests that fail (node:test's TAP "not ok" lines).
const lint: PlannedStep = {
  name: 'lint',
  command: nodeScript(
    "const fs = require('fs'); if (fs.existsSync('lint.fail')) { console.error('src/index.js:3:7: error: no-unused-vars'); process.exit(1); } console.log('lint ok')",
  ),
};
const tests: PlannedStep = {
  name: 'test',
  command: nodeScript(
    "const fs = require('fs'); const names = fs.existsSync('failing.txt') ? fs.readFileSync('failing.txt', 'utf8').split('\\n').filter(Boolean) : []; names.forEach((n, i) => console.log(`not ok ${i + 1} - ${n}`)); process.exit(names.length > 0 ? 1 : 0)",
  ),
};
const build: PlannedStep = { name: 'build', command: nodeScript("console.log('built')") };

describe('verification against the base commit', () => {
  it('runs every check at the base, past a failing one, and records what failed with its tests', async () => {
    const dir = await workdir({ 'lint.fail': '', 'failing.txt': 'flaky network test\n' });
    const { baseline, results } = await runBaseline(
      dir,
      [{ name: 'install', command: ['false'] }, build, { name: 'format', command: ['false'] }, lint, tests],
      options,
    );
    expect(results.map((r) => [r.name, r.passed])).toEqual([
      ['build', true],
      ['lint', false],
      ['test', false],
    ]);
    expect(baseline.ran).toEqual([stepKey(build), stepKey(lint), stepKey(tests)]);
    expect(baseline.failing).toEqual({
      [stepKey(lint)]: { failingTests: [], exitCode: 1, errors: ['src/index.js:#:#: error: no-unused-vars'] },
      [stepKey(tests)]: {
        failingTests: [expect.stringContaining('flaky network test')],
        exitCode: 1,
        errors: expect.any(Array),
      },
    });
    expect(baseline.at).toEqual(expect.any(String));
  });

  it('a check that fails at the base too is pre-existing: the run goes on past it and passes', async () => {
    const dir = await workdir({ 'lint.fail': '' });
    const { baseline } = await runBaseline(dir, [lint, tests], options);
    const outcome = await runVerification(dir, [build, lint, tests], { ...options, baseline });
    expect(outcome.passed).toBe(true);
    expect(outcome.results.map((r) => [r.name, r.passed, r.preexisting ?? false])).toEqual([
      ['build', true, false],
      ['lint', false, true],
      ['test', true, false],
    ]);
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
    const crashed = {
      name: 'test' as const,
      command: tests.command,
      exitCode: 1,
      signal: null,
      timedOut: false,
      durationMs: 1,
      outputTail: 'SyntaxError',
      passed: false,
      findings: { failingTests: [], omittedTests: 0, errors: [], omittedErrors: 0 },
    };
    expect(compareWithBase(crashed, baseline) === 'preexisting').toBe(false);
    expect(
      compareWithBase({ ...crashed, findings: { ...crashed.findings, failingTests: ['a'] } }, baseline) ===
        'preexisting',
    ).toBe(true);
    // A check that passed at the base, or another command under the same step name, is the change's.
    expect(compareWithBase({ ...crashed, command: ['npm', 'test'] }, baseline) === 'preexisting').toBe(false);
    expect(compareWithBase({ ...crashed, spawnError: 'not found' }, baseline) === 'preexisting').toBe(false);
  });

  it("another exit code, a new error line, or a timeout is the change's, not pre-existing", () => {
    const base = {
      ran: [stepKey(lint)],
      failing: { [stepKey(lint)]: { failingTests: [], exitCode: 1, errors: ['src/a.rs:#:#: error: needless return'] } },
    };
    const failed = (exitCode: number, outputTail: string, extra = {}) => ({
      name: 'lint' as const,
      command: lint.command,
      exitCode,
      signal: null,
      timedOut: false,
      durationMs: 1,
      outputTail,
      passed: false,
      ...extra,
    });
    expect(compareWithBase(failed(1, 'src/a.rs:12:5: error: needless return\n'), base)).toBe('preexisting');
    // The same error moved by the change (other numbers) is still the base's.
    expect(compareWithBase(failed(1, 'src/a.rs:40:9: error: needless return\n'), base)).toBe('preexisting');
    expect(
      compareWithBase(failed(1, 'src/a.rs:12:5: error: needless return\nsrc/b.rs:3:1: error: ptr_arg\n'), base),
    ).toBe('new');
    expect(compareWithBase(failed(4, 'src/a.rs:12:5: error: needless return\n'), base)).toBe('new');
    expect(compareWithBase(failed(124, '', { timedOut: true }), base)).toBe('new');
  });

  it('a check that could not really run at the base (tool missing, a timeout) is unverifiable when it fails the same way, never pre-existing', async () => {
    const dir = await workdir();
    const missingTool: PlannedStep = {
      name: 'test',
      command: ['sh', '-c', 'echo "sh: 1: pnpm: not found" >&2; exit 127'],
    };
    const { baseline } = await runBaseline(dir, [missingTool], options);
    expect(baseline.failing[stepKey(missingTool)]?.unavailable).toBe('pnpm: not found');
    const outcome = await runVerification(dir, [missingTool], { ...options, baseline });
    expect(outcome.passed).toBe(true);
    expect(outcome.unverifiable.map((r) => [r.name, r.preexisting, r.unverifiable])).toEqual([['test', true, true]]);
    // The change broke it otherwise: its own failure.
    const other = {
      ...baseline,
      failing: {
        [stepKey(missingTool)]: { ...baseline.failing[stepKey(missingTool)]!, unavailable: 'pytest: not found' },
      },
    };
    expect((await runVerification(dir, [missingTool], { ...options, baseline: other })).passed).toBe(false);
    // A check that cannot start at all is no failure of the base.
    const absent: PlannedStep = { name: 'lint', command: ['codefleet-no-such-linter'] };
    expect((await runBaseline(dir, [absent], options)).baseline.failing).toEqual({});
  });

  it('a failure that names no test and no line of the code is unverifiable, never pre-existing: a tool missing behind make', async () => {
    // As found on a real repository: `make lint` runs a tool this worker does not have; make
    // exits 2, and no pattern of a missing tool matches its words.
    const dir = await workdir({ Makefile: 'lint:\n\tcodefleet-no-such-pixi run lint\n' });
    const makeLint: PlannedStep = { name: 'lint', command: ['make', 'lint'] };
    const { baseline, results } = await runBaseline(dir, [makeLint], options);
    expect(results[0]?.exitCode).toBe(2);
    expect(baseline.failing[stepKey(makeLint)]?.unavailable).toBe(
      'make: codefleet-no-such-pixi: No such file or directory',
    );
    const outcome = await runVerification(dir, [makeLint, tests], { ...options, baseline });
    expect(outcome.passed).toBe(true);
    expect(outcome.unverifiable.map((r) => [r.name, r.preexisting, r.unverifiable, r.unverifiableReason])).toEqual([
      ['lint', true, true, 'make: codefleet-no-such-pixi: No such file or directory'],
    ]);
    // The change made it run (the tool now reports a line of the code): its own failure.
    await writeFiles(dir, { Makefile: 'lint:\n\t@echo "src/a.py:3:1: E999 syntax error"; exit 1\n' });
    const ran = await runVerification(dir, [makeLint], { ...options, baseline });
    expect([ran.passed, ran.failed?.preexisting]).toEqual([false, undefined]);
  });

  it('a runner that cannot start (vitest unable to write its config beside read-only dependencies) is unverifiable', async () => {
    const dir = await workdir();
    // vitest's output when node_modules is read-only: frames in node_modules and Node only.
    const startup: PlannedStep = {
      name: 'test',
      command: nodeScript(`console.error([
        'failed to load config from ' + process.cwd() + '/vitest.config.mts', '', 'Startup Error',
        "Error: ENOENT: no such file or directory, mkdir '" + process.cwd() + "/node_modules/.vite-temp'",
        '    at async Object.mkdir (node:internal/fs/promises:856:10)',
        '    at async loadConfigFromBundledFile (file://' + process.cwd() + '/node_modules/vite/dist/node/chunks/config.js:36157:4)',
      ].join('\\n')); process.exit(1)`),
    };
    const { baseline } = await runBaseline(dir, [startup], options);
    expect(baseline.failing[stepKey(startup)]?.unavailable).toMatch(
      /^Error: ENOENT: no such file or directory, mkdir '.*\/node_modules\/\.vite-temp'$/,
    );
    const outcome = await runVerification(dir, [startup], { ...options, baseline });
    expect([outcome.passed, outcome.unverifiable.length, outcome.preexisting.length]).toEqual([true, 1, 1]);
  });

  it('tells a check that ran on the code from one that did not, by what its output names', () => {
    const failed = (outputTail: string, failingTests: string[] = [], errors: string[] = []) => ({
      name: 'test' as const,
      command: ['x'],
      exitCode: 1,
      signal: null,
      timedOut: false,
      durationMs: 1,
      outputTail,
      passed: false,
      findings: { failingTests, omittedTests: 0, errors, omittedErrors: 0 },
    });
    const ran = (outputTail: string, tests: string[] = [], errors: string[] = []) =>
      ranOnCode(failed(outputTail, tests, errors), '/work/copy');
    // A test, a position in the repository's files, a summary or a count: it ran.
    expect(ran('', ['× add > adds'])).toBe(true);
    expect(ran("src/index.ts(3,7): error TS2322: Type 'string' is not assignable")).toBe(true);
    expect(ran('    at Object.<anonymous> (/work/copy/test/a.test.js:3:9)')).toBe(true);
    expect(ran(' Test Files  1 failed (1)\n      Tests  1 failed | 2 passed (3)')).toBe(true);
    expect(ran('✖ 3 problems (3 errors, 0 warnings)')).toBe(true);
    expect(ran('Found 2 errors in 1 file.')).toBe(true);
    expect(ran('', [], ['lib/a.rb:4: syntax error'])).toBe(true);
    // Positions in dependencies, Node, another directory, make's recipe, exit codes: it did not.
    expect(
      ran(
        '    at f (file:///work/copy/node_modules/vite/dist/config.js:36157:4)\n    at g (node:internal/fs/promises:856:10)',
      ),
    ).toBe(false);
    expect(ran('    at h (/usr/lib/node_modules/npm/lib/cli.js:12:3)\n    at i (/opt/other/src/a.js:1:1)')).toBe(false);
    expect(ran('make: pixi: No such file or directory\nmake: *** [rules.mk:2: lint] Error 127')).toBe(false);
    expect(ran('ERR_PNPM_NO_IMPORTER_MANIFEST_FOUND  No package.json found\nexit 1 errors')).toBe(false);
    expect(notRunReason(failed('npm warn config\nsh: 1: pnpm: not found'), '/work/copy')).toBe('pnpm: not found');
    expect(notRunReason(failed('starting\nsomething went wrong in 3 ms'), '/work/copy')).toBe(
      'something went wrong in 3 ms',
    );
    expect(notRunReason(failed('', ['× a']))).toBeUndefined();
    // pytest that cannot import a test module's dependency points at the code, yet ran nothing.
    const collection =
      "tests/test_a.py:1: in <module>\n    import requests\nE   ModuleNotFoundError: No module named 'requests'\nERROR tests/test_a.py\n=============================== 1 error in 0.05s ===============================";
    expect(notRunReason(failed(collection), '/work/copy')).toBe("No module named 'requests");
  });

  it("a vitest test that times out at the base and on the change is the same test, whatever vitest's timing says", () => {
    // As on pillarjs/path-to-regexp under load: its redos tests time out, each with its duration.
    const scanned = (ms: number) => {
      const scanner = new LogScanner();
      scanner.write(
        ` ❯ src/redos.spec.ts (62 tests | 1 failed) 10400ms\n   × redos > /:test - /^(?:\\/([^\\/]+))$/i ${ms}ms\n     → Test timed out in 10000ms.\n`,
      );
      return scanner.end();
    };
    expect(scanned(10156).failingTests).toEqual(['× redos > /:test - /^(?:\\/([^\\/]+))$/i']);
    const step = {
      name: 'test' as const,
      command: tests.command,
      exitCode: 1,
      signal: null,
      timedOut: false,
      durationMs: 1,
      passed: false,
    };
    const base = {
      ran: [stepKey(tests)],
      failing: { [stepKey(tests)]: { failingTests: scanned(10156).failingTests, exitCode: 1 } },
    };
    expect(compareWithBase({ ...step, outputTail: '', findings: scanned(10873) }, base)).toBe('preexisting');
  });

  it("a failure that ran at the base and ran on nothing on the change is the change's doing", () => {
    const base = {
      ran: [stepKey(lint)],
      failing: { [stepKey(lint)]: { failingTests: [], exitCode: 1, errors: ['src/a.js:#:#: error: no-undef'] } },
    };
    const crashed = {
      name: 'lint' as const,
      command: lint.command,
      exitCode: 1,
      signal: null,
      timedOut: false,
      durationMs: 1,
      outputTail: 'Error: cannot load the config',
      passed: false,
    };
    expect(compareWithBase(crashed, base)).toBe('new');
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
    const formatter: PlannedStep = {
      name: 'format',
      command: nodeScript(
        "const fs = require('fs'); for (const f of ['a.js', 'b.js']) fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace(/ +/g, ' '))",
      ),
    };
    const outcome = await runVerification(dir, [formatter], {
      ...options,
      formatScope: {
        changedFiles: async () => [
          ...changed,
          ...((await readFile(join(dir, 'b.js'), 'utf8')) === 'b = 2\n' ? ['b.js'] : []),
        ],
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
    expect(outcome.results[0]?.outputTail).toContain(
      "the formatter's changes to files the change does not touch were undone: b.js",
    );
  });
});

import { access, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, withTimeoutsUntil, writeFiles, type TempDir } from '@codefleet/testkit';
import { feedbackFor, installStampFile, planVerification, runVerification, type PlannedStep } from '../src/index.js';
import { defaultVerification, nodeScript, testEnv } from './helpers.js';

const dirs: TempDir[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => dir.dispose()));
});

async function workdir(files: Record<string, string> = {}): Promise<string> {
  const dir = await createTempDir('verify-run');
  dirs.push(dir);
  await writeFiles(dir.path, files);
  return dir.path;
}

const options = { env: testEnv, timeoutMs: 10_000 };
const pass = (name: PlannedStep['name'], text = `${name} ok`): PlannedStep => ({
  name,
  command: nodeScript(`console.log(${JSON.stringify(text)})`),
});
const fail = (name: PlannedStep['name'], code = 1): PlannedStep => ({
  name,
  command: nodeScript(
    `console.error('src/app.ts(3,7): error TS2322: Type number is not assignable to type string.'); process.exit(${code})`,
  ),
});

describe('runVerification', () => {
  it('runs every step in order and passes with their facts recorded', async () => {
    const dir = await workdir();
    const outcome = await runVerification(dir, [pass('build'), pass('lint'), pass('test')], options);
    expect(outcome.passed).toBe(true);
    expect(outcome.failed).toBeUndefined();
    expect(outcome.results.map((r) => [r.name, r.exitCode, r.passed, r.outputTail.trim()])).toEqual([
      ['build', 0, true, 'build ok'],
      ['lint', 0, true, 'lint ok'],
      ['test', 0, true, 'test ok'],
    ]);
    expect(outcome.results.every((r) => r.durationMs > 0 && r.timedOut === false && r.signal === null)).toBe(true);
  });

  it('runs in the working copy with only the given environment', async () => {
    const dir = await workdir({ 'marker.txt': 'here' });
    const step = {
      name: 'test' as const,
      command: nodeScript(
        "console.log(require('fs').readFileSync('marker.txt','utf8'), process.env.ONLY, process.env.HOME === undefined)",
      ),
    };
    const outcome = await runVerification(dir, [step], { ...options, env: { PATH: testEnv.PATH ?? '', ONLY: 'this' } });
    expect(outcome.results[0]?.outputTail.trim()).toBe('here this true');
  });

  it('stops at the first failing step and returns it as failed, with findings for feedback', async () => {
    const dir = await workdir();
    const outcome = await runVerification(dir, [pass('build'), fail('lint', 2), pass('test')], options);
    expect(outcome.passed).toBe(false);
    expect(outcome.results.map((r) => r.name)).toEqual(['build', 'lint']);
    expect(outcome.failed).toMatchObject({ name: 'lint', exitCode: 2, passed: false, timedOut: false });
    expect(outcome.failed?.findings?.errors).toEqual([
      'src/app.ts(3,7): error TS2322: Type number is not assignable to type string.',
    ]);
    expect(feedbackFor(outcome.failed!)).toMatch(/^Step lint failed \(exit 2\): .*node -e/);
  });

  it('a hanging step times out, is killed and fails with timedOut', async () => {
    const dir = await workdir();
    const hang: PlannedStep = {
      name: 'test',
      command: nodeScript("console.log('started'); setInterval(() => {}, 1000)"),
    };
    // `hang` never ends, so an outcome at all means it was stopped at its timeout. `build` must
    // pass and `hang` start before theirs, which a loaded machine can make them miss: such a
    // run is repeated with a longer timeout.
    const { result: outcome } = await withTimeoutsUntil(
      [3_000, 15_000, 60_000],
      (timeoutMs) => runVerification(dir, [pass('build'), hang, pass('lint')], { ...options, timeoutMs }),
      (run) => run.results[0]?.passed === true && run.results[1]?.outputTail.includes('started') === true,
    );
    expect(outcome.failed).toMatchObject({ name: 'test', timedOut: true, exitCode: 124, passed: false });
    expect(outcome.failed?.outputTail).toContain('started');
    expect(feedbackFor(outcome.failed!)).toMatch(/^Step test failed \(timed out, exit 124\)/);
  });

  it('format fixes files and never fails the run, even with a non-zero exit', async () => {
    const dir = await workdir({ 'src.txt': 'messy' });
    const format: PlannedStep = {
      name: 'format',
      command: nodeScript(
        "require('fs').writeFileSync('src.txt', 'tidy'); console.log('1 file reformatted'); process.exit(1)",
      ),
    };
    const outcome = await runVerification(dir, [pass('build'), format, pass('test')], options);
    expect(outcome.passed).toBe(true);
    expect(outcome.results[1]).toMatchObject({ name: 'format', exitCode: 1, passed: true });
    expect(await readFile(join(dir, 'src.txt'), 'utf8')).toBe('tidy');
  });

  it('a format step that cannot start or times out does fail', async () => {
    const dir = await workdir();
    const missing = await runVerification(dir, [{ name: 'format', command: ['codefleet-no-such-formatter'] }], options);
    expect(missing.failed).toMatchObject({ name: 'format', passed: false, exitCode: null });
    expect(missing.failed?.spawnError).toMatch(/ENOENT/);
    expect(feedbackFor(missing.failed!)).toMatch(/^Step format failed \(could not start: .*ENOENT/);

    const hang = { name: 'format' as const, command: nodeScript('setInterval(() => {}, 1000)') };
    const slow = await runVerification(dir, [hang], { ...options, timeoutMs: 300 });
    expect(slow.failed).toMatchObject({ name: 'format', passed: false, timedOut: true });
  });

  it("phase 'build-only' runs install and build only", async () => {
    const dir = await workdir();
    const steps = [pass('install'), pass('build'), pass('format'), fail('lint'), fail('test')];
    const outcome = await runVerification(dir, steps, { ...options, phase: 'build-only' });
    expect(outcome.passed).toBe(true);
    expect(outcome.results.map((r) => r.name)).toEqual(['install', 'build']);
  });

  it('an empty command is a skipped step, as in the config', async () => {
    const outcome = await runVerification(await workdir(), [{ name: 'lint', command: [] }], options);
    expect(outcome.results[0]).toMatchObject({ name: 'lint', passed: true, skipped: true });
  });

  it('an abort rejects with a cancelled error instead of reporting a failure to feed back', async () => {
    const dir = await workdir();
    const controller = new AbortController();
    const hang = { name: 'test' as const, command: nodeScript('setInterval(() => {}, 1000)') };
    setTimeout(() => controller.abort(), 200);
    await expect(runVerification(dir, [hang], { ...options, signal: controller.signal })).rejects.toMatchObject({
      code: 'cancelled',
    });
    await expect(
      runVerification(dir, [pass('build')], { ...options, signal: controller.signal }),
    ).rejects.toMatchObject({
      code: 'cancelled',
    });
  });
});

describe('the install step and its stamp', () => {
  // Stands in for npm: creates node_modules and counts how often it ran.
  const fakeInstall: PlannedStep = {
    name: 'install',
    command: nodeScript(
      "const fs=require('fs'); fs.mkdirSync('node_modules',{recursive:true}); fs.appendFileSync('installs.log','x')",
    ),
  };
  const manifest = JSON.stringify({ devDependencies: { leftpad: '1.0.0' } });
  const installs = async (dir: string) => (await readFile(join(dir, 'installs.log'), 'utf8').catch(() => '')).length;

  it('installs once, stamps node_modules, and skips while the lockfile is unchanged', async () => {
    const dir = await workdir({ 'package.json': manifest, 'package-lock.json': '{"lockfileVersion":3}' });
    const first = await runVerification(dir, [fakeInstall, pass('build')], options);
    expect(first.results[0]).toMatchObject({ name: 'install', passed: true });
    expect(first.results[0]?.skipped).toBeUndefined();
    expect(await readFile(join(dir, 'node_modules', installStampFile), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);

    const second = await runVerification(dir, [fakeInstall, pass('build')], options);
    expect(second.results[0]).toMatchObject({ name: 'install', passed: true, skipped: true, durationMs: 0 });
    expect(await installs(dir)).toBe(1);

    await writeFile(join(dir, 'package-lock.json'), '{"lockfileVersion":3,"packages":{}}');
    await runVerification(dir, [fakeInstall], options);
    expect(await installs(dir)).toBe(2);

    await rm(join(dir, 'node_modules'), { recursive: true });
    await runVerification(dir, [fakeInstall], options);
    expect(await installs(dir)).toBe(3);
  });

  it('reinstalls when a dependency is added to package.json alone, or node_modules is gone', async () => {
    const dir = await workdir({ 'package.json': manifest, 'package-lock.json': '{}' });
    await runVerification(dir, [fakeInstall], options);
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ devDependencies: { leftpad: '1.0.0', other: '2.0.0' } }),
    );
    await runVerification(dir, [fakeInstall], options);
    expect(await installs(dir)).toBe(2);

    // Script edits do not change what is installed.
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ scripts: { test: 'x' }, devDependencies: { leftpad: '1.0.0', other: '2.0.0' } }),
    );
    await runVerification(dir, [fakeInstall], options);
    expect(await installs(dir)).toBe(2);

    await rm(join(dir, 'node_modules'), { recursive: true });
    await runVerification(dir, [fakeInstall], options);
    expect(await installs(dir)).toBe(3);
  });

  it('a failed install leaves no stamp, so the next verify installs again', async () => {
    const dir = await workdir({ 'package.json': manifest, 'package-lock.json': '{}' });
    await runVerification(dir, [fakeInstall], options);
    await writeFile(join(dir, 'package-lock.json'), '{"changed":true}');
    const failing: PlannedStep = { name: 'install', command: nodeScript('process.exit(1)') };
    const outcome = await runVerification(dir, [failing], options);
    expect(outcome.failed?.name).toBe('install');
    await expect(readFile(join(dir, 'node_modules', installStampFile), 'utf8')).rejects.toThrow();
  });
});

describe('with real npm', () => {
  it('plans npm install for a local dependency, installs it, then skips the install next time', async () => {
    const dir = await workdir({
      'package.json': JSON.stringify({
        name: 'app',
        version: '1.0.0',
        dependencies: { 'local-dep': 'file:./vendor/local-dep' },
        scripts: { test: 'node -e "require(\'local-dep\')"' },
      }),
      'vendor/local-dep/package.json': JSON.stringify({ name: 'local-dep', version: '1.0.0', main: 'index.js' }),
      'vendor/local-dep/index.js': 'module.exports = 1;\n',
    });
    const env = {
      ...testEnv,
      npm_config_cache: join(dir, '.npm-cache'),
      npm_config_update_notifier: 'false',
      npm_config_offline: 'true',
    };
    const plan = await planVerification(dir, { config: defaultVerification() });
    expect(plan.steps.map((s) => s.name)).toEqual(['install', 'test']);

    const first = await runVerification(dir, plan.steps, { env, timeoutMs: 60_000 });
    expect(first.failed).toBeUndefined();
    expect(first.results[0]?.skipped).toBeUndefined();
    // --no-package-lock: verification adds no lockfile to the change.
    await expect(access(join(dir, 'package-lock.json'))).rejects.toThrow();

    const second = await runVerification(dir, plan.steps, { env, timeoutMs: 60_000 });
    expect(second.passed).toBe(true);
    expect(second.results.map((r) => [r.name, r.skipped === true])).toEqual([
      ['install', true],
      ['test', false],
    ]);
  });
});

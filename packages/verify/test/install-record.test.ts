import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import type { ProcessRunner } from '@codefleet/process';
import { runProcess } from '@codefleet/process';
import { runVerification } from '../src/index.js';
import { dependencyHash, installIsFresh, readInstallRecord, writeInstallStamp } from '../src/run/install.js';

// The install record kept outside the copy: what makes node_modules "fresh" for the next job.
describe('install record', () => {
  let dir: TempDir;
  let copy: string;
  let stamp: string;
  const manifest = (scripts: Record<string, string> = {}) =>
    JSON.stringify({ name: 'x', dependencies: { a: '1.0.0' }, scripts });
  beforeEach(async () => {
    dir = await createTempDir('install-record');
    copy = join(dir.path, 'copy');
    stamp = join(dir.path, 'copy.install-stamp');
    await mkdir(join(copy, 'node_modules', 'a'), { recursive: true });
    await mkdir(join(copy, 'packages', 'p', 'node_modules', 'b'), { recursive: true });
    await mkdir(join(copy, 'packages', 'p', 'node_modules', 'b', 'node_modules'), { recursive: true });
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test' }));
    await writeFile(join(copy, 'package-lock.json'), '{"lockfileVersion":3}');
  });
  afterEach(async () => dir.dispose());

  it('records the hash and every node_modules the install left, not the ones inside them', async () => {
    await writeInstallStamp(copy, stamp);
    expect((await readInstallRecord(stamp))?.dirs).toEqual(['node_modules', 'packages/p/node_modules']);
    expect(await installIsFresh(copy, stamp)).toBe(true);
  });

  it('a lifecycle script or .npmrc changed since makes it stale; another script does not', async () => {
    await writeInstallStamp(copy, stamp);
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test --watch' }));
    expect(await installIsFresh(copy, stamp)).toBe(true);
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test', postinstall: 'node plant.js' }));
    expect(await installIsFresh(copy, stamp)).toBe(false);
    await writeFile(join(copy, 'package.json'), manifest({ test: 'node --test' }));
    expect(await installIsFresh(copy, stamp)).toBe(true);
    await writeFile(join(copy, '.npmrc'), 'ignore-scripts=false\n');
    expect(await installIsFresh(copy, stamp)).toBe(false);
  });

  it('a recorded directory gone makes it stale; a record pointing outside the copy is not trusted', async () => {
    await writeInstallStamp(copy, stamp);
    const { rm } = await import('node:fs/promises');
    await rm(join(copy, 'packages', 'p', 'node_modules'), { recursive: true });
    expect(await installIsFresh(copy, stamp)).toBe(false);
    await writeFile(stamp, JSON.stringify({ hash: 'h', dirs: ['../elsewhere', '/etc', 'node_modules'] }));
    expect((await readInstallRecord(stamp))?.dirs).toEqual(['node_modules']);
  });

  it("a fresh install runs the root's prepare script again, through the checks' runner (node_modules read-only to it), not the install's", async () => {
    const prepare =
      "node -e \"require('fs').mkdirSync('build',{recursive:true});require('fs').writeFileSync('build/out.js','')\"";
    await writeFile(join(copy, 'package.json'), manifest({ prepare }));
    await writeInstallStamp(copy, stamp, true);
    const ran: string[] = [];
    const runner =
      (name: string): ProcessRunner =>
      (argv, options) => {
        ran.push(`${name}: ${argv.join(' ')}`);
        return runProcess(argv, options);
      };
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir.path };
    const outcome = await runVerification(copy, [{ name: 'install', command: ['npm', 'ci'] }], {
      env,
      timeoutMs: 120_000,
      installStamp: stamp,
      runner: runner('checks'),
      installRunner: runner('install'),
    });
    expect(ran).toEqual(['checks: npm run prepare']);
    expect(outcome.results[0]).toMatchObject({ name: 'install', passed: true, command: ['npm', 'run', 'prepare'] });
    expect(await readInstallRecord(stamp)).toMatchObject({ clean: true });
    expect(await readFile(join(copy, 'build', 'out.js'), 'utf8')).toBe('');
    // Without a prepare script, a fresh install is skipped as before.
    await writeFile(join(copy, 'package.json'), manifest());
    await writeInstallStamp(copy, stamp, true);
    ran.length = 0;
    const skipped = await runVerification(copy, [{ name: 'install', command: ['npm', 'ci'] }], {
      env,
      timeoutMs: 120_000,
      installStamp: stamp,
      runner: runner('checks'),
    });
    expect([ran, skipped.results[0]?.skipped]).toEqual([[], true]);
  });

  it('an install known to fail for these dependencies is not run again; changed dependencies run it', async () => {
    const known = {
      name: 'install' as const,
      command: ['npm', 'ci'],
      exitCode: 1,
      signal: null,
      timedOut: false,
      durationMs: 5,
      outputTail: 'npm error code E404\n',
      passed: false,
    };
    const ran: string[] = [];
    const runner: ProcessRunner = (argv, options) => {
      ran.push(argv.join(' '));
      return runProcess(['false'], options);
    };
    const options = {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      timeoutMs: 60_000,
      installStamp: join(dir.path, 'none'),
      runner,
      knownInstallFailure: { hash: (await dependencyHash(copy))!, result: known },
    };
    const same = await runVerification(copy, [{ name: 'install', command: ['npm', 'ci'] }], options);
    expect([ran, same.failed?.exitCode, same.failed?.outputTail]).toEqual([
      [],
      1,
      expect.stringContaining('npm error code E404'),
    ]);
    await writeFile(join(copy, 'package.json'), JSON.stringify({ name: 'x', dependencies: { a: '2.0.0' } }));
    await runVerification(copy, [{ name: 'install', command: ['npm', 'ci'] }], options);
    expect(ran).toEqual(['npm ci']);
  });
});

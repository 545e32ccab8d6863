import { describe, expect, it } from '@jest/globals';
import { listingTestCommand } from '../src/index.js';

describe('listingTestCommand', () => {
  const node = (test: string, extra: Record<string, string> = {}) => ({
    toolchain: 'node' as const,
    scripts: { test, ...extra },
  });
  const list = (command: string[], plan: Parameters<typeof listingTestCommand>[1]) =>
    listingTestCommand({ command }, plan);

  it('adds each runner its listing flags when it is started directly', () => {
    const python = { toolchain: 'python' as const };
    expect(list(['pytest'], python)).toEqual(['pytest', '-rA', '-v', '-p', 'no:cacheprovider']);
    expect(list(['python3', '-m', 'pytest', 'tests', '-x'], python)).toEqual([
      'python3',
      '-m',
      'pytest',
      'tests',
      '-x',
      '-rA',
      '-v',
      '-p',
      'no:cacheprovider',
    ]);
    expect(list(['uv', 'run', 'pytest', '-p', 'no:cacheprovider'], python)).toEqual([
      'uv',
      'run',
      'pytest',
      '-p',
      'no:cacheprovider',
      '-rA',
      '-v',
    ]);
    expect(list(['go', 'test', './...'], { toolchain: 'go' })).toEqual(['go', 'test', './...', '-v']);
    expect(list(['go', 'test', '-v', './...'], { toolchain: 'go' })).toEqual(['go', 'test', '-v', './...']);
    expect(list(['go', 'test', '-json', './...'], { toolchain: 'go' })).toBeUndefined();
    expect(list(['cargo', 'test'], { toolchain: 'rust' })).toEqual(['cargo', 'test', '--no-fail-fast']);
    expect(list(['cargo', '+nightly', 'test', '--', '--nocapture'], { toolchain: 'rust' })).toEqual([
      'cargo',
      '+nightly',
      'test',
      '--no-fail-fast',
      '--',
      '--nocapture',
    ]);
    expect(list(['cargo', 'test', '--', '--format=terse'], { toolchain: 'rust' })).toBeUndefined();
    expect(list(['cargo', 'nextest', 'run'], { toolchain: 'rust' })).toBeUndefined();
    expect(list(['npx', '--yes', 'jest', '--ci'], { toolchain: 'node' })).toEqual([
      'npx',
      '--yes',
      'jest',
      '--ci',
      '--verbose',
    ]);
    expect(list(['node', '--experimental-vm-modules', 'node_modules/jest/bin/jest.js'], { toolchain: 'node' })).toEqual(
      ['node', '--experimental-vm-modules', 'node_modules/jest/bin/jest.js', '--verbose'],
    );
  });

  it('passes the flags through the package manager when the script is the runner alone', () => {
    expect(list(['npm', 'test'], node('jest'))).toEqual(['npm', 'test', '--', '--verbose']);
    expect(list(['npm', 'run', 'test', '--', '--ci'], node('jest'))).toEqual([
      'npm',
      'run',
      'test',
      '--',
      '--ci',
      '--verbose',
    ]);
    expect(list(['pnpm', 'run', 'test'], node('vitest run'))).toEqual(['pnpm', 'run', 'test', '--reporter=verbose']);
    expect(list(['yarn', 'run', 'test'], node("mocha 'test/**/*.spec.js'"))).toEqual([
      'yarn',
      'run',
      'test',
      '--reporter=spec',
    ]);
    expect(list(['bun', 'run', 'test'], node('NODE_OPTIONS=--experimental-vm-modules jest'))).toEqual([
      'bun',
      'run',
      'test',
      '--verbose',
    ]);
    expect(list(['npm', 'test'], node('cross-env CI=1 pytest'))).toEqual([
      'npm',
      'test',
      '--',
      '-rA',
      '-v',
      '-p',
      'no:cacheprovider',
    ]);
  });

  it('keeps a command that lists every test already', () => {
    expect(list(['npm', 'test'], node('node --test'))).toEqual(['npm', 'test']);
    expect(list(['npm', 'test'], node('node --test --test-reporter=spec'))).toEqual(['npm', 'test']);
    expect(list(['npm', 'test'], node('jest --verbose'))).toEqual(['npm', 'test']);
    expect(list(['npm', 'test'], node('vitest run --reporter verbose'))).toEqual(['npm', 'test']);
    expect(list(['npm', 'test'], node('mocha -R spec'))).toEqual(['npm', 'test']);
  });

  it('cannot tell: shell syntax, another script, an unknown runner, a reporter that lists no tests', () => {
    expect(list(['npm', 'test'], node('tsc && jest'))).toBeUndefined();
    expect(list(['npm', 'test'], node('jest | tee out.txt'))).toBeUndefined();
    expect(list(['npm', 'test'], node('jest $JEST_FLAGS'))).toBeUndefined();
    expect(list(['npm', 'test'], node('npm run test:unit', { 'test:unit': 'jest' }))).toBeUndefined();
    expect(list(['npm', 'test'], node('ava'))).toBeUndefined();
    expect(list(['npm', 'test'], node('node scripts/test.js'))).toBeUndefined();
    expect(list(['npm', 'test'], node('vitest run --reporter=dot'))).toBeUndefined();
    expect(list(['npm', 'test'], node('mocha --reporter dot'))).toBeUndefined();
    expect(list(['npm', 'test'], node('node --test --test-reporter=dot'))).toBeUndefined();
    // Flags that must go before the body's `--` cannot be passed through a manager.
    expect(list(['npm', 'test'], node('cargo test -- --nocapture'))).toBeUndefined();
    expect(list(['npm', 'test'], { toolchain: 'node' })).toBeUndefined();
    expect(list(['make', 'test'], { toolchain: 'go' })).toBeUndefined();
    // Scripts are the node toolchain's; elsewhere `npm test` is as unknown as any command.
    expect(list(['npm', 'test'], { toolchain: 'python', scripts: { test: 'jest' } })).toBeUndefined();
  });
});

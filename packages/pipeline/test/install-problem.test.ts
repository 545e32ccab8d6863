// The one line a failed install's report names, from the managers' real output (tails seen
// on unjs/std-env, immerjs/immer and a yarn berry lockfile mismatch; npm's own).
import { describe, expect, it } from '@jest/globals';
import type { StepResult } from '@codefleet/verify';
import { installProblem } from '../src/passes.js';

const failed = (outputTail: string): StepResult => ({
  name: 'install',
  command: ['x'],
  exitCode: 1,
  signal: null,
  timedOut: false,
  durationMs: 1,
  outputTail,
  passed: false,
});

describe('installProblem', () => {
  it('names why each manager failed, not its first or last line', () => {
    expect(
      installProblem(
        failed(
          [
            'warn: This version of pnpm requires at least Node.js v22.13',
            'warn: The current version of Node.js is v20.20.2',
            'Error [ERR_UNKNOWN_BUILTIN_MODULE]: No such built-in module: node:sqlite',
            "  code: 'ERR_UNKNOWN_BUILTIN_MODULE'",
            'Node.js v20.20.2',
          ].join('\n'),
        ),
      ),
    ).toBe('warn: This version of pnpm requires at least Node.js v22.13');
    expect(
      installProblem(
        failed(
          [
            'info There appears to be trouble with your network connection. Retrying...',
            'error semantic-release@25.0.3: The engine "node" is incompatible with this module. Expected version "^22.14.0 || >= 24.10.0". Got "20.20.2"',
            'error Found incompatible module.',
            'info Visit https://yarnpkg.com/en/docs/cli/install for documentation about this command.',
          ].join('\n'),
        ),
      ),
    ).toMatch(/^error semantic-release@25\.0\.3: The engine "node" is incompatible/);
    expect(
      installProblem(
        failed(
          [
            '➤ YN0000: · Yarn 4.4.1',
            '➤ YN0000: ┌ Resolution step',
            '➤ YN0028: │ The lockfile would have been modified by this install, which is explicitly forbidden.',
            '➤ YN0000: · Failed with errors in 0s 336ms',
          ].join('\n'),
        ),
      ),
    ).toBe('➤ YN0028: │ The lockfile would have been modified by this install, which is explicitly forbidden.');
    expect(
      installProblem(
        failed(
          'npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope\nnpm error A complete log of this run can be found in: /tmp/x.log',
        ),
      ),
    ).toBe('npm error code E404');
  });
});

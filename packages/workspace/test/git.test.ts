import { describe, expect, it } from '@jest/globals';
import type { ProcessResult } from '@codefleet/process';
import { gitError, lastObjectId, splitNul } from '../src/git.js';

function failed(outputTail: string, extra: Partial<ProcessResult> = {}): ProcessResult {
  return {
    command: ['git'],
    exitCode: 128,
    signal: null,
    timedOut: false,
    cancelled: false,
    durationMs: 5,
    outputTail,
    ...extra,
  };
}

describe('git failures', () => {
  it.each([
    [
      "fatal: unable to access 'https://example.com/r.git/': Could not resolve host: example.com",
      'network',
      'transient',
    ],
    ["fatal: could not read Username for 'https://example.com': terminal prompts disabled", 'git_failed', 'permanent'],
    ["fatal: repository 'https://example.com/r.git/' not found", 'git_failed', 'permanent'],
    ['error: unable to write file x: No space left on device', 'workspace_failed', 'transient'],
    ['fatal: something nobody has seen before', 'git_failed', 'transient'],
  ])('maps %j to %s (%s)', (output, code, verdict) => {
    expect(gitError(['fetch', 'origin'], failed(output))).toMatchObject({ code, verdict });
  });

  it('maps timeouts, aborts and a missing git binary', () => {
    expect(gitError(['fetch'], failed('', { timedOut: true, exitCode: 124 }))).toMatchObject({
      code: 'git_failed',
      verdict: 'transient',
    });
    expect(gitError(['fetch'], failed('', { cancelled: true, exitCode: null }))).toMatchObject({ code: 'cancelled' });
    expect(gitError(['fetch'], failed('', { spawnError: 'spawn git ENOENT', exitCode: null }))).toMatchObject({
      code: 'workspace_failed',
    });
  });

  it('never repeats credentials found in a URL', () => {
    const error = gitError(
      ['fetch', 'https://bob:hunter2@example.com/r.git'],
      failed("fatal: unable to access 'https://bob:hunter2@example.com/r.git/': 403"),
    );
    expect(error.message).not.toContain('hunter2');
    expect(JSON.stringify(error.toJSON())).not.toContain('hunter2');
  });

  it('parses NUL lists and object ids robustly', () => {
    expect(splitNul('a\0b c\0')).toEqual(['a', 'b c']);
    expect(lastObjectId(`warning: x\n${'a'.repeat(40)}\n`)).toBe('a'.repeat(40));
    expect(lastObjectId('nothing')).toBeUndefined();
  });
});

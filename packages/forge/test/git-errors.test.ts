import { describe, expect, it } from '@jest/globals';
import type { ProcessResult } from '@codefleet/process';
import { gitFailure } from '../src/git/git-errors.js';

const failed = (outputTail: string, extra: Partial<ProcessResult> = {}): ProcessResult => ({
  command: ['git', 'push'],
  exitCode: 1,
  signal: null,
  timedOut: false,
  cancelled: false,
  durationMs: 12,
  outputTail,
  ...extra,
});

// Real output of git 2.39 (and GitHub's smart HTTP) for each case.
const cases: [string, string, string][] = [
  [
    'git_conflict',
    'lease (stale info)',
    "To ../origin.git\n!\tabc:refs/heads/f\t[rejected] (stale info)\nDone\nerror: failed to push some refs to '../origin.git'",
  ],
  [
    'git_conflict',
    'fetch first',
    '!\tHEAD:refs/heads/f\t[rejected] (fetch first)\nhint: Updates were rejected because the remote contains work',
  ],
  ['git_conflict', 'non-fast-forward', ' ! [rejected]        main -> main (non-fast-forward)'],
  [
    'forge_rejected',
    'checked-out branch',
    '!\tHEAD:refs/heads/f\t[remote rejected] (branch is currently checked out)\nremote: error: refusing to update checked out branch: refs/heads/f',
  ],
  ['forge_rejected', 'hook', '!\tHEAD:refs/heads/f\t[remote rejected] (pre-receive hook declined)'],
  ['forge_rejected', 'auth', "fatal: Authentication failed for 'https://github.com/acme/widgets.git/'"],
  ['forge_rejected', 'no prompt', "fatal: could not read Username for 'https://github.com': terminal prompts disabled"],
  [
    'forge_not_found',
    'local path',
    "fatal: '/tmp/nope' does not appear to be a git repository\nfatal: Could not read from remote repository.",
  ],
  [
    'forge_not_found',
    'github',
    "remote: Repository not found.\nfatal: repository 'https://github.com/acme/nope.git/' not found",
  ],
  [
    'network',
    'dns',
    "fatal: unable to access 'https://github.com/acme/widgets.git/': Could not resolve host: github.com",
  ],
  [
    'network',
    '5xx',
    'error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502\nfatal: the remote end hung up unexpectedly',
  ],
  ['git_failed', 'anything else', 'fatal: bad object 0000000000000000000000000000000000000000'],
];

describe('gitFailure', () => {
  it.each(cases)('maps to %s: %s', (code, _what, output) => {
    expect(gitFailure('push', failed(output))).toMatchObject({ code, details: { operation: 'push', exit_code: 1 } });
  });

  it('reports cancellation, timeouts and a missing binary from the process facts', () => {
    expect(gitFailure('push', failed('', { cancelled: true, exitCode: null, signal: 'SIGTERM' })).code).toBe(
      'cancelled',
    );
    expect(gitFailure('push', failed('', { timedOut: true, exitCode: 124 }))).toMatchObject({
      code: 'git_failed',
      verdict: 'transient',
      message: expect.stringContaining('timed out'),
    });
    expect(gitFailure('push', failed('', { exitCode: null, spawnError: 'spawn git ENOENT' })).message).toContain(
      'PATH',
    );
  });

  it('quotes git diagnostics only, redacted and bounded', () => {
    const noise = 'hint: try again\n'.repeat(2_000);
    const error = gitFailure(
      'push',
      failed(`${noise}fatal: unable to access 'https://bot:ghp_TOKEN@github.com/a/b.git/': Could not resolve host`),
    );
    expect(error.code).toBe('network');
    expect(error.message).not.toContain('ghp_TOKEN');
    expect(error.message).not.toContain('hint:');
    expect(error.message.length).toBeLessThan(800);
  });
});

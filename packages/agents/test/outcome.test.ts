import { describe, expect, it } from '@jest/globals';
import { decideOutcome, type OutcomeFacts } from '../src/index.js';

const ok: OutcomeFacts['process'] = { exitCode: 0, signal: null, timedOut: false, cancelled: false, outputTail: '' };
const facts = (
  process: Partial<OutcomeFacts['process']>,
  changes: OutcomeFacts['changes'] = { files: ['a.ts'] },
): OutcomeFacts => ({
  process: { ...ok, ...process },
  changes,
  program: 'agent',
  timeoutMs: 1_500,
});

describe('decideOutcome', () => {
  it.each<[string, OutcomeFacts, ReturnType<typeof decideOutcome>]>([
    ['exit 0 with changes', facts({}), { outcome: 'changed' }],
    [
      'exit 0 without changes',
      facts({}, { files: [] }),
      { outcome: 'no_changes', detail: 'exited 0 without changing any file' },
    ],
    ['non-zero exit, even with changes', facts({ exitCode: 1 }), { outcome: 'failed', detail: 'exited with code 1' }],
    [
      'timeout',
      facts({ exitCode: 124, timedOut: true, signal: 'SIGTERM' }),
      { outcome: 'timeout', detail: 'timed out after 1.5 s; process tree killed' },
    ],
    [
      'abort, even if the timeout fired too',
      facts({ exitCode: 124, timedOut: true, cancelled: true }),
      { outcome: 'error', detail: 'cancelled' },
    ],
    [
      'a binary that is not there: permanent',
      facts({ exitCode: null, spawnError: 'spawn agent ENOENT' }),
      { outcome: 'error', detail: 'could not start agent: spawn agent ENOENT', permanent: true },
    ],
    [
      'a binary the sandbox does not show: permanent',
      facts({
        exitCode: null,
        spawnError:
          "agent is at /home/u/bin/agent, which the sandbox does not show; add its directory (or its toolchain's) to sandbox.read_paths",
      }),
      {
        outcome: 'error',
        detail:
          "could not start agent: agent is at /home/u/bin/agent, which the sandbox does not show; add its directory (or its toolchain's) to sandbox.read_paths",
        permanent: true,
      },
    ],
    [
      'a host short of processes: may pass',
      facts({ exitCode: null, spawnError: 'spawn agent EAGAIN' }),
      { outcome: 'error', detail: 'could not start agent: spawn agent EAGAIN' },
    ],
    [
      'stopped by the sandbox at a limit: fed back, not a crash',
      facts({ exitCode: null, signal: 'SIGKILL', resourceLimit: { limit: 'processes', max: 512, seen: 530 } }),
      { outcome: 'failed', detail: 'resource_limit: stopped by the sandbox at its processes limit' },
    ],
    [
      'a signal from elsewhere',
      facts({ exitCode: null, signal: 'SIGKILL' }),
      { outcome: 'error', detail: 'killed by SIGKILL' },
    ],
    [
      'changes that cannot be listed',
      facts({}, { error: 'git status failed' }),
      { outcome: 'error', detail: 'could not list changed files: git status failed' },
    ],
    [
      'a failure when changes cannot be listed',
      facts({ exitCode: 3 }, { error: 'x' }),
      { outcome: 'failed', detail: 'exited with code 3' },
    ],
  ])('%s', (_name, input, expected) => {
    expect(decideOutcome(input)).toEqual(expected);
  });
});

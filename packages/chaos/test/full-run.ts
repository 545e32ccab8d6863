import { fileURLToPath } from 'node:url';
import { expect } from '@jest/globals';
import { startFixture } from '@codefleet/testkit';

// The chaos run at CI size (`npm run chaos` runs 100 jobs per engine): real worker
// processes, a real redis-server with AOF, the fauxqs SQS emulator, SIGKILL / SIGSTOP /
// Redis restarts, and the ledger audit. The harness is the built program itself.
export const harness = fileURLToPath(new URL('../dist/chaos.js', import.meta.url));

/** The harness's environment: only what it needs to find git and node. */
export const harnessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };

/**
 * Runs the CI-size chaos run (30 jobs, 4 workers) on one engine and asserts its verdict:
 * nothing lost, unexpected, duplicated or orphaned, and some job through. Pass or fail never
 * rests on the machine's speed: jobs still queued or running at the run's deadline are
 * reported as unfinished, not lost, and every fault is injected by then whatever the
 * progress. That some job got all the way through (of 30, in minutes) is the one thing
 * asked of the fleet's pace: a fleet that delivers nothing loses nothing either. A run with
 * none through by its deadline goes on without faults until one is, for as long again (the
 * tests' 20-minute timeouts only catch a hang).
 * Resolves the run's output lines, for the faults an engine must have seen.
 */
export async function expectCleanRun(engine: 'bullmq' | 'sqs'): Promise<readonly string[]> {
  const run = startFixture(harness, ['--jobs', '30', '--workers', '4', '--engine', engine], { env: harnessEnv });
  const exit = await run.exited;
  const verdicts = run.lines.filter((line) => line.startsWith('chaos '));
  // The whole output on failure: which faults were injected and where the run was kept.
  expect({
    exit: exit.exitCode,
    verdicts,
    log: exit.exitCode === 0 ? '' : `${run.lines.join('\n')}\n${run.stderr.slice(-3_000)}`,
  }).toEqual({
    exit: 0,
    verdicts: [
      expect.stringMatching(
        new RegExp(
          `^chaos ${engine}: lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 unfinished=\\d+ \\(succeeded=[1-9]`,
        ),
      ),
    ],
    log: '',
  });
  expect(run.lines.filter((line) => line.includes('SIGSTOP')).length).toBeGreaterThan(0);
  // Workers were killed mid-run (one per two jobs through, or one per 30 s without them).
  const kills = /; (\d+) workers SIGKILLed/.exec(run.lines.find((line) => line.includes('workers SIGKILLed')) ?? '');
  expect(Number(kills?.[1] ?? 0)).toBeGreaterThan(0);
  return run.lines;
}

import { describe, expect, it } from '@jest/globals';
import { startFixture } from '@codefleet/testkit';
import { harness, harnessEnv } from './full-run.js';

// A chaos run stopped early (its own file, so that jest runs it beside the full run).
describe('chaos run stopped at its deadline', () => {
  it('stopped at a deadline with jobs left: they are unfinished, found in the queue, and the run passes', async () => {
    // Three seconds is far too short for 30 jobs through worker processes: most are still
    // queued or running when the fleet is stopped, and the audit finds each in BullMQ and SQS.
    const run = startFixture(harness, ['--jobs', '30', '--workers', '4', '--engine', 'both', '--deadline', '3'], {
      env: harnessEnv,
    });
    const exit = await run.exited;
    const counts = run.lines
      .filter((line) => line.startsWith('chaos '))
      .map((line) => {
        const match =
          /^chaos (\w+): lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 unfinished=(\d+) \(succeeded=(\d+) /.exec(
            line,
          );
        return match ? { engine: match[1], accounted: Number(match[2]) + Number(match[3]) } : line;
      });
    expect({
      exit: exit.exitCode,
      counts,
      log: exit.exitCode === 0 ? '' : `${run.lines.join('\n')}\n${run.stderr.slice(-3_000)}`,
    }).toEqual({
      exit: 0,
      counts: [
        { engine: 'bullmq', accounted: 30 },
        { engine: 'sqs', accounted: 30 },
      ],
      log: '',
    });
  });
});

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { startFixture } from '@codefleet/testkit';

// The chaos run at CI size (`npm run chaos` runs 100 jobs per engine): real worker
// processes, a real redis-server with AOF, the fauxqs SQS emulator, SIGKILL / SIGSTOP /
// Redis restarts, and the ledger audit. The harness is the built program itself.
const harness = fileURLToPath(new URL('../dist/chaos.js', import.meta.url));

// Pass or fail never rests on the machine's speed: jobs still queued or running at the
// run's deadline are reported as unfinished, not lost, and every fault is injected by then
// whatever the progress. That some job got all the way through (of 30, in minutes) is the
// one thing asked of the fleet's pace: a fleet that delivers nothing loses nothing either.
describe('chaos run (CI size)', () => {
  it('30 jobs, 4 workers, on BullMQ and on SQS: nothing lost, unexpected, duplicated or orphaned', async () => {
    const run = startFixture(harness, ['--jobs', '30', '--workers', '4', '--engine', 'both'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    });
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
          /^chaos bullmq: lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 unfinished=\d+ \(succeeded=[1-9]/,
        ),
        expect.stringMatching(
          /^chaos sqs: lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 unfinished=\d+ \(succeeded=[1-9]/,
        ),
      ],
      log: '',
    });
    expect(run.lines.some((line) => line.includes('SIGKILL redis-server'))).toBe(true);
    expect(run.lines.filter((line) => line.includes('SIGSTOP')).length).toBeGreaterThan(0);
  }, 600_000);

  it('stopped at a deadline with jobs left: they are unfinished, found in the queue, and the run passes', async () => {
    // Three seconds is far too short for 30 jobs through worker processes: most are still
    // queued or running when the fleet is stopped, and the audit finds each in BullMQ and SQS.
    const run = startFixture(harness, ['--jobs', '30', '--workers', '4', '--engine', 'both', '--deadline', '3'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
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
  }, 300_000);
});

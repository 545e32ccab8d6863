import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { startFixture } from '@codefleet/testkit';

// The chaos run at CI size (`npm run chaos` runs 100 jobs per engine): real worker
// processes, a real redis-server with AOF, the fauxqs SQS emulator, SIGKILL / SIGSTOP /
// Redis restarts, and the ledger audit. The harness is the built program itself.
const harness = fileURLToPath(new URL('../dist/chaos.js', import.meta.url));

describe('chaos run (CI size)', () => {
  it('30 jobs, 4 workers, on BullMQ and on SQS: nothing lost, unexpected, duplicated or orphaned', async () => {
    const run = startFixture(harness, ['--jobs', '30', '--workers', '4', '--engine', 'both'], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' } });
    const exit = await run.exited;
    const verdicts = run.lines.filter((line) => line.startsWith('chaos '));
    // The whole output on failure: which faults were injected and where the run was kept.
    expect({ exit: exit.exitCode, verdicts, log: exit.exitCode === 0 ? '' : `${run.lines.join('\n')}\n${run.stderr.slice(-3_000)}` }).toEqual({
      exit: 0,
      verdicts: [
        expect.stringMatching(/^chaos bullmq: lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 /),
        expect.stringMatching(/^chaos sqs: lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 /),
      ],
      log: '',
    });
    expect(run.lines.some((line) => line.includes('SIGKILL redis-server'))).toBe(true);
    expect(run.lines.filter((line) => line.includes('SIGSTOP')).length).toBeGreaterThan(0);
  }, 600_000);
});

import { setTimeout as sleep } from 'node:timers/promises';
import type { startRedis } from '@codefleet/testkit';
import { readLedger } from './audit.js';
import type { Fleet } from './fleet.js';
import { leaseSeconds, type Engine } from './setup.js';

/** What {@link injectFaults} acts on. */
export interface FaultTarget {
  engine: Engine;
  fleet: Fleet;
  redis: Awaited<ReturnType<typeof startRedis>>;
  ledgerPath: string;
  jobCount: number;
  deadlineMs: number;
  /** How many jobs have succeeded so far. */
  done: () => Promise<number>;
  log: (line: string) => void;
}

/** How long after its agent claimed a job a worker counts as mid-job (jobs take seconds). */
const midJobMs = 5_000;
/** Jobs through between two worker kills (30 jobs: about 15 kills). */
const killEveryJobs = 2;
/**
 * The longest time without a kill while faults run, however slow the progress. Not shorter:
 * at 10 s, a machine loaded to an average of 30 restarted its workers faster than any could
 * finish a job (30 jobs, 4 claims, none through in the run's 180 s).
 */
const killEveryMs = 30_000;

/**
 * Runs the faults until every job succeeded or the deadline passed: workers SIGKILLed at
 * random, Redis SIGKILLed and restarted once (BullMQ run), one worker SIGSTOPped mid-job
 * past its lease; a worker that exits by itself is restarted. A run with no job through by
 * the deadline (a machine too loaded for the fleet to finish one amid the faults) goes on
 * without faults, healing, until one is, for at most as long again. Resolves what was done
 * and whether the deadline ended it.
 */
export async function injectFaults(
  target: FaultTarget,
): Promise<{ kills: number; crashes: number; pastDeadline: boolean }> {
  const { engine, fleet, redis, ledgerPath, jobCount, deadlineMs, done, log } = target;
  const started = Date.now();
  const deadline = started + deadlineMs;
  const overtime = deadline + deadlineMs;
  let kills = 0;
  let crashes = 0;
  let redisKilled = engine !== 'bullmq';
  let paused = false;
  let lastKill = { at: Date.now(), finished: 0 };
  for (;;) {
    const finished = await done();
    if (finished === jobCount) break;
    if (Date.now() > deadline && (finished > 0 || Date.now() > overtime)) break;
    // Faults follow progress, or time where the machine is too loaded for progress to get
    // there: a slow run meets every fault as well, and still has its last fifth to heal.
    const phase = Math.max(finished / jobCount, (Date.now() - started) / (deadline - started));
    // A worker that died by itself is restarted, as systemd or launchd would; it counts.
    for (const w of fleet.workers.filter((x) => !x.alive && !x.killed)) {
      w.killed = true;
      crashes += 1;
      log(`${w.name} exited on its own (see ${w.name}.log); restarting`);
      fleet.start();
    }
    // Chaos in the first 80% of the run; the rest heals and drains.
    if (phase < 0.8) {
      if (!redisKilled && phase >= 0.3) {
        redisKilled = true;
        log('SIGKILL redis-server, restart in 1 s (AOF on)');
        await redis.kill('SIGKILL');
        await sleep(1_000);
        await redis.restart();
      }
      if (!paused && phase >= 0.45) {
        // The live worker whose agent claimed a job last, within a job's time: mid-job. (Only
        // claims of the last second, as before, could all fall between two looks at a loaded
        // machine's pace, and the run then had no SIGSTOP at all.)
        const live = fleet.live();
        const last = readLedger(ledgerPath)
          .filter((e) => e.ev === 'claim' && Date.now() - e.at < midJobMs && live.some((w) => w.pid === e.pid))
          .at(-1);
        const victim = live.find((w) => w.pid === last?.pid);
        if (victim) {
          paused = true;
          log(
            `SIGSTOP ${victim.name} mid-job for ${leaseSeconds * 3} s (its lease is ${leaseSeconds} s), then SIGCONT`,
          );
          victim.child.kill('SIGSTOP');
          setTimeout(() => victim.child.kill('SIGCONT'), leaseSeconds * 3_000);
        }
      }
      if (killDue(lastKill, finished)) {
        const candidates = fleet.live();
        const victim = candidates[Math.floor(Math.random() * candidates.length)];
        if (victim) {
          kills += 1;
          victim.killed = true;
          victim.child.kill('SIGCONT');
          victim.child.kill('SIGKILL');
          await victim.exited;
          fleet.start();
        }
        lastKill = { at: Date.now(), finished };
      }
    }
    await sleep(250);
  }
  return { kills, crashes, pastDeadline: Date.now() > deadline };
}

/**
 * Whether the next worker (a random one) is SIGKILLed now: once `killEveryJobs` more jobs went
 * through since the last kill, or after `killEveryMs` without that, so a stalled fleet meets
 * faults too. Kills follow progress, not the clock: paced by the clock (one every 1–3 s) a
 * run killed 49 workers for 30 jobs, each restart a whole CLI start, and on a slower machine
 * more still.
 */
function killDue(last: { at: number; finished: number }, finished: number): boolean {
  return Date.now() - last.at >= killEveryMs || finished - last.finished >= killEveryJobs;
}

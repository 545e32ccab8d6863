/**
 * A claimer process for the conformance suite: opens the queue from JSON settings and
 * either drains it (claim → ack until idle) or claims one job and holds it forever so the
 * suite can SIGKILL it mid-lease. Speaks one line per event on stdout.
 */
import { existsSync } from 'node:fs';
import { openQueue } from '../open-queue.js';
import type { QueueSettings } from '../settings.js';

interface ClaimerArgs {
  settings: QueueSettings;
  workerId: string;
  mode: 'drain' | 'hold';
  /** drain: exit after this long without a job. */
  idleMs?: number;
  /** drain: how long the first claim waits, when jobs are enqueued only after every claimer is ready. */
  firstWaitMs?: number;
  /** drain: print only the final count (benchmarks). */
  quiet?: boolean;
  /**
   * drain: hold the first job claimed until this file exists: the suite waits until every
   * claimer holds one, so each of them provably works at the same time, whatever the load.
   */
  goFile?: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ClaimerArgs;
const queue = await openQueue(args.settings);
console.log('ready');

if (args.mode === 'hold') {
  const lease = await queue.claim({ workerId: args.workerId, waitMs: 10_000 });
  console.log(lease ? `claimed ${lease.job.id} ${lease.attempt}` : 'none');
  // Keep the lease without heartbeats until killed.
  setInterval(() => {}, 60_000);
} else {
  const idleMs = args.idleMs ?? 1_500;
  let count = 0;
  for (;;) {
    const waitMs = count === 0 ? (args.firstWaitMs ?? idleMs) : idleMs;
    const lease = await queue.claim({ workerId: args.workerId, waitMs });
    if (!lease) break;
    if (!args.quiet) console.log(`claimed ${lease.job.id} ${lease.attempt}`);
    if (count === 0 && args.goFile !== undefined) {
      const go = args.goFile;
      // Heartbeats keep the held job ours while the others claim theirs.
      while (!existsSync(go)) {
        await lease.heartbeat();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    await lease.ack();
    count += 1;
    if (!args.quiet) console.log(`acked ${lease.job.id}`);
  }
  await queue.close();
  console.log(`idle ${count}`);
}

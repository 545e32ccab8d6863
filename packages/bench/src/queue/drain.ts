/**
 * One worker process of the queue bench: opens the queue from JSON settings, prints `ready`,
 * then claims and acks until no job came for `idleMs`, and prints `idle <count>`. Nothing
 * per job is printed, so the figure is the queue's cost, not the pipe's.
 */
import { openQueue, type QueueSettings } from '@codefleet/queue';

const args = JSON.parse(process.argv[2] ?? '{}') as { settings: QueueSettings; workerId: string; idleMs: number };
const queue = await openQueue(args.settings);
console.log('ready');
let count = 0;
for (;;) {
  const lease = await queue.claim({ workerId: args.workerId, waitMs: args.idleMs });
  if (!lease) break;
  await lease.ack();
  count += 1;
}
await queue.close();
console.log(`idle ${count}`);

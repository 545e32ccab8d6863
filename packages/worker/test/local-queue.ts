import { join } from 'node:path';
import { LocalQueue } from '@codefleet/queue';

/**
 * The worker tests' queue: SQLite in `dir`, short leases (2 s unless given) and polls, three
 * attempts. Queues with other leases in the same `dir` are separate queues.
 */
export function localQueue(dir: string, leaseMs = 2_000): LocalQueue {
  return new LocalQueue({
    backend: 'local',
    path: join(dir, 'q.sqlite'),
    name: leaseMs === 2_000 ? 'w' : `w-${leaseMs}`,
    leaseMs,
    maxAttempts: 3,
    pollMs: 20,
  });
}

import { join } from 'node:path';
import { LocalQueue } from '@codefleet/queue';

/** The worker tests' queue: SQLite in `dir`, short leases and polls, three attempts. */
export function localQueue(dir: string): LocalQueue {
  return new LocalQueue({
    backend: 'local',
    path: join(dir, 'q.sqlite'),
    name: 'w',
    leaseMs: 2_000,
    maxAttempts: 3,
    pollMs: 20,
  });
}

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Config } from '@codefleet/config';
import type { PresenceOptions } from '@codefleet/worker';
import type { RunStore } from '@codefleet/store';

/** The CLI's version, from its package.json (dist/ and src/ are both one level below it). */
function cliVersion(): string {
  try {
    return (
      (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }).version ??
      'unknown'
    );
  } catch {
    return 'unknown';
  }
}

/**
 * This worker process's id and its registry entry. `worker.worker_id` (the host name by
 * default) is shared by every worker on a host, so the id adds the pid and a random part:
 * the registry lists each process, and the attempts it records in runs carry the same id,
 * so a run's worker is found among the live ones.
 */
export function workerIdentity(
  config: Config,
  store: RunStore,
  concurrency: number,
): { id: string; registry: PresenceOptions } {
  const id = `${config.worker.worker_id}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const heartbeatMs = config.queue.heartbeat_seconds * 1000;
  return {
    id,
    registry: {
      store,
      // Three heartbeats missed before the entry disappears: one slow store write never hides a live worker.
      ttlMs: 3 * heartbeatMs,
      info: {
        id,
        host: hostname(),
        pid: process.pid,
        version: cliVersion(),
        queue: config.queue.name,
        backend: config.queue.backend,
        concurrency,
        startedAt: new Date().toISOString(),
      },
    },
  };
}

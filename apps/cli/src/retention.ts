import { retentionChore, type HousekeepingOptions } from '@codefleet/worker';
import type { Runtime } from './runtime.js';

/**
 * The housekeeping of a worker or `serve` from `store.retention`: the run store and the
 * queue trimmed every `interval_minutes`. A worker adds its working copies' cache limits.
 */
export function storeHousekeeping(rt: Runtime): Omit<HousekeepingOptions, 'log' | 'onTrimmed'> {
  const { retention } = rt.config.store;
  return {
    intervalMs: retention.interval_minutes * 60_000,
    chores: [retentionChore(rt.store, rt.queue, { maxAgeDays: retention.max_age_days, maxRuns: retention.max_runs })],
  };
}

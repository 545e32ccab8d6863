import { retentionChore, type HousekeepingOptions, type Trimmed } from '@codefleet/worker';
import type { Runtime } from './runtime.js';

const dayMs = 86_400_000;

/**
 * The housekeeping of a worker or `serve` from `store.retention`: the run store and the
 * queue trimmed every `interval_minutes`. A worker (`cache`) also applies the cache limits
 * of its working copies (`workspace.cache`).
 */
export function storeHousekeeping(
  rt: Runtime,
  options: { cache?: boolean } = {},
): Omit<HousekeepingOptions, 'log' | 'onTrimmed'> {
  const { retention } = rt.config.store;
  const store = retentionChore(rt.store, rt.queue, { maxAgeDays: retention.max_age_days, maxRuns: retention.max_runs });
  return {
    intervalMs: retention.interval_minutes * 60_000,
    chores: options.cache ? [store, () => cacheChore(rt)] : [store],
  };
}

/** One pass of `workspace.cache`'s limits, and the mirrors' upkeep (see `WorkspaceManager.maintain`). */
async function cacheChore(rt: Runtime): Promise<Trimmed> {
  const { max_size_mb: maxMb, max_age_days: maxDays } = rt.config.workspace.cache;
  const workspaces = await rt.workspaces();
  const evicted = await workspaces.evict({
    ...(maxMb === undefined ? {} : { maxBytes: maxMb * 1024 * 1024 }),
    ...(maxDays === 0 ? {} : { maxAgeMs: maxDays * dayMs }),
  });
  if (evicted.mirrors.length > 0)
    rt.log.info(
      { event: 'workspace.evicted', mirrors: evicted.mirrors, cache_bytes: evicted.bytes },
      `evicted ${evicted.mirrors.length} repository cache(s) by workspace.cache`,
    );
  return {
    mirrors: evicted.mirrors.length,
    pooled_copies: evicted.pooledCopies,
    baselines: evicted.baselines,
    mirror_refs: await workspaces.maintain(),
  };
}

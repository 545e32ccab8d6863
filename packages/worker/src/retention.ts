import type * as Prom from 'prom-client';
import type { Registry } from 'prom-client';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { RunStore } from '@codefleet/store';

/** What housekeeping deletes, as the `what` label of `codefleet_retention_trimmed_total`. */
export const trimmedKinds = [
  'runs',
  'journal',
  'request_keys',
  'fence_rejections',
  'queue_completed',
  'dead_letters',
  'mirrors',
  'pooled_copies',
  'baselines',
  'mirror_refs',
] as const;

/** One of {@link trimmedKinds}. */
export type TrimmedKind = (typeof trimmedKinds)[number];

/** What one pass deleted, by kind (kinds it did not touch left out). */
export type Trimmed = Partial<Record<TrimmedKind, number>>;

/** `store.retention`: how long finished work is kept. */
export interface RetentionPolicy {
  /** Runs, journal entries and finished queue jobs older than this go; 0: no age limit. */
  maxAgeDays: number;
  /** The newest this many runs stay, and as many completed queue jobs; unset: no count limit. */
  maxRuns?: number | undefined;
}

/**
 * The retention chore of the run store and the queue: one pass of `store.trim` and
 * `queue.trim` (when the engine keeps finished jobs) under `policy`.
 */
export function retentionChore(
  store: Pick<RunStore, 'trim'>,
  queue: Pick<Queue, 'trim'>,
  policy: RetentionPolicy,
  now: () => number = Date.now,
): () => Promise<Trimmed> {
  return async () => {
    const before = policy.maxAgeDays > 0 ? now() - policy.maxAgeDays * 86_400_000 : undefined;
    const store_ = await store.trim({
      ...(before === undefined ? {} : { before }),
      ...(policy.maxRuns === undefined ? {} : { keepRuns: policy.maxRuns }),
    });
    const queued = await queue.trim?.({
      ...(before === undefined ? {} : { before }),
      ...(policy.maxRuns === undefined ? {} : { keepCompleted: policy.maxRuns }),
    });
    return {
      runs: store_.runs,
      journal: store_.journal,
      request_keys: store_.requestKeys,
      fence_rejections: store_.rejections,
      ...(queued ? { queue_completed: queued.completed, dead_letters: queued.deadLetters } : {}),
    };
  };
}

/** Background chores of a long-lived process (a worker, `serve`). */
export interface HousekeepingOptions {
  /** Each resolves what it trimmed; one failing does not stop the others. */
  chores: readonly (() => Promise<Trimmed>)[];
  intervalMs: number;
  /** The first pass, after start; default a minute, so a start-up is not slowed by it. */
  firstAfterMs?: number;
  log: Logger;
  /** Hears what each pass trimmed (metrics). */
  onTrimmed?: (trimmed: Trimmed) => void;
}

/** Running housekeeping. */
export interface Housekeeping {
  /** One pass now (after the one running, if any); resolves what it trimmed. */
  runNow(): Promise<Trimmed>;
  /** No more passes; waits for the one running. */
  stop(): Promise<void>;
}

/**
 * Runs the chores once `firstAfterMs` after start, then every `intervalMs`, one pass at a
 * time (a slow pass delays the next, never overlaps it). A pass that trimmed something is
 * logged (`retention.trimmed`, with the counts); a chore that failed is logged
 * (`retention.failed`) and tried again at the next pass. The timers never keep the process up.
 */
export function startHousekeeping(options: HousekeepingOptions): Housekeeping {
  const { log } = options;
  let running: Promise<Trimmed> = Promise.resolve({});
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const pass = async (): Promise<Trimmed> => {
    const started = performance.now();
    const trimmed: Trimmed = {};
    for (const chore of options.chores) {
      try {
        for (const [kind, n] of Object.entries(await chore()) as [TrimmedKind, number][])
          trimmed[kind] = (trimmed[kind] ?? 0) + n;
      } catch (err) {
        log.warn({ err, event: 'retention.failed' }, 'a retention chore failed; trying again at the next pass');
      }
    }
    const total = Object.values(trimmed).reduce((sum, n) => sum + n, 0);
    if (total > 0)
      log.info(
        { event: 'retention.trimmed', ...trimmed, duration_ms: Math.round(performance.now() - started) },
        `retention: deleted ${total} old item(s)`,
      );
    options.onTrimmed?.(trimmed);
    return trimmed;
  };
  const runNow = () => {
    running = running.then(pass, pass);
    return running;
  };
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void runNow().finally(() => schedule(options.intervalMs)), ms);
    timer.unref();
  };
  schedule(options.firstAfterMs ?? 60_000);
  return {
    runNow,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running.catch(() => undefined);
    },
  };
}

/**
 * `codefleet_retention_trimmed_total{what}` on `registry`, every kind at 0 from the start;
 * resolves the function that counts a pass.
 */
export function retentionCounter(prom: typeof Prom, registry: Registry): (trimmed: Trimmed) => void {
  const counter = new prom.Counter({
    name: 'codefleet_retention_trimmed_total',
    help: 'What retention deleted: runs, journal entries, request keys, rejected late writes, completed queue jobs, dead letters (store.retention); mirrors, pooled copies and baselines evicted (workspace.cache); work branches of finished jobs deleted from mirrors.',
    labelNames: ['what'],
    registers: [registry],
  });
  for (const what of trimmedKinds) counter.inc({ what }, 0);
  return (trimmed) => {
    for (const [what, n] of Object.entries(trimmed)) if (n > 0) counter.inc({ what }, n);
  };
}

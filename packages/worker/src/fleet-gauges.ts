import type * as Prom from 'prom-client';
import type { Registry } from 'prom-client';
import type { Queue, QueueStats } from '@codefleet/queue';

/**
 * Where the fleet-wide gauges come from, read at scrape time. `liveWorkers` counts the
 * workers registered in the run store (the store's worker registry); without it the gauge
 * is not exported.
 */
export interface MetricSources {
  queue: Queue;
  liveWorkers?: () => Promise<number>;
  /** What the fleet spent today (UTC) in US dollars, from the run store's ledger; without it the gauge is not exported. */
  spentToday?: () => Promise<number>;
  now?: () => number;
}

/**
 * The gauges of the whole fleet, read from their sources at scrape time (queue depth is the
 * fleet's, not this process's). A gauge whose source is not given is not exported; one whose
 * source fails reads NaN.
 */
export function registerFleetGauges(
  prom: typeof Prom,
  registers: Registry[],
  sources: MetricSources,
  now: () => number,
): void {
  const { Gauge } = prom;
  // A scrape collects every metric at once: the gauges share one stats call.
  let pending: Promise<QueueStats | undefined> | undefined;
  const stats = () =>
    (pending ??= sources.queue
      .stats()
      .catch(() => undefined)
      .finally(() => {
        pending = undefined;
      }));
  new Gauge({
    name: 'codefleet_queue_depth',
    help: 'Jobs waiting in the queue (ready and delayed).',
    registers,
    async collect() {
      this.set((await stats())?.depth ?? Number.NaN);
    },
  });
  new Gauge({
    name: 'codefleet_queue_dead_letters',
    help: 'Jobs in the dead-letter queue.',
    registers,
    async collect() {
      this.set((await stats())?.deadLetter ?? Number.NaN);
    },
  });
  new Gauge({
    name: 'codefleet_queue_oldest_age_seconds',
    help: 'Age of the oldest ready or delayed job; 0 when none waits.',
    registers,
    async collect() {
      const s = await stats();
      // A queue that cannot say how old its waiting jobs are reads NaN here, never a made-up 0.
      const oldest = s?.oldestQueuedAt;
      if (s === undefined || (oldest === undefined && s.depth > 0)) this.set(Number.NaN);
      else this.set(oldest === undefined ? 0 : Math.max(0, (now() - oldest) / 1_000));
    },
  });
  const { liveWorkers } = sources;
  if (liveWorkers) {
    new Gauge({
      name: 'codefleet_workers_live',
      help: "Workers registered in the run store whose heartbeat has not expired (the fleet's, not this process's).",
      registers,
      async collect() {
        this.set(await liveWorkers().catch(() => Number.NaN));
      },
    });
  }
  const { spentToday } = sources;
  if (spentToday) {
    new Gauge({
      name: 'codefleet_spend_today_usd',
      help: "US dollars the fleet's agent runs cost so far this UTC day (the run store's ledger; costs.budget_usd.day pauses claiming).",
      registers,
      async collect() {
        this.set(await spentToday().catch(() => Number.NaN));
      },
    });
  }
}

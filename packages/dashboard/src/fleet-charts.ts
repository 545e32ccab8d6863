import { runningStages, type RunOutcome, type Stage } from '@codefleet/core';
import { durationBuckets, utcDay, type DayStats, type FleetStats } from '@codefleet/store';
import type { DashboardDeps } from './deps.js';

// What the overview's charts show, from the store's day totals (fleetStats: 30 small reads,
// never the runs of 30 days), read at most once per `statsMaxAgeMs` per store however many
// tabs are open: the totals move when a run finishes, and a chart a minute old is current.

/** Days the charts cover, today included. */
export const chartDays = 30;

/** How long a read of the totals is reused, by default. */
const defaultMaxAgeMs = 60_000;

/** One stage's time per day: the median and the 95th percentile, in seconds. */
interface StageDurations {
  stage: Stage;
  p50: (number | undefined)[];
  p95: (number | undefined)[];
  /** Over all the days. */
  overall: { p50?: number; p95?: number };
}

/** What the charts and the spend summary show. */
export interface FleetCharts {
  /** UTC days, oldest first; today last. */
  days: string[];
  spend: { todayUsd: number; weekUsd: number; monthUsd: number; dayBudgetUsd?: number };
  top: FleetStats['top'];
  /** Runs finished per UTC hour by outcome, oldest first (24 per day). */
  hours: Partial<Record<RunOutcome, number>>[];
  /** Succeeded / finished, per day; undefined for a day without a finished run. */
  successRate: (number | undefined)[];
  stages: StageDurations[];
  costPerDay: number[];
}

/**
 * The `q` quantile (0–1) of a histogram of {@link durationBuckets} counts (and the one past
 * them), interpolated within its bucket as Prometheus' histogram_quantile does, so the
 * dashboard and Grafana agree; a quantile in the last, unbounded bucket is its lower bound.
 */
export function quantile(counts: readonly number[], q: number): number | undefined {
  const total = counts.reduce((sum, n) => sum + n, 0);
  if (total <= 0) return undefined;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i += 1) {
    const n = counts[i] ?? 0;
    if (n > 0 && below + n >= rank) {
      const lower = i === 0 ? 0 : (durationBuckets[i - 1] ?? 0);
      const upper = durationBuckets[i] ?? lower;
      return lower + (upper - lower) * ((rank - below) / n);
    }
    below += n;
  }
  return durationBuckets[durationBuckets.length - 1];
}

const sumCounts = (lists: readonly (readonly number[] | undefined)[]) =>
  lists.reduce<number[]>(
    (sum, list) => sum.map((n, i) => n + (list?.[i] ?? 0)),
    durationBuckets.map(() => 0).concat(0),
  );

/** The charts of the days read (oldest first). */
export function chartsOf(stats: FleetStats, dayBudgetUsd: number | undefined): FleetCharts {
  const { days } = stats;
  const spent = days.map((d) => d.spentUsd);
  const sumLast = (n: number) => spent.slice(-n).reduce((a, b) => a + b, 0);
  const finishedOn = (d: DayStats) =>
    d.hours.reduce((sum, h) => sum + Object.values(h).reduce((a, b) => a + (b ?? 0), 0), 0);
  const succeededOn = (d: DayStats) => d.hours.reduce((sum, h) => sum + (h.succeeded ?? 0), 0);
  return {
    days: days.map((d) => d.day),
    spend: {
      todayUsd: sumLast(1),
      weekUsd: sumLast(7),
      monthUsd: sumLast(chartDays),
      ...(dayBudgetUsd === undefined ? {} : { dayBudgetUsd }),
    },
    top: stats.top,
    hours: days.flatMap((d) => d.hours),
    successRate: days.map((d) => (finishedOn(d) === 0 ? undefined : succeededOn(d) / finishedOn(d))),
    stages: (runningStages as readonly Stage[]).map((stage) => {
      const overall = sumCounts(days.map((d) => d.stages[stage]));
      const p50 = quantile(overall, 0.5);
      const p95 = quantile(overall, 0.95);
      return {
        stage,
        p50: days.map((d) => quantile(d.stages[stage] ?? [], 0.5)),
        p95: days.map((d) => quantile(d.stages[stage] ?? [], 0.95)),
        overall: { ...(p50 === undefined ? {} : { p50 }), ...(p95 === undefined ? {} : { p95 }) },
      };
    }),
    costPerDay: spent,
  };
}

const cache = new WeakMap<object, { at: number; today: string; charts: Promise<FleetCharts> }>();

/** The charts of the last {@link chartDays} days, reused for `statsMaxAgeMs` (and within one UTC day). */
export function readFleetCharts(
  deps: Pick<DashboardDeps, 'store' | 'dayBudgetUsd' | 'statsMaxAgeMs'>,
  now: number,
): Promise<FleetCharts> {
  const today = utcDay(new Date(now));
  const held = cache.get(deps.store);
  if (held !== undefined && held.today === today && now - held.at < (deps.statsMaxAgeMs ?? defaultMaxAgeMs))
    return held.charts;
  const from = utcDay(new Date(now - (chartDays - 1) * 86_400_000));
  const charts = deps.store.fleetStats({ from, to: today }).then((stats) => chartsOf(stats, deps.dayBudgetUsd));
  cache.set(deps.store, { at: now, today, charts });
  // A failed read is not kept: the next view tries again.
  charts.catch(() => {
    if (cache.get(deps.store)?.charts === charts) cache.delete(deps.store);
  });
  return charts;
}

import {
  CodefleetError,
  isTerminal,
  runOutcomes,
  stages,
  type RunOutcome,
  type RunRecord,
  type Stage,
} from '@codefleet/core';
import { checkSpend, utcDay } from './spend.js';

// The fleet's rolling totals per UTC day, kept beside the runs so a chart of 30 days reads
// 30 small rows (SQLite) or hashes (Redis), never the runs of 30 days: each day holds named
// numeric fields, added to when a run finishes (its outcome in its hour, each stage's time in
// a duration bucket) and when money is spent (by repository, agent and model). Both adapters
// store exactly these fields; this file names them and reads them back.

/** Upper bounds (seconds) of the stage-duration buckets; a last, unbounded bucket follows. */
export const durationBuckets = [1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200] as const;

/** Days a day's totals are kept: the charts show 30, the rest is slack for time zones and late writes. */
export const statsDays = 40;

/** The most days one `fleetStats` read covers. */
const maxDays = 62;

/** What money is attributed to; each gets a top list. */
export const spendFacets = ['repo', 'agent', 'model'] as const;
/** What money is attributed to. */
export type SpendFacet = (typeof spendFacets)[number];

/** Who an amount of spend goes to (`addSpend`); a missing facet is simply not attributed. */
export type SpendBy = Partial<Record<SpendFacet, string>>;

/** Attributed names are cut to this: a repository or model name, never a document. */
const maxKey = 200;

/** One UTC day's totals. */
export interface DayStats {
  /** `YYYY-MM-DD`. */
  day: string;
  /** The spend ledger's total for the day (`spentOn`). */
  spentUsd: number;
  /** Runs that finished in each hour of the day (index 0–23), by outcome. */
  hours: Partial<Record<RunOutcome, number>>[];
  /** Per stage, how many runs spent a time in each of {@link durationBuckets} (and the one past them). */
  stages: Partial<Record<Stage, number[]>>;
}

/** The totals of the days `fleetStats` read, oldest first, and the biggest spenders over them. */
export interface FleetStats {
  days: DayStats[];
  /** Per facet, the names that spent most over the days read, most first, at most `top` of them. */
  top: Record<SpendFacet, { name: string; usd: number }[]>;
}

/**
 * The fleet's totals per UTC day (see {@link DayStats}), for charts and spend summaries, read
 * in one bounded step: at most 62 days. Runs count when their record is first saved finished
 * (once per run id, within {@link statsDays} of finishing); money when `addSpend` is told who spent it.
 */
export interface FleetStatsReader {
  /** The days from `from` to `to` (`YYYY-MM-DD`, inclusive); `top` (default 5, at most 50) names per facet. */
  fleetStats(range: { from: string; to: string; top?: number }): Promise<FleetStats>;
}

/** What a finished run adds to its days: one day, and the fields to add 1 to. */
export interface FinishedFields {
  day: string;
  /** Epoch ms the run finished. */
  at: number;
  fields: string[];
}

const outcomeField = (hour: number, outcome: string) => `runs:${String(hour).padStart(2, '0')}:${outcome}`;
const stageField = (stage: string, bucket: number) => `stage:${stage}:${bucket}`;
/** The field of `name`'s spend in `facet`. */
const spendField = (facet: SpendFacet, name: string) => `spend:${facet}:${name.slice(0, maxKey)}`;

/** The bucket of a duration in seconds: the first bound it does not exceed, else the last. */
function bucketOf(seconds: number): number {
  const i = durationBuckets.findIndex((bound) => seconds <= bound);
  return i === -1 ? durationBuckets.length : i;
}

/**
 * What a finished run adds to the totals: its outcome in the hour it finished (it entered its
 * terminal stage), and the time it spent in each stage, summed over its attempts. Undefined
 * for a run not finished, or finished longer ago than the totals are kept.
 */
export function finishedFields(run: RunRecord, now: number): FinishedFields | undefined {
  if (!isTerminal(run.stage) || run.outcome === undefined) return undefined;
  const entries = run.stages;
  const end = Date.parse(entries[entries.length - 1]?.at ?? run.updated_at);
  if (!Number.isFinite(end) || now - end > statsDays * 86_400_000) return undefined;
  const spent = new Map<Stage, number>();
  for (let i = 0; i + 1 < entries.length; i += 1) {
    const from = Date.parse(entries[i]!.at);
    const to = Date.parse(entries[i + 1]!.at);
    const stage = entries[i]!.stage;
    if (stage === 'queued' || !Number.isFinite(from) || !(to >= from)) continue;
    spent.set(stage, (spent.get(stage) ?? 0) + (to - from));
  }
  const at = new Date(end);
  return {
    day: utcDay(at),
    at: end,
    fields: [
      outcomeField(at.getUTCHours(), run.outcome),
      ...[...spent].map(([stage, ms]) => stageField(stage, bucketOf(ms / 1_000))),
    ],
  };
}

/** The days of a range, oldest first; a bad or too long range is refused (`invalid_job`). */
export function daysOf(range: { from: string; to: string }): string[] {
  checkSpend(range.from);
  checkSpend(range.to);
  const from = Date.parse(`${range.from}T00:00:00Z`);
  const to = Date.parse(`${range.to}T00:00:00Z`);
  const count = Math.round((to - from) / 86_400_000) + 1;
  if (!Number.isFinite(count) || count < 1 || count > maxDays) {
    throw new CodefleetError(
      'invalid_job',
      `a stats range is 1 to ${maxDays} days, from ≤ to; got ${range.from} to ${range.to}`,
      { verdict: 'permanent' },
    );
  }
  return Array.from({ length: count }, (_, i) => utcDay(new Date(from + i * 86_400_000)));
}

const knownOutcomes = new Set<string>(runOutcomes);
const knownStages = new Set<string>(stages);

/** One day's stored fields as {@link DayStats}; fields this version does not know are left out. */
function dayOf(day: string, spentUsd: number, fields: Record<string, number>): DayStats {
  const hours: DayStats['hours'] = Array.from({ length: 24 }, () => ({}));
  const perStage: DayStats['stages'] = {};
  for (const [field, value] of Object.entries(fields)) {
    const [kind, a = '', b = ''] = field.split(':');
    if (kind === 'runs' && knownOutcomes.has(b)) {
      const slot = hours[Number(a)];
      if (slot !== undefined) slot[b as RunOutcome] = value;
    } else if (kind === 'stage' && knownStages.has(a)) {
      const counts = (perStage[a as Stage] ??= durationBuckets.map(() => 0).concat(0));
      const i = Number(b);
      if (Number.isInteger(i) && i >= 0 && i < counts.length) counts[i] = value;
    }
  }
  return { day, spentUsd, hours, stages: perStage };
}

/** The stats of the days read, each with its ledger total and stored fields. */
export function statsOf(
  read: { day: string; spentUsd: number; fields: Record<string, number> }[],
  top = 5,
): FleetStats {
  const n = Math.max(1, Math.min(50, Math.floor(top)));
  const sums: Record<SpendFacet, Map<string, number>> = { repo: new Map(), agent: new Map(), model: new Map() };
  for (const { fields } of read) {
    for (const [field, value] of Object.entries(fields)) {
      if (!field.startsWith('spend:')) continue;
      const rest = field.slice('spend:'.length);
      const colon = rest.indexOf(':');
      const facet = rest.slice(0, colon) as SpendFacet;
      const sum = sums[facet];
      if (colon > 0 && sum !== undefined) sum.set(rest.slice(colon + 1), (sum.get(rest.slice(colon + 1)) ?? 0) + value);
    }
  }
  const topOf = (m: Map<string, number>) =>
    [...m]
      .map(([name, usd]) => ({ name, usd }))
      .sort((x, y) => y.usd - x.usd || x.name.localeCompare(y.name))
      .slice(0, n);
  return {
    days: read.map((d) => dayOf(d.day, d.spentUsd, d.fields)),
    top: { repo: topOf(sums.repo), agent: topOf(sums.agent), model: topOf(sums.model) },
  };
}

/** The fields an amount of spend adds to, one per facet named. */
export function spendFields(by: SpendBy | undefined): string[] {
  if (by === undefined) return [];
  return spendFacets.flatMap((facet) => {
    const name = by[facet];
    return name === undefined || name === '' ? [] : [spendField(facet, name)];
  });
}

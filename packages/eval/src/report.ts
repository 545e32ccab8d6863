import { runCostUsd, type RunRecord } from '@codefleet/core';
import type { EvalConfig, EvalTask } from './eval-jobs.js';
import type { Instance } from './task.js';
import {
  pairedComparison,
  percentile,
  summarizeTrials,
  wilsonInterval,
  type Interval,
  type PairedComparison,
  type TrialSummary,
} from './stats.js';

/**
 * Why a trial is not resolved. Infrastructure failures (the worker, git, the forge or the
 * store failed, not the agent) are kept apart: they say nothing of the configuration.
 */
export const failureKinds = [
  'unresolved',
  'no_changes',
  'checks_failed',
  'dod_failed',
  'budget',
  'timeout',
  'infrastructure',
  'unfinished',
] as const;
export type FailureKind = (typeof failureKinds)[number];

/** One trial as the report counts it. */
export interface TrialResult {
  instance: string;
  config: string;
  trial: number;
  resolved: boolean;
  failure?: FailureKind;
  costUsd?: number;
  tokens: number;
  wallMs?: number;
  /** Inner fix attempts past the first, over both passes. */
  fixAttempts: number;
  /** The escalation tier that ran last (0: the first, or no chain). */
  tier: number;
}

const infrastructure = new Set([
  'network',
  'rate_limited',
  'forge_unavailable',
  'forge_rejected',
  'forge_not_found',
  'git_failed',
  'git_conflict',
  'workspace_failed',
  'queue_unavailable',
  'store_unavailable',
  'lease_lost',
  'invalid_job',
  'invalid_config',
  'unknown',
]);

/** Why a run is not resolved, from how it ended; undefined when it is. */
export function failureOf(run: RunRecord | undefined): FailureKind | undefined {
  if (run?.outcome === undefined) return 'unfinished';
  if (run.grade?.resolved === true) return undefined;
  if (run.outcome === 'dod_failed') return 'dod_failed';
  if (run.outcome === 'succeeded') return 'unresolved';
  const code = run.error?.code ?? 'unknown';
  // An agent that never changed a file ran out of fix attempts for nothing: no changes.
  const changedNothing = run.agent_runs.length > 0 && run.agent_runs.every((r) => r.outcome === 'no_changes');
  if (code === 'no_changes' || (code === 'fix_attempts_exhausted' && changedNothing)) return 'no_changes';
  if (code === 'budget_exceeded') return 'budget';
  if (code === 'agent_timeout') return 'timeout';
  if (infrastructure.has(code)) return 'infrastructure';
  return 'checks_failed';
}

/** A trial's numbers from its run record (undefined: it never ran). */
export function trialOf(task: EvalTask, run: RunRecord | undefined): TrialResult {
  const failure = failureOf(run);
  const cost = run === undefined ? undefined : runCostUsd(run);
  const wall = run?.outcome === undefined ? undefined : Date.parse(run.updated_at) - Date.parse(run.created_at);
  return {
    instance: task.instance.instance_id,
    config: task.config.name,
    trial: task.trial,
    resolved: failure === undefined,
    ...(failure === undefined ? {} : { failure }),
    ...(cost === undefined ? {} : { costUsd: cost }),
    tokens: (run?.agent_runs ?? []).reduce(
      (sum, agentRun) => sum + (agentRun.tokens?.prompt ?? 0) + (agentRun.tokens?.completion ?? 0),
      0,
    ),
    ...(wall === undefined || Number.isNaN(wall) ? {} : { wallMs: wall }),
    fixAttempts: (run?.agent_runs ?? []).filter((agentRun) => agentRun.inner_attempt > 1).length,
    tier: Math.max(0, ...(run?.agent_runs ?? []).map((agentRun) => agentRun.tier ?? 0)),
  };
}

/** One configuration's line of the report. */
export interface ConfigSummary {
  config: string;
  trials: TrialSummary;
  /** Resolved share of trials that ran (infrastructure failures and unfinished ones left out). */
  resolved: { count: number; of: number; rate: number | undefined; interval: Interval };
  costUsd: number;
  costPerResolvedUsd: number | undefined;
  tokens: number;
  wallMs: { p50: number | undefined; p95: number | undefined };
  fixAttempts: number;
  tiers: Record<string, number>;
  failures: Partial<Record<FailureKind, number>>;
}

/** The whole report: reproducible from its header. */
export interface EvalReport {
  header: { codefleet: string; suite: string; configs: EvalConfig[]; trials: number; instances: number };
  configs: ConfigSummary[];
  /** Every pair of configurations, on the instances both ran. */
  comparisons: (PairedComparison & { a: string; b: string })[];
  /** The cheapest configuration per resolved task among those reaching the target rate. */
  cheapest?: { target: number; config: string | undefined; reason: string };
}

// Trials that count for a configuration's rates: infrastructure failures and unfinished ones
// say nothing of it.
const counts = (t: TrialResult) => t.failure !== 'infrastructure' && t.failure !== 'unfinished';

function summarize(config: string, results: readonly TrialResult[], ks: readonly number[]): ConfigSummary {
  const mine = results.filter((t) => t.config === config);
  const counted = mine.filter(counts);
  const byInstance = new Map<string, boolean[]>();
  for (const t of counted) byInstance.set(t.instance, [...(byInstance.get(t.instance) ?? []), t.resolved]);
  const resolved = counted.filter((t) => t.resolved).length;
  const cost = mine.reduce((sum, t) => sum + (t.costUsd ?? 0), 0);
  const walls = mine.flatMap((t) => (t.wallMs === undefined ? [] : [t.wallMs]));
  const failures: Partial<Record<FailureKind, number>> = {};
  for (const t of mine) if (t.failure !== undefined) failures[t.failure] = (failures[t.failure] ?? 0) + 1;
  const tiers: Record<string, number> = {};
  for (const t of mine) tiers[String(t.tier)] = (tiers[String(t.tier)] ?? 0) + 1;
  return {
    config,
    trials: summarizeTrials(byInstance, ks),
    resolved: {
      count: resolved,
      of: counted.length,
      rate: counted.length === 0 ? undefined : resolved / counted.length,
      interval: wilsonInterval(resolved, counted.length),
    },
    costUsd: cost,
    costPerResolvedUsd: resolved === 0 ? undefined : cost / resolved,
    tokens: mine.reduce((sum, t) => sum + t.tokens, 0),
    wallMs: { p50: percentile(walls, 50), p95: percentile(walls, 95) },
    fixAttempts: mine.reduce((sum, t) => sum + t.fixAttempts, 0),
    tiers,
    failures,
  };
}

/**
 * The report of an evaluation's trials: per configuration the resolved rate with its Wilson
 * interval, pass@k and pass^k over trials, cost (in all and per resolved task), tokens, wall
 * time, fix attempts, tiers and the failure split; every pair compared on shared instances;
 * and, given `target`, the cheapest configuration reaching that resolved rate.
 */
export function buildReport(
  results: readonly TrialResult[],
  header: EvalReport['header'],
  options: { ks?: readonly number[]; target?: number; seed?: number } = {},
): EvalReport {
  const ks = options.ks ?? [1, header.trials].filter((k, i, all) => all.indexOf(k) === i);
  const configs = header.configs.map((config) => summarize(config.name, results, ks));
  const trialsOf = (config: string) => {
    const map = new Map<string, boolean[]>();
    for (const t of results.filter((r) => r.config === config && counts(r)))
      map.set(t.instance, [...(map.get(t.instance) ?? []), t.resolved]);
    return map;
  };
  const comparisons = header.configs.flatMap((a, i) =>
    header.configs.slice(i + 1).map((b) => ({
      a: a.name,
      b: b.name,
      ...pairedComparison(trialsOf(a.name), trialsOf(b.name), options.seed === undefined ? {} : { seed: options.seed }),
    })),
  );
  return {
    header,
    configs,
    comparisons,
    ...(options.target === undefined ? {} : { cheapest: cheapest(configs, options.target) }),
  };
}

/** The configuration with the lowest cost per resolved task among those whose rate reaches `target`. */
function cheapest(configs: readonly ConfigSummary[], target: number): NonNullable<EvalReport['cheapest']> {
  const reaching = configs.filter(
    (c) => c.config !== 'oracle' && c.config !== 'empty' && (c.resolved.rate ?? 0) >= target,
  );
  const best = [...reaching].sort((x, y) => (x.costPerResolvedUsd ?? 0) - (y.costPerResolvedUsd ?? 0))[0];
  const percent = `${Math.round(target * 100)}%`;
  return best === undefined
    ? { target, config: undefined, reason: `no configuration resolves ${percent} of the tasks` }
    : {
        target,
        config: best.config,
        reason: `${best.config} resolves ${Math.round((best.resolved.rate ?? 0) * 100)}% at the lowest cost per resolved task among those reaching ${percent}`,
      };
}

/** What a run's job says of its configuration: the oracle's patch, an empty one, or its agent. */
function configOf(run: RunRecord, name: string): EvalConfig {
  if (run.job.patch === '') return { name, kind: 'empty' };
  if (run.job.patch !== undefined) return { name, kind: 'oracle' };
  return { name, kind: 'agent', agent: run.job.agent ?? 'default' };
}

/**
 * The report of one suite from the runs of its jobs alone (what the dashboard has: no suite
 * file): instances, configurations and trials as the jobs name them. Runs of other suites and
 * of other sources are ignored.
 */
export function reportFromRuns(
  runs: readonly RunRecord[],
  suite: string,
  header: Pick<EvalReport['header'], 'codefleet'>,
): EvalReport {
  const configs = new Map<string, EvalConfig>();
  const results: TrialResult[] = [];
  let trials = 0;
  const instances = new Set<string>();
  for (const run of runs) {
    const source = run.job.source;
    if (source.kind !== 'eval' || source.suite !== suite) continue;
    if (!configs.has(source.config)) configs.set(source.config, configOf(run, source.config));
    trials = Math.max(trials, source.trial);
    instances.add(source.instance);
    const task = {
      instance: { instance_id: source.instance } as Instance,
      config: configs.get(source.config) as EvalConfig,
      trial: source.trial,
    };
    results.push(trialOf(task, run));
  }
  return buildReport(results, {
    ...header,
    suite,
    // By name: the same page whatever order the runs were listed in.
    configs: [...configs.values()].sort((a, b) => a.name.localeCompare(b.name)),
    trials,
    instances: instances.size,
  });
}

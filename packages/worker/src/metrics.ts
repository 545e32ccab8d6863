import type * as Prom from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { errorCodes, type Job, type RunRecord, type UnsignedWhy } from '@codefleet/core';
import type { Settlement } from '@codefleet/queue';
import { registerFleetGauges, type MetricSources } from './fleet-gauges.js';
import { retentionCounter, type Trimmed } from './retention.js';

/** Buckets for steps that take from a second to an hour (stages, checks, agent runs). */
const longBuckets = [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
/** Buckets for waiting in the queue: a warm fleet claims in under a second, a backlog waits hours. */
const waitBuckets = [0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 900, 3600, 14_400];
const knownErrorCodes = new Set<string>(errorCodes);

/** What settled deliveries and their runs did. */
interface RunInstruments {
  jobs: Counter;
  finished: Counter;
  stages: Histogram;
  steps: Histogram;
  agentSeconds: Histogram;
  agentTokens: Counter;
  agentCost: Counter;
  retries: Counter;
  attempts: Histogram;
}

/** How work flows through this process, and what was refused on the way. */
interface FlowInstruments {
  queueWait: Histogram;
  inFlight: Gauge;
  refused: Counter;
  limits: Counter;
  unsigned: Counter;
}

/**
 * The Prometheus metrics of one worker process. Labels are bounded on purpose: stage,
 * step, outcome and error code are enums of `@codefleet/core`; `agent` is an agent or
 * profile name from the config (a job naming another never gets an agent run); `source`
 * is the job source kind. No run id, job id, repository or worker id is ever a label:
 * those are unbounded and belong to the run store (`codefleet runs`, the dashboard).
 */
export class WorkerMetrics {
  readonly #run: RunInstruments;
  readonly #flow: FlowInstruments;
  readonly #now: () => number;
  /** Counts what a housekeeping pass deleted (`codefleet_retention_trimmed_total`). */
  readonly trimmed: (trimmed: Trimmed) => void;

  constructor(prom: typeof Prom, registry: Registry, sources: MetricSources) {
    const registers = [registry];
    this.#now = sources.now ?? Date.now;
    prom.collectDefaultMetrics({ register: registry, prefix: 'codefleet_' });
    // In this order: the exposition lists metrics as they were registered.
    this.#run = createRunInstruments(prom, registers);
    this.#flow = createFlowInstruments(prom, registers);
    registerFleetGauges(prom, registers, sources, this.#now);
    this.trimmed = retentionCounter(prom, registry);
  }

  /** A delivery starts: how long its job waited, on its first delivery only. */
  jobStarted(job: Job | undefined, attempt: number, inFlight: number): void {
    this.#flow.inFlight.set(inFlight);
    if (job === undefined || attempt !== 1) return;
    const created = Date.parse(job.created_at);
    if (Number.isFinite(created)) this.#flow.queueWait.observe(Math.max(0, (this.#now() - created) / 1_000));
  }

  /** A claimed job did not verify and was dead-lettered unrun. */
  jobUnsigned(why: UnsignedWhy): void {
    this.#flow.unsigned.inc({ why });
  }

  /** A delivery ended: its settlement, and what its run record says this delivery did. */
  jobSettled(
    settlement: Settlement | 'settle_failed',
    run: RunRecord | undefined,
    attempt: number,
    inFlight: number,
  ): void {
    this.#flow.inFlight.set(inFlight);
    this.#run.jobs.inc({ settlement, outcome: run?.outcome ?? 'none' });
    this.#run.attempts.observe(attempt);
    if (attempt > 1) this.#run.retries.inc({ kind: 'delivery' });
    if (!run) return;
    // Only a delivery that ended the job finished its run: a retried or released one runs again.
    if (run.outcome !== undefined && (settlement === 'acked' || settlement === 'dead_lettered')) {
      const code = run.error?.code;
      const errorCode = code === undefined ? 'none' : knownErrorCodes.has(code) ? code : 'unknown';
      this.#run.finished.inc({ outcome: run.outcome, error_code: errorCode, source: run.job.source.kind });
      // Whole-job totals: the record keeps them across deliveries, so they are counted once, here.
      if (run.sandbox !== undefined) {
        this.#flow.refused.inc(run.sandbox.network_refused_total);
        for (const hit of run.sandbox.resource_limits) this.#flow.limits.inc({ limit: hit.limit });
      }
    }
    this.#observeStages(run);
    // Entries of earlier deliveries were counted when those deliveries ended.
    for (const check of run.verification) {
      if (check.attempt !== attempt || check.skipped === true) continue;
      this.#run.steps.observe(
        {
          step: check.step,
          result: check.passed
            ? 'passed'
            : check.preexisting !== true
              ? 'failed'
              : check.unverifiable === true
                ? 'unverifiable'
                : 'preexisting',
        },
        check.duration_ms / 1_000,
      );
    }
    for (const agentRun of run.agent_runs) {
      if (agentRun.attempt !== attempt) continue;
      this.#run.agentSeconds.observe(
        { agent: agentRun.agent, outcome: agentRun.outcome },
        agentRun.duration_ms / 1_000,
      );
      if (agentRun.inner_attempt > 1) this.#run.retries.inc({ kind: 'fix' });
      if (agentRun.cost_usd !== undefined) this.#run.agentCost.inc({ agent: agentRun.agent }, agentRun.cost_usd);
      if (agentRun.tokens) {
        this.#run.agentTokens.inc({ agent: agentRun.agent, kind: 'prompt' }, agentRun.tokens.prompt);
        this.#run.agentTokens.inc({ agent: agentRun.agent, kind: 'completion' }, agentRun.tokens.completion);
      }
    }
  }

  /** This attempt's stages: from its last `preparing` on, each until the next one. */
  #observeStages(run: RunRecord): void {
    const stages = run.stages;
    const start = stages.map((s) => s.stage).lastIndexOf('preparing');
    for (let i = Math.max(0, start); i + 1 < stages.length; i += 1) {
      const from = Date.parse(stages[i]!.at);
      const to = Date.parse(stages[i + 1]!.at);
      if (Number.isFinite(from) && Number.isFinite(to) && to >= from)
        this.#run.stages.observe({ stage: stages[i]!.stage }, (to - from) / 1_000);
    }
  }
}

function createRunInstruments(prom: typeof Prom, registers: Registry[]): RunInstruments {
  const { Counter, Histogram } = prom;
  const jobs = new Counter({
    name: 'codefleet_jobs_total',
    help: 'Job deliveries by how they were settled and the run outcome.',
    labelNames: ['settlement', 'outcome'],
    registers,
  });
  const finished = new Counter({
    name: 'codefleet_runs_finished_total',
    help: 'Runs that reached their end, by outcome and the failing error code ("none" when it succeeded).',
    labelNames: ['outcome', 'error_code', 'source'],
    registers,
  });
  const stages = new Histogram({
    name: 'codefleet_stage_duration_seconds',
    help: 'Time spent in each stage of a delivery.',
    labelNames: ['stage'],
    buckets: longBuckets,
    registers,
  });
  const steps = new Histogram({
    name: 'codefleet_verification_step_duration_seconds',
    help: 'Duration of each verification step (install, build, format, lint, test, dod) that ran.',
    labelNames: ['step', 'result'],
    buckets: longBuckets,
    registers,
  });
  const agentSeconds = new Histogram({
    name: 'codefleet_agent_run_duration_seconds',
    help: 'Duration of each coding agent run.',
    labelNames: ['agent', 'outcome'],
    buckets: longBuckets,
    registers,
  });
  const agentTokens = new Counter({
    name: 'codefleet_agent_tokens_total',
    help: 'Model tokens agents spent, for agents that report them.',
    labelNames: ['agent', 'kind'],
    registers,
  });
  const agentCost = new Counter({
    name: 'codefleet_agent_cost_usd_total',
    help: 'US dollars agent runs cost, for runs with a known cost (the same amounts the spend ledger adds).',
    labelNames: ['agent'],
    registers,
  });
  const retries = new Counter({
    name: 'codefleet_retries_total',
    help: 'Retries: "delivery" = a job delivered again (attempt > 1), "fix" = an agent run fed a failure back (inner attempt > 1).',
    labelNames: ['kind'],
    registers,
  });
  for (const kind of ['delivery', 'fix']) retries.inc({ kind }, 0);
  const attempts = new Histogram({
    name: 'codefleet_job_attempt',
    help: 'Delivery attempt number of settled jobs.',
    buckets: [1, 2, 3, 4, 5, 8],
    registers,
  });
  return { jobs, finished, stages, steps, agentSeconds, agentTokens, agentCost, retries, attempts };
}

function createFlowInstruments(prom: typeof Prom, registers: Registry[]): FlowInstruments {
  const { Counter, Gauge, Histogram } = prom;
  const queueWait = new Histogram({
    name: 'codefleet_queue_wait_seconds',
    help: "From a job's creation to its first claim.",
    buckets: waitBuckets,
    registers,
  });
  const inFlight = new Gauge({ name: 'codefleet_jobs_in_flight', help: 'Jobs this process runs now.', registers });
  const refused = new Counter({
    name: 'codefleet_sandbox_network_refused_total',
    help: "Destinations the sandbox's network policy refused, counted when the job ends.",
    registers,
  });
  const limits = new Counter({
    name: 'codefleet_sandbox_resource_limits_total',
    help: 'Sandboxed runs stopped at a per-run limit (sandbox.limits), counted when the job ends.',
    labelNames: ['limit'],
    registers,
  });
  // Any increase is worth an alert: a job in the queue that no producer of the fleet signed.
  const unsigned = new Counter({
    name: 'codefleet_jobs_unsigned_total',
    help: 'Claimed jobs refused and dead-lettered because they did not verify (job_unsigned), by why: missing, unknown_key, bad_signature.',
    labelNames: ['why'],
    registers,
  });
  for (const why of ['missing', 'unknown_key', 'bad_signature']) unsigned.inc({ why }, 0);
  return { queueWait, inFlight, refused, limits, unsigned };
}

import type { Logger } from '@codefleet/log';
import type { Lease } from '@codefleet/queue';
import {
  maxProgressLines,
  type WorkerInfo,
  type WorkerJob,
  type WorkerJobProgress,
  type WorkerRegistry,
} from '@codefleet/store';
import { JobProgress, type Progress } from './job-progress.js';

/** Where and what the worker announces in the run store's registry. */
export interface PresenceOptions {
  store: WorkerRegistry;
  /** The fixed part of the entry; `lastHeartbeat`, `draining` and `jobs` are kept here. */
  info: Omit<WorkerInfo, 'lastHeartbeat' | 'draining' | 'jobs'>;
  /** How long the entry lives without a heartbeat; about 3× the heartbeat interval. */
  ttlMs: number;
  /** Masks secrets in the output lines the entry shows (agent and check output can print them). */
  mask?: (text: string) => string;
  /**
   * How soon new output of a running step is written (a stage change is written at once);
   * default {@link defaultProgressWriteMs}. Bounds the writes a chatty step costs.
   */
  progressWriteMs?: number;
}

/** New output is written at most this often: about as often as a dashboard page reads. */
const defaultProgressWriteMs = 2_000;

/** How long a stopping worker waits to remove its entry. */
const removeTimeoutMs = 5_000;

/** The worker's entry in the registry: what `codefleet workers` and the dashboard list. */
export interface Presence {
  jobStarted(lease: Lease): void;
  jobEnded(lease: Lease): void;
  /** A job's stage, pass or attempt changed (JobContext.onProgress): written at once. */
  progress(lease: Lease, p: Progress): void;
  /** A job's running step printed (JobContext.onOutput): written within `progressWriteMs`. */
  output(lease: Lease, source: string, chunk: string): void;
  /** Writes the entry now (at start, when draining begins). */
  beat(): Promise<void>;
  /** Stops heartbeating and removes the entry: a clean stop. */
  stop(): Promise<void>;
}

/** What the heartbeats, the job changes and the stop of one presence share. */
interface PresenceState {
  readonly options: PresenceOptions;
  readonly context: PresenceContext;
  /** The jobs the worker runs now, by lease token. */
  readonly jobs: Map<string, WorkerJob>;
  /** Where each of them is, by lease token. */
  readonly progress: Map<string, JobProgress>;
  /** Set while new output waits to be written. */
  outputTimer: NodeJS.Timeout | undefined;
  /** The last write failed: the next success is logged as a recovery. */
  failing: boolean;
  stopped: boolean;
  /**
   * The write under way. A store that hangs (Redis restarting: its commands wait) must not
   * pile up heartbeats: one write at a time, and a change during it is written once more right after.
   */
  inFlight: Promise<void> | undefined;
  again: boolean;
}

interface PresenceContext {
  intervalMs: number;
  draining: AbortSignal;
  log: Logger;
}

/**
 * Registers the worker and heartbeats its entry every `intervalMs` with its current jobs
 * and whether it is draining. The registry is for people looking at the fleet, never in
 * the way of jobs: a store failure is logged (once per outage, and when it is over) and the
 * worker goes on; an entry that could not be removed expires after its ttl.
 */
export function startPresence(options: PresenceOptions, context: PresenceContext): Presence {
  const state: PresenceState = {
    options,
    context,
    jobs: new Map(),
    progress: new Map(),
    outputTimer: undefined,
    failing: false,
    stopped: false,
    inFlight: undefined,
    again: false,
  };
  const timer = setInterval(() => void beat(state), context.intervalMs);
  timer.unref();
  const onDrain = () => void beat(state);
  context.draining.addEventListener('abort', onDrain, { once: true });
  return {
    jobStarted: (lease) => {
      // The run id is the job id, as on its first run; a redriven job's current run is
      // `latestRun(store, jobId)` (the pipeline picks the generation after the claim).
      state.jobs.set(lease.token, {
        jobId: lease.job.id,
        runId: lease.job.id,
        taskKey: lease.job.idempotency_key,
        title: lease.job.title,
        startedAt: new Date().toISOString(),
      });
      // Written now, not at the next heartbeat (30 s by default): the dashboard and
      // `codefleet workers` show what the worker does, not what it did.
      void beat(state);
    },
    jobEnded: (lease) => {
      state.jobs.delete(lease.token);
      state.progress.delete(lease.token);
      void beat(state);
    },
    progress: (lease, p) => {
      progressOf(state, lease).enter(p);
      void beat(state);
    },
    output: (lease, source, chunk) => {
      progressOf(state, lease).output(source, chunk);
      // A step prints many chunks a second: they are written together, once per interval.
      if (state.outputTimer !== undefined) return;
      state.outputTimer = setTimeout(() => {
        state.outputTimer = undefined;
        void beat(state);
      }, options.progressWriteMs ?? defaultProgressWriteMs);
      state.outputTimer.unref();
    },
    beat: () => beat(state),
    stop: async () => {
      state.stopped = true;
      clearInterval(timer);
      clearTimeout(state.outputTimer);
      context.draining.removeEventListener('abort', onDrain);
      await removeEntry(state);
    },
  };
}

/** The job's progress tracker, made at its first report. */
function progressOf(state: PresenceState, lease: Lease): JobProgress {
  let progress = state.progress.get(lease.token);
  if (progress === undefined) {
    progress = new JobProgress(Date.now, maxProgressLines);
    state.progress.set(lease.token, progress);
  }
  return progress;
}

/** What the entry says of a job's progress; undefined before the pipeline's first report. */
function progressEntry(
  progress: JobProgress | undefined,
  mask: ((text: string) => string) | undefined,
): WorkerJobProgress | undefined {
  const current = progress?.current;
  if (progress === undefined || current === undefined) return undefined;
  const { step } = progress;
  return {
    stage: current.stage,
    ...(current.pass === undefined ? {} : { pass: current.pass }),
    ...(current.innerAttempt === undefined ? {} : { innerAttempt: current.innerAttempt }),
    ...(step === undefined ? {} : { step: step.source, stepStartedAt: new Date(step.started).toISOString() }),
    lines: progress.tail(mask),
  };
}

/** Writes the entry, or joins the write under way and has it written once more after. */
async function beat(state: PresenceState): Promise<void> {
  if (state.stopped) return state.inFlight;
  if (state.inFlight) {
    state.again = true;
    return state.inFlight;
  }
  state.inFlight = (async () => {
    do {
      state.again = false;
      await write(state);
    } while (state.again && !state.stopped);
  })().finally(() => {
    state.inFlight = undefined;
  });
  return state.inFlight;
}

/** One heartbeat; a failure is logged once per outage, never thrown. */
async function write(state: PresenceState): Promise<void> {
  const { options, context } = state;
  const entry: WorkerInfo = {
    ...options.info,
    lastHeartbeat: new Date().toISOString(),
    draining: context.draining.aborted,
    jobs: [...state.jobs].map(([token, job]) => {
      const progress = progressEntry(state.progress.get(token), options.mask);
      return progress === undefined ? job : { ...job, progress };
    }),
  };
  try {
    await options.store.heartbeatWorker(entry, options.ttlMs);
    if (state.failing) context.log.info({ event: 'registry.recovered' }, 'the worker registry is reachable again');
    state.failing = false;
  } catch (err) {
    if (!state.failing)
      context.log.warn(
        { err, event: 'registry.heartbeat_failed' },
        'could not heartbeat in the worker registry (jobs go on)',
      );
    state.failing = true;
  }
}

/** Removes the entry after the write under way, waiting at most {@link removeTimeoutMs}. */
async function removeEntry(state: PresenceState): Promise<void> {
  const { options, context } = state;
  const expires = `it expires in ${Math.round(options.ttlMs / 1000)} s`;
  // A hanging store must not keep a stopping worker alive: the entry expires anyway.
  let timeout: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timeout = setTimeout(() => {
      context.log.warn({ event: 'registry.remove_timeout' }, `the worker registry did not answer; ${expires}`);
      resolve();
    }, removeTimeoutMs);
  });
  const removed = (state.inFlight ?? Promise.resolve())
    .then(() => options.store.removeWorker(options.info.id))
    .catch((err: unknown) => {
      context.log.warn(
        { err, event: 'registry.remove_failed' },
        `could not remove the worker from the registry; ${expires}`,
      );
    });
  await Promise.race([removed, gaveUp]);
  clearTimeout(timeout);
}

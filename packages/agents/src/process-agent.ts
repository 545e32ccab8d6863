import { boundTail, defaultTailBytes } from '@codefleet/core';
import { runProcess } from '@codefleet/process';
import { changedFiles, headCommit } from './changed-files.js';
import { withoutForgeCredentials } from './env.js';
import { decideOutcome, type OutcomeFacts, type OutcomeVerdict } from './outcome.js';
import type { Agent, AgentRunRequest, AgentRunResult, ContextFile } from './port.js';
import { writeRunFiles, type RunFiles } from './run-files.js';

/** Why an {@link RunObserver} stopped a run; `budgetExceeded` when the money budget was the reason. */
export interface WatchStop {
  reason: string;
  budgetExceeded?: boolean;
}

/** What an adapter learned about a run from its output: what the CLI reported spending. */
export type RunReport = Pick<AgentRunResult, 'tokens' | 'model' | 'costUsd' | 'modelCalls' | 'budgetExceeded'>;

/**
 * One run's observer, made fresh per run by {@link ProcessAgentSpec.observe}: it sees the
 * whole output as it arrives (not only the bounded tail), so a CLI's live usage events can
 * stop a run that has spent its budget, and its totals reach the result however long the
 * output grew.
 */
export interface RunObserver {
  /** Each chunk of combined stdout and stderr, as it arrives; a {@link WatchStop} stops the run's process tree there. */
  output?(chunk: string): WatchStop | undefined;
  /** After the run: tokens, model, cost and model calls for the result. */
  report?(): RunReport;
}

/**
 * How one adapter starts its agent as a child process: the command and script adapters,
 * and the CLI adapters (Aider, Claude Code, Codex, Gemini) with their own `argv` and
 * `interpret`.
 */
export interface ProcessAgentSpec {
  name: string;
  contextFile?: ContextFile;
  timeoutMs?: number;
  allowEnv?: readonly string[];
  /**
   * Variables the adapter sets for its tool (switches that keep it quiet and headless),
   * under `req.env`: an operator who passes the same name through keeps their own value.
   */
  env?: Readonly<Record<string, string>>;
  /** Between SIGTERM and SIGKILL when stopping the tree; runProcess's default when unset. */
  killGraceMs?: number;
  /** Bytes of output kept in `outputTail`; runProcess's default when unset. */
  tailBytes?: number;
  /**
   * Bytes of output `interpret` reads, when it needs more than `outputTail` keeps: a
   * tool's final JSON verdict can be longer than the tail stored in the run record.
   */
  interpretTailBytes?: number;
  /** The argument vector for one run, given the request and the files written for it. */
  argv(req: AgentRunRequest, files: RunFiles): string[];
  /**
   * An adapter's own reading of the facts, consulted after the generic one: e.g. a CLI
   * that prints a fatal API error or hits its turn cap and still exits 0. Returning
   * `undefined` keeps the generic verdict. `req` is the run's request (its limits, for messages).
   */
  interpret?(facts: OutcomeFacts, generic: OutcomeVerdict, req: AgentRunRequest): OutcomeVerdict | undefined;
  /**
   * The run's usage, model and cost as the tool itself reported them (its final JSON),
   * merged into the result; `undefined` when it said nothing.
   */
  report?(facts: OutcomeFacts, run: { req: AgentRunRequest; durationMs: number }): RunReport | undefined;
  /**
   * Removes what the tool leaves in the working copy for itself (caches it cannot be told
   * to put elsewhere), after the run and before changes are listed, so it is never
   * counted as the agent's work or committed.
   */
  cleanup?(workdir: string): Promise<void>;
  /**
   * The agent's environment given the request's (already allowlisted): for a CLI that reads
   * its key under another name than the one configured. Forge credentials are removed
   * from what it returns all the same.
   */
  environment?(env: Readonly<Record<string, string>>): Record<string, string>;
  /** A fresh observer of one run's output (usage, budget), or undefined for none. */
  observe?(req: AgentRunRequest): RunObserver | undefined;
}

function checkRequest(req: AgentRunRequest): void {
  if (!Number.isSafeInteger(req.attempt) || req.attempt < 1) {
    throw new RangeError(`attempt must be a positive integer, got ${String(req.attempt)}`);
  }
  if (req.pass !== 'implement' && req.pass !== 'test') throw new RangeError(`unknown pass ${String(req.pass)}`);
  if (!Number.isFinite(req.timeoutMs) || req.timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number, got ${String(req.timeoutMs)}`);
  }
}

/**
 * The run's signal and output callback with the observer in between: the caller's
 * `onOutput` still sees every chunk, and the observer's first stop aborts the run (the
 * process tree is killed as on a cancel).
 */
function watchOutput(
  req: AgentRunRequest,
  observer: RunObserver | undefined,
): {
  signal?: AbortSignal;
  onOutput?: (chunk: string) => void;
  stopped(): WatchStop | undefined;
} {
  if (observer?.output === undefined) {
    return {
      ...(req.signal === undefined ? {} : { signal: req.signal }),
      ...(req.onOutput === undefined ? {} : { onOutput: req.onOutput }),
      stopped: () => undefined,
    };
  }
  const watch = observer.output.bind(observer);
  const stopper = new AbortController();
  let stop: WatchStop | undefined;
  return {
    signal: req.signal === undefined ? stopper.signal : AbortSignal.any([req.signal, stopper.signal]),
    onOutput: (chunk) => {
      req.onOutput?.(chunk);
      if (stop !== undefined) return;
      stop = watch(chunk);
      if (stop !== undefined) stopper.abort();
    },
    stopped: () => stop,
  };
}

const definedOnly = <T extends object>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;

/** An {@link Agent} that runs a child process per run through `runProcess`. */
export function createProcessAgent(spec: ProcessAgentSpec): Agent {
  const run = async (req: AgentRunRequest): Promise<AgentRunResult> => {
    checkRequest(req);
    const env = withoutForgeCredentials(spec.environment?.({ ...spec.env, ...req.env }) ?? { ...spec.env, ...req.env });
    // Recorded first: it also proves the workdir is a git work tree before anything runs.
    const before = await headCommit(req.workdir, env, req.gitPath);
    const files = await writeRunFiles(req);
    const argv = spec.argv(req, files);
    const observer = spec.observe?.(req);
    const watched = watchOutput(req, observer);
    const result = await (req.runner ?? runProcess)(argv, {
      cwd: req.workdir,
      env,
      timeoutMs: req.timeoutMs,
      // The agent writes into a pooled working copy: it must not outlive a killed worker.
      dieWithParent: true,
      ...(watched.signal === undefined ? {} : { signal: watched.signal }),
      tailBytes: Math.max(spec.tailBytes ?? defaultTailBytes, spec.interpretTailBytes ?? 0),
      ...(spec.killGraceMs === undefined ? {} : { killGraceMs: spec.killGraceMs }),
      ...(watched.onOutput === undefined ? {} : { onOutput: watched.onOutput }),
    });
    // After the run nothing throws: the facts of what the agent did must reach the record.
    let changes: OutcomeFacts['changes'];
    try {
      await spec.cleanup?.(req.workdir);
      changes = {
        files: await changedFiles(req.workdir, env, {
          gitPath: req.gitPath,
          since: before,
          untrackedContext: spec.contextFile === undefined ? [] : [spec.contextFile],
        }),
      };
    } catch (error) {
      changes = { error: error instanceof Error ? error.message : String(error) };
    }
    const facts: OutcomeFacts = { process: result, changes, program: argv[0] ?? '', timeoutMs: req.timeoutMs };
    const generic = decideOutcome(facts);
    const stop = watched.stopped();
    // The observer's stop looks like a cancel to runProcess; only a cancel of the caller's is one.
    const verdict =
      stop !== undefined && req.signal?.aborted !== true
        ? { outcome: 'failed' as const, detail: stop.reason }
        : (spec.interpret?.(facts, generic, req) ?? generic);
    const report = {
      ...definedOnly(observer?.report?.() ?? {}),
      ...definedOnly(spec.report?.(facts, { req, durationMs: result.durationMs }) ?? {}),
    };
    return {
      exitCode: result.exitCode,
      signal: result.signal,
      timedOut: result.timedOut,
      durationMs: result.durationMs,
      // Said in the record: what it left running (a dev server under setsid) was killed.
      outputTail: boundTail(
        result.strays === undefined
          ? result.outputTail
          : `${result.outputTail}\n[codefleet: killed ${result.strays} process(es) the agent left running outside its process group]\n`,
        spec.tailBytes ?? defaultTailBytes,
      ),
      changedFiles: 'files' in changes ? changes.files : [],
      outcome: verdict.outcome,
      ...(verdict.detail === undefined ? {} : { detail: verdict.detail }),
      ...(verdict.permanent === true && verdict.outcome === 'error' ? { permanent: true } : {}),
      ...report,
      ...(stop?.budgetExceeded === true ? { budgetExceeded: true } : {}),
    };
  };
  return {
    name: spec.name,
    ...(spec.contextFile === undefined ? {} : { contextFile: spec.contextFile }),
    ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
    ...(spec.allowEnv === undefined ? {} : { allowEnv: [...spec.allowEnv] }),
    run,
  };
}

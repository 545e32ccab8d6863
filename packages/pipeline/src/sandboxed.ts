import { basename, join } from 'node:path';
import type { NetworkRefusal, ProcessResult, ProcessRunner, RunProcessOptions } from '@codefleet/process';
import { addSandboxFindings, type Job } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { Sandbox } from '@codefleet/sandbox';
import type { Workspace } from '@codefleet/workspace';
import type { RunTracker } from './tracker.js';

/** Where a job's agents and repository commands run: its sandbox, bound to its working copy. */
export interface JobRunners {
  /** Agents, verification steps, DoD commands: dependencies and workflow files read-only. */
  runner: ProcessRunner;
  /** Install steps: the only runs that may write the dependencies. */
  installRunner: ProcessRunner;
  /** The runs are isolated (the sandbox mode is not `none`): agents pass it as `isolated`, so a CLI turns off a sandbox of its own that cannot nest. */
  isolated: boolean;
}

/** How {@link jobRunners} binds the sandbox. */
export interface JobRunnerOptions {
  protectWorkflows: boolean;
  /** Each destination the network policy refuses, as it happens (the job's log line). */
  onNetworkRefused?: (refusal: NetworkRefusal) => void;
  /** A run the sandbox refused a destination or stopped at a limit, once it ended (the run record). */
  onFindings?: (result: ProcessResult) => Promise<void>;
}

/** Workflow files and the repository's own actions: they run on the forge with its secrets. */
const workflowDirs = [join('.github', 'workflows'), join('.github', 'actions')];

/**
 * Directories tools write inside `node_modules` when they run, not when they install: vite's
 * bundled config (`.vite-temp`; vitest cannot start without it), and the caches of vite,
 * vitest, babel and webpack (`.cache`), turbo, nx and astro. Every run but an install gets
 * empty ones of its own over the read-only dependencies (see the sandbox's `scratch`).
 */
const toolScratchDirs = ['.vite-temp', '.vite', '.vitest', '.cache', '.turbo', '.nx', '.astro'] as const;

// The scratch paths of a view: in each installed node_modules (the read-only paths only
// non-install runs get), one per tool directory.
function toolScratch(view: { readOnly: readonly string[]; installReadOnly: readonly string[] }): string[] {
  const installed = view.readOnly.filter(
    (path) => !view.installReadOnly.includes(path) && basename(path) === 'node_modules',
  );
  return installed.flatMap((dir) => toolScratchDirs.map((name) => join(dir, name)));
}

/**
 * Binds `sandbox` to the job's working copy. Each run sees the copy through the job's view
 * (its own git directory, read-only parts) rebuilt for it, and afterwards the copy's git
 * link is put back before codefleet's own git reads the copy again.
 */
export function jobRunners(sandbox: Sandbox, ws: Workspace, options: JobRunnerOptions): JobRunners {
  const readOnly = options.protectWorkflows ? workflowDirs.map((dir) => join(ws.dir, dir)) : [];
  const observed = options.onNetworkRefused === undefined ? {} : { onNetworkRefused: options.onNetworkRefused };
  // The package managers fetched for runs (provideManager), inside the hidden cache directory.
  const tools = { source: ws.toolsDir, target: ws.toolsDir, writable: false };
  const make =
    (install: boolean): ProcessRunner =>
    async (argv, processOptions: RunProcessOptions) => {
      const { dieWithParent: _guarded, ...rest } = processOptions;
      let result: ProcessResult;
      try {
        if (sandbox.mode === 'none') result = await sandbox.run(argv, { ...rest, writable: [ws.dir] });
        else {
          const view = await ws.agentView({ readOnly, remap: sandbox.remapsPaths });
          result = await sandbox.run(argv, {
            ...rest,
            ...observed,
            writable: view.writable,
            readOnly: install ? view.installReadOnly : view.readOnly,
            mounts: [...(install ? view.installMounts : view.mounts), tools],
            // Scratch shows a directory elsewhere: a sandbox that cannot (Seatbelt) leaves it out.
            ...(install || !sandbox.remapsPaths ? {} : { scratch: toolScratch(view) }),
          });
        }
      } finally {
        await ws.restoreGitLink();
      }
      if (result.networkRefusals !== undefined || result.resourceLimit !== undefined)
        await options.onFindings?.(result);
      return result;
    };
  return { runner: make(false), installRunner: make(true), isolated: sandbox.mode !== 'none' };
}

/**
 * Binds `sandbox` to a directory of codefleet's own beside the working copy (the copy where
 * the verifier grades with hidden tests): it may write that directory only, and sees no git
 * directory at all. One runner for every step, installs included: nothing there outlives the grade.
 */
export function dirRunner(sandbox: Sandbox, dir: string, toolsDir: string): ProcessRunner {
  const tools = { source: toolsDir, target: toolsDir, writable: false };
  return async (argv, processOptions: RunProcessOptions) => {
    const { dieWithParent: _guarded, ...rest } = processOptions;
    return sandbox.mode === 'none'
      ? sandbox.run(argv, { ...rest, writable: [dir] })
      : sandbox.run(argv, { ...rest, writable: [dir], mounts: [tools] });
  };
}

/**
 * The job's observers of its sandbox: a warning per refused destination as it happens (job id
 * included: an operator alerts on `sandbox.network_refused`), and what each run was refused or
 * stopped at added to the run record, where `runs`/`show` and the worker's metrics read it.
 */
export function sandboxObservers(
  deps: { log: Logger; now?: () => Date },
  job: Pick<Job, 'id'>,
  tracker: RunTracker,
): Pick<JobRunnerOptions, 'onNetworkRefused' | 'onFindings'> {
  const now = deps.now ?? (() => new Date());
  return {
    onNetworkRefused: (refusal) =>
      deps.log.warn(
        { event: 'sandbox.network_refused', job_id: job.id, destination: refusal.destination, reason: refusal.reason },
        'the sandbox refused a destination',
      ),
    onFindings: async (result) => {
      if (result.resourceLimit !== undefined) {
        deps.log.warn(
          {
            event: 'sandbox.resource_limit',
            job_id: job.id,
            ...result.resourceLimit,
            command: result.command.slice(0, 3),
          },
          'a sandboxed run went past a limit and was stopped',
        );
      }
      await tracker.update((run) =>
        addSandboxFindings(
          run,
          {
            ...(result.networkRefusals === undefined
              ? {}
              : { refused: result.networkRefusals.kept, refusedTotal: result.networkRefusals.total }),
            ...(result.resourceLimit === undefined ? {} : { limit: result.resourceLimit }),
            command: result.command,
          },
          { now: now() },
        ),
      );
    },
  };
}

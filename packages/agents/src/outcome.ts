import type { ProcessResult } from '@codefleet/process';
import type { AgentOutcome } from './port.js';

/** What an outcome is decided from: the process facts and the files that changed. */
export interface OutcomeFacts {
  process: Pick<
    ProcessResult,
    'exitCode' | 'signal' | 'timedOut' | 'cancelled' | 'spawnError' | 'outputTail' | 'resourceLimit'
  >;
  /** The changed files, or why they could not be listed. */
  changes: { files: string[] } | { error: string };
  /** The program that was started, for messages. */
  program: string;
  timeoutMs: number;
}

/** An outcome and the short sentence that explains it. */
export interface OutcomeVerdict {
  outcome: AgentOutcome;
  detail?: string;
  /** An `error` no retry can fix (see `AgentRunResult.permanent`). */
  permanent?: boolean;
}

/**
 * The generic, honest reading of a finished agent process. First match wins: could not
 * start, cancelled, timed out, stopped at a sandbox limit, killed by a signal, non-zero exit, could not list changes,
 * no changes, changed. Pure, so every branch is tested without a process.
 */
export function decideOutcome(facts: OutcomeFacts): OutcomeVerdict {
  const { process: result, changes } = facts;
  if (result.spawnError !== undefined) {
    // A program that is not there, or that the sandbox does not show, is not there on the
    // next attempt either: dead-lettered at once with the fix, not retried as a crash.
    // Running short of processes or files (EAGAIN, EMFILE) may pass.
    const missing = /not found|does not show|ENOENT|EACCES|permission denied/i.test(result.spawnError);
    return {
      outcome: 'error',
      detail: `could not start ${facts.program}: ${result.spawnError}`,
      ...(missing ? { permanent: true } : {}),
    };
  }
  // Cancelled before timed out: an abort is the caller's decision, not the agent's slowness.
  if (result.cancelled) return { outcome: 'error', detail: 'cancelled' };
  if (result.timedOut) {
    return { outcome: 'timeout', detail: `timed out after ${formatSeconds(facts.timeoutMs)}; process tree killed` };
  }
  // The sandbox stopped it at a limit (a fork bomb, a memory bomb): the agent's doing, or
  // the commands it ran. Fed back like a failing check, so the next attempt can do otherwise.
  if (result.resourceLimit !== undefined) {
    return {
      outcome: 'failed',
      detail: `resource_limit: stopped by the sandbox at its ${result.resourceLimit.limit} limit`,
    };
  }
  // A signal from elsewhere (OOM killer, an operator) says nothing about the task, so it
  // is a crash (`error`, retried elsewhere), not a failure to feed back to the agent.
  if (result.exitCode === null) {
    return { outcome: 'error', detail: `killed by ${result.signal ?? 'an unknown signal'}` };
  }
  if (result.exitCode !== 0) return { outcome: 'failed', detail: `exited with code ${result.exitCode}` };
  if ('error' in changes) return { outcome: 'error', detail: `could not list changed files: ${changes.error}` };
  if (changes.files.length === 0) return { outcome: 'no_changes', detail: 'exited 0 without changing any file' };
  return { outcome: 'changed' };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

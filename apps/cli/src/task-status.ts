import {
  statusLabel,
  taskStatusesOf,
  type PullRequestStatesReader,
  type TaskFacts,
  type TaskStatusView,
} from '@codefleet/core';
import type { Runtime } from './runtime.js';

/**
 * Pull request states for `runs` and `show`, read through the configured forge: opened on
 * first need, a few requests at a time, each bounded (5 s). A forge that cannot open (no
 * token) or answer makes the statuses uncertain (`open?`), never the command fail.
 */
export function pullRequestStatesOf(rt: Pick<Runtime, 'forge'>): PullRequestStatesReader {
  let reader: PullRequestStatesReader | undefined;
  return async (keys) => {
    if (reader === undefined) {
      const [{ createPullRequestStates }, forge] = await Promise.all([import('@codefleet/forge'), rt.forge()]);
      const states = createPullRequestStates(forge, { timeoutMs: 5_000, concurrency: 4 });
      reader = (k) => states.statesOf(k);
    }
    return reader(keys);
  };
}

/** The statuses of `runs`, in order (see `taskStatusesOf`). */
export function statusesOf(
  rt: Pick<Runtime, 'forge'>,
  runs: readonly (TaskFacts & { repo: string })[],
): Promise<TaskStatusView[]> {
  return taskStatusesOf(runs, pullRequestStatesOf(rt));
}

/** Why some statuses are uncertain, each reason once: the line under a table. */
export function uncertainNote(views: readonly TaskStatusView[]): string | undefined {
  const reasons = [...new Set(views.filter((v) => !v.certain).map((v) => v.note.replace(/^PR #\d+: /, '')))];
  return reasons.length === 0
    ? undefined
    : `${statusLabel({ status: 'open', certain: false, note: '' })}: the pull request's state could not be read (${reasons.slice(0, 3).join('; ')})`;
}

import type { Job } from '@codefleet/core';
import type { PipelineDeps } from './deps.js';

/** Where an issue job stands, as its one progress label shows it; `cancelled` has no label of its own. */
export type ProgressState = 'running' | 'prOpened' | 'failed' | 'cancelled';

/**
 * Puts the one progress label of `state` on the job's issue and takes the others off
 * (GitHub: `codefleet:running`, ...); nothing for jobs without an issue or forges without
 * labels. Not fenced: the caller fences when a lease is involved.
 */
export async function setProgressLabel(deps: Pick<PipelineDeps, 'forge' | 'settings'>, job: Job, state: ProgressState): Promise<void> {
  const labels = deps.settings.labels;
  if (!labels || job.source.kind !== 'issue') return;
  const all = [labels.queued, labels.running, labels.prOpened, labels.failed];
  const add = state === 'cancelled' ? [] : [labels[state]];
  await deps.forge.ensureLabels({ repo: job.repo, target: { kind: 'issue', number: job.source.number }, add, remove: all.filter((l) => !add.includes(l)) });
}

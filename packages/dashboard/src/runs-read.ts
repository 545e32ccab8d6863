import type { RunRecord } from '@codefleet/core';
import { latestRun } from '@codefleet/store';
import type { DashboardStore } from './deps.js';

/** The job's latest run (a redriven job has one per delivery cycle). */
export async function latestRunOf(store: Pick<DashboardStore, 'get'>, jobId: string): Promise<RunRecord | undefined> {
  return (await latestRun(store, jobId)).run;
}

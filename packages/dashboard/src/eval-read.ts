import type { RunRecord } from '@codefleet/core';
import { reportFromRuns, type EvalReport } from '@codefleet/eval';
import type { DashboardDeps } from './deps.js';
import type { SuiteLine } from './pages/eval.js';

/** Evaluation runs read for the pages: the newest this many (the store's own bound on a list). */
const evalRunsRead = 1000;

// The newest evaluation runs, whole: a report needs each job's source and grade.
async function evalRuns(deps: Pick<DashboardDeps, 'store'>): Promise<RunRecord[]> {
  const listed = await deps.store.list({ source: 'eval', limit: evalRunsRead });
  const runs = await Promise.all(listed.map((summary) => deps.store.get(summary.runId)));
  return runs.filter((run): run is RunRecord => run !== undefined);
}

/** The suites the newest evaluation runs belong to, newest first. */
export async function readSuites(deps: Pick<DashboardDeps, 'store'>): Promise<SuiteLine[]> {
  const suites = new Map<string, { runs: number; configs: Set<string>; instances: Set<string>; newest: number }>();
  for (const run of await evalRuns(deps)) {
    const source = run.job.source;
    if (source.kind !== 'eval') continue;
    const line = suites.get(source.suite) ?? { runs: 0, configs: new Set(), instances: new Set(), newest: 0 };
    line.runs += 1;
    line.configs.add(source.config);
    line.instances.add(source.instance);
    line.newest = Math.max(line.newest, Date.parse(run.created_at));
    suites.set(source.suite, line);
  }
  return [...suites]
    .map(([digest, s]) => ({
      digest,
      runs: s.runs,
      configs: [...s.configs],
      instances: s.instances.size,
      newest: s.newest,
    }))
    .sort((a, b) => b.newest - a.newest);
}

/** One suite's report from its runs, or undefined when none of the newest runs is of it. */
export async function readSuiteReport(
  deps: Pick<DashboardDeps, 'store'>,
  suite: string,
): Promise<EvalReport | undefined> {
  const report = reportFromRuns(await evalRuns(deps), suite, { codefleet: 'unknown (read by the dashboard)' });
  return report.configs.length === 0 ? undefined : report;
}

// Public API of @codefleet/dashboard: the web dashboard over the run store, the queue and
// the dead-letter queue.
export {
  dropDeadLetter,
  reasonOf,
  retryKeyTtlMs,
  retryRun,
  type ActionResult,
  type DropDeps,
  type RetryDeps,
} from './actions.js';
export { generateToken } from './auth.js';
export { removeQueuedJob, type RemoveQueuedDeps } from './queued-actions.js';
export type { DashboardQueue, DashboardStore, ReportCancelled } from './deps.js';
export { readOverview, warningsOf, type Overview, type Warning } from './overview.js';
export { createDashboard, type Dashboard, type DashboardOptions } from './server.js';

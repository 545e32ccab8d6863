export { runWorker, type JobRunner, type WorkerOptions } from './worker.js';
export type { WorkerSummary } from './settle.js';
export { WorkerMonitor, type MonitorOptions, type WorkerEvents } from './monitor.js';
export { startMonitorServer, type MonitorServer } from './http.js';
export { WorkerMetrics } from './metrics.js';
export type { MetricSources } from './fleet-gauges.js';
export { startPresence, type Presence, type PresenceOptions } from './presence.js';
export { DayBudgetGate, type DayBudget, type DayBudgetState } from './day-budget.js';
export { runWorkerProcess, type WorkerProcessOptions, type WorkerProcessResult } from './lifecycle.js';
export type { DeadLetterReporting } from './dead-letters.js';
export {
  retentionChore,
  retentionCounter,
  startHousekeeping,
  trimmedKinds,
  type Housekeeping,
  type HousekeepingOptions,
  type RetentionPolicy,
  type Trimmed,
  type TrimmedKind,
} from './retention.js';
export { JobProgress, sanitizeLine, type Progress, type StepOutput } from './job-progress.js';

export type {
  CancelRequests,
  FenceRejection,
  Journal,
  JournalEntry,
  JournalQuery,
  RunIndexEvent,
  RunPage,
  RunQuery,
  RunStore,
  RunSummary,
  SpendLedger,
  TaskLeases,
  TrimCounts,
  TrimPolicy,
  WorkerInfo,
  WorkerJob,
  WorkerJobProgress,
  WorkerRegistry,
} from './port.js';
export { journalLimit, maxProgressLines, maxWorkerJobs, trimBatch } from './port.js';
export { SqliteRunStore } from './sqlite-run-store.js';
export { sourceFilters, sourceKindFilters, summarize } from './query.js';
export { checkSpend, utcDay } from './spend.js';
export { RedisRunStore, type RedisRunStoreOptions } from './redis-run-store.js';
export { generationOf, latestRun, runIdOf } from './generations.js';
export { readCursor } from './page-cursor.js';
export { requestKeyFamily, type RequestKey } from './request-key.js';
export {
  durationBuckets,
  spendFacets,
  type DayStats,
  type FleetStats,
  type FleetStatsReader,
  type SpendBy,
  type SpendFacet,
} from './fleet-stats.js';

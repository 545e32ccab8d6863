export type { CancelRequests, FenceRejection, RunStore, RunSummary, TaskLeases } from './port.js';
export { SqliteRunStore, summarize } from './sqlite-run-store.js';
export { RedisRunStore, type RedisRunStoreOptions } from './redis-run-store.js';
export { generationOf, latestRun, runIdOf } from './generations.js';

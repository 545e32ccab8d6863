export type { RunStore, RunSummary } from './port.js';
export { SqliteRunStore, summarize } from './sqlite-run-store.js';

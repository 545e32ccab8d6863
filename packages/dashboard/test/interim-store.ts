// TODO: delete once helper/store's RunStore (workers, journal, filters) is merged: an
// in-memory stand-in for the new parts over a real SqliteRunStore.
import { SqliteRunStore, summarize } from '@codefleet/store';
import type { DashboardStoreApi, JournalEntry, RunQuery, RunSummary, WorkerInfo } from '../src/store-api.js';

export function interimStore(path: string): DashboardStoreApi & SqliteRunStore & { heartbeatWorker(w: WorkerInfo, ttlMs: number): Promise<void> } {
  const store = new SqliteRunStore(path);
  const workers = new Map<string, WorkerInfo>();
  const entries: JournalEntry[] = [];
  return Object.assign(store, {
    async list(query: RunQuery = {}): Promise<RunSummary[]> {
      const out: RunSummary[] = [];
      for (const s of await SqliteRunStore.prototype.list.call(store, { limit: 1000 })) {
        const run = await store.get(s.runId);
        if (run === undefined) continue;
        const sum: RunSummary = { ...summarize(run), source: run.job.source.kind, taskKey: run.job.idempotency_key, jobId: run.job.id, ...(run.job.agent === undefined ? {} : { agent: run.job.agent }) };
        const finished = ['done', 'failed', 'cancelled'].includes(run.stage);
        if (query.state === 'active' && finished) continue;
        if (query.state !== undefined && query.state !== 'active' && run.stage !== query.state && run.outcome !== query.state) continue;
        if (query.repo !== undefined && run.job.repo !== query.repo) continue;
        if (query.source !== undefined && sum.source !== query.source) continue;
        if (query.agent !== undefined && sum.agent !== query.agent) continue;
        if (query.since !== undefined && run.created_at < query.since) continue;
        out.push(sum);
      }
      return out.slice(0, query.limit ?? 50);
    },
    async listWorkers() {
      return [...workers.values()];
    },
    async heartbeatWorker(w: WorkerInfo) {
      workers.set(w.id, w);
    },
    async record(entry: JournalEntry) {
      entries.unshift(entry);
    },
    async journal(query: { runId?: string; kind?: JournalEntry['kind']; limit?: number } = {}) {
      return entries.filter((e) => (query.runId === undefined || e.runId === query.runId) && (query.kind === undefined || e.kind === query.kind)).slice(0, query.limit ?? 50);
    },
  });
}

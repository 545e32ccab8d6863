import type { RunRecord, RunOutcome, Stage } from '@codefleet/core';

// TODO: replace with the exports of @codefleet/store once helper/store's "Store: workers,
// journal, run filters" is merged; these mirror that agreed interface so the dashboard can
// be written meanwhile.

export interface RunQuery {
  limit?: number;
  state?: string;
  repo?: string;
  source?: string;
  agent?: string;
  since?: string;
  until?: string;
}

export interface RunSummary {
  runId: string;
  title: string;
  repo: string;
  requestedBy: string;
  stage: Stage;
  outcome?: RunOutcome;
  attempts: number;
  pullRequest?: { number: number; url?: string; draft: boolean };
  createdAt: string;
  updatedAt: string;
  source: string;
  agent?: string;
  worker?: string;
  durationMs?: number;
  errorCode?: string;
  taskKey: string;
  jobId: string;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  version: string;
  queue: string;
  backend: string;
  concurrency: number;
  startedAt: string;
  lastHeartbeat: string;
  draining: boolean;
  jobs: { jobId: string; runId: string; taskKey: string; title: string; startedAt: string }[];
}

export type JournalEntry =
  | {
      kind: 'action'; action: 'cancel' | 'retry' | 'redrive'; runId?: string; jobId?: string; taskKey?: string; by: string;
      via: 'cli' | 'dashboard' | 'chat' | 'api' | 'issue'; at: string; detail?: string;
    }
  | { kind: 'undelivered_report'; runId: string; jobId: string; report: string; requester: string; error: string; at: string };

export interface DashboardStoreApi {
  get(runId: string): Promise<RunRecord | undefined>;
  list(query?: RunQuery): Promise<RunSummary[]>;
  requestCancel(taskKey: string, by: string): Promise<void>;
  cancelRequested(taskKey: string): Promise<{ by: string; at: number } | undefined>;
  clearCancel(taskKey: string): Promise<void>;
  listWorkers(): Promise<WorkerInfo[]>;
  record(entry: JournalEntry): Promise<void>;
  journal(query?: { runId?: string; kind?: JournalEntry['kind']; limit?: number }): Promise<JournalEntry[]>;
}

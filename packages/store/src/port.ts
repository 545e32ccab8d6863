import type { RunOutcome, RunRecord, Stage } from '@codefleet/core';

/**
 * Where run records live, so `codefleet runs` / `show` can read what any worker did.
 *
 * Promises: `save` is an upsert by `run_id` that never lets an older version overwrite a
 * newer one (compared by `updated_at`, then by stage-history length), so a stale worker's
 * late write cannot roll a run back; reads return parsed, validated records.
 * Leaves out: leases and fencing tokens (the fleet store adds them with the fleet issue),
 * querying inside records, and retention (records are small; prune by age if needed).
 */
export interface RunStore {
  save(run: RunRecord): Promise<void>;
  get(runId: string): Promise<RunRecord | undefined>;
  /** Newest first. */
  list(options?: { limit?: number }): Promise<RunSummary[]>;
  close(): Promise<void>;
}

/** One line of `codefleet runs`. */
export interface RunSummary {
  runId: string;
  title: string;
  repo: string;
  stage: Stage;
  outcome?: RunOutcome;
  attempts: number;
  pullRequest?: { number: number; url?: string; draft: boolean };
  createdAt: string;
  updatedAt: string;
}

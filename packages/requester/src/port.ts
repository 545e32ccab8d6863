import type { Classified, Job, RunRecord, Stage } from '@codefleet/core';

/**
 * One thing to tell whoever asked for a job. `queued` comes from the producer; the rest from
 * the worker. `finished`, `answered`, `failed` and `cancelled` are final: every job reaches
 * exactly one of them, dead letters, budget overruns and cancels included.
 */
export type Report =
  | { kind: 'queued'; job: Job }
  | { kind: 'started'; job: Job; attempt: number }
  | { kind: 'progress'; job: Job; stage: Stage; note?: string }
  | { kind: 'finished'; job: Job; run: RunRecord; pullRequest: { number: number; url: string; draft: boolean } }
  | { kind: 'answered'; job: Job; run: RunRecord; answer: string }
  | { kind: 'failed'; job: Job; run: RunRecord; error: Classified; reason: string }
  | { kind: 'cancelled'; job: Job; run?: RunRecord; by: string };

/** The kind of a {@link Report}. */
export type ReportKind = Report['kind'];

/** The reports after which nothing more is said about a job. */
export const finalReports: readonly ReportKind[] = ['finished', 'answered', 'failed', 'cancelled'];

/**
 * The requester port: reports a job back where it was asked for. Adapters: the issue on the
 * forge (comments and progress labels), a Slack thread, LINE, an HTTP callback, and the CLI
 * (nothing to send). One is chosen per job by `job.source` ({@link requesterFor}).
 *
 * **Promises** (every adapter; `@codefleet/requester/conformance` checks them):
 * - **Idempotent**: the same report again (a redelivered job, a retried write) converges on
 *   the same messages and never posts a duplicate; a job has one status message, replaced
 *   or edited in place where the service allows it.
 * - **Final reports arrive**: `finished` carries the pull request's link, `failed` the
 *   reason and how to retry, `cancelled` who asked, `answered` the answer.
 * - **Untrusted text stays text**: titles, reasons and answers come from users and agents;
 *   nothing in them can mention everyone, break out of a code block or build a link the
 *   adapter did not mean. Secret values are masked before anything leaves.
 * - Failures reject with a `CodefleetError`: `network` / `forge_unavailable` /
 *   `rate_limited` (transient), `forge_rejected` (refused: auth, a deleted thread).
 *   Callers treat reporting as best effort: a failed report never changes a job's outcome.
 * - **Bounded**: every call leaving the process has its platform's request timeout and is
 *   retried by that platform's one retry policy (its `outbound.ts`); `signal` (the report's
 *   deadline, a shutdown) reaches the HTTP call where the platform's client takes one.
 *
 * **Leaves out**: the producer's own conversation before a job exists (a refusal, a
 * question about the repository), which the producer sends with its own client.
 */
export interface Requester {
  /** Which adapter this is, for logs and `codefleet doctor`. */
  readonly kind: string;
  /** True when this adapter reports for `job` (decided by `job.source`). */
  handles(job: Job): boolean;
  /** Sends `report`; stops early when `signal` aborts (what is already sent stays sent). */
  report(report: Report, signal?: AbortSignal): Promise<void>;
}

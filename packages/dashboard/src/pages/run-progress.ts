import { formatDuration, isTerminal, type RunRecord } from '@codefleet/core';
import type { WorkerInfo, WorkerJobProgress } from '@codefleet/store';
import { ansiHtml } from '../ansi.js';
import { absoluteTime } from '../format.js';
import { html, type Html } from '../html.js';

/** A running job's progress as its worker's registry entry says it. */
export interface LiveProgress {
  workerId: string;
  /** ISO: the worker's last write of its entry. */
  at: string;
  progress?: WorkerJobProgress | undefined;
}

/**
 * Where the run's job is, from the live workers' entries: the entry of the worker running
 * it (by job id: the worker knows the job, the pipeline picks the run), while the run is
 * unfinished. The same source as the worker's own status line (JobProgress).
 */
export function liveProgressOf(run: RunRecord, workers: readonly WorkerInfo[]): LiveProgress | undefined {
  if (isTerminal(run.stage)) return undefined;
  for (const worker of workers) {
    const job = worker.jobs.find((j) => j.jobId === run.job.id);
    if (job !== undefined) return { workerId: worker.id, at: worker.lastHeartbeat, progress: job.progress };
  }
  return undefined;
}

/**
 * A duration that goes on: rendered now, then counted on in the browser every second
 * (dashboard.js: from `data-now`, the server's clock, not the browser's, which may be
 * off), so an unchanged run is not re-sent for it.
 */
function runningFor(now: number, since: string | undefined): Html | string {
  const t = since === undefined ? Number.NaN : Date.parse(since);
  if (!Number.isFinite(t)) return '';
  return html`<span class="elapsed" data-since="${t}" data-now="${now}">${formatDuration(now - t)}</span>`;
}

/** The run page's "Now" section: what an unfinished run is doing, live. */
export function progressSection(run: RunRecord, live: LiveProgress | undefined, now: number): Html | string {
  if (isTerminal(run.stage)) return '';
  const attempt = run.attempts[run.attempts.length - 1];
  const started = attempt?.ended_at === undefined ? attempt?.started_at : undefined;
  const jobFor = started === undefined ? '' : html` · job running for ${runningFor(now, started)}`;
  const p = live?.progress;
  if (live === undefined || p === undefined) {
    const waiting =
      run.stage === 'queued' || run.stage === 'retry_wait'
        ? 'Waiting for a worker to claim it.'
        : live === undefined
          ? 'No live worker reports this run now: its worker may have stopped; the queue hands the job to another once its lease ends.'
          : 'Its worker has not reported a step yet.';
    return html`<section class="progress" data-progress="none"><h2>Now</h2>
<p><span class="state state-${run.stage}">${run.stage}</span>${jobFor}</p><p class="hint">${waiting}</p></section>`;
  }
  const where = [
    p.pass === undefined ? '' : html` · pass ${p.pass}`,
    p.innerAttempt === undefined ? '' : html` · fix attempt ${p.innerAttempt}`,
    p.step === undefined
      ? ''
      : html` · <strong data-step="${p.step}">${p.step}</strong> for ${runningFor(now, p.stepStartedAt)}`,
  ];
  return html`<section class="progress" data-progress="${p.stage}"><h2>Now</h2>
<p><span class="state state-${p.stage}" data-progress-stage="${p.stage}">${p.stage}</span>${where}${jobFor}</p>
${p.lines.length === 0 ? html`<p class="hint">No output from this step yet.</p>` : html`<pre class="live-output">${ansiHtml(p.lines.join('\n'))}</pre>`}
<p class="hint">As worker <code>${live.workerId}</code> reported <span title="${absoluteTime(live.at) ?? ''}">${runningFor(now, live.at)} ago</span>.</p>
</section>`;
}

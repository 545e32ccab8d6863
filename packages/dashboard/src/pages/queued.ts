import { describeHold, type PendingJob } from '@codefleet/queue';
import { ago } from '../format.js';
import { html, type Html } from '../html.js';

const jobHref = (id: string) => `/queue/${encodeURIComponent(id)}`;

/** Why a job waits: the limit that holds it, or its turn. */
function holdCell(job: PendingJob): Html {
  return job.heldBy === undefined
    ? html`<span class="muted">its turn</span>`
    : html`<span class="held" data-held-by="${job.heldBy.limit}">${describeHold(job.heldBy)}</span>`;
}

/**
 * The jobs waiting in the queue, longest-waiting first, each with the limit that holds it
 * back and a link to cancel it; `total` is the queue's count of waiting jobs.
 */
export function queuedBody(jobs: readonly PendingJob[], total: number, now: number, readOnly: boolean): Html {
  const count = html`<p class="pager"><span data-total="${total}">${jobs.length < total ? `the ${jobs.length} longest-waiting of ${total}` : `${total}`} job(s) waiting</span></p>`;
  if (jobs.length === 0) return html`<p class="ok">No job is waiting in the queue.</p>`;
  return html`${count}<table class="queued">
<thead><tr><th>Job</th><th>Repository</th><th>Requested by</th><th>Priority</th><th>Waiting</th><th>Held by</th>${readOnly ? '' : html`<th></th>`}</tr></thead>
<tbody>${jobs.map(
    (j) => html`<tr data-job="${j.id}">
<td><a href="${jobHref(j.id)}">${j.title ?? j.id}</a><small>${j.id}</small></td>
<td>${j.repo}</td><td>${j.requestedBy}</td><td>${j.priority}</td>
<td><time datetime="${new Date(j.enqueuedAt).toISOString()}">${ago(now, j.enqueuedAt)}</time></td>
<td>${holdCell(j)}</td>
${readOnly ? '' : html`<td><a href="${jobHref(j.id)}/cancel" class="button danger">Cancel…</a></td>`}
</tr>`,
  )}</tbody></table>`;
}

/** One waiting job's page: what it is, since when, what holds it, and a way to cancel it. */
export function queuedJobBody(job: PendingJob, now: number, readOnly: boolean): Html {
  return html`<section class="summary">
<p><span class="state state-queued" data-state="queued">queued</span> ${job.repo} · by ${job.requestedBy} · ${job.priority} priority
 · waiting since <time datetime="${new Date(job.enqueuedAt).toISOString()}">${ago(now, job.enqueuedAt)}</time></p>
<p>${holdCell(job)}</p>
<p>No worker has claimed it yet: it has no run. Once one does, this page leads to the run.</p>
${readOnly ? '' : html`<div class="actions"><a href="${jobHref(job.id)}/cancel" class="button danger">Cancel…</a></div>`}
</section>`;
}

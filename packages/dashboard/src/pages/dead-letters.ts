import type { DeadLetter } from '@codefleet/queue';
import { timeAgo } from '../format.js';
import { html, type Html } from '../html.js';
import { actionButton } from './layout.js';

/** The dead-letter queue: each job, why it was given up on, a redrive button and a link to drop it (with a reason). */
export function deadLettersBody(letters: DeadLetter[], now: number, csrf: string, readOnly: boolean): Html {
  if (letters.length === 0) return html`<p class="ok">The dead-letter queue is empty.</p>`;
  return html`<table class="dead-letters">
<thead><tr><th>Job</th><th>Reason</th><th>Attempts</th><th>Dead since</th>${readOnly ? '' : html`<th></th>`}</tr></thead>
<tbody>${letters.map(
    (d) =>
      html`<tr>
<td>${d.job === undefined ? html`<code>${d.id}</code> <small>not a valid job</small>` : html`<a href="/runs/${encodeURIComponent(d.job.id)}">${d.job.title}</a><small>${d.job.repo}</small>`}</td>
<td>${d.reason}</td><td>${d.attempts}</td><td>${timeAgo(now, d.deadAt)}</td>
${readOnly ? '' : html`<td>${actionButton(`/dead-letters/${encodeURIComponent(d.id)}/redrive`, 'Redrive', csrf)} <a href="/dead-letters/${encodeURIComponent(d.id)}/drop" class="button danger">Drop…</a></td>`}
</tr>`,
  )}</tbody></table>`;
}

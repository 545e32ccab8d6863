import type { DeadLetter } from '@codefleet/queue';
import { ago } from '../format.js';
import { html, type Html } from '../html.js';
import { maxDropReasonChars } from '../actions.js';
import { actionButton } from './layout.js';

/** The dead-letter queue: each job, why it was given up on, and redrive and drop buttons. */
export function deadLettersBody(letters: DeadLetter[], now: number, csrf: string, readOnly: boolean): Html {
  if (letters.length === 0) return html`<p class="ok">The dead-letter queue is empty.</p>`;
  return html`<table class="dead-letters">
<thead><tr><th>Job</th><th>Reason</th><th>Attempts</th><th>Dead since</th>${readOnly ? '' : html`<th></th>`}</tr></thead>
<tbody>${letters.map(
    (d) =>
      html`<tr>
<td>${d.job === undefined ? html`<code>${d.id}</code> <small>not a valid job</small>` : html`<a href="/runs/${encodeURIComponent(d.job.id)}">${d.job.title}</a><small>${d.job.repo}</small>`}</td>
<td>${d.reason}</td><td>${d.attempts}</td><td>${ago(now, d.deadAt)}</td>
${readOnly ? '' : html`<td>${actionButton(`/dead-letters/${encodeURIComponent(d.id)}/redrive`, 'Redrive', csrf)}${dropForm(d.id, csrf)}</td>`}
</tr>`,
  )}</tbody></table>`;
}

/** Dropping takes a reason: the job is gone afterwards, and the journal keeps why. */
function dropForm(id: string, csrf: string): Html {
  return html`<form method="post" action="/dead-letters/${encodeURIComponent(id)}/drop" class="action drop"><input type="hidden" name="csrf" value="${csrf}"><input name="reason" required maxlength="${maxDropReasonChars}" placeholder="why drop it" aria-label="Reason for dropping ${id}"><button type="submit" class="danger">Drop</button></form>`;
}

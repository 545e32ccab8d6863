import { ago, timeAgo } from '../format.js';
import { html, type Html } from '../html.js';
import { unfinishedStages, type Overview } from '../overview.js';

/** The overview's live part: warnings, queue, stages, workers. */
export function overviewBody(o: Overview): Html {
  const link = (runId: string) => `/runs/${encodeURIComponent(runId)}`;
  return html`
<section class="warnings">
${
  o.warnings.length === 0
    ? html`<p class="ok">Nothing needs you.</p>`
    : html`<ul>${o.warnings.map((w) => html`<li class="warning" data-kind="${w.kind}">${w.href === undefined ? w.message : html`<a href="${w.href}">${w.message}</a>`}</li>`)}</ul>`
}
</section>
<section class="cards">
<div class="card"><span class="n" data-count="queued">${o.queue.depth}</span> queued<small>${o.queue.ready} ready, ${o.queue.delayed} delayed</small></div>
<div class="card"><span class="n" data-count="oldest">${o.queue.oldestQueuedAt === undefined ? '–' : ago(o.now, o.queue.oldestQueuedAt).replace(/ ago$/, '')}</span> oldest queued job</div>
<div class="card"><span class="n" data-count="in-flight">${o.queue.inFlight}</span> running</div>
<div class="card"><span class="n" data-count="workers">${o.workers.length}</span> live workers</div>
<div class="card"><a href="/dead-letters"><span class="n" data-count="dead">${o.queue.deadLetter}</span> dead letters</a></div>
</section>
<section>
<h2>Runs per stage</h2>
<table class="stages"><tr>${unfinishedStages.map((s) => html`<th>${s}</th>`)}</tr>
<tr>${unfinishedStages.map((s) => html`<td data-stage="${s}">${s === 'queued' ? (o.perStage[s] ?? 0) : html`<a href="/runs?state=${s}">${o.perStage[s] ?? 0}</a>`}</td>`)}</tr></table>
</section>
<section>
<h2>Workers</h2>
${
  o.workers.length === 0
    ? html`<p>No live worker.</p>`
    : html`<table class="workers">
<thead><tr><th>Worker</th><th>Backend</th><th>Jobs</th><th>Current</th><th>Last heartbeat</th><th>Up since</th></tr></thead>
<tbody>${o.workers.map(
        (w) =>
          html`<tr>
<td>${w.id}${w.draining ? html` <span class="badge">draining</span>` : ''}<small>${w.host} pid ${w.pid} · ${w.version}</small></td>
<td>${w.backend} · ${w.queue}</td>
<td>${w.jobs.length}/${w.concurrency}</td>
<td>${w.jobs.length === 0 ? 'idle' : w.jobs.map((j) => html`<a href="${link(j.runId)}">${j.title}</a> <small>${j.progress === undefined ? '' : html`${j.progress.stage}${j.progress.step === undefined ? '' : html` · ${j.progress.step}`} · `}started ${timeAgo(o.now, j.startedAt)}</small>`)}</td>
<td>${timeAgo(o.now, w.lastHeartbeat)}</td>
<td>${timeAgo(o.now, w.startedAt)}</td>
</tr>`,
      )}</tbody></table>`
}
</section>`;
}

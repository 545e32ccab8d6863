import { formatDuration, formatUsd, runOutcomes } from '@codefleet/core';
import { chartDays, type FleetCharts } from '../fleet-charts.js';
import { html, type Html } from '../html.js';
import { barChart, legend, lineChart, type Frame } from '../svg.js';

// The overview's spend summary, top spenders and charts of the last 30 days (fleet-charts.ts
// reads them). Everything is drawn on the server (svg.ts); names are data and escaped there.

const wide: Frame = { width: 760, height: 180 };
const small: Frame = { width: 360, height: 140 };

const percent = (n: number) => `${Math.round(n * 100)}%`;
const count = (n: number) => String(Math.round(n * 10) / 10);
const seconds = (s: number) => (s === 0 ? '0' : formatDuration(s * 1_000));
const outcomeClass = (outcome: string) => `fill-${outcome}`;

/** Spend against the budget: today's against the day budget, 7 and 30 days against it as many times. */
function spendCards(spend: FleetCharts['spend']): Html {
  const card = (label: string, usd: number, days: number, key: string) => {
    const limit = spend.dayBudgetUsd === undefined ? undefined : spend.dayBudgetUsd * days;
    const over = limit !== undefined && usd >= limit;
    return html`<div class="card${over ? ' over' : ''}"><span class="n" data-spend="${key}">${formatUsd(usd)}</span> ${label}<small>${
      limit === undefined
        ? 'no budget set (costs.budget_usd.day)'
        : html`of ${formatUsd(limit)} budget${days === 1 ? '' : ` (${days} × the day's)`}`
    }</small></div>`;
  };
  return html`<section class="cards spend">
${card('today (UTC)', spend.todayUsd, 1, 'today')}
${card('last 7 days', spend.weekUsd, 7, 'week')}
${card(`last ${chartDays} days`, spend.monthUsd, chartDays, 'month')}
</section>`;
}

/** The top spenders of each facet, with a bar of their share of the first. */
function topSpenders(top: FleetCharts['top']): Html {
  const table = (title: string, key: string, rows: { name: string; usd: number }[]) => {
    const most = rows[0]?.usd ?? 0;
    return html`<table class="top" data-top="${key}"><thead><tr><th>${title}</th><th>Spent</th></tr></thead><tbody>${
      rows.length === 0
        ? html`<tr><td colspan="2">Nothing spent.</td></tr>`
        : rows.map(
            (row) =>
              html`<tr><td>${row.name}<svg class="share" viewBox="0 0 100 4" width="100" height="4" aria-hidden="true"><rect x="0" y="0" height="4" width="${most > 0 ? Math.round((row.usd / most) * 1000) / 10 : 0}"></rect></svg></td><td class="cost">${formatUsd(row.usd)}</td></tr>`,
          )
    }</tbody></table>`;
  };
  return html`<section><h2>Top spenders, last ${chartDays} days</h2><div class="tops">
${table('Repository', 'repo', top.repo)}${table('Agent', 'agent', top.agent)}${table('Model', 'model', top.model)}
</div></section>`;
}

/** Runs finished per hour, stacked by outcome. */
function jobsPerHour(c: FleetCharts): Html {
  const bars = c.hours.map((hour, i) => {
    const day = c.days[Math.floor(i / 24)] ?? '';
    const at = `${day} ${String(i % 24).padStart(2, '0')}:00 UTC`;
    const said = runOutcomes.filter((o) => (hour[o] ?? 0) > 0).map((o) => `${hour[o]} ${o}`);
    return {
      label: day,
      title: `${at}: ${said.length === 0 ? 'none finished' : said.join(', ')}`,
      segments: runOutcomes.map((o) => ({ value: hour[o] ?? 0, cls: outcomeClass(o) })),
    };
  });
  return html`<figure data-chart="jobs-per-hour"><figcaption>Runs finished per hour, by outcome</figcaption>
${barChart(wide, bars, count, 'Runs finished per hour, by outcome')}
${legend(runOutcomes.map((o) => ({ name: o, cls: outcomeClass(o) })))}</figure>`;
}

/** The overview's section of cost and throughput over the last days. */
export function chartsBody(c: FleetCharts): Html {
  const dayLabels = c.days.map((d) => d.slice(5));
  const cost = c.costPerDay.map((usd, i) => ({
    label: dayLabels[i] ?? '',
    title: `${c.days[i] ?? ''}: ${formatUsd(usd)}`,
    segments: [{ value: usd, cls: 'fill-cost' }],
  }));
  return html`<section class="fleet-charts">
<h2>Spend</h2>
${spendCards(c.spend)}
${topSpenders(c.top)}
<section><h2>Last ${chartDays} days</h2>
${jobsPerHour(c)}
<div class="charts-row">
<figure data-chart="success-rate"><figcaption>Success rate per day (succeeded / finished)</figcaption>
${lineChart(small, dayLabels, [{ name: 'success rate', cls: 'stroke-succeeded', values: c.successRate }], percent, 'Success rate per day', 1)}</figure>
<figure data-chart="cost-per-day"><figcaption>Cost per day (UTC)</figcaption>
${barChart(small, cost, (n) => formatUsd(n).replace(/0+$/, '').replace(/\.$/, ''), 'Cost per day')}</figure>
</div>
<h3>Time per stage (p50 and p95 per day)</h3>
<div class="charts-row">${c.stages.map(
    (
      s,
    ) => html`<figure data-chart="stage-${s.stage}"><figcaption>${s.stage}: p50 ${s.overall.p50 === undefined ? '–' : seconds(s.overall.p50)}, p95 ${s.overall.p95 === undefined ? '–' : seconds(s.overall.p95)} over ${chartDays} days</figcaption>
${lineChart(
  small,
  dayLabels,
  [
    { name: `${s.stage} p50`, cls: 'stroke-p50', values: s.p50 },
    { name: `${s.stage} p95`, cls: 'stroke-p95', values: s.p95 },
  ],
  seconds,
  `${s.stage} duration p50 and p95 per day`,
)}</figure>`,
  )}</div>
${legend([
  { name: 'p50', cls: 'stroke-p50' },
  { name: 'p95', cls: 'stroke-p95' },
])}
</section>
</section>`;
}

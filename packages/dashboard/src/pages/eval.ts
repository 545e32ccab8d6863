import { formatUsd } from '@codefleet/core';
import { failureKinds, type ConfigSummary, type EvalReport } from '@codefleet/eval';
import { timeAgo } from '../format.js';
import { html, type Html } from '../html.js';

/** One suite's line on the evaluations page. */
export interface SuiteLine {
  digest: string;
  runs: number;
  configs: string[];
  instances: number;
  /** Newest run's creation, ms. */
  newest: number;
}

const pct = (rate: number | undefined) => (rate === undefined ? '–' : `${(rate * 100).toFixed(1)}%`);

/** The suites evaluated, newest first, each a link to its report. */
export function evalSuitesBody(suites: readonly SuiteLine[], now: number): Html {
  if (suites.length === 0)
    return html`<p>No evaluation has run yet: <code>codefleet eval run</code> queues one (see docs/evaluation.md in codefleet).</p>`;
  return html`<table class="eval-suites">
<thead><tr><th>Suite</th><th>Instances</th><th>Configurations</th><th>Runs</th><th>Newest</th></tr></thead>
<tbody>${suites.map(
    (s) =>
      html`<tr><td><a href="/eval/${s.digest}"><code>${s.digest.slice(0, 12)}</code></a></td><td>${s.instances}</td><td>${s.configs.join(', ')}</td><td>${s.runs}</td><td>${timeAgo(now, s.newest)}</td></tr>`,
  )}</tbody></table>`;
}

// Bars of a chart: one row per configuration, the resolved rate as a bar and its 95% interval
// as a whisker; drawn as SVG on the server, no script and no library.
function resolvedChart(configs: readonly ConfigSummary[]): Html {
  const row = 28;
  const label = 140;
  const width = 360;
  const height = configs.length * row + 24;
  const x = (rate: number) => label + rate * width;
  return html`<svg class="eval-chart" role="img" aria-label="Resolved rate per configuration, with 95% intervals" viewBox="0 0 ${label + width + 60} ${height}" width="100%">
${configs.map((c, i) => {
  const y = i * row + 4;
  const rate = c.resolved.rate ?? 0;
  const { low, high } = c.resolved.interval;
  return html`<g><text x="0" y="${y + 15}">${c.config}</text><rect x="${label}" y="${y}" width="${(rate * width).toFixed(1)}" height="18" class="bar"><title>${c.config}: ${pct(c.resolved.rate)}</title></rect><line x1="${x(low).toFixed(1)}" x2="${x(high).toFixed(1)}" y1="${y + 9}" y2="${y + 9}" class="whisker"></line><text x="${label + width + 6}" y="${y + 15}">${pct(c.resolved.rate)}</text></g>`;
})}
<line x1="${label}" x2="${label}" y1="0" y2="${height - 20}" class="axis"></line><text x="${label}" y="${height - 4}">0%</text><text x="${label + width - 30}" y="${height - 4}">100%</text>
</svg>`;
}

function configRows(configs: readonly ConfigSummary[]): Html {
  return html`<table class="eval-configs">
<thead><tr><th>Configuration</th><th>Resolved</th><th>95% interval</th><th>pass@k</th><th>pass^k</th><th>Cost</th><th>Per resolved</th><th>Tokens</th><th>Wall p50</th><th>Wall p95</th><th>Fix attempts</th></tr></thead>
<tbody>${configs.map(
    (c) =>
      html`<tr><td>${c.config}</td><td>${c.resolved.count}/${c.resolved.of} (${pct(c.resolved.rate)})</td><td>${pct(c.resolved.interval.low)}–${pct(c.resolved.interval.high)}</td><td>${c.trials.byK.map((k) => `@${k.k} ${pct(k.passAtK)}`).join(', ')}</td><td>${c.trials.byK.map((k) => `^${k.k} ${pct(k.passHatK)}`).join(', ')}</td><td>${formatUsd(c.costUsd)}</td><td>${c.costPerResolvedUsd === undefined ? '–' : formatUsd(c.costPerResolvedUsd)}</td><td>${c.tokens}</td><td>${seconds(c.wallMs.p50)}</td><td>${seconds(c.wallMs.p95)}</td><td>${c.fixAttempts}</td></tr>`,
  )}</tbody></table>`;
}

const seconds = (ms: number | undefined) => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);

/** One suite's report: the header that reproduces it, the chart, the numbers, failures and comparisons. */
export function evalReportBody(report: EvalReport): Html {
  const { header } = report;
  return html`<p class="eval-header">Suite <code>${header.suite}</code>: ${header.instances} instances, up to ${header.trials} trial(s) each, from the newest evaluation runs in the run store. <code>codefleet eval report</code> gives the same numbers with the header that reproduces them.</p>
${resolvedChart(report.configs)}
${configRows(report.configs)}
<h2>Failures</h2>
<table class="eval-failures"><thead><tr><th>Configuration</th>${failureKinds.map((kind) => html`<th>${kind.replace('_', ' ')}</th>`)}</tr></thead>
<tbody>${report.configs.map((c) => html`<tr><td>${c.config}</td>${failureKinds.map((kind) => html`<td>${c.failures[kind] ?? 0}</td>`)}</tr>`)}</tbody></table>
<p><small>Infrastructure failures and unfinished trials are left out of the rates.</small></p>
<h2>Paired comparisons</h2>
${
  report.comparisons.length === 0
    ? html`<p>One configuration: nothing to compare.</p>`
    : html`<table class="eval-pairs"><thead><tr><th>A</th><th>B</th><th>Instances</th><th>A wins</th><th>B wins</th><th>Ties</th><th>A − B</th><th>Verdict</th></tr></thead>
<tbody>${report.comparisons.map((p) => html`<tr><td>${p.a}</td><td>${p.b}</td><td>${p.instances}</td><td>${p.wins}</td><td>${p.losses}</td><td>${p.ties}</td><td>${pct(p.difference)}</td><td>${p.reason}</td></tr>`)}</tbody></table>`
}`;
}

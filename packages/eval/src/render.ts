import { formatUsd } from '@codefleet/core';
import { failureKinds, type EvalReport } from './report.js';

const pct = (rate: number | undefined) => (rate === undefined ? '–' : `${(rate * 100).toFixed(1)}%`);
const usd = (amount: number | undefined) => (amount === undefined ? '–' : formatUsd(amount));
const seconds = (ms: number | undefined) => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);
// Table cells hold names the suite and the operator wrote: a pipe or a line break would break the table.
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s+/g, ' ');

/** The report as Markdown: the header to reproduce it, one row per configuration, the comparisons. */
export function renderMarkdown(report: EvalReport): string {
  const { header } = report;
  const lines = [
    '# codefleet eval report',
    '',
    `- codefleet: \`${cell(header.codefleet)}\``,
    `- suite: \`${header.suite}\` (${header.instances} instances, ${header.trials} trial(s) each)`,
    `- configurations: ${header.configs.map((c) => `\`${cell(c.kind === 'agent' ? `${c.name}=${c.agent}` : c.name)}\``).join(', ')}`,
    '',
    '## Configurations',
    '',
    '| configuration | resolved | 95% interval | pass@k | pass^k | cost | per resolved | tokens | wall p50 | wall p95 | fix attempts | tiers |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const c of report.configs) {
    const atK = c.trials.byK.map((k) => `@${k.k} ${pct(k.passAtK)}`).join(', ');
    const hatK = c.trials.byK.map((k) => `^${k.k} ${pct(k.passHatK)}`).join(', ');
    const tiers = Object.entries(c.tiers)
      .map(([tier, n]) => `${tier}: ${n}`)
      .join(', ');
    lines.push(
      `| ${cell(c.config)} | ${c.resolved.count}/${c.resolved.of} (${pct(c.resolved.rate)}) | ${pct(c.resolved.interval.low)}–${pct(c.resolved.interval.high)} | ${atK} | ${hatK} | ${usd(c.costUsd)} | ${usd(c.costPerResolvedUsd)} | ${c.tokens} | ${seconds(c.wallMs.p50)} | ${seconds(c.wallMs.p95)} | ${c.fixAttempts} | ${tiers} |`,
    );
  }
  lines.push('', '## Failures', '', `| configuration | ${failureKinds.join(' | ')} |`);
  lines.push(`| --- | ${failureKinds.map(() => '---').join(' | ')} |`);
  for (const c of report.configs)
    lines.push(`| ${cell(c.config)} | ${failureKinds.map((kind) => c.failures[kind] ?? 0).join(' | ')} |`);
  lines.push(
    '',
    'Infrastructure failures and unfinished trials are left out of the rates: they say nothing of a configuration.',
  );
  if (report.comparisons.length > 0) {
    lines.push(
      '',
      '## Paired comparisons',
      '',
      '| a | b | instances | a wins | b wins | ties | a − b | 95% interval | verdict |',
    );
    lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const p of report.comparisons) {
      const interval = p.interval === undefined ? '–' : `${pct(p.interval.low)} to ${pct(p.interval.high)}`;
      lines.push(
        `| ${cell(p.a)} | ${cell(p.b)} | ${p.instances} | ${p.wins} | ${p.losses} | ${p.ties} | ${pct(p.difference)} | ${interval} | ${cell(p.reason)} |`,
      );
    }
  }
  if (report.cheapest !== undefined)
    lines.push('', `**Cheapest to ${pct(report.cheapest.target)}:** ${cell(report.cheapest.reason)}`);
  return `${lines.join('\n')}\n`;
}

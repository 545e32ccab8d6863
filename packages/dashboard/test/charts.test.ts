import { describe, expect, it } from '@jest/globals';
import { durationBuckets, type FleetStats } from '@codefleet/store';
import { chartsOf, quantile } from '../src/fleet-charts.js';
import { chartsBody } from '../src/pages/charts.js';
import { barChart, lineChart, niceMax } from '../src/svg.js';

// The charts' numbers and geometry, without a browser: values to rects and points, labels
// escaped, histograms to percentiles as Prometheus computes them.

const frame = { width: 200, height: 120 };
// The plot inside the frame: 52 left, 8 right, 8 top, 20 bottom (svg.ts), so 92 units tall.
const plotTop = 8;
const plotBottom = 100;

const attrs = (svg: string, tag: string) =>
  [...svg.matchAll(new RegExp(`<${tag} ([^>]*)>`, 'g'))].map((m) =>
    Object.fromEntries([...(m[1] ?? '').matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1], a[2]])),
  );

describe('svg charts', () => {
  it('rounds the scale up to 1, 2 or 5 times a power of ten', () => {
    expect([0, 0.3, 1, 4, 7, 12, 250, Number.NaN].map(niceMax)).toEqual([1, 0.5, 1, 5, 10, 20, 500, 1]);
  });

  it('stacks bar segments bottom up, scaled to the rounded-up tallest bar, and escapes every label', () => {
    const svg = barChart(
      frame,
      [
        {
          label: '<b>mon</b>',
          title: 'x"><script>alert(1)</script>',
          segments: [
            { value: 3, cls: 'a' },
            { value: 1, cls: 'b' },
          ],
        },
        { label: 'tue', title: 'nothing', segments: [{ value: 0, cls: 'a' }] },
      ],
      String,
      'runs & "things"',
    ).text;
    const rects = attrs(svg, 'rect');
    // Top of the scale: niceMax(4) = 5. 3 of 5 is 55.2 units tall from the bottom; 1 more on top is 18.4.
    expect(rects).toEqual([
      { class: 'a', x: '52', y: String(plotBottom - 55.2), width: '68', height: '55.2' },
      { class: 'b', x: '52', y: String(Math.round((plotBottom - 73.6) * 100) / 100), width: '68', height: '18.4' },
    ]);
    expect(svg).toContain('aria-label="runs &amp; &quot;things&quot;"');
    expect(svg).toContain('<title>x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>');
    expect(svg).toContain('&lt;b&gt;mon&lt;/b&gt;</text>');
    expect(svg).not.toMatch(/<script|<b>/);
    // The y axis says 0, half and the top.
    expect(attrs(svg, 'text').filter((t) => t['text-anchor'] === 'end' && t.x === '48')).toHaveLength(3);
    expect(svg).toMatch(/>5<\/text>/);
  });

  it('draws lines through the defined values, breaks them at gaps, and a lone value as a dot', () => {
    const svg = lineChart(
      frame,
      ['a', 'b', 'c', 'd', 'e'],
      [{ name: 'rate <1>', cls: 'l', values: [0.5, undefined, 1, 0, undefined] }],
      String,
      'rate',
      1,
    ).text;
    // Five slots over 140 units: 35 apart. 0.5 of 1 is halfway up the plot.
    expect(attrs(svg, 'circle')).toEqual([{ cx: '52', cy: String((plotTop + plotBottom) / 2), r: '2' }]);
    expect(attrs(svg, 'polyline')).toEqual([{ points: `122,${plotTop} 157,${plotBottom}` }]);
    expect(svg).toContain('<title>rate &lt;1&gt;</title>');
  });
});

describe('chart numbers', () => {
  it('interpolates percentiles within their bucket, as histogram_quantile does', () => {
    const counts = durationBuckets.map(() => 0).concat(0);
    expect(quantile(counts, 0.5)).toBeUndefined();
    // 10 runs between 30 s and 60 s (bucket 4: 30 < t ≤ 60): the median is halfway, 45 s.
    counts[4] = 10;
    expect(quantile(counts, 0.5)).toBe(45);
    // One past the last bound: the 95th of 20 lands in the unbounded bucket, its lower bound.
    counts[durationBuckets.length] = 10;
    expect(quantile(counts, 0.95)).toBe(7200);
  });

  it('sums spend over 1, 7 and 30 days, rates success per day, and renders the section escaped', () => {
    const day = (i: number) => `2026-11-${String(i).padStart(2, '0')}`;
    const hours = () => Array.from({ length: 24 }, () => ({}));
    const stats: FleetStats = {
      days: Array.from({ length: 30 }, (_, i) => ({ day: day(i + 1), spentUsd: 1, hours: hours(), stages: {} })),
      top: { repo: [{ name: '<img src=x onerror=alert(1)>', usd: 2 }], agent: [], model: [] },
    };
    stats.days[29]!.hours[13] = { succeeded: 3, failed: 1 };
    stats.days[29]!.stages.testing = [0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0];
    const charts = chartsOf(stats, 2);
    expect(charts.spend).toEqual({ todayUsd: 1, weekUsd: 7, monthUsd: 30, dayBudgetUsd: 2 });
    expect(charts.successRate.slice(-2)).toEqual([undefined, 0.75]);
    expect(charts.hours).toHaveLength(720);
    expect(charts.stages.find((s) => s.stage === 'testing')?.overall).toEqual({ p50: 45, p95: 58.5 });
    const body = chartsBody(charts).text;
    expect(body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(body).not.toContain('<img');
    expect(body).toContain('data-spend="week">$7.0000</span> last 7 days<small>of $14.0000 budget (7 × the day&#39;s)');
    expect(body).toContain('<title>2026-11-30 13:00 UTC: 3 succeeded, 1 failed</title>');
  });
});

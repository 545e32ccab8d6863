import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { chromium, type Browser } from 'playwright-core';
import { advance, finish, newRun, setGrade, startAttempt } from '@codefleet/core';
import { defaultWaitMs, waitFor } from '@codefleet/testkit';
import { failedRun, implementingRun, jobOf, openBackends, startDashboard, token, type Backends } from './helpers.js';

// Clicks through the dashboard in Debian's Chromium: log in, overview, a running job's
// page, cancel; the cancel must land in the run store and its journal. Screenshots go to
// test-output/ (gitignored); with CODEFLEET_UPDATE_SCREENSHOT=1 the overview is also
// copied to docs/dashboard.png, the README's picture.

const outDir = new URL('../test-output/', import.meta.url).pathname;
const docsPicture = new URL('../../../docs/dashboard.png', import.meta.url).pathname;

/** Chromium on PATH, or a failure that says how to install it: a missing browser is never a skip. */
async function chromiumPath(): Promise<string> {
  const found = await execa('sh', ['-c', 'command -v chromium'], { reject: false });
  const path = found.stdout.trim();
  if (found.exitCode !== 0 || path === '') {
    throw new Error(
      'chromium is not installed: the dashboard test needs it (apt-get install -y chromium; .ci/run installs it)',
    );
  }
  return path;
}

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
let browser: Browser;

beforeAll(async () => {
  const executablePath = await chromiumPath();
  await mkdir(outDir, { recursive: true });
  b = await openBackends();
  dash = await startDashboard(b, { pollMs: 200 });
  browser = await chromium.launch({
    executablePath,
    // Chromium cannot start its sandbox as root (CI and this machine run tests as root) and
    // exits instead. The only pages it loads are this test's dashboard on loopback.
    args: ['--no-sandbox'],
  });
});

afterAll(async () => {
  await browser?.close();
  await dash?.close();
  await b?.dispose();
});

describe('the dashboard in Chromium', () => {
  it('goes overview → running job → cancel, and the cancel lands in the store and the journal', async () => {
    const now = Date.now();
    const running = jobOf('add-retry-1', { title: 'Add retries to the HTTP client', repo: 'octo/widgets' });
    // Claimed from the queue (in flight) as its worker would have, then recorded as implementing.
    await b.queue.enqueue(running);
    const lease = await b.queue.claim({ workerId: 'mini-1:4242:k3x' });
    expect(lease?.job.id).toBe(running.id);
    await b.store.save(implementingRun(running, new Date(now - 4 * 60_000)));
    await b.store.save(
      failedRun(
        jobOf('fix-lint-1', { title: 'Fix the lint warnings in src/', repo: 'octo/gadgets', source: { kind: 'cli' } }),
        new Date(now - 40 * 60_000),
      ),
    );
    await b.queue.enqueue(jobOf('docs-1', { title: 'Document the config file', repo: 'octo/widgets' }));
    await b.store.heartbeatWorker(
      {
        id: 'mini-1:4242:k3x',
        host: 'mini-1',
        pid: 4242,
        version: '0.1.0',
        queue: 'jobs',
        backend: 'local',
        concurrency: 2,
        startedAt: new Date(now - 3_600_000).toISOString(),
        lastHeartbeat: new Date(now - 5_000).toISOString(),
        draining: false,
        jobs: [
          {
            jobId: running.id,
            runId: running.id,
            taskKey: running.idempotency_key,
            title: running.title,
            startedAt: new Date(now - 4 * 60_000).toISOString(),
          },
        ],
      },
      60_000,
    );

    const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
    // Playwright's 30 s default would be a speed limit on a loaded machine.
    page.setDefaultTimeout(defaultWaitMs());
    const scripts: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') scripts.push(m.text());
    });
    await page.goto(`${dash.base}/`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${dash.base}/`);
    await page.locator('[data-count="workers"]', { hasText: '1' }).waitFor();

    // Live: a job queued after the page loaded shows up without a reload.
    await b.queue.enqueue(jobOf('tests-1', { title: 'Cover the parser with tests', repo: 'octo/widgets' }));
    await page.locator('[data-count="queued"]', { hasText: '2' }).waitFor();
    await page.screenshot({ path: join(outDir, 'overview.png'), fullPage: true });

    await page.click(`a[href="/runs/${running.id}"]`);
    await page.waitForURL(`${dash.base}/runs/${running.id}`);
    await page.locator('[data-state="implementing"]').waitFor();
    await page.screenshot({ path: join(outDir, 'run.png'), fullPage: true });

    // Cancel asks first, on a page of its own, and wants a reason: the browser will not send the form without one.
    await page.click('a:has-text("Cancel…")');
    await page.waitForURL(`${dash.base}/runs/${running.id}/cancel`);
    await page.click('button:has-text("Cancel the run")');
    expect(await page.locator('#reason:invalid').count()).toBe(1);
    expect(await b.store.cancelRequested(running.idempotency_key)).toBeUndefined();
    await page.fill('#reason', 'Asked for the wrong repository');
    await page.screenshot({ path: join(outDir, 'cancel-confirm.png'), fullPage: true });
    await page.click('button:has-text("Cancel the run")');
    await page.waitForURL(`${dash.base}/runs/${running.id}`);
    await page.locator('[data-cancel="pending"]').waitFor();
    await page.locator('ul.journal li', { hasText: 'Asked for the wrong repository' }).waitFor();
    await page.screenshot({ path: join(outDir, 'cancelled.png'), fullPage: true });

    const cancel = await waitFor(() => b.store.cancelRequested(running.idempotency_key), {
      what: 'the cancel request in the store',
    });
    expect(cancel.by).toBe('dashboard');
    expect(await b.store.journal({ runId: running.id })).toEqual([
      expect.objectContaining({
        kind: 'action',
        action: 'cancel',
        by: 'dashboard',
        via: 'dashboard',
        jobId: running.id,
        detail: 'Asked for the wrong repository',
      }),
    ]);
    // A failed run: its failing check comes first, open, with its output.
    await page.click('a[href="/runs"]');
    await page.click('a[href="/runs/fix-lint-1"]');
    const firstCheck = page.locator('li.check').first();
    expect(await firstCheck.getAttribute('class')).toContain('failed');
    expect(await firstCheck.locator('details').getAttribute('open')).not.toBeNull();
    await firstCheck.locator('pre', { hasText: 'FAIL widget.test.js' }).waitFor();
    await page.screenshot({ path: join(outDir, 'failed-run.png'), fullPage: true });

    // The CSP allowed everything the page needs: nothing was refused.
    expect(scripts).toEqual([]);
    if (process.env.CODEFLEET_UPDATE_SCREENSHOT === '1') await copyFile(join(outDir, 'overview.png'), docsPicture);
  });

  it('shows a banner on a tab refused a live stream, which clears once another tab closes', async () => {
    // A dashboard that gives a browser one live stream: the second tab is one too many.
    const small = await startDashboard(b, { pollMs: 200, maxStreamsPerClient: 1 });
    const context = await browser.newContext({ viewport: { width: 1280, height: 820 } });
    try {
      const first = await context.newPage();
      first.setDefaultTimeout(defaultWaitMs());
      await first.goto(`${small.base}/login`);
      await first.fill('#token', token);
      await first.click('button[type=submit]');
      await first.waitForURL(`${small.base}/`);
      await first.locator('body[data-updated]').waitFor();

      const second = await context.newPage();
      second.setDefaultTimeout(defaultWaitMs());
      await second.goto(`${small.base}/`);
      const banner = second.locator('#problem[data-problem="refused"]');
      await banner.waitFor();
      expect(await banner.textContent()).toContain('too many live views are open in this browser');
      expect(await second.locator('#live.stale').count()).toBe(1);
      await second.screenshot({ path: join(outDir, 'stream-refused.png'), fullPage: true });
      expect(await first.locator('#problem').isHidden()).toBe(true);

      // The refused tab asks again by itself (every 30 s) and gets the stream the first one frees.
      await first.close();
      await second.locator('#problem').waitFor({ state: 'hidden' });
      expect(await second.locator('#live.stale').count()).toBe(0);
    } finally {
      await context.close();
      await small.close();
    }
  });

  it("renders an evaluation's report: the suites, then a suite's chart, numbers and comparisons", async () => {
    const suite = 'e'.repeat(64);
    // Four instances; the oracle resolves all, the agent under test two, one of them on a git failure's retry.
    const ends: Record<string, boolean[]> = { oracle: [true, true, true, true], claude: [true, false, true, false] };
    for (const [config, resolved] of Object.entries(ends)) {
      for (const [i, ok] of resolved.entries()) {
        const job = jobOf(`eval-${config}-${i}`, {
          title: `Fix bug ${i}`,
          repo: 'octo/widgets',
          source: { kind: 'eval', suite, instance: `octo__widgets-${i}`, config, trial: 1 },
          ...(config === 'oracle' ? { patch: 'diff' } : { agent: 'claude' }),
        });
        const started = startAttempt(newRun(job, { runId: job.id, now: new Date() }), {
          workerId: 'w',
          now: new Date(),
        });
        const graded = setGrade(
          started,
          { resolved: ok, reason: ok ? 'passed' : 'failed', checks: [], duration_ms: 5 },
          { now: new Date() },
        );
        await b.store.save({ ...graded, stage: 'done', outcome: 'succeeded', dod_result: 'passed' });
      }
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
    page.setDefaultTimeout(defaultWaitMs());
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${dash.base}/login`);
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${dash.base}/`);
    await page.click('a[href="/eval"]');
    await page.click(`a[href="/eval/${suite}"]`);
    await page.locator('svg.eval-chart').waitFor();
    expect(await page.locator('svg.eval-chart rect.bar').count()).toBe(2);
    // Bars drawn to scale, configurations by name: the oracle's is twice claude's.
    const widths = await page
      .locator('svg.eval-chart rect.bar')
      .evaluateAll((bars) => bars.map((bar) => Number(bar.getAttribute('width'))));
    expect(widths[1]).toBeCloseTo(2 * (widths[0] ?? 0), 1);
    await page.locator('table.eval-configs td', { hasText: '2/4 (50.0%)' }).waitFor();
    await page
      .locator('table.eval-pairs td', { hasText: 'only 4 paired instances; 20 are needed to call a winner' })
      .waitFor();
    await page.screenshot({ path: join(outDir, 'eval-report.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it("draws the overview's spend, top spenders and 30-day charts from the store's day totals", async () => {
    // Runs that finished over the last 30 days, a few each day, of every outcome; spend each day.
    const day = 86_400_000;
    const outcomes = ['succeeded', 'succeeded', 'failed', 'no_changes', 'succeeded', 'cancelled'] as const;
    // The runs the tests before this one finished are counted too.
    const finishedSoFar = async () => {
      const today = new Date().toISOString().slice(0, 10);
      const from = new Date(Date.now() - 29 * day).toISOString().slice(0, 10);
      const { days } = await b.store.fleetStats({ from, to: today });
      return days.flatMap((d) => d.hours.flatMap((h) => Object.values(h))).reduce((a, n) => a + (n ?? 0), 0);
    };
    const before = await finishedSoFar();
    for (let d = 29; d >= 0; d -= 1) {
      for (let i = 0; i < 1 + (d % 4); i += 1) {
        // An hour or more back, but on day d (UTC), as the 30-day window counts it: early in
        // the day, an hour back from day 29 is day 30, outside the window.
        const dayStart = Date.parse(new Date(Date.now() - d * day).toISOString().slice(0, 10));
        const start = Math.max(Date.now() - d * day - (i + 1) * 3_600_000, dayStart + i * 900_000);
        const at = (min: number) => new Date(start + min * 60_000);
        const job = jobOf(`chart-${d}-${i}`, { repo: i % 2 === 0 ? 'octo/widgets' : 'octo/gadgets' });
        let run = startAttempt(newRun(job, { runId: job.id, now: at(0) }), { workerId: 'w', now: at(0) });
        run = advance(run, 'preparing', { now: at(0) });
        run = advance(run, 'planning', { now: at(0.5) });
        run = advance(run, 'implementing', { now: at(1 + (d % 3)) });
        run = advance(run, 'testing', { now: at(6 + d / 2) });
        run = advance(run, 'validating', { now: at(9 + d / 2) });
        run = advance(run, 'publishing', { now: at(9.5 + d / 2) });
        await b.store.save(finish(run, outcomes[(d + i) % outcomes.length]!, { now: at(10 + d / 2 + i) }));
      }
      const spentOn = new Date(Date.now() - d * day).toISOString().slice(0, 10);
      await b.store.addSpend(spentOn, 0.2 + (d % 5) / 10, { repo: 'octo/widgets', agent: 'claude', model: 'opus' });
      if (d % 2 === 0)
        await b.store.addSpend(spentOn, 0.1, { repo: 'octo/gadgets', agent: 'codex', model: '<i>gpt</i>' });
    }
    // A dashboard of its own: a fresh one reads the totals now, not the minute-old ones of the first.
    const charted = await startDashboard(b, { pollMs: 200, dayBudgetUsd: 1 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
    try {
      page.setDefaultTimeout(defaultWaitMs());
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      await page.goto(`${charted.base}/login`);
      await page.fill('#token', token);
      await page.click('button[type=submit]');
      await page.waitForURL(`${charted.base}/`);
      const hourly = page.locator('figure[data-chart="jobs-per-hour"] svg');
      await hourly.waitFor();
      // Every finished run is one unit of a bar: the bars add up to the runs saved.
      const saved = Array.from({ length: 30 }, (_, d) => 1 + (d % 4)).reduce((a, n) => a + n, 0);
      const units = await hourly.locator('rect').evaluateAll((rects) => rects.length);
      expect(units).toBeGreaterThan(30);
      const titles = await hourly.locator('g.bar title').allTextContents();
      const counted = titles
        .flatMap((t) => [...t.matchAll(/(\d+) (?:succeeded|failed|no_changes|cancelled|dod_failed)/g)])
        .reduce((a, m) => a + Number(m[1]), 0);
      expect(counted).toBe(before + saved);
      expect(await page.locator('figure[data-chart="success-rate"] polyline').count()).toBeGreaterThan(0);
      expect(await page.locator('figure[data-chart="cost-per-day"] rect').count()).toBe(30);
      expect(await page.locator('figure[data-chart="stage-implementing"] polyline').count()).toBe(2);
      // A model name (the agent's word) is text on the page, not markup.
      await page.locator('table[data-top="repo"] td', { hasText: 'octo/gadgets' }).waitFor();
      await page.locator('table[data-top="model"] td', { hasText: '<i>gpt</i>' }).waitFor();
      expect(await page.locator('table[data-top] i').count()).toBe(0);
      expect(await page.locator('[data-spend="today"]').textContent()).toMatch(/^\$0\.3000$/);
      // The chart is drawn at its size, not collapsed.
      expect((await hourly.boundingBox())?.width).toBeGreaterThan(600);
      await page.screenshot({ path: join(outDir, 'overview-charts.png'), fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await charted.close();
    }
  });
});

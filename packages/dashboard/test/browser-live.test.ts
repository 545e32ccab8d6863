import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Browser, type Page } from 'playwright-core';
import { addVerification, advance, newRun, setGrade, startAttempt, type Job } from '@codefleet/core';
import type { WorkerInfo, WorkerJobProgress } from '@codefleet/store';
import { defaultWaitMs } from '@codefleet/testkit';
import {
  failedRun,
  implementingRun,
  jobOf,
  openBackends,
  startDashboard,
  token,
  type Backends,
  launchChromium,
} from './helpers.js';

// A running job's page in Chromium, at a desktop's width and a phone's (390 px): what the
// job is doing now (stage, step, elapsed time, the step's last lines in colour, updated
// live), its title as the heading, times friendly with the absolute one on hover; then every
// page at 390 px, none wider than the screen. Screenshots go to test-output/.

const outDir = new URL('../test-output/', import.meta.url).pathname;

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
let browser: Browser;

beforeAll(async () => {
  await mkdir(outDir, { recursive: true });
  b = await openBackends();
  dash = await startDashboard(b, { pollMs: 200 });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await dash?.close();
  await b?.dispose();
});

const longTitle =
  'Make the HTTP client retry idempotent requests on 502, 503 and 504 with capped exponential backoff ' +
  `and honour Retry-After ${'x'.repeat(120)}`;

/** The worker's registry entry, as its presence writes it while it runs `job`. */
function workerEntry(job: Job, now: number, progress: WorkerJobProgress): WorkerInfo {
  return {
    id: 'mini-1:4242:k3x',
    host: 'mini-1',
    pid: 4242,
    version: '0.1.0',
    queue: 'jobs',
    backend: 'local',
    concurrency: 1,
    startedAt: new Date(now - 3_600_000).toISOString(),
    lastHeartbeat: new Date().toISOString(),
    draining: false,
    jobs: [
      {
        jobId: job.id,
        runId: job.id,
        taskKey: job.idempotency_key,
        title: job.title,
        startedAt: new Date(now - 4 * 60_000).toISOString(),
        progress,
      },
    ],
  };
}

async function logIn(page: Page): Promise<void> {
  page.setDefaultTimeout(defaultWaitMs());
  await page.goto(`${dash.base}/login`);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForURL(`${dash.base}/`);
}

/** How much wider than its viewport the page is (0: it does not scroll sideways). */
const overflow = async (page: Page): Promise<number> =>
  // A string: this package's TypeScript has no DOM types.
  Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));

describe("a running job's page in Chromium", () => {
  const now = Date.now();
  const running = jobOf('retry-502-1', { title: longTitle, repo: 'octo/widgets' });
  const failed = jobOf('fix-lint-1', { title: 'Fix the lint warnings in src/', repo: 'octo/gadgets' });
  const suite = 'e'.repeat(64);

  beforeAll(async () => {
    await b.queue.enqueue(running);
    await b.queue.claim({ workerId: 'mini-1:4242:k3x' });
    let run = advance(implementingRun(running, new Date(now - 4 * 60_000)), 'testing', { now: new Date(now - 65_000) });
    run = addVerification(
      run,
      {
        pass: 'implement',
        attempt: 1,
        inner_attempt: 1,
        step: 'build',
        command: ['npm', 'run', 'build'],
        exit_code: 0,
        signal: null,
        timed_out: false,
        duration_ms: 1200,
        output_tail: '\x1b[1m> build\x1b[22m\n\x1b[32mcompiled 12 files\x1b[39m',
        passed: true,
      },
      { now: new Date(now - 70_000) },
    );
    await b.store.save(run);
    await b.store.heartbeatWorker(
      workerEntry(running, now, {
        stage: 'testing',
        pass: 'test',
        innerAttempt: 2,
        step: 'test',
        stepStartedAt: new Date(now - 65_000).toISOString(),
        lines: ['\x1b[32m✓ retries a 503\x1b[0m', '\x1b[31m✗ honours Retry-After\x1b[0m <script>alert(1)</script>'],
      }),
      60_000,
    );
    await b.store.save(failedRun(failed, new Date(now - 40 * 60_000)));
    await b.queue.enqueue(jobOf('dead-1', { title: `Dead ${'y'.repeat(120)}` }));
    await (await b.queue.claim({ workerId: 't' }))?.deadLetter(`permanent: ${'z'.repeat(200)}`);
    const evalJob = jobOf('eval-1', {
      source: { kind: 'eval', suite, instance: 'octo__widgets-1', config: 'oracle', trial: 1 },
      patch: 'diff',
    });
    const graded = setGrade(
      startAttempt(newRun(evalJob, { runId: evalJob.id, now: new Date() }), { workerId: 'w', now: new Date() }),
      { resolved: true, reason: 'passed', checks: [], duration_ms: 5 },
      { now: new Date() },
    );
    await b.store.save({ ...graded, stage: 'done', outcome: 'succeeded', dod_result: 'passed' });
  });

  it('shows the stage, step, elapsed time and the last lines in colour, live; the title heads the page', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await logIn(page);
    await page.goto(`${dash.base}/runs/${running.id}`);
    expect(await page.locator('h1').textContent()).toBe(longTitle);
    const now = page.locator('section.progress[data-progress="testing"]');
    await now.waitFor();
    expect(await now.locator('[data-step="test"]').textContent()).toBe('test');
    expect(await now.textContent()).toContain('pass test · fix attempt 2');
    // Colours as spans of fixed classes; the markup in the output is text, not an element.
    const output = now.locator('pre.live-output');
    expect(await output.locator('span.ansi-fg-2').textContent()).toBe('✓ retries a 503');
    expect(await output.locator('span.ansi-fg-1').textContent()).toBe('✗ honours Retry-After');
    expect(await output.locator('script').count()).toBe(0);
    expect(await output.textContent()).toContain('<script>alert(1)</script>');
    expect(await page.locator('li.check pre span.ansi-fg-2').textContent()).toBe('compiled 12 files');
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).not.toContain('\x1b');
    expect(text).not.toMatch(/\[3\dm/);
    // Friendly times, the absolute one on hover; no raw ISO stamp with milliseconds.
    expect(text).not.toMatch(/\d{2}:\d{2}:\d{2}\.\d{3}/);
    const hover = await page.locator('ol.timeline time').first().getAttribute('title');
    expect(hover).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    // The step's time counts on in the page by itself.
    const elapsed = now.locator('[data-step] + .elapsed');
    const first = await elapsed.textContent();
    await now.locator('[data-step] + .elapsed', { hasNotText: first ?? '' }).waitFor();
    await page.screenshot({ path: join(outDir, 'run-live.png'), fullPage: true });

    // The worker writes a new line and a new step: the page shows them without a reload.
    await b.store.heartbeatWorker(
      workerEntry(running, Date.now(), {
        stage: 'testing',
        pass: 'test',
        innerAttempt: 2,
        step: 'lint',
        stepStartedAt: new Date().toISOString(),
        lines: ['\x1b[33mwarning\x1b[0m: 1 problem'],
      }),
      60_000,
    );
    await now.locator('[data-step="lint"]').waitFor();
    expect(await output.locator('span.ansi-fg-3').textContent()).toBe('warning');

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(outDir, 'run-live-390.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it('no page scrolls sideways at 390 px', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(defaultWaitMs());
      await page.goto(`${dash.base}/login`);
      const widths: Record<string, number> = { '/login': await overflow(page) };
      await logIn(page);
      const pages = [
        '/',
        '/runs',
        `/runs/${running.id}`,
        `/runs/${running.id}/cancel`,
        `/runs/${failed.id}`,
        '/dead-letters',
        '/eval',
        `/eval/${suite}`,
        '/runs/no-such-run',
      ];
      for (const path of pages) {
        await page.goto(`${dash.base}${path}`);
        widths[path] = await overflow(page);
        // The overview says where each worker's job is.
        if (path === '/') await page.locator('table.workers', { hasText: 'testing · lint · started' }).waitFor();
        await page.screenshot({ path: join(outDir, `narrow${path.replaceAll('/', '_')}.png`), fullPage: true });
      }
      expect(widths).toEqual(Object.fromEntries(Object.keys(widths).map((path) => [path, 0])));
    } finally {
      await context.close();
    }
  });
});

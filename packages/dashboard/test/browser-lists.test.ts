import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Browser, type Page } from 'playwright-core';
import { newRun } from '@codefleet/core';
import { LocalQueue } from '@codefleet/queue';
import { defaultWaitMs } from '@codefleet/testkit';
import { failedRun, jobOf, openBackends, startDashboard, token, type Backends, launchChromium } from './helpers.js';

// The paged lists and the queue in Debian's Chromium: the runs list pages on by cursor with
// its total, dead letters page too, and a queued job held by its repository's limit is
// opened and cancelled with a reason, which its run page then shows. Screenshots go to
// test-output/ (gitignored).

const outDir = new URL('../test-output/', import.meta.url).pathname;

let b: Backends;
let queue: LocalQueue;
let dash: Awaited<ReturnType<typeof startDashboard>>;
let browser: Browser;

beforeAll(async () => {
  await mkdir(outDir, { recursive: true });
  b = await openBackends();
  // One job per repository at a time, so a second job of one repository waits, held.
  queue = new LocalQueue({
    backend: 'local',
    path: join(b.dir, 'limited.sqlite'),
    name: 'jobs',
    leaseMs: 600_000,
    maxAttempts: 3,
    limits: { perRepo: 1 },
  });
  dash = await startDashboard({ queue, store: b.store }, { pollMs: 200 });
  // Chromium cannot start its sandbox as root; the only pages it loads are this test's dashboard.
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await dash?.close();
  await queue?.close();
  await b?.dispose();
});

async function loggedIn(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
  page.setDefaultTimeout(defaultWaitMs());
  await page.goto(`${dash.base}/login`);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForURL(`${dash.base}/`);
  return page;
}

describe('lists and the queue in Chromium', () => {
  it('pages the runs and dead letters, and cancels a held queued job with a reason', async () => {
    const start = Date.now() - 300 * 60_000;
    for (let i = 0; i < 130; i++) {
      const job = jobOf(`hist-${String(i).padStart(3, '0')}`, { title: `Past task ${i}`, repo: `octo/repo-${i % 7}` });
      const at = new Date(start + i * 60_000);
      await b.store.save(i % 4 === 0 ? failedRun(job, at) : newRun(job, { runId: job.id, now: at }));
    }
    for (let i = 0; i < 52; i++) await queue.enqueue(jobOf(`dead-${i}`, { title: `Broken ${i}`, repo: `octo/d${i}` }));
    for (let i = 0; i < 52; i++) await (await queue.claim({ workerId: 'w' }))!.deadLetter(`gave up ${i}`);
    const running = jobOf('busy-1', { title: 'Busy on widgets', repo: 'octo/widgets' });
    const held = jobOf('held-1', { title: 'Second widgets task', repo: 'octo/widgets', requested_by: 'carol' });
    await queue.enqueue(running);
    expect((await queue.claim({ workerId: 'w' }))?.job.id).toBe(running.id);
    await queue.enqueue(held);
    await queue.enqueue(jobOf('free-1', { title: 'Gadgets task', repo: 'octo/gadgets' }));

    const page = await loggedIn();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.click('nav a[href="/runs"]');
    await page.locator('nav.pager span', { hasText: '1–50 of 130 runs' }).first().waitFor();
    await page.screenshot({ path: join(outDir, 'runs-paged.png'), fullPage: true });
    await page.locator('a[rel="next"]').first().click();
    await page.locator('nav.pager span', { hasText: '51–100 of 130 runs' }).first().waitFor();
    await page.locator('a[rel="next"]').first().click();
    await page.locator('nav.pager span', { hasText: '101–130 of 130 runs' }).first().waitFor();
    expect(await page.locator('table.runs tbody tr').count()).toBe(30);
    await page.selectOption('select[name="state"]', 'failed');
    await page.click('button:has-text("Filter")');
    await page.locator('nav.pager span', { hasText: '1–33 of 33 runs' }).first().waitFor();

    await page.click('nav a[href="/dead-letters"]');
    await page.locator('nav.pager span', { hasText: '1–50 of 52 dead letters' }).waitFor();
    await page.locator('a[rel="next"]').click();
    await page.locator('nav.pager span', { hasText: '51–52 of 52 dead letters' }).waitFor();
    await page.screenshot({ path: join(outDir, 'dead-letters-paged.png'), fullPage: true });

    await page.click('nav a[href="/queue"]');
    const heldRow = page.locator('tr[data-job="held-1"]');
    await heldRow.locator('[data-held-by="repo"]', { hasText: 'octo/widgets runs 1 job(s)' }).waitFor();
    await page.locator('tr[data-job="free-1"]', { hasText: 'its turn' }).waitFor();
    await page.screenshot({ path: join(outDir, 'queue.png'), fullPage: true });
    await heldRow.locator('a', { hasText: 'Second widgets task' }).click();
    await page.waitForURL(`${dash.base}/queue/held-1`);
    await page.locator('h1', { hasText: 'Second widgets task' }).waitFor();
    await page.screenshot({ path: join(outDir, 'queued-job.png'), fullPage: true });
    await page.click('a:has-text("Cancel…")');
    await page.waitForURL(`${dash.base}/queue/held-1/cancel`);
    // The browser will not send the form without a reason.
    await page.click('button:has-text("Cancel the job")');
    expect(await page.locator('#reason:invalid').count()).toBe(1);
    await page.fill('#reason', 'Carol filed it twice');
    await page.click('button:has-text("Cancel the job")');
    await page.waitForURL(`${dash.base}/runs/held-1`);
    await page.locator('[data-cancel="done"]', { hasText: 'Carol filed it twice' }).waitFor();
    await page.screenshot({ path: join(outDir, 'queued-cancelled.png'), fullPage: true });
    expect((await queue.pending()).map((p) => p.id)).toEqual(['free-1']);
    expect(errors).toEqual([]);
  });
});

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Browser } from 'playwright-core';
import { RedisRunStore } from '@codefleet/store';
import { defaultWaitMs, startRedis, type RedisServer } from '@codefleet/testkit';
import { openBackends, startDashboard, token, type Backends, launchChromium } from './helpers.js';

// In Chromium: the overview is open when the run store's Redis goes down. The page must say
// so in its banner (as text), mark what it shows as stale, and drop both once Redis is back. Screenshot kept in
// test-output/outage.png.

const outDir = new URL('../test-output/', import.meta.url).pathname;

let redis: RedisServer;
let store: RedisRunStore;
let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
let browser: Browser;

beforeAll(async () => {
  await mkdir(outDir, { recursive: true });
  redis = await startRedis();
  store = new RedisRunStore({ url: redis.url, prefix: 'dash-outage' });
  b = await openBackends();
  dash = await startDashboard({ queue: b.queue, store }, { backendTimeoutMs: 1000, pollMs: 200 });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await dash?.close();
  await store?.close();
  await b?.dispose();
  await redis?.stop();
});

describe('the dashboard in Chromium during an outage', () => {
  it('shows which backend is down while it is, and nothing once it is back', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
    // Playwright's 30 s default would be a speed limit on a loaded machine.
    page.setDefaultTimeout(defaultWaitMs());
    await page.goto(`${dash.base}/login`);
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${dash.base}/`);
    const banner = page.locator('#problem');
    await page.locator('[data-count="workers"]').waitFor();
    // No banner while both backends answer. The backend timeout is short so the outage shows
    // quickly, and a loaded machine can hold one answer of a live Redis past it (a banner until
    // the next poll): waited for, not read once.
    await page.locator('#problem[hidden]').waitFor({ state: 'attached' });

    await redis.kill();
    await page.locator('#problem:not([hidden])', { hasText: 'the run store cannot be reached' }).waitFor();
    expect(await banner.evaluate((el) => el.children.length)).toBe(0);
    // The figures below were read before: shown as stale.
    expect(await page.locator('#live').getAttribute('class')).toContain('stale');
    await page.screenshot({ path: join(outDir, 'outage.png'), fullPage: true });

    await redis.restart();
    await page.locator('#problem[hidden]').waitFor({ state: 'attached' });
    expect(await page.locator('#live').getAttribute('class')).not.toContain('stale');
  });
});

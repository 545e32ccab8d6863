import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  freePort,
  gitTestEnv,
  startFixture,
  waitFor,
  type FixtureProcess,
  type TempDir,
} from '@codefleet/testkit';
import { bin } from './cli-helpers.js';

// The dashboard as an operator starts it: `codefleet dashboard` on its own, and mounted in a
// worker with --dashboard-port; the real binary, over the config's queue and run store.
describe('codefleet dashboard', () => {
  let dir: TempDir;
  let proc: FixtureProcess | undefined;
  beforeEach(async () => {
    dir = await createTempDir('cli-dashboard');
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: silent\nsandbox:\n  mode: none\n',
    );
  });
  afterEach(async () => {
    proc?.kill('SIGKILL');
    await proc?.exited;
    proc = undefined;
    await dir.dispose();
  });

  const env = (extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH ?? '',
    HOME: dir.path,
    ...gitTestEnv(),
    ...extra,
  });
  const lineMatching = (p: FixtureProcess, pattern: RegExp) =>
    waitFor(() => p.lines.map((l) => pattern.exec(l)).find((m) => m !== null) ?? undefined, {
      what: `${pattern} (${p.lines.join(' | ')} ${p.stderr})`,
    });

  it('generates a token when none is configured, prints it once, and wants it', async () => {
    const port = await freePort();
    proc = startFixture(
      bin,
      ['--config', join(dir.path, 'config.yaml'), 'dashboard', '--port', String(port), '--read-only'],
      { cwd: dir.path, env: env() },
    );
    const [, url] = await lineMatching(proc, /^dashboard on (http:\/\/127\.0\.0\.1:\d+) \(read-only\)$/);
    const [, token] = await lineMatching(
      proc,
      /^dashboard token \(generated; set \$CODEFLEET_DASHBOARD_TOKEN to choose one\): (\S+)$/,
    );
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect((await fetch(`${url}/runs`)).status).toBe(401);
    expect((await fetch(`${url}/runs`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(proc.lines.filter((l) => l.includes(token!))).toHaveLength(1);
    proc.kill('SIGTERM');
    expect((await proc.exited).exitCode).toBe(0);
  });

  it('is served by a worker with --dashboard-port, with the configured token', async () => {
    const port = await freePort();
    const token = 'dashboard-token-for-the-test-0123';
    proc = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'worker', '--dashboard-port', String(port)], {
      cwd: dir.path,
      env: env({ CODEFLEET_DASHBOARD_TOKEN: token }),
    });
    await lineMatching(proc, /^dashboard on http:/);
    expect(proc.lines.some((l) => l.includes(token))).toBe(false);
    // The worker registers itself in the run store; its own dashboard lists it as live.
    const overview = await waitFor(
      async () => {
        const page = await fetch(`http://127.0.0.1:${port}/`, { headers: { authorization: `Bearer ${token}` } });
        const text = await page.text();
        return page.status === 200 && text.includes('data-count="workers">1<') ? text : undefined;
      },
      { what: 'the worker on its own dashboard' },
    );
    expect(overview).toMatch(/<td>local · /);
    proc.kill('SIGTERM');
    expect((await proc.exited).exitCode).toBe(0);
  });

  it('is served by `serve` with dashboard.enabled, even with no producer enabled', async () => {
    const port = await freePort();
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\nserve:\n  port: 0\ndashboard:\n  enabled: true\n  port: ${port}\n`,
    );
    proc = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'serve'], {
      cwd: dir.path,
      env: env({ CODEFLEET_DASHBOARD_TOKEN: 'serve-dashboard-token-0123456' }),
    });
    await lineMatching(proc, new RegExp(`^dashboard on http://127\\.0\\.0\\.1:${port}$`));
    expect(
      (await fetch(`http://127.0.0.1:${port}/`, { headers: { authorization: 'Bearer serve-dashboard-token-0123456' } }))
        .status,
    ).toBe(200);
    proc.kill('SIGTERM');
    expect((await proc.exited).exitCode).toBe(0);
  });
});

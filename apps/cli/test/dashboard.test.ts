import { readFile, stat, writeFile } from 'node:fs/promises';
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

  it('generates a token once into the data dir, says where to read it (not the token), and keeps it at a restart', async () => {
    const start = async () => {
      const port = await freePort();
      const p = startFixture(
        bin,
        ['--config', join(dir.path, 'config.yaml'), 'dashboard', '--port', String(port), '--read-only'],
        { cwd: dir.path, env: env() },
      );
      const [, url] = await lineMatching(p, /^dashboard on (http:\/\/127\.0\.0\.1:\d+) \(read-only\)$/);
      const [, kept, path] = await lineMatching(
        p,
        /^dashboard token: generated (now and kept|at the first start, kept) in (\S+) \(read it with: cat \S+; set \$CODEFLEET_DASHBOARD_TOKEN to choose one\)$/,
      );
      expect(url).toBe(`http://127.0.0.1:${port}`);
      return { p, url: url!, kept, path };
    };
    const first = await start();
    proc = first.p;
    const path = join(dir.path, 'data', 'dashboard-token');
    expect([first.kept, first.path]).toEqual(['now and kept', path]);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const token = (await readFile(path, 'utf8')).trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect((await fetch(`${first.url}/runs`)).status).toBe(401);
    expect((await fetch(`${first.url}/runs`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(first.p.lines.concat(first.p.stderr).join('\n')).not.toContain(token);
    first.p.kill('SIGTERM');
    expect((await first.p.exited).exitCode).toBe(0);

    // A restart reads the same token: logins and scripts keep working with it.
    const second = await start();
    proc = second.p;
    expect(second.kept).toBe('at the first start, kept');
    expect((await fetch(`${second.url}/runs`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    second.p.kill('SIGTERM');
    expect((await second.p.exited).exitCode).toBe(0);
  });

  it('lets in named operators, with no shared token and no token file, and will not start with one unset', async () => {
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: silent\ndashboard:\n  operators:\n    alice: DASH_ALICE\n    bob: DASH_BOB\n',
    );
    const args = (port: number) => ['--config', join(dir.path, 'config.yaml'), 'dashboard', '--port', String(port)];
    const missing = startFixture(bin, args(await freePort()), {
      cwd: dir.path,
      env: env({ DASH_ALICE: 'x'.repeat(20) }),
    });
    const refused = await missing.exited;
    expect(refused.exitCode).not.toBe(0);
    expect(missing.stderr).toContain('dashboard.operators.bob: $DASH_BOB is not set');

    const alice = 'alice-dashboard-token-0123';
    const port = await freePort();
    proc = startFixture(bin, args(port), {
      cwd: dir.path,
      env: env({ DASH_ALICE: alice, DASH_BOB: 'bob-dashboard-token-01234' }),
    });
    await lineMatching(proc, /^dashboard operators: alice, bob$/);
    const run = await fetch(`http://127.0.0.1:${port}/runs`, { headers: { authorization: `Bearer ${alice}` } });
    expect(run.status).toBe(200);
    expect(proc.lines.some((l) => l.startsWith('dashboard token'))).toBe(false);
    await expect(stat(join(dir.path, 'data', 'dashboard-token'))).rejects.toThrow(/ENOENT/);
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

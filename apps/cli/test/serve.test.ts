import { writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  freePort,
  gitTestEnv,
  parsePrometheusText,
  startFixture,
  startLineStandIn,
  startOllamaStandIn,
  waitFor,
  type FixtureProcess,
  type LineStandIn,
  type OllamaStandIn,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin } from './cli-helpers.js';

// `codefleet serve` as a deployment runs it: the real binary hosting the HTTP API and the
// LINE webhook in one process, against the LINE and Ollama STAND-INs on loopback, answering
// /healthz, and stopping cleanly on SIGTERM.
describe('codefleet serve', () => {
  let dir: TempDir;
  let repo: TempRepo;
  let line: LineStandIn;
  let ollama: OllamaStandIn;
  let proc: FixtureProcess | undefined;
  beforeEach(async () => {
    dir = await createTempDir('cli-serve');
    repo = await createTempRepo({ files: { 'README.md': '# x\n' } });
    line = await startLineStandIn();
    ollama = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
  });
  afterEach(async () => {
    proc?.kill('SIGKILL');
    await proc?.exited;
    proc = undefined;
    await line.close();
    await ollama.close();
    await repo.dispose();
    await dir.dispose();
  });

  // The default is one port for everything; a port configured for a producer keeps it there.
  it.each([
    ['on one port with a prefix each, the dashboard at /', 'one'],
    ['each on the port configured for it, health on --health-port', 'separate'],
  ] as const)(
    'hosts the HTTP API and the LINE webhook %s, answers /healthz, and stops on SIGTERM',
    async (_what, ports) => {
      const [servePort, apiPort, linePort, healthPort] = [
        await freePort(),
        await freePort(),
        await freePort(),
        await freePort(),
      ];
      const one = ports === 'one';
      await writeFile(
        join(dir.path, 'config.yaml'),
        [
          'data_dir: ./data',
          'logging:\n  level: silent',
          `serve:\n  port: ${servePort}`,
          `router:\n  classifier:\n    enabled: false\n  chat:\n    host: ${ollama.url}`,
          `http_api:\n  enabled: true${one ? '' : `\n  port: ${apiPort}`}`,
          `line:\n  enabled: true${one ? '' : `\n  port: ${linePort}`}\n  api_url: ${line.url}`,
          ...(one ? ['dashboard:\n  enabled: true'] : []),
        ].join('\n'),
      );
      const base = `http://127.0.0.1:${servePort}`;
      const apiUrl = one ? base : `http://127.0.0.1:${apiPort}`;
      const lineUrl = one ? `${base}/line/webhook` : `http://127.0.0.1:${linePort}/line/webhook`;
      const healthUrl = one ? base : `http://127.0.0.1:${healthPort}`;
      const token = 'api-token-for-the-test-0123456789';
      const dashboardToken = 'serve-dashboard-token-0123456';
      proc = startFixture(
        bin,
        ['--config', join(dir.path, 'config.yaml'), 'serve', ...(one ? [] : ['--health-port', String(healthPort)])],
        {
          cwd: dir.path,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: dir.path,
            ...gitTestEnv(),
            CODEFLEET_API_TOKEN: token,
            CODEFLEET_DASHBOARD_TOKEN: dashboardToken,
            LINE_CHANNEL_SECRET: line.channelSecret,
            LINE_CHANNEL_ACCESS_TOKEN: line.accessToken,
          },
        },
      );
      // Probed only once serve says it listens: until then a port from freePort() may be another
      // suite's on a busy machine, and a probe of it lands on (or is answered by) that suite's server.
      await proc.waitForLine(/^serving on /);
      await waitFor(async () => (await fetch(`${healthUrl}/healthz`).catch(() => undefined))?.ok === true, {
        what: `serve's /healthz (${proc.lines.join(' | ')} ${proc.stderr})`,
      });
      expect(await (await fetch(`${healthUrl}/healthz`)).json()).toEqual({
        status: 'ok',
        producers: ['line', 'http'],
      });
      if (one) {
        // The dashboard answers what no producer claims, behind its own token.
        expect((await fetch(`${base}/`, { headers: { authorization: `Bearer ${dashboardToken}` } })).status).toBe(200);
        expect((await fetch(`${base}/runs`, { redirect: 'manual' })).status).not.toBe(200);
      }

      // The HTTP API: a job created with a bearer token, readable back as queued.
      const created = await fetch(`${apiUrl}/v1/jobs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': 'serve-test-1',
        },
        body: JSON.stringify({ repo: repo.path, title: 'Add a line to README.md' }),
      });
      expect(created.status).toBe(201);
      const { id } = (await created.json()) as { id: string };
      const status = await fetch(`${apiUrl}/v1/jobs/${id}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(await status.json()).toMatchObject({ id, status: 'queued' });

      // LINE: a signed message takes the CHAT route and is answered from the local model.
      ollama.reply('Hello from the local model.');
      const delivered = await line.deliver(lineUrl, [line.textEvent({ text: 'hi there' })]);
      expect(delivered.status).toBe(200);
      await waitFor(() => line.replies.length > 0, { what: 'the LINE reply' });
      expect(line.replies[0]!.texts.join('\n')).toContain('Hello from the local model.');

      // Refused deliveries: no bearer token for the API, no signature for LINE.
      const unauthorised = await fetch(`${apiUrl}/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ repo: repo.path, title: 'x' }),
      });
      expect(unauthorised.status).toBe(401);
      const unsigned = await fetch(lineUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"events":[]}',
      });
      expect(unsigned.status).toBeGreaterThanOrEqual(400);

      // /metrics beside /healthz: deliveries per producer and result, jobs by source, process.
      const metrics = parsePrometheusText(await (await fetch(`${healthUrl}/metrics`)).text());
      expect(metrics.value('codefleet_producer_deliveries_received_total', { producer: 'http' })).toBe(2); // the GET is no delivery
      expect(metrics.value('codefleet_producer_deliveries_total', { producer: 'http', result: 'accepted' })).toBe(1);
      expect(metrics.value('codefleet_producer_deliveries_total', { producer: 'http', result: 'rejected' })).toBe(1);
      expect(metrics.value('codefleet_producer_deliveries_received_total', { producer: 'line' })).toBe(2);
      expect(metrics.value('codefleet_producer_deliveries_total', { producer: 'line', result: 'accepted' })).toBe(1);
      expect(metrics.value('codefleet_producer_deliveries_total', { producer: 'line', result: 'rejected' })).toBe(1);
      expect(metrics.value('codefleet_producer_jobs_enqueued_total', { source: 'api', result: 'enqueued' })).toBe(1);
      expect(metrics.types.get('codefleet_process_resident_memory_bytes')).toBe('gauge');
      // Retention runs beside the producers (store.retention) and is counted here.
      expect(metrics.value('codefleet_retention_trimmed_total', { what: 'runs' })).toBe(0);

      proc.kill('SIGTERM');
      expect((await proc.exited).exitCode).toBe(0);
    },
  );

  it('refuses to start with nothing to serve, saying how to enable a producer', async () => {
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\nserve:\n  port: 0\n');
    proc = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'serve'], {
      cwd: dir.path,
      env: { PATH: process.env.PATH ?? '', HOME: dir.path },
    });
    const { exitCode } = await proc.exited;
    expect(exitCode).not.toBe(0);
    expect(proc.stderr).toContain('no producer is enabled');
  });

  it('a port it needs is taken: says so and exits, its started producers stopped (it once spun at 100% CPU)', async () => {
    // Held by this test for its whole length: nothing else can take it in between.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen({ port: 0, host: '127.0.0.1' }, resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      await writeFile(
        join(dir.path, 'config.yaml'),
        [
          'data_dir: ./data',
          'logging:\n  level: silent',
          'serve:\n  port: 0',
          `router:\n  classifier:\n    enabled: false\n  chat:\n    host: ${ollama.url}`,
          `line:\n  enabled: true\n  port: ${port}\n  api_url: ${line.url}`,
          '',
        ].join('\n'),
      );
      proc = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'serve'], {
        cwd: dir.path,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: dir.path,
          LINE_CHANNEL_SECRET: line.channelSecret,
          LINE_CHANNEL_ACCESS_TOKEN: line.accessToken,
        },
      });
      expect(await proc.exited).toEqual({ exitCode: 1, signal: undefined });
      expect(proc.stderr).toContain(`EADDRINUSE: address already in use 127.0.0.1:${port}`);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

import { execa } from 'execa';
import { chromium, type Browser } from 'playwright-core';
import { request, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import {
  addVerification,
  advance,
  createJob,
  finish,
  newRun,
  setPublication,
  startAttempt,
  type Job,
  type RunRecord,
} from '@codefleet/core';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir } from '@codefleet/testkit';
import { createDashboard, type Dashboard, type DashboardOptions } from '../src/index.js';

export const token = 'dashboard-test-token-0123456789';

/** A real local queue and SQLite run store in a temp dir. */
export async function openBackends() {
  const dir = await createTempDir('dashboard');
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'jobs',
    leaseMs: 60_000,
    maxAttempts: 3,
  });
  const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  return {
    dir: dir.path,
    queue,
    store,
    dispose: async () => {
      await queue.close();
      await store.close();
      await dir.dispose();
    },
  };
}

export type Backends = Awaited<ReturnType<typeof openBackends>>;

/** A dashboard over the backends, listening on a free loopback port. */
export async function startDashboard(
  b: Pick<DashboardOptions, 'queue' | 'store'>,
  options: Partial<DashboardOptions> = {},
): Promise<Dashboard & { base: string }> {
  const dashboard = createDashboard({
    queue: b.queue,
    store: b.store,
    operators: { dashboard: token },
    worstCaseMs: 3_600_000,
    pollMs: 50,
    ...options,
  });
  const base = await dashboard.listen();
  return Object.assign(dashboard, { base });
}

/** A job as a producer would make it. */
export function jobOf(id: string, fields: Partial<Parameters<typeof createJob>[0]> = {}): Job {
  return createJob(
    { repo: 'octo/widgets', title: `task ${id}`, source: { kind: 'cli' }, requested_by: 'alice', ...fields },
    { id, now: new Date() },
  );
}

/** A run its worker is implementing right now. */
export function implementingRun(job: Job, now = new Date()): RunRecord {
  let run = newRun(job, { runId: job.id, now });
  run = advance(run, 'preparing', { now });
  run = startAttempt(run, { workerId: 'host:1:abc', now });
  run = advance(run, 'planning', { now });
  return advance(run, 'implementing', { now });
}

/** A run that failed in validating: a passing build, then a failing test check. */
export function failedRun(job: Job, now = new Date()): RunRecord {
  let run = implementingRun(job, now);
  run = advance(run, 'testing', { now });
  run = advance(run, 'validating', { now });
  const check = {
    pass: 'test' as const,
    attempt: 1,
    inner_attempt: 1,
    exit_code: 0,
    signal: null,
    timed_out: false,
    duration_ms: 1200,
  };
  run = addVerification(
    run,
    { ...check, step: 'build', command: ['npm', 'run', 'build'], output_tail: 'built fine', passed: true },
    { now },
  );
  run = addVerification(
    run,
    {
      ...check,
      step: 'test',
      command: ['npm', 'test'],
      exit_code: 1,
      output_tail: 'FAIL widget.test.js',
      passed: false,
    },
    { now },
  );
  run = setPublication(run, { branch: 'ai/fix-the-widget-1a2b3c4d' }, { now });
  return finish(run, 'failed', { now, error: { code: 'test_failed', verdict: 'permanent', message: 'tests fail' } });
}

/** Logs in through the form (with the shared test token unless told) and resolves the session cookie (`name=value`). */
export async function login(base: string, as = token): Promise<string> {
  const res = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: as }).toString(),
  });
  const cookie = res.headers.get('set-cookie');
  if (res.status !== 303 || cookie === null) throw new Error(`login failed: ${res.status}`);
  return cookie.split(';')[0] ?? '';
}

/** The form token on a page. */
export function csrfOf(page: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(page);
  if (match?.[1] === undefined) throw new Error('no form token on the page');
  return match[1];
}

/** What {@link send} resolves: the status, headers and body of one answer. */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request through node:http, which sends the path exactly as given (fetch would
 * normalize `..` and friends) and can connect from another loopback address (127.0.0.2):
 * another client to the dashboard.
 */
export function send(
  base: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: init.method ?? 'GET',
        headers: init.headers ?? {},
        ...(init.localAddress === undefined ? {} : { localAddress: init.localAddress }),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A clock a test moves by hand. */
export function manualClock(start = Date.now()) {
  let now = start;
  return {
    now: () => new Date(now),
    advance(ms: number) {
      now += ms;
    },
  };
}

/**
 * The machine's Chromium, launched for the browser tests. A missing browser is a failure that
 * says how to install it, never a skip.
 */
export async function launchChromium(): Promise<Browser> {
  const found = await execa('sh', ['-c', 'command -v chromium'], { reject: false });
  if (found.exitCode !== 0)
    throw new Error(
      'chromium is not installed: the dashboard test needs it (apt-get install -y chromium; .ci/run installs it)',
    );
  // --no-sandbox: Chromium cannot start its sandbox as root; it loads only loopback pages.
  return chromium.launch({ executablePath: found.stdout.trim(), args: ['--no-sandbox'] });
}

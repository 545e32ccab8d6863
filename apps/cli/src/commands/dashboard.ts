import type { IncomingMessage, ServerResponse } from 'node:http';
import { dashboardAccess } from '../dashboard-access.js';
import type { Runtime } from '../runtime.js';
import { worstCaseMsOf } from '../outer-policy.js';
import { pullRequestStatesOf } from '../task-status.js';
import { cancelReporter } from './fleet.js';
import { untilSignal } from './producer.js';

/** Command-line overrides of `dashboard:`. */
export interface DashboardFlags {
  port?: number;
  host?: string;
  readOnly?: boolean;
  /** Listen on no port: another server (`serve`'s one port) passes requests to `handler`. */
  mount?: boolean;
}

/** The dashboard's port when it has one of its own and neither `--port` nor `dashboard.port` names one. */
export const defaultDashboardPort = 8790;

/** A dashboard started in this process. */
export interface MountedDashboard {
  /** Where it listens; empty when mounted. */
  url: string;
  /** With `mount`: the Node request handler to pass requests to. */
  handler?: () => Promise<(req: IncomingMessage, res: ServerResponse) => void>;
  close(): Promise<void>;
}

/**
 * Starts the dashboard over the runtime's queue and run store, in whatever process asks
 * (`codefleet dashboard`, or a worker or `serve` with `--dashboard-port`). Who may use it
 * comes from `dashboardAccess`: the terminal is told where each token is (a generated one
 * in the data dir), never the token, and every token is masked in the logs.
 */
export async function mountDashboard(
  rt: Runtime,
  flags: DashboardFlags,
  out: (line: string) => void,
): Promise<MountedDashboard> {
  const { createDashboard, generateToken } = await import('@codefleet/dashboard');
  const section = rt.config.dashboard;
  const access = dashboardAccess(rt.config, generateToken);
  for (const token of Object.values(access.operators)) rt.secrets.add(token);
  const readOnly = flags.readOnly === true || section.read_only;
  const dashboard = createDashboard({
    queue: rt.queue,
    store: rt.store,
    operators: access.operators,
    trustedProxy: access.trustedProxy,
    sessionTtlMs: section.session_hours * 3_600_000,
    host: flags.host ?? section.host,
    port: flags.port ?? section.port ?? defaultDashboardPort,
    readOnly,
    worstCaseMs: worstCaseMsOf(rt.config),
    dayBudgetUsd: rt.config.costs.budget_usd.day,
    // Task statuses ask the forge for PR states: bounded, cached for 30 s across page loads.
    pullRequestStates: pullRequestStatesOf(rt),
    reportCancelled: cancelReporter(rt),
    onError: (err) => rt.log.error({ err, event: 'dashboard.failed' }, 'dashboard request failed'),
  });
  const url = flags.mount ? '' : await dashboard.listen();
  out(`dashboard ${flags.mount ? 'at / on the serve port' : `on ${url}`}${readOnly ? ' (read-only)' : ''}`);
  for (const line of access.lines) out(line);
  rt.log.info({ event: 'dashboard.listening', url, read_only: readOnly }, 'dashboard listening');
  return {
    url,
    ...(flags.mount ? { handler: () => dashboard.handler() } : {}),
    close: () => dashboard.close(),
  };
}

/** `codefleet dashboard`: serves the dashboard until SIGTERM/SIGINT (or `signal`). */
export async function dashboard(
  rt: Runtime,
  flags: DashboardFlags,
  out: (line: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  const stop = signal ? { signal, dispose: () => undefined } : untilSignal();
  const mounted = await mountDashboard(rt, flags, out);
  try {
    await new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    stop.dispose();
    await mounted.close();
  }
}

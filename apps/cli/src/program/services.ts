import type { Command } from 'commander';
import { commands, portNumber, positiveInt, type ProgramContext } from './context.js';

const workerExitCodes = `
Exit codes:
  0    stopped as asked; with --once: every job it ran succeeded (or there was none)
  1    with --once: a job failed (any outcome but succeeded) or was dead-lettered;
       or the worker stopped on an error, e.g. "error (queue_unavailable)": the queue
       did not answer for --give-up-after seconds
  2    a usage or config error
  130  a second SIGINT (Ctrl-C): stopped at once; its jobs are redelivered when their leases expire`;

/** `worker`: consuming the queue. */
export function registerWorker(program: Command, { io, withRuntime }: ProgramContext): void {
  program
    .command('worker')
    .description('consume the queue (SIGTERM/SIGINT drains gracefully)')
    .option('--concurrency <n>', 'jobs at the same time', positiveInt)
    .option('--once', 'stop when the queue is empty')
    .option(
      '--give-up-after <seconds>',
      'stop when the queue has not answered this long (default 30 with --once, else keep retrying)',
      positiveInt,
    )
    .option('--dashboard-port <n>', 'also serve the dashboard on this port (0: a free one)', portNumber)
    .addHelpText('after', workerExitCodes)
    .action(async (opts: { concurrency?: number; once?: boolean; giveUpAfter?: number; dashboardPort?: number }) => {
      const { work } = await commands.worker();
      await withRuntime(
        async (rt) => {
          const { giveUpAfter, ...rest } = opts;
          const summary = await work(rt, {
            ...rest,
            progress: true,
            out: io.out,
            ...(giveUpAfter === undefined ? {} : { giveUpAfterMs: giveUpAfter * 1000 }),
          });
          io.out(
            `processed ${summary.processed}: ${summary.acked} done, ${summary.retried} retrying, ${summary.deadLettered} dead-lettered, ${summary.released} released`,
          );
          // A service's exit says how it stopped; a one-shot run's says how its jobs went.
          return opts.once && summary.unsuccessful > 0 ? 1 : 0;
        },
        { longRunning: true },
      );
    });
}

/** `serve`, `dashboard`, `producer …`: the long-running inbound services. */
export function registerServices(program: Command, { io, withRuntime }: ProgramContext): void {
  program
    .command('serve')
    .description('host the enabled producers (GitHub webhook, Slack, LINE, HTTP API) until SIGTERM/SIGINT')
    .option('--health-port <n>', 'answer GET /healthz on this port (containers)', (v) => Number.parseInt(v, 10))
    .option('--health-host <host>', 'address of the health endpoint', '127.0.0.1')
    .option(
      '--dashboard-port <n>',
      'also serve the dashboard on this port (0: a free one); dashboard.enabled serves it on dashboard.port',
      portNumber,
    )
    .action(async (opts: { healthPort?: number; healthHost?: string; dashboardPort?: number }) => {
      const { serve } = await commands.serve();
      await withRuntime((rt) => serve(rt, opts, io.out), { longRunning: true });
    });

  program
    .command('dashboard')
    .description(
      'serve the web dashboard (runs, workers, queue, dead letters; cancel, retry, redrive, drop) until SIGTERM/SIGINT',
    )
    .option('--port <n>', 'port (default dashboard.port)', portNumber)
    .option('--host <host>', 'address to bind (default dashboard.host, loopback)')
    .option('--read-only', 'offer and accept no action')
    .action(async (opts: { port?: number; host?: string; readOnly?: boolean }) => {
      const { dashboard } = await commands.dashboard();
      await withRuntime((rt) => dashboard(rt, opts, io.out), { longRunning: true });
    });

  registerProducers(program, { io, withRuntime });
}

/** `producer slack|line|http|webhook|poll`: one producer alone. */
function registerProducers(program: Command, { io, withRuntime }: Pick<ProgramContext, 'io' | 'withRuntime'>): void {
  const producer = program
    .command('producer')
    .description('turn labeled GitHub issues, chat messages and API requests into jobs');
  for (const [name, what] of [
    ['slack', 'the Slack app (Socket Mode or HTTP events)'],
    ['line', 'the LINE webhook'],
    ['http', 'the HTTP job API'],
  ] as const) {
    producer
      .command(name)
      .description(`run ${what} alone until SIGTERM/SIGINT (\`codefleet serve\` runs every enabled producer)`)
      .action(async () => {
        const { serve } = await commands.serve();
        await withRuntime((rt) => serve(rt, { only: [name] }, io.out), { longRunning: true });
      });
  }
  producer
    .command('webhook')
    .description('receive GitHub webhooks (signature verified) until SIGTERM/SIGINT')
    .option('--port <n>', 'port (default forge.github.webhook_port)', (v) => Number.parseInt(v, 10))
    .action(async (opts: { port?: number }) => {
      const { webhook } = await commands.producer();
      await withRuntime((rt) => webhook(rt, opts, io.out), { longRunning: true });
    });
  producer
    .command('poll')
    .description('poll forge.github.repos for labeled issues (hosts GitHub cannot reach)')
    .option('--once', 'poll once and exit')
    .action(async (opts: { once?: boolean }) => {
      const { poll } = await commands.producer();
      await withRuntime((rt) => poll(rt, opts, io.out), { longRunning: true });
    });
}

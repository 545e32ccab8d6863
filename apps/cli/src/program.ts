import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, loadConfig, type HostHardware, type LoadedConfig } from '@codefleet/config';
import { classify } from '@codefleet/core';
import { patchFormatsHelp } from './commands/patch-help.js';
import type { RunsOptions } from './commands/fleet.js';
import type { Runtime } from './runtime.js';
import { dodExamples, parseDodArgument } from './dod-option.js';
import { cliVersion } from './version.js';

// Commands and the runtime are imported when a command runs, not with the program: a
// long-lived `codefleet worker` keeps in memory only what it uses (no producer, patch or
// demo code, no webhook library).
const commands = {
  chat: () => import('./commands/chat.js'),
  dashboard: () => import('./commands/dashboard.js'),
  demo: () => import('./commands/demo.js'),
  doctor: () => import('./commands/doctor.js'),
  fleet: () => import('./commands/fleet.js'),
  init: () => import('./commands/init.js'),
  jobs: () => import('./commands/jobs.js'),
  patch: () => import('./commands/patch.js'),
  producer: () => import('./commands/producer.js'),
  serve: () => import('./commands/serve.js'),
  worker: () => import('./commands/worker.js'),
};

/** Where the program writes and how it ends; injected so tests can run it in-process. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
  cwd: string;
  /** The environment; default: the process's, read by the config loader. */
  env?: Record<string, string | undefined>;
  /** The host's hardware for `agents.ollama.model: auto`; default: the config loader probes this host. */
  hardware?: HostHardware;
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive integer, got "${value}"`);
  return n;
};

const portNumber = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError(`expected a port (0-65535), got "${value}"`);
  return n;
};

const workerExitCodes = `
Exit codes:
  0    stopped as asked; with --once: every job it ran succeeded (or there was none)
  1    with --once: a job failed (any outcome but succeeded) or was dead-lettered;
       or the worker stopped on an error, e.g. "error (queue_unavailable)": the queue
       did not answer for --give-up-after seconds
  2    a usage or config error
  130  a second SIGINT (Ctrl-C): stopped at once; its jobs are redelivered when their leases expire`;

/** Builds the `codefleet` command. `run` resolves to the process exit code. */
export function buildProgram(io: Io): { program: Command; exitCode: () => number } {
  let code = 0;
  const program = new Command('codefleet')
    .description('A queue-driven fleet of AI coding workers: a task in, a verified pull request out.')
    .version(cliVersion(), '-V, --version', 'print the version')
    .option('-c, --config <path>', 'config file (default: $CODEFLEET_CONFIG or ./config.yaml)')
    .addOption(
      new Option(
        '--log-format <format>',
        'log lines: auto (pretty on a terminal, else json), json or pretty (default: logging.format)',
      ).choices(['auto', 'json', 'pretty']),
    )
    .showHelpAfterError();

  const load = async (): Promise<LoadedConfig> => {
    const { config: path, logFormat } = program.opts<{ config?: string; logFormat?: 'auto' | 'json' | 'pretty' }>();
    const loaded = await loadConfig({
      cwd: io.cwd,
      ...(io.env ? { env: io.env } : {}),
      ...(path ? { path } : {}),
      ...(io.hardware ? { hardware: io.hardware } : {}),
    });
    return logFormat === undefined
      ? loaded
      : { ...loaded, config: { ...loaded.config, logging: { ...loaded.config.logging, format: logFormat } } };
  };
  const withRuntime = async (fn: (rt: Runtime) => Promise<unknown>, options: { longRunning?: boolean } = {}) => {
    const { openRuntime } = await import('./runtime.js');
    const rt = await openRuntime(await load(), options);
    try {
      // Only a number is an exit code: an action may end on io.out(), which returns whatever
      // the stream's write() does.
      const result = await fn(rt);
      code = typeof result === 'number' ? result : 0;
    } finally {
      await rt.close();
    }
  };

  program
    .command('init')
    .description(
      'make the fleet key jobs are signed with (signing.key_file) unless this host has one; says how to share it',
    )
    .action(async () => {
      const { init } = await commands.init();
      const { openDataDir } = await import('./runtime.js');
      const { config } = await load();
      openDataDir(config);
      for (const line of init(config)) io.out(line);
    });

  program
    .command('demo')
    .description(
      'run the whole product on a sample repository (the built-in agent when a local Ollama has the model, else a scripted one)',
    )
    .action(async () => {
      const { demo } = await commands.demo();
      code = (await demo(await load(), io.out)) ? 0 : 1;
    });

  program
    .command('enqueue')
    .description('put a coding task on the queue')
    .requiredOption('--repo <path|url|owner/name>', 'repository (local path, git URL, or GitHub owner/name)')
    .requiredOption('--title <text>', 'task title')
    .option('--body <text>', 'task description')
    .option('--body-file <path>', 'read the description from a file')
    .option('--agent <name>', 'agent to use (default: agents.default)')
    .option('--base <branch>', 'base branch (default: the repository default branch)')
    .option(
      '--dod <argv...>',
      `definition-of-done commands, each an argv list (YAML or JSON), e.g. ${dodExamples}`,
      parseDodArgument,
    )
    .addOption(
      new Option('--priority <level>', 'claimed before lower ones (default normal)').choices(['low', 'normal', 'high']),
    )
    .action(
      async (opts: {
        repo: string;
        title: string;
        body?: string;
        bodyFile?: string;
        agent?: string;
        base?: string;
        dod?: string[][];
        priority?: 'low' | 'normal' | 'high';
      }) => {
        if (opts.body !== undefined && opts.bodyFile !== undefined)
          throw new InvalidArgumentError('give --body or --body-file, not both');
        const { enqueue } = await commands.jobs();
        await withRuntime(async (rt) => {
          const result = await enqueue(rt, opts, io.cwd);
          if (result.warning !== undefined) io.err(`warning: ${result.warning}`);
          io.out(result.deduplicated ? `already queued as ${result.id}` : `enqueued ${result.id}`);
        });
      },
    );

  program
    .command('chat <message>')
    .description(
      'route a message as the chat bot would (/code, /plan, /ops, /chat …, rules, the local classifier) and carry it out',
    )
    .option(
      '--repo <path|url|owner/name>',
      'repository (default: repo= in the message, the rules, else the current directory when it is a git repository)',
    )
    .action(async (message: string, opts: { repo?: string }) => {
      const { chat } = await commands.chat();
      await withRuntime(async (rt) => {
        const result = await chat(rt, message, opts, io.cwd);
        for (const line of result.out) io.out(line);
        for (const line of result.err) io.err(line);
        return result.code;
      });
    });

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

  program
    .command('runs')
    .description('list recent runs, newest first')
    .option('--state <state>', 'active, an outcome (succeeded, failed, cancelled, no_changes, dod_failed) or a stage')
    .option('--repo <repo>', 'only this repository (as the job names it)')
    .option('--source <kind>', 'only jobs from issue, chat, api or cli')
    .option('--agent <name>', 'only runs of this agent')
    .option('--since <when>', 'created at or after: ISO time or an age such as 2h, 3d')
    .option('--until <when>', 'created at or before: ISO time or an age such as 30m')
    .option('--limit <n>', 'at most this many (default 50, max 1000)', positiveInt)
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean } & RunsOptions) => {
      // One after the other: jest's ESM loader trips over two imports linking at once.
      const { runsQuery } = await commands.fleet();
      const { listRuns } = await commands.jobs();
      const query = runsQuery(opts);
      await withRuntime(async (rt) => {
        io.out(await listRuns(rt, opts.json ?? false, query));
      });
    });

  program
    .command('workers')
    .description('list live workers: their jobs, draining, last heartbeat')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const { listWorkers } = await commands.fleet();
      await withRuntime(async (rt) => {
        io.out(await listWorkers(rt, opts.json ?? false));
      });
    });

  program
    .command('cancel <run-id|job-id|task-key>')
    .description('ask the worker running a job (or the one that claims it) to stop it')
    .action(async (target: string) => {
      const { cancel } = await commands.fleet();
      await withRuntime((rt) => cancel(rt, target, io.out, io.err));
    });

  program
    .command('retry <run-id>')
    .description("run a finished run's task again as a new job (once per run; retry the new job's run after that)")
    .action(async (runId: string) => {
      const { retry } = await commands.fleet();
      await withRuntime((rt) => retry(rt, runId, io.out, io.err));
    });

  program
    .command('show <run-id>')
    .description('stage timeline, attempts and checks of one run')
    .option('--json', 'machine-readable output')
    .action(async (runId: string, opts: { json?: boolean }) =>
      withRuntime(async (rt) => {
        const { showRun } = await commands.jobs();
        const text = await showRun(rt, runId, opts.json ?? false);
        if (text === undefined) {
          // A job has a run once a worker claims it: a queued job's id is not one yet.
          io.err(
            `no run ${runId}: a job that is still queued has none until a worker claims it (see \`codefleet runs\`)`,
          );
          return 1;
        }
        io.out(text);
      }),
    );

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

  program
    .command('patch')
    .description('the patch engine')
    .command('apply <file>')
    .description('apply a patch (JSON commands, Markdown blocks or a unified diff) inside a workspace')
    .requiredOption('--workspace <dir>', 'the directory every path must stay in')
    .option('--dry-run', 'check and plan only; write nothing')
    .option('--stop-on-error', 'stop at the first failure (rolls back with patch.auto_commit)')
    .option('--json', 'machine-readable result')
    .addHelpText('after', patchFormatsHelp)
    .action(
      async (file: string, opts: { workspace: string; dryRun?: boolean; stopOnError?: boolean; json?: boolean }) => {
        const { patchApply } = await commands.patch();
        code = await patchApply(await load(), file, opts, io.cwd, io.out);
      },
    );

  const dlq = program.command('dlq').description('the dead-letter queue');
  dlq
    .command('list')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const { listDeadLetters } = await commands.jobs();
      await withRuntime(async (rt) => {
        // A damaged file can answer "none" from an intact index: the listing checks it first.
        await rt.queue.checkStorage?.();
        io.out(await listDeadLetters(rt, opts.json ?? false));
      });
    });
  dlq
    .command('redrive <id>')
    .description('put a dead-lettered job back on the queue')
    .action(async (id: string) => {
      const { redrive } = await commands.jobs();
      await withRuntime((rt) => redrive(rt, id, io.out, io.err));
    });

  dlq
    .command('drop <id>')
    .description('remove a dead-lettered job for good (written to the journal with the reason)')
    .requiredOption('--reason <text>', 'why it is dropped (kept in the journal)')
    .action(async (id: string, opts: { reason: string }) => {
      const { drop } = await commands.jobs();
      await withRuntime((rt) => drop(rt, id, opts.reason, io.out, io.err));
    });

  program
    .command('doctor')
    .description('check git, the queue, the agent and tokens; each line ok or the fix')
    .action(async () => {
      // Not through openRuntime: a data dir, queue or store that cannot be opened is what
      // doctor is for, so it opens each itself and reports it.
      const { doctor } = await commands.doctor();
      const checks = await doctor(await load());
      // A warning is ok with a fix to offer.
      for (const c of checks)
        io.out(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.what}${c.fix === undefined ? '' : `\n      fix: ${c.fix}`}`);
      code = checks.every((c) => c.ok) ? 0 : 1;
    });

  return { program, exitCode: () => code };
}

/** Runs the CLI with `argv` (without node and script) and resolves to the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  const { program, exitCode } = buildProgram(io);
  // Commander prints its own parse errors; whether it did tells them apart from a usage
  // error an action throws (an InvalidArgumentError), which nothing has printed yet.
  let commanderPrinted = false;
  const output = {
    writeOut: (s: string) => io.out(s.trimEnd()),
    writeErr: (s: string) => {
      commanderPrinted = true;
      io.err(s.trimEnd());
    },
  };
  // Subcommands copy these settings only when they are created, so each gets them here:
  // otherwise a subcommand's parse error would write to process.stderr and call process.exit.
  const configure = (command: Command): void => {
    command.exitOverride().configureOutput(output);
    for (const sub of command.commands) configure(sub);
  };
  configure(program);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode();
  } catch (err) {
    if (err instanceof ConfigError || (err as { code?: string }).code === 'invalid_config') {
      io.err((err as Error).message);
      return 2;
    }
    const commanderCode = (err as { code?: string }).code;
    if (typeof commanderCode === 'string' && commanderCode.startsWith('commander.')) {
      const exit = (err as { exitCode?: number }).exitCode ?? 2;
      if (exit !== 0 && !commanderPrinted) io.err(`error: ${(err as Error).message}`);
      return exit;
    }
    const c = classify(err);
    io.err(`error (${c.code}): ${c.message}`);
    return 1;
  }
}

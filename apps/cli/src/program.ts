import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type LoadedConfig } from '@codefleet/config';
import { classify } from '@codefleet/core';
import type { Runtime } from './runtime.js';
import type { Io, ProgramContext } from './program/context.js';
import {
  registerDeadLetterCommands,
  registerFleetCommands,
  registerJobCommands,
  registerPendingCommand,
} from './program/jobs.js';
import { registerEval } from './program/eval.js';
import { registerServices, registerWorker } from './program/services.js';
import { registerDoctor, registerPatch, registerSetup } from './program/setup.js';
import { cliVersion } from './version.js';

export type { Io } from './program/context.js';

/**
 * Builds the `codefleet` command: the global options, then each command group in the order
 * `--help` lists them. `run` resolves to the process exit code.
 */
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
  const context: ProgramContext = {
    io,
    load,
    withRuntime,
    exitWith: (exit) => {
      code = exit;
    },
  };

  registerSetup(program, context);
  registerJobCommands(program, context);
  registerWorker(program, context);
  registerFleetCommands(program, context);
  registerPendingCommand(program, context);
  registerServices(program, context);
  registerPatch(program, context);
  registerDeadLetterCommands(program, context);
  registerEval(program, context);
  registerDoctor(program, context);
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

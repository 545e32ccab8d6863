import type { Command } from 'commander';
import { patchFormatsHelp } from '../commands/patch-help.js';
import { commands, type ProgramContext } from './context.js';

/** `init` and `demo`: getting a host started. */
export function registerSetup(program: Command, { io, load, exitWith }: ProgramContext): void {
  program
    .command('init')
    .description(
      'make the fleet key jobs are signed with (signing.key_file) unless this host has one; says how to share it',
    )
    .action(async () => {
      const { init } = await commands.init();
      const { openDataDir } = await import('../runtime.js');
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
      exitWith((await demo(await load(), io.out)) ? 0 : 1);
    });
}

/** `patch apply`: the patch engine on its own. */
export function registerPatch(program: Command, { io, load, exitWith }: ProgramContext): void {
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
        exitWith(await patchApply(await load(), file, opts, io.cwd, io.out));
      },
    );
}

/** `doctor`: each prerequisite checked, with its fix. */
export function registerDoctor(program: Command, { io, load, exitWith }: ProgramContext): void {
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
      exitWith(checks.every((c) => c.ok) ? 0 : 1);
    });
}

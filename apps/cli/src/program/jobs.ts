import { InvalidArgumentError, Option, type Command } from 'commander';
import { sourceNames } from '@codefleet/core';
import type { RunsOptions } from '../commands/fleet.js';
import { dodExamples, parseDodArgument } from '../dod-option.js';
import { commands, positiveInt, type ProgramContext } from './context.js';

/** `enqueue` and `chat`: putting work on the queue. */
export function registerJobCommands(program: Command, { io, withRuntime }: ProgramContext): void {
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
      '--base-commit <sha>',
      'start from this commit (full id) instead of the base branch head; the job then sees its history only',
    )
    .option(
      '--patch-file <path>',
      'apply this patch instead of running an agent (unified diff, JSON commands or Markdown blocks); then verified and published as any change',
    )
    .option(
      '--hidden-tests-file <path>',
      "tests (a unified diff) only the verifier applies after the agent's last attempt, in a copy of its own; the run's grade says whether they passed",
    )
    .option(
      '--hidden-test <name>',
      'a test of the hidden tests that must pass, as the test reporter names it (repeatable; default: the whole test step)',
      (name: string, names: string[] = []) => [...names, name],
    )
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
        baseCommit?: string;
        patchFile?: string;
        hiddenTestsFile?: string;
        hiddenTest?: string[];
        dod?: string[][];
        priority?: 'low' | 'normal' | 'high';
      }) => {
        if (opts.body !== undefined && opts.bodyFile !== undefined)
          throw new InvalidArgumentError('give --body or --body-file, not both');
        if (opts.hiddenTest !== undefined && opts.hiddenTestsFile === undefined)
          throw new InvalidArgumentError('--hidden-test names a test of --hidden-tests-file: give that file too');
        const { enqueue } = await commands.jobs();
        await withRuntime(async (rt) => {
          const result = await enqueue(rt, opts, io.cwd);
          if (result.warning !== undefined) io.err(`warning: ${result.warning}`);
          io.out(result.deduplicated ? `already queued as ${result.id}` : `enqueued ${result.id}`);
        });
      },
    );

  registerChat(program, { io, withRuntime });
}

/** `chat`: a message routed as the chat bot would. */
function registerChat(program: Command, { io, withRuntime }: Pick<ProgramContext, 'io' | 'withRuntime'>): void {
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
}

/** `runs`, `workers`, `cancel`, `retry`, `show`: looking at the fleet and acting on runs. */
export function registerFleetCommands(program: Command, { io, withRuntime }: ProgramContext): void {
  program
    .command('runs')
    .description('list recent runs, newest first')
    .option('--state <state>', 'active, an outcome (succeeded, failed, cancelled, no_changes, dod_failed) or a stage')
    .option('--repo <repo>', 'only this repository (as the job names it)')
    .option(
      '--source <name>',
      `only runs from this source: ${sourceNames.join(', ')}; the job source kinds issue, chat and api still filter on the kind as before (api holds CI follow-ups and records queued before they had their own kinds)`,
    )
    .option('--agent <name>', 'only runs of this agent')
    .option('--since <when>', 'created at or after: ISO time or an age such as 2h, 3d')
    .option('--until <when>', 'created at or before: ISO time or an age such as 30m')
    .option('--limit <n>', 'at most this many (default 50, max 1000)', positiveInt)
    .option('--cursor <cursor>', 'the page after the one that printed this cursor (same filters)')
    .option('--json', "machine-readable output (the next page's cursor, if any, on stderr)")
    .action(async (opts: { json?: boolean } & RunsOptions) => {
      // One after the other: jest's ESM loader trips over two imports linking at once.
      const { runsQuery } = await commands.fleet();
      const { listRuns } = await commands.jobs();
      const query = runsQuery(opts);
      await withRuntime(async (rt) => {
        const listed = await listRuns(rt, opts.json ?? false, query);
        io.out(listed.out);
        if (listed.more !== undefined) io.err(listed.more);
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
    .description('take a queued job out of the queue, or ask the worker running it to stop it')
    .option('--reason <text>', 'why, written to the journal with who asked')
    .action(async (target: string, opts: { reason?: string }) => {
      const { cancel } = await commands.fleet();
      await withRuntime((rt) => cancel(rt, target, io, opts.reason));
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
}

/** `pending`: the jobs still in the queue, which no run record shows yet. */
export function registerPendingCommand(program: Command, { io, withRuntime }: ProgramContext): void {
  program
    .command('pending')
    .description('list jobs still in the queue, longest-waiting first, and the limit that holds each back')
    .option('--limit <n>', 'at most this many (default 100)', positiveInt)
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean; limit?: number }) => {
      const { listPending } = await commands.pending();
      await withRuntime(async (rt) => {
        io.out(await listPending(rt, opts.json ?? false, opts.limit));
      });
    });
}

/** `dlq list`, `dlq redrive`, `dlq drop`: the dead-letter queue. */
export function registerDeadLetterCommands(program: Command, { io, withRuntime }: ProgramContext): void {
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
}

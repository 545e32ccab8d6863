import { realpath } from 'node:fs/promises';
import { relative } from 'node:path';
import { runProcess, type ProcessRunner } from '@codefleet/process';
import { applyDiff } from './apply-diff.js';
import { fileEdit, relativeTo } from './file-edit.js';
import { FileStates } from './file-states.js';
import { openGit } from './git.js';
import { autoCommit, ignoredEntries, rollback } from './git-steps.js';
import { defaultProtected, isProtected, PathRefused, resolveInside } from './paths.js';
import type { ParsedPatch, PatchCommand } from './types.js';

/** How a patch is applied. */
export interface ApplyOptions {
  /**
   * Where shell commands run: the job's sandbox (the patch agent passes the pipeline's), else
   * plain `runProcess`. File edits, diffs and git operations are the engine's own, checked
   * path by path.
   */
  runner?: ProcessRunner;
  /** The git binary the worker resolved at start; default `git` on `env.PATH`. */
  gitPath?: string;
  /** The workspace every path must stay in. */
  root: string;
  /** `continue` (default) runs every command; `stop` stops at the first failure. */
  onError?: 'continue' | 'stop';
  /** Plan only: every check runs (a diff or a replace must apply), nothing is written or run. */
  dryRun?: boolean;
  /** File-name patterns that are protected, and what touching one does. */
  protected?: { patterns?: readonly string[]; action?: 'error' | 'skip' | 'log' };
  /** Receives a line per command before it runs (the execution summary). */
  onPlan?: (line: string) => void;
  /**
   * The complete environment of shell and git commands (PATH at least); a command's own
   * `env` is added on top. Nothing is inherited: no forge token reaches a patch. Git calls
   * get it without its GIT_* variables (the commit identity aside) and hardened.
   */
  env?: Record<string, string>;
  /** Per shell command; default 300 000 ms. */
  shellTimeoutMs?: number;
  /** Per git command; default 30 000 ms. */
  gitTimeoutMs?: number;
  /**
   * Commit the workspace before the patch (a failure aborts everything) and after it, as
   * `[Worker Auto-Commit]` commits; with `onError: 'stop'`, a failure rolls the workspace
   * back to the commit before.
   */
  autoCommit?: boolean;
}

/** What happened to one command. */
export interface CommandResult {
  index: number;
  command: PatchCommand;
  status: 'succeeded' | 'failed' | 'skipped' | 'planned';
  /** Why it failed or was skipped. */
  error?: string;
  output?: string;
  /** How it was made to apply, when not as written: fuzz, a 3-way merge, loose matching, `-p0`. */
  notes?: string[];
  durationMs: number;
}

/** The outcome of a patch. */
export interface ApplyResult {
  results: CommandResult[];
  executed: number;
  succeeded: number;
  failed: number;
  /** `executed N, succeeded S, failed F`. */
  summary: string;
  /** Set when the workspace was rolled back to the before-commit. */
  rolledBackTo?: string;
}

/**
 * Did the patch do what it holds? Every command succeeded (in a dry run: would), and there
 * was at least one, unless the input was empty: a patch from which nothing could be read
 * (blocks all skipped, a diff git finds nothing in) is not a success.
 */
export function patchSucceeded(
  parsed: Pick<ParsedPatch, 'format' | 'commands'>,
  result: Pick<ApplyResult, 'results'>,
): boolean {
  if (parsed.commands.length === 0) return parsed.format === 'empty';
  return (
    result.results.length === parsed.commands.length &&
    result.results.every((r) => r.status === 'succeeded' || r.status === 'planned')
  );
}

/**
 * Applies `file_edit` commands inside the workspace. Every path (target, destination) is
 * resolved with {@link resolveInside} right before its write, so a symlink planted by an
 * earlier command is seen too; protected files (by name, or by where a symlink leads)
 * follow the protected action. Shell commands run with `sh -c` (or their own shell) in a
 * workdir inside the workspace, with a timeout that kills their process tree; git
 * operations are argument arrays on paths inside the workspace, taken literally; a
 * unified diff is applied with `git apply` after every path it names is checked (see
 * `applyDiff`). Git runs hardened: no hooks, no fsmonitor, no filter or merge drivers from
 * the repository's config. With `autoCommit`, the workspace is committed before (a failure
 * aborts) and after, and in stop-on-error mode a failure rolls back to the before-commit.
 */
export async function applyPatch(commands: readonly PatchCommand[], options: ApplyOptions): Promise<ApplyResult> {
  const root = await realpath(options.root);
  const patterns = options.protected?.patterns ?? defaultProtected;
  const protectedAction = options.protected?.action ?? 'error';
  const results: CommandResult[] = [];
  commands.forEach((c, i) =>
    options.onPlan?.(`${i + 1}. ${c.type} ${c.action} ${'target' in c && c.target ? c.target : ''}`.trim()),
  );
  // Opened for each step: a shell command may have changed the repository's config.
  const git = () => openGit(root, options.env ?? {}, options.gitTimeoutMs ?? 30_000, options.gitPath);
  const auto = options.autoCommit === true && !options.dryRun;
  let before: string | undefined;
  // What a rollback cannot take from the before-commit: the files git ignores.
  let ignoredBefore: Set<string> | undefined;
  const states = auto && options.onError === 'stop' ? new FileStates(root) : undefined;
  if (auto) {
    try {
      before = await autoCommit(await git(), 'before patch');
      if (states !== undefined) ignoredBefore = await ignoredEntries(await git());
    } catch (error) {
      // No safe point to return to: nothing runs.
      return abortedBeforeStart(commands, error instanceof Error ? error.message : String(error));
    }
  }

  const step: StepContext = { root, patterns, protectedAction, git, states, options };
  for (const [index, command] of commands.entries()) {
    const started = performance.now();
    const { status, notes, ...rest } = await runStep(command, step).catch((error: unknown): StepOutcome => ({
      status: 'failed',
      error: error instanceof PathRefused ? error.message : error instanceof Error ? error.message : String(error),
    }));
    results.push({
      index,
      command,
      status,
      durationMs: Math.round(performance.now() - started),
      ...rest,
      ...(notes !== undefined && notes.length > 0 ? { notes } : {}),
    });
    if (options.onError === 'stop' && status === 'failed') break;
  }
  const executed = results.filter((r) => r.status === 'succeeded' || r.status === 'failed').length;
  const succeeded = results.filter((r) => r.status === 'succeeded').length;
  const failed = results.filter((r) => r.status === 'failed').length;
  const summary = `executed ${executed}, succeeded ${succeeded}, failed ${failed}`;
  if (auto && before !== undefined) {
    if (failed > 0 && options.onError === 'stop') {
      // The engine's own writes first (ignored files among them), then git's view of the rest.
      await states?.restore();
      await rollback(await git(), before, ignoredBefore);
      return { results, executed, succeeded, failed, summary: `${summary} (rolled back)`, rolledBackTo: before };
    }
    await autoCommit(await git(), 'after patch');
  }
  return { results, executed, succeeded, failed, summary };
}

/** What {@link runStep} reads: the workspace, the protection rules, git, and the patch's options. */
interface StepContext {
  root: string;
  patterns: readonly string[];
  protectedAction: 'error' | 'skip' | 'log';
  git: () => ReturnType<typeof openGit>;
  states: FileStates | undefined;
  options: ApplyOptions;
}

type StepOutcome = { status: CommandResult['status']; error?: string; output?: string; notes?: string[] };

/** Runs one command: refused when it touches a protected file (unless only logged), else by its type. */
async function runStep(command: PatchCommand, step: StepContext): Promise<StepOutcome> {
  const { root, patterns, protectedAction, git, states, options } = step;
  const touched = [];
  for (const path of namedPaths(command))
    if (isProtected(path, patterns) || (await leadsToProtected(root, path, patterns))) touched.push(path);
  if (touched.length > 0 && protectedAction !== 'log') {
    return { status: protectedAction === 'skip' ? 'skipped' : 'failed', error: `protected file ${touched.join(', ')}` };
  }
  if (command.type === 'shell_command' || command.type === 'git_operation') {
    const run =
      command.type === 'shell_command'
        ? await runShell(command, root, options)
        : await runGitOperation(command, root, git, options);
    if (run === 'planned') return { status: 'planned' };
    return { status: run.ok ? 'succeeded' : 'failed', output: run.output, ...(run.ok ? {} : { error: run.error }) };
  }
  if (command.type === 'diff') {
    // The diff's own text decides what is checked, never the paths that came with it.
    return applyDiff(root, command.bytes ?? command.content, {
      git: await git(),
      patterns,
      protectedAction,
      dryRun: options.dryRun === true,
      ...(states === undefined ? {} : { states }),
    });
  }
  const target = await resolveInside(root, command.target);
  const destination =
    command.metadata?.destination === undefined ? undefined : await resolveInside(root, command.metadata.destination);
  await states?.remember([target, ...(destination === undefined ? [] : [destination])].map((p) => relativeTo(root, p)));
  const edit = {
    action: command.action,
    target,
    content: command.content ?? '',
    destination,
    edits: command.edits,
    fileOnly: command.fileOnly,
  };
  const notes = await fileEdit(edit, root, options.dryRun === true);
  const warning =
    touched.length > 0 && !options.dryRun ? { output: `warning: protected file ${touched.join(', ')} changed` } : {};
  return { status: options.dryRun ? 'planned' : 'succeeded', ...warning, notes };
}

/** Every command skipped: the before-commit failed, so there is no safe point to return to. */
function abortedBeforeStart(commands: readonly PatchCommand[], message: string): ApplyResult {
  return {
    results: commands.map((command, index) => ({
      index,
      command,
      status: 'skipped' as const,
      error: message,
      durationMs: 0,
    })),
    executed: 0,
    succeeded: 0,
    failed: 0,
    summary: `executed 0, succeeded 0, failed 0 (aborted: ${message})`,
  };
}

/** The paths a file edit or git operation names (a diff's are read from its text). */
function namedPaths(command: PatchCommand): string[] {
  if (command.type === 'file_edit')
    return [command.target, ...(command.metadata?.destination === undefined ? [] : [command.metadata.destination])];
  if (command.type === 'git_operation' && command.target !== undefined && command.target !== '.')
    return [command.target];
  return [];
}

/**
 * True when `path` exists and its real location (symlinks followed) is a protected file:
 * a link named `notes.txt` that leads to `.env` is `.env` for whoever writes or copies it.
 */
async function leadsToProtected(root: string, path: string, patterns: readonly string[]): Promise<boolean> {
  const absolute = await resolveInside(root, path).catch(() => undefined);
  const real = absolute === undefined ? undefined : await realpath(absolute).catch(() => undefined);
  return real !== undefined && isProtected(relative(root, real), patterns);
}

type CommandRun = { ok: boolean; output: string; error?: string } | 'planned';

/** Runs a shell command; 'planned' in dry-run. */
async function runShell(
  command: Extract<PatchCommand, { type: 'shell_command' }>,
  root: string,
  options: ApplyOptions,
): Promise<CommandRun> {
  const cwd = command.workdir === undefined ? root : await resolveInside(root, command.workdir);
  const timeoutMs = options.shellTimeoutMs ?? 300_000;
  if (options.dryRun) return 'planned';
  // Shell commands run in a pooled working copy: they must not outlive a killed worker.
  const env = { GIT_TERMINAL_PROMPT: '0', ...(options.env ?? {}), ...(command.env ?? {}) };
  // The patch's own command line: the caller's runner (the job's sandbox) when it gives one.
  const result = await (options.runner ?? runProcess)([command.shell ?? 'sh', '-c', command.content], {
    cwd,
    env,
    timeoutMs,
    dieWithParent: true,
  });
  return outcome(result, timeoutMs);
}

/** Runs a git operation on a checked path (taken literally, no pathspec magic); 'planned' in dry-run. */
async function runGitOperation(
  command: Extract<PatchCommand, { type: 'git_operation' }>,
  root: string,
  git: () => ReturnType<typeof openGit>,
  options: ApplyOptions,
): Promise<CommandRun> {
  // Paths are checked like file targets; `.` (everything) only for add and reset.
  const target =
    command.target === undefined || command.target === '.'
      ? '.'
      : relativeTo(root, await resolveInside(root, command.target));
  let args: string[];
  switch (command.action) {
    case 'add':
      args = ['add', '--all', '--', target];
      break;
    case 'commit':
      args = ['commit', '--quiet', '--no-verify', '--no-gpg-sign', '-m', command.content ?? 'patch'];
      break;
    // Unstaging and restoring files only: never moving branches or HEAD.
    case 'reset':
      args = ['reset', '--quiet', '--', target];
      break;
    case 'checkout':
      if (target === '.')
        return { ok: false, output: '', error: 'checkout needs a file path (branches are not switched)' };
      args = ['checkout', '--', target];
      break;
  }
  if (options.dryRun) return 'planned';
  return outcome(await (await git()).run(['--literal-pathspecs', ...args]), options.gitTimeoutMs ?? 30_000);
}

function outcome(result: Awaited<ReturnType<typeof runProcess>>, timeoutMs: number): CommandRun {
  const ok = result.exitCode === 0 && !result.timedOut;
  const error = result.timedOut
    ? `timed out after ${timeoutMs} ms; its process tree was killed`
    : (result.spawnError ?? `exit ${result.exitCode ?? result.signal ?? '?'}`);
  return { ok, output: result.outputTail, ...(ok ? {} : { error }) };
}

import { CodefleetError, objectIdPattern, redactUrlCredentials, type ErrorCode, type Verdict } from '@codefleet/core';
import { captureProcess, runProcess, type ProcessResult } from '@codefleet/process';

/** Default time limit of one git call. */
export const defaultGitTimeoutMs = 120_000;

// Passed to every git call. The mirror's config is shared by every working copy of the
// repository, and an agent running in one copy can write to it: hooks or an fsmonitor
// command planted there would otherwise run inside the next job's prepare.
// Nor does any file outside the repository shape what is listed or committed: no
// attributes or excludes file from HOME (where, without a sandbox, an agent can write).
const hardening = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'protocol.ext.allow=never',
  '-c',
  'core.attributesFile=/dev/null',
  '-c',
  'core.excludesFile=/dev/null',
  // Never into a submodule: its own .git (which a run can write) would configure a filter
  // that git runs while diffing it, on the host.
  '-c',
  'diff.ignoreSubmodules=all',
  '-c',
  'submodule.recurse=false',
  '-c',
  'status.submoduleSummary=false',
];

const repositoryVariables = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_COMMON_DIR',
  'GIT_OBJECT_DIRECTORY',
  'GIT_NAMESPACE',
];

/** Options of one {@link Git.run} call. */
interface GitCallOptions {
  cwd: string;
  signal?: AbortSignal | undefined;
  /** Exit codes that are answers, not failures (`diff --quiet` exits 1 for "differs"). */
  okExitCodes?: readonly number[];
  /** Output kept, in bytes; raise it for listings (`ls-files`). Default 64 KiB. */
  outputBytes?: number;
  /** Extra environment for this call only (author identity). */
  env?: Record<string, string>;
}

/** What a git call printed (stdout and stderr together, bounded) and how it exited. */
export interface GitResult {
  exitCode: number;
  output: string;
}

/** Runs git with argument arrays under one environment and time limit. */
export interface Git {
  run(args: readonly string[], options: GitCallOptions): Promise<GitResult>;
  /**
   * Runs a short local listing and resolves to its stdout alone (a warning on stderr is
   * never data); throws like {@link Git.run} on a non-zero exit.
   */
  stdout(args: readonly string[], options: { cwd: string; maxBytes?: number }): Promise<string>;
}

/** Creates a {@link Git} (the `gitPath` binary: absolute once the worker resolved it) whose calls run with `env` (plus no prompts, C locale) and `timeoutMs`. */
export function createGit(env: Record<string, string>, timeoutMs: number = defaultGitTimeoutMs, gitPath = 'git'): Git {
  // LC_ALL=C: the stderr patterns in `gitError` are English.
  // No system config or attributes, and no global config unless the operator names it (GIT_CONFIG_GLOBAL).
  const baseEnv: Record<string, string> = {
    GIT_CONFIG_GLOBAL: '/dev/null',
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
  };
  // Set when the caller itself runs inside a git command (a hook); they would point every
  // call at that repository instead of the mirror or copy named by `cwd`.
  for (const name of repositoryVariables) delete baseEnv[name];
  return {
    async run(args, options) {
      const result = await runProcess([gitPath, ...hardening, ...args], {
        cwd: options.cwd,
        env: options.env === undefined ? baseEnv : { ...baseEnv, ...options.env },
        timeoutMs,
        signal: options.signal,
        tailBytes: options.outputBytes ?? 64 * 1024,
      });
      const ok = [0, ...(options.okExitCodes ?? [])];
      if (
        result.spawnError === undefined &&
        !result.timedOut &&
        !result.cancelled &&
        result.exitCode !== null &&
        ok.includes(result.exitCode)
      ) {
        return { exitCode: result.exitCode, output: result.outputTail };
      }
      throw gitError(args, result);
    },
    async stdout(args, options) {
      const result = await captureProcess([gitPath, ...hardening, ...args], {
        cwd: options.cwd,
        env: baseEnv,
        ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
      });
      if (result.exitCode === 0) return result.stdout;
      throw gitError(args, {
        command: ['git', ...args],
        exitCode: result.exitCode,
        signal: null,
        timedOut: false,
        cancelled: false,
        durationMs: 0,
        outputTail: result.stderr || result.spawnError || '',
        ...(result.spawnError === undefined ? {} : { spawnError: result.spawnError }),
      });
    },
  };
}

// Ordered: the first match decides. Everything else is `git_failed` (transient).
const failurePatterns: readonly { pattern: RegExp; code: ErrorCode; verdict?: Verdict; why: string }[] = [
  { pattern: /no space left on device|disk quota exceeded/i, code: 'workspace_failed', why: 'disk full' },
  {
    pattern:
      /authentication failed|could not read (username|password)|permission denied \(publickey\)|terminal prompts disabled|returned error: 40[13]/i,
    code: 'git_failed',
    verdict: 'permanent',
    why: 'authentication',
  },
  {
    pattern:
      /repository .* not found|does not appear to be a git repository|not a git repository|couldn't find remote ref|returned error: 404/i,
    code: 'git_failed',
    verdict: 'permanent',
    why: 'not found',
  },
  {
    pattern:
      /could not resolve host|connection (refused|reset|timed out)|early eof|remote end hung up|unable to access/i,
    code: 'network',
    why: 'network',
  },
  { pattern: /^CONFLICT \(/m, code: 'git_conflict', why: 'conflict' },
];

/** Maps a failed git call to a `CodefleetError`, in this one place. URLs are redacted. */
export function gitError(args: readonly string[], result: ProcessResult): CodefleetError {
  const command = redactUrlCredentials(`git ${args.join(' ')}`).slice(0, 300);
  const tail = redactUrlCredentials(lastLines(result.outputTail, 20));
  const details = { command, exit_code: result.exitCode, output_tail: tail };
  if (result.cancelled) return new CodefleetError('cancelled', `${command}: cancelled`, { details });
  if (result.spawnError !== undefined) {
    return new CodefleetError('workspace_failed', `${command}: could not start git: ${result.spawnError}`, { details });
  }
  if (result.timedOut) {
    return new CodefleetError('git_failed', `${command}: timed out after ${result.durationMs} ms`, { details });
  }
  const match = failurePatterns.find((entry) => entry.pattern.test(tail));
  const how = result.exitCode === null ? `killed by ${result.signal ?? 'a signal'}` : `exit ${result.exitCode}`;
  const message = `${command} failed (${how}${match ? `, ${match.why}` : ''}): ${summaryOf(tail) || '(no output)'}`;
  return new CodefleetError(match?.code ?? 'git_failed', message, {
    details,
    ...(match?.verdict === undefined ? {} : { verdict: match.verdict }),
  });
}

/**
 * git's own reason on one line: its `fatal:` / `error:` lines when it printed some (the
 * last lines are often hints), else its last lines. One line, because listings such as
 * `dlq list` show only the first line of a reason.
 */
function summaryOf(tail: string): string {
  const lines = tail
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const errors = lines.filter((line) => /^(fatal|error):/i.test(line));
  return (errors.length > 0 ? errors.slice(0, 2) : lines.slice(-3)).join(' · ');
}

function lastLines(text: string, count: number): string {
  return text.trimEnd().split('\n').slice(-count).join('\n');
}

/** Splits `-z` output into entries, dropping the empty one after the final NUL. */
export function splitNul(output: string): string[] {
  return output.split('\0').filter((entry) => entry !== '');
}

/** The last full object id in `output` (a stray warning line cannot be mistaken for it). */
export function lastObjectId(output: string): string | undefined {
  const ids = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => objectIdPattern.test(line));
  return ids.at(-1);
}

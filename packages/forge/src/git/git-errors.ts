// The one place where git's raw failures become codefleet errors. Git has no stable
// machine-readable error codes, so this matches the messages of its C sources (and of
// the common hosts); each pattern is pinned by a test. Anything unrecognised is
// `git_failed`, transient: a few wasted retries cost less than a lost job.
import { CodefleetError, boundTail, redactUrlCredentials, type ErrorCode } from '@codefleet/core';
import type { ProcessResult } from '@codefleet/process';

interface Rule {
  code: ErrorCode;
  pattern: RegExp;
  /** Said after git's own words, when git's words alone would mislead. */
  hint?: string;
  /** The server refused the credentials: `details.auth`, so a refreshing token source can mint another. */
  auth?: true;
}

// Order matters: the first rule that matches wins.
const rules: readonly Rule[] = [
  {
    // The lease (`stale info`) or a plain non-fast-forward: someone else pushed since.
    code: 'git_conflict',
    pattern: /\(stale info\)|\(non-fast-forward\)|\(fetch first\)|\[rejected\]|Updates were rejected/,
    hint: 'the remote branch moved since this worker read it; another worker has published',
  },
  {
    code: 'forge_rejected',
    pattern: /branch is currently checked out|refusing to update checked out branch/,
    hint: 'push to a bare origin (git init --bare) or to a branch that is not checked out there',
  },
  {
    // A ref lock left by a push killed mid-way (its worker died): another attempt may find
    // it gone (a host expires its locks) or clear it (the local forge), so not permanent.
    code: 'git_failed',
    pattern: /Unable to create '[^']*\.lock': File exists/,
    hint: 'a ref lock on the remote is held or was left by an interrupted push',
  },
  { code: 'forge_rejected', pattern: /\[remote rejected\]|pre-receive hook declined|protected branch/i },
  {
    code: 'forge_rejected',
    pattern:
      /Authentication failed|could not read (?:Username|Password)|terminal prompts disabled|Permission denied \(publickey|The requested URL returned error: 40[13]/i,
    hint: 'check the credentials given to git (credential helper or GIT_ASKPASS)',
    auth: true,
  },
  {
    code: 'forge_not_found',
    pattern:
      /does not appear to be a git repository|Repository not found|repository '[^']*' not found|The requested URL returned error: 404|No such file or directory/i,
  },
  {
    code: 'network',
    pattern:
      /Could not resolve host|Connection (?:refused|reset|timed out)|Operation timed out|unable to access|early EOF|The remote end hung up unexpectedly|The requested URL returned error: 5\d\d/i,
  },
];

/** Lines worth quoting from git's output: its own diagnostics, not hints or progress. */
function diagnostics(output: string): string {
  const lines = output.split(/\r?\n/).map((line) => line.trim());
  const wanted = lines.filter((line) => /^(?:fatal|error|remote: error|!)\b|^!\s|rejected/.test(line));
  const chosen = (wanted.length > 0 ? wanted : lines.filter((line) => line.length > 0)).slice(-4).join(' | ');
  // Repo URLs are checked for credentials before use; redacting again costs nothing and
  // covers URLs git itself prints (a redirect, a submodule).
  return boundTail(redactUrlCredentials(chosen), 600);
}

/**
 * Turns a failed git run into a `CodefleetError`. The message names the operation and
 * quotes at most a few redacted lines of git's diagnostics, never the environment.
 */
export function gitFailure(operation: string, result: ProcessResult): CodefleetError {
  const details = { operation, exit_code: result.exitCode, duration_ms: result.durationMs };
  if (result.cancelled) return new CodefleetError('cancelled', `git ${operation} cancelled`, { details });
  if (result.timedOut) {
    return new CodefleetError('git_failed', `git ${operation} timed out after ${result.durationMs} ms`, { details });
  }
  if (result.spawnError !== undefined) {
    return new CodefleetError(
      'git_failed',
      `git ${operation} could not start: ${result.spawnError} (is git on PATH in the git environment?)`,
      { details },
    );
  }
  const said = diagnostics(result.outputTail);
  const rule = rules.find((candidate) => candidate.pattern.test(result.outputTail));
  const hint = rule?.hint === undefined ? '' : ` (${rule.hint})`;
  return new CodefleetError(rule?.code ?? 'git_failed', `git ${operation} failed: ${said}${hint}`, {
    details: rule?.auth ? { ...details, auth: true } : details,
  });
}

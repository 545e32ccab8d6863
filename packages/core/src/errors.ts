/**
 * Stable error codes. Adapters map their raw failures (HTTP status, errno, git stderr,
 * exit codes) to one of these in one place each; the worker only ever looks at the code
 * and its verdict, never at message text.
 */
export const errorCodes = [
  'invalid_job',
  'invalid_run',
  'invalid_config',
  'invalid_transition',
  'agent_timeout',
  'agent_crashed',
  'agent_failed',
  'no_changes',
  'build_failed',
  'lint_failed',
  'test_failed',
  'verify_failed',
  'fix_attempts_exhausted',
  'dod_failed',
  'network',
  'rate_limited',
  'forge_unavailable',
  'forge_rejected',
  'forge_not_found',
  'git_failed',
  'git_conflict',
  'workspace_failed',
  'queue_unavailable',
  'store_unavailable',
  'lease_lost',
  'payload_too_large',
  'secret_in_diff',
  'budget_exceeded',
  'cancelled',
  'unknown',
] as const;

/** One of {@link errorCodes}. */
export type ErrorCode = (typeof errorCodes)[number];

/**
 * What the worker should do about an error:
 * - `transient`: try the whole job again later (outer retry, with backoff);
 * - `agent_fixable`: feed the failure back to the agent (inner retry, same attempt);
 * - `permanent`: stop, report on the issue or thread, dead-letter.
 */
export type Verdict = 'transient' | 'agent_fixable' | 'permanent';

/** All verdicts, for validation and exhaustive tests. */
export const verdicts = ['transient', 'agent_fixable', 'permanent'] as const satisfies readonly Verdict[];

const verdictTable: Readonly<Record<ErrorCode, Verdict>> = {
  invalid_job: 'permanent',
  invalid_run: 'permanent',
  invalid_config: 'permanent',
  invalid_transition: 'permanent',
  agent_timeout: 'transient',
  // A crash (signal, OOM, missing binary on a half-provisioned host) says nothing about
  // the task itself, so another attempt, maybe on another host, is worth it.
  agent_crashed: 'transient',
  agent_failed: 'agent_fixable',
  no_changes: 'agent_fixable',
  build_failed: 'agent_fixable',
  lint_failed: 'agent_fixable',
  test_failed: 'agent_fixable',
  verify_failed: 'agent_fixable',
  fix_attempts_exhausted: 'permanent',
  dod_failed: 'permanent',
  network: 'transient',
  rate_limited: 'transient',
  forge_unavailable: 'transient',
  forge_rejected: 'permanent',
  forge_not_found: 'permanent',
  git_failed: 'transient',
  git_conflict: 'permanent',
  workspace_failed: 'transient',
  queue_unavailable: 'transient',
  store_unavailable: 'transient',
  lease_lost: 'transient',
  payload_too_large: 'permanent',
  // The change itself carries the secret: another attempt would push the same diff, and a
  // person has to look at what the agent did (and maybe rotate the secret) first.
  secret_in_diff: 'permanent',
  budget_exceeded: 'permanent',
  cancelled: 'permanent',
  // Outer retries are bounded, so guessing "transient" for an error we do not recognise
  // costs a few retries at worst, while guessing "permanent" would lose the job.
  unknown: 'transient',
};

/** The default verdict for a code: the one table every adapter shares. */
export function verdictOf(code: ErrorCode): Verdict {
  return verdictTable[code];
}

/** True when `value` is one of {@link errorCodes}. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(verdictTable, value);
}

/** True when `value` is one of {@link verdicts}. */
export function isVerdict(value: unknown): value is Verdict {
  return value === 'transient' || value === 'agent_fixable' || value === 'permanent';
}

/** A value that survives `JSON.stringify` / `JSON.parse` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Options shared by every {@link CodefleetError}. */
export interface CodefleetErrorOptions {
  /** Overrides the table verdict, e.g. a forge 4xx known to be temporary. */
  verdict?: Verdict;
  /** Earliest sensible retry, when the failing side said so (Retry-After). */
  retryAfterMs?: number;
  /** Plain JSON facts for logs and the run record; never secrets or large outputs. */
  details?: Readonly<Record<string, JsonValue>>;
  cause?: unknown;
}

/** The serialisable face of an error, as stored in run records and logs. */
export interface CodefleetErrorJson {
  code: ErrorCode;
  verdict: Verdict;
  message: string;
  details?: Readonly<Record<string, JsonValue>>;
}

/**
 * Base class of every error codefleet raises on purpose. Callers decide by `code` and
 * `verdict` (see `classify`, which also accepts look-alikes from another copy of this
 * package), not by `instanceof` or message text.
 */
export class CodefleetError extends Error {
  readonly code: ErrorCode;
  readonly verdict: Verdict;
  readonly retryAfterMs?: number;
  readonly details?: Readonly<Record<string, JsonValue>>;

  constructor(code: ErrorCode, message: string, options: CodefleetErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CodefleetError';
    this.code = code;
    this.verdict = options.verdict ?? verdictOf(code);
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options.details !== undefined) this.details = options.details;
  }

  /** `{code, verdict, message, details?}`; the cause and stack stay out of stored records. */
  toJSON(): CodefleetErrorJson {
    const json: CodefleetErrorJson = { code: this.code, verdict: this.verdict, message: this.message };
    if (this.details !== undefined) json.details = this.details;
    return json;
  }
}

/** One problem found in a job, with the key path (`source.number`) it was found at. */
export interface JobIssue {
  path: string;
  message: string;
  /**
   * The offending value, present only when it is a small primitive that is safe to log;
   * large or credential-bearing values appear only as a truncated preview in `message`.
   */
  value?: unknown;
}

/** A job failed validation. The message names every bad field; `issues` lists them. */
export class InvalidJobError extends CodefleetError {
  readonly issues: readonly JobIssue[];

  constructor(message: string, issues: readonly JobIssue[], options: Omit<CodefleetErrorOptions, 'details'> = {}) {
    super('invalid_job', message, {
      ...options,
      details: { issues: issues.map((issue) => ({ path: issue.path, message: issue.message })) },
    });
    this.name = 'InvalidJobError';
    this.issues = issues;
  }
}

/**
 * A stage change that the transition table forbids. `from`/`to` are plain strings so
 * this module does not depend on the stage module (which depends on it).
 */
export class InvalidTransitionError extends CodefleetError {
  readonly from: string;
  readonly to: string;

  constructor(from: string, to: string, options: Omit<CodefleetErrorOptions, 'details'> = {}) {
    super('invalid_transition', `invalid stage transition: ${from} -> ${to}`, { ...options, details: { from, to } });
    this.name = 'InvalidTransitionError';
    this.from = from;
    this.to = to;
  }
}

/** The other side asked us to slow down; `retryAfterMs` says for how long, when known. */
export class RateLimitedError extends CodefleetError {
  constructor(message: string, retryAfterMs?: number, options: Omit<CodefleetErrorOptions, 'retryAfterMs'> = {}) {
    super('rate_limited', message, retryAfterMs === undefined ? options : { ...options, retryAfterMs });
    this.name = 'RateLimitedError';
  }
}

/**
 * This worker no longer owns the job (visibility timeout or lock expired, so another
 * worker may be running it). The worker must stop touching the job at once.
 */
export class LeaseLostError extends CodefleetError {
  readonly jobId?: string;

  constructor(jobId?: string, message?: string, options: Omit<CodefleetErrorOptions, 'details'> = {}) {
    super('lease_lost', message ?? (jobId === undefined ? 'job lease lost' : `lease lost for job ${jobId}`), {
      ...options,
      ...(jobId === undefined ? {} : { details: { job_id: jobId } }),
    });
    this.name = 'LeaseLostError';
    if (jobId !== undefined) this.jobId = jobId;
  }
}

/** The error that stops a job whose cancel was requested; {@link cancelOf} reads it back. */
export function cancelRequested(by: string): CodefleetError {
  return new CodefleetError('cancelled', `cancel requested by @${by}`, {
    verdict: 'permanent',
    details: { cancelRequestedBy: by },
  });
}

/** Who asked to cancel, when `err` is a {@link cancelRequested} error. */
export function cancelOf(err: unknown): string | undefined {
  const by = (err as { details?: { cancelRequestedBy?: unknown } } | undefined)?.details?.cancelRequestedBy;
  return typeof by === 'string' ? by : undefined;
}

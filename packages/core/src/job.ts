import { z } from 'zod';
import { splitCommandLine } from './command-line.js';
import { InvalidJobError } from './errors.js';
import { describeIssue, issuesMessage, toIssues } from './issues.js';
import { findJsonSyntaxProblem } from './json-position.js';
import { branchNameProblem, checkRepoRef, maxRepoLength } from './repo-ref.js';
import { truncateHead, utf8ByteLength } from './text.js';

/** Largest explicit patch a job may carry, in UTF-8 bytes. */
export const maxPatchBytes = 1024 * 1024;
/** Largest job description, in characters (GitHub's own issue body limit). */
export const maxBodyChars = 65_536;
/** Most tests a job's hidden tests may name, and the longest name. */
export const maxHiddenTests = 5000;
export const maxTestNameChars = 500;
/** Most DoD commands per job. */
export const maxDodCommands = 32;

// Chat identifiers are bounded so the derived idempotency key stays under 512 chars.
const chatId = z.string().min(1).max(100);

/** Queue records: jobs that carry data for a producer to read back (see {@link JobSource} kind `record`). */
export const recordKinds = ['github-delivery', 'chat-follow-up', 'chat-inbox'] as const;

const sourceSchema = z
  .discriminatedUnion('kind', [
    z.object({
      kind: z.literal('issue'),
      number: z
        .number({ error: 'expected positive integer' })
        .int({ error: 'expected positive integer' })
        .positive({ error: 'expected positive integer' }),
      url: z.url().max(2048).optional(),
      via: z
        .enum(['ci', 'review'])
        .optional()
        .describe("A follow-up on the issue's pull request: its failed CI or a review; absent: the issue itself."),
    }),
    z.object({
      kind: z.literal('chat'),
      platform: chatId.describe('Chat platform, e.g. slack, line, http.'),
      channel: chatId,
      thread_id: chatId,
      message_id: chatId.optional(),
      status_message_id: chatId
        .optional()
        .describe('The status message the producer posted for this job, edited in place as it runs.'),
    }),
    z.object({ kind: z.literal('cli') }),
    z.object({
      kind: z.literal('ci'),
      pull: z
        .number({ error: 'expected positive integer' })
        .int({ error: 'expected positive integer' })
        .positive({ error: 'expected positive integer' })
        .describe('The pull request whose failed CI this job follows up; no issue owns its branch.'),
    }),
    z.object({
      kind: z.literal('eval'),
      suite: z
        .string()
        .regex(/^[0-9a-f]{64}$/, { error: 'expected the SHA-256 of the suite file (64 lower-case hex digits)' })
        .describe("The evaluation suite's identity: the SHA-256 of its JSONL file."),
      instance: z.string().min(1).max(200).describe('The instance_id of the task in the suite.'),
      config: z
        .string()
        .regex(/^[a-z0-9_.-]{1,64}$/, { error: 'expected a configuration name ([a-z0-9_.-]{1,64})' })
        .describe('The configuration under evaluation: an agent, a model or an escalation chain.'),
      trial: z
        .number({ error: 'expected positive integer' })
        .int({ error: 'expected positive integer' })
        .positive({ error: 'expected positive integer' })
        .max(1000),
    }),
    z.object({
      kind: z.literal('record'),
      of: z.enum(recordKinds).describe('What the queue record holds; a record is read back, never run by an agent.'),
    }),
    z.object({
      kind: z.literal('api'),
      request_id: z.string().min(1).max(256).optional(),
      callback_url: z
        .url({ protocol: /^https?$/ })
        .max(2048)
        .optional()
        .describe(
          "Completion webhook: signed POSTs of the job's reports (the HTTP API checks it against http_api.callback_hosts).",
        ),
    }),
  ])
  .describe('Where the task came from; results are reported back there.');

/**
 * One DoD command: an argv array, or a string split into words as a shell would split it
 * (quotes and backslashes honoured, see {@link splitCommandLine}) but never run by one:
 * `"node -e 'process.exit(1)'"` is three arguments, and a pipe or redirection is refused.
 */
const dodCommandSchema = z
  .union([z.string().max(4096), z.array(z.string().max(4096)).max(256)], {
    error: 'expected a command string or an argv array of strings',
  })
  .transform((command, ctx) => {
    if (typeof command !== 'string') return command;
    const split = splitCommandLine(command);
    if ('argv' in split) return split.argv;
    ctx.addIssue({ code: 'custom', message: split.problem });
    return z.NEVER;
  })
  .pipe(
    z
      .array(z.string().min(1, { error: 'expected non-empty argument' }))
      .min(1, { error: 'expected a non-empty command' }),
  );

/** The routes of a chat or CLI message; mirrors `ROUTES` in @codefleet/config. */
export const routeNames = ['CODE', 'CODE1', 'CODE2', 'CODE3', 'PLAN', 'ANALYZE', 'RESEARCH', 'OPS', 'CHAT'] as const;

/** Why a message took its route: recorded with the job. */
const routeSchema = z.object({
  name: z.enum(routeNames),
  source: z.enum(['command', 'rule', 'classifier', 'fallback', 'forced']).describe('Which step of the router decided.'),
  confidence: z.number().min(0).max(1),
  reason: z.string().max(500),
});

/**
 * The producer's signature (see job-signature.ts). Bounded but otherwise loose: a forged or
 * mangled signature must reach the verifier and be dead-lettered as unsigned, not be taken
 * for a malformed job; one that is not even an object reads as none.
 */
const signatureSchema = z
  .object({ kid: z.string().max(64), ts: z.number(), sig: z.string().max(256) })
  .optional()
  .catch(undefined)
  .describe('HMAC-SHA256 of the job by the fleet key (set by the queue at enqueue, checked by the worker at claim).');

/** A full git object id: SHA-1 (40 hex digits) or SHA-256 (64). */
export const objectIdPattern = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The job wire format, version 1. Unknown keys are stripped, not refused. */
export const jobSchema = z.object({
  v: z.literal(1).default(1).describe('Schema version.'),
  id: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: 'expected 1..128 characters of [A-Za-z0-9._:-]' })
    .describe('Unique job id.'),
  idempotency_key: z
    .string()
    .min(1)
    .max(512)
    .describe('Jobs with the same key are the same piece of work: a redelivery or re-trigger converges on one PR.'),
  repo: z
    .string()
    .superRefine((repo, ctx) => {
      const checked = checkRepoRef(repo);
      if (typeof checked === 'string') ctx.addIssue({ code: 'custom', message: checked });
    })
    .describe(`GitHub owner/name, an absolute path or a git URL; at most ${maxRepoLength} characters.`),
  base_branch: z
    .string()
    .superRefine((name, ctx) => {
      const problem = branchNameProblem(name);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional()
    .describe('Branch to start from; the repository default branch when absent.'),
  base_commit: z
    .string()
    .regex(objectIdPattern, { error: 'expected a full commit id (40 or 64 hexadecimal digits, lower case)' })
    .optional()
    .describe(
      'Commit to start from (its full id), for a replayed task or an evaluation: the working copy then holds that commit and its history only, no newer object and no other branch. The pull request still targets base_branch.',
    ),
  source: sourceSchema,
  title: z.string().trim().min(1).max(256).describe('One-line task title.'),
  body: z
    .string()
    .max(maxBodyChars)
    .default('')
    .describe('Task description as it was at enqueue time; later issue edits do not change it.'),
  type: z.enum(['feature', 'bug', 'refactor']).default('feature'),
  mode: z
    .enum(['change', 'answer'])
    .default('change')
    .describe(
      "change: make the change and open a pull request; answer: read-only, the agent's answer is reported back (no branch, no PR).",
    ),
  route: routeSchema.optional().describe("The router's decision for a chat or CLI message."),
  branch: z
    .string()
    .superRefine((name, ctx) => {
      const problem = branchNameProblem(name);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      else if (!name.startsWith('ai/'))
        ctx.addIssue({ code: 'custom', message: 'expected a codefleet branch (ai/...)' });
    })
    .optional()
    .describe('Continue this codefleet branch (a follow-up in a chat thread); default: derived from the source.'),
  priority: z.enum(['low', 'normal', 'high']).default('normal'),
  agent: z
    .string()
    .regex(/^[a-z0-9_-]{1,64}$/, { error: 'expected a configured agent name ([a-z0-9_-]{1,64})' })
    .optional()
    .describe('Configured agent to run; the worker default when absent.'),
  patch: z
    .string()
    .refine((patch) => utf8ByteLength(patch) <= maxPatchBytes, { error: `expected at most ${maxPatchBytes} bytes` })
    .optional()
    .describe('Explicit patch (JSON commands, Markdown blocks or unified diff) applied instead of running an agent.'),
  hidden_tests: z
    .strictObject({
      patch: z
        .string()
        .min(1)
        .refine((patch) => utf8ByteLength(patch) <= maxPatchBytes, { error: `expected at most ${maxPatchBytes} bytes` })
        .describe('Unified diff of the tests.'),
      tests: z
        .array(z.string().min(1).max(maxTestNameChars))
        .max(maxHiddenTests)
        .optional()
        .describe(
          "Tests that must pass, named as the verifier's test reporters name them; absent: the whole test step.",
        ),
    })
    .optional()
    .describe(
      "Tests only the verifier applies, after the agent's last attempt, in a copy of its own: never on a read path, in a prompt or in what is published. The run's grade says whether they pass.",
    ),
  dod: z
    .array(dodCommandSchema)
    .max(maxDodCommands)
    .optional()
    .describe('Definition-of-done commands the worker runs after verification.'),
  requested_by: z.string().min(1).max(256).describe('Who asked: a GitHub login, chat user id or CLI user.'),
  created_at: z.iso.datetime({ offset: true }).describe('When the job was created (ISO-8601).'),
  signature: signatureSchema,
});

/**
 * A validated job. `body` is a snapshot taken at enqueue time: editing the issue later
 * cannot change what a queued or running job does. `dod` is normalised to argv arrays.
 */
export type Job = z.output<typeof jobSchema>;
/** What producers may send: defaults may be left out, DoD commands may be strings. */
export type JobInput = z.input<typeof jobSchema>;
/** The `source` of a job. */
export type JobSource = Job['source'];
/** A route name (see {@link routeNames}). */
export type RouteName = (typeof routeNames)[number];
/** The router's recorded decision. */
export type JobRoute = NonNullable<Job['route']>;

/**
 * Validates anything into a {@link Job}. Throws `InvalidJobError` whose message names
 * every bad field with its key path and a short, truncated preview of the bad value.
 */
export function parseJob(raw: unknown): Job {
  let parsed: ReturnType<typeof jobSchema.safeParse>;
  try {
    parsed = jobSchema.safeParse(raw, { reportInput: true, error: describeIssue });
  } catch (cause) {
    // Throwing getters or proxies in the input; still a bad job, not a worker crash.
    const reason = cause instanceof Error ? cause.message : 'unreadable input';
    throw new InvalidJobError(`invalid job: could not read input: ${truncateHead(reason, 200)}`, [], { cause });
  }
  if (parsed.success) return parsed.data;
  const issues = toIssues(raw, parsed.error.issues);
  throw new InvalidJobError(issuesMessage('invalid job', issues), issues);
}

/** Parses JSON text into a {@link Job}; text that is not JSON gets its error position. */
export function parseJobJson(text: string): Job {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    const problem = findJsonSyntaxProblem(text);
    const where =
      problem === undefined
        ? truncateHead(cause instanceof Error ? cause.message : 'unknown error', 200)
        : `${problem.reason} at position ${problem.position} (line ${problem.line}, column ${problem.column})`;
    throw new InvalidJobError(
      `invalid job: not valid JSON: ${where}`,
      [{ path: '(root)', message: `not valid JSON: ${where}` }],
      {
        cause,
      },
    );
  }
  return parseJob(raw);
}

/**
 * The key that makes re-triggers of the same request converge on one job:
 * - issue: `<repo>#issue-<n>` (relabeling or a webhook redelivery is the same work);
 * - chat: `chat:<platform>:<channel>:<thread_id>:<message_id or ''>`;
 * - ci: `<repo>#pull-<n>`, the key CI follow-ups on a pull request no issue owns always had;
 * - eval: `eval:<suite digest>:<instance>:<config>:<trial>`, so re-running a suite skips what finished;
 * - cli / api / record: the job id, so every CLI or API enqueue is new work (records set their own).
 */
export function defaultIdempotencyKey(repo: string, source: JobSource, jobId: string): string {
  switch (source.kind) {
    case 'issue':
      return `${repo}#issue-${source.number}`;
    case 'chat':
      return `chat:${source.platform}:${source.channel}:${source.thread_id}:${source.message_id ?? ''}`;
    case 'ci':
      return ciFollowUpKey(repo, source.pull);
    case 'eval':
      return `eval:${source.suite}:${source.instance}:${source.config}:${source.trial}`;
    case 'cli':
    case 'api':
    case 'record':
      return jobId;
  }
}

/**
 * The idempotency key of a CI follow-up of pull request `pull` on a branch no issue owns:
 * unchanged from when such jobs were `api` jobs, so a re-trigger converges with one queued then.
 */
export function ciFollowUpKey(repo: string, pull: number): string {
  return `${repo}#pull-${pull}`;
}

/**
 * The request id a CI follow-up of pull request `pull` on a branch no issue owns (a chat's)
 * carried as an `api` job, before kind `ci`; still read by {@link followedPullRequest}.
 */
export function ciFollowUpRequestId(repo: string, pull: number): string {
  return `ci:${repo}#${pull}`;
}

/**
 * The pull request a CI follow-up job continues, when `job` is one: kind `ci`, or an `api`
 * job with a {@link ciFollowUpRequestId} (queued before kind `ci` existed).
 */
export function followedPullRequest(job: Pick<Job, 'repo' | 'source'>): number | undefined {
  if (job.source.kind === 'ci') return job.source.pull;
  if (job.source.kind !== 'api' || job.source.request_id === undefined || job.source.callback_url !== undefined)
    return undefined;
  const prefix = `ci:${job.repo}#`;
  if (!job.source.request_id.startsWith(prefix)) return undefined;
  const pull = Number(job.source.request_id.slice(prefix.length));
  return Number.isSafeInteger(pull) && pull > 0 ? pull : undefined;
}

/** Input of {@link createJob}: a job input whose id, key and timestamp may be left out. */
export type CreateJobInput = Omit<JobInput, 'id' | 'idempotency_key' | 'created_at'> &
  Partial<Pick<JobInput, 'id' | 'idempotency_key' | 'created_at'>>;

/**
 * Builds and validates a job, filling `id` and `created_at` from `deps` and the
 * idempotency key from {@link defaultIdempotencyKey} when the input leaves them out.
 * Throws `InvalidJobError` like {@link parseJob}.
 */
export function createJob(input: CreateJobInput, deps: { id: string; now: Date }): Job {
  const id = input.id ?? deps.id;
  const source = sourceSchema.safeParse(input.source);
  // A bad source is reported by parseJob below; it only blocks deriving the key.
  const idempotencyKey =
    input.idempotency_key ?? (source.success ? defaultIdempotencyKey(input.repo, source.data, id) : undefined);
  return parseJob({
    ...input,
    id,
    idempotency_key: idempotencyKey,
    created_at: input.created_at ?? deps.now.toISOString(),
  });
}

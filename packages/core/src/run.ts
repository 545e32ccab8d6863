import { z } from 'zod';
import { CodefleetError, errorCodes, verdicts } from './errors.js';
import { describeIssue, issuesMessage, toIssues } from './issues.js';
import { jobSchema } from './job.js';
import { stages } from './stage.js';

const isoTime = z.iso.datetime({ offset: true });
const count = z
  .number({ error: 'expected non-negative integer' })
  .int({ error: 'expected non-negative integer' })
  .nonnegative({ error: 'expected non-negative integer' });
const positiveInt = z
  .number({ error: 'expected positive integer' })
  .int({ error: 'expected positive integer' })
  .positive({ error: 'expected positive integer' });

/** An error as stored in a run record: what classify() said, never a stack. */
const runErrorSchema = z.object({
  code: z.enum(errorCodes),
  verdict: z.enum(verdicts),
  message: z.string(),
});
/** An error as stored in a run record. */
export type RunError = z.output<typeof runErrorSchema>;

/** How an outer attempt ended. `abandoned`: its worker vanished (crash, lost lease). */
export const attemptOutcomes = ['succeeded', 'retrying', 'failed', 'cancelled', 'abandoned'] as const;
/** How an outer attempt ended. */
export type AttemptOutcome = (typeof attemptOutcomes)[number];

/** One outer attempt: one worker running the job from preparing onwards. */
const attemptSchema = z.object({
  n: positiveInt,
  worker_id: z.string().min(1),
  started_at: isoTime,
  ended_at: isoTime.optional(),
  outcome: z.enum(attemptOutcomes).optional(),
  error: runErrorSchema.optional(),
});
/** One outer attempt. */
export type Attempt = z.output<typeof attemptSchema>;

const passSchema = z.enum(['implement', 'test']);
/** Which pass of the two-pass loop an agent run or check belongs to: change the code, then write tests. */
export type Pass = z.output<typeof passSchema>;

/** One model call (AgentRunner), or a CLI agent's run totals for one model. */
export const modelCallSchema = z.object({
  provider: z.string().min(1).max(64),
  model: z.string().max(200),
  prompt_tokens: count,
  completion_tokens: count,
  latency_ms: z.number().nonnegative(),
  cost_usd: z.number().nonnegative().optional(),
  outcome: z
    .string()
    .min(1)
    .max(64)
    .describe('ok, or why the call failed (unreachable, unauthorized, server, unusable, budget, …).'),
});
/** One model call. */
export type ModelCallRecord = z.output<typeof modelCallSchema>;

/** One tier of an escalation chain (agents.escalation) as a job ran it. */
export const tierSchema = z.object({
  tier: count.describe('Index in the chain, from 0.'),
  profile: z.string().min(1).max(64).describe('The profile or agent name the tier runs.'),
  agent: z.string().min(1).max(64),
  model: z.string().max(200).optional(),
  started_at: isoTime,
  ended_at: isoTime.optional(),
  outcome: z.enum(['succeeded', 'failed', 'budget_exceeded', 'error']).optional(),
  cost_usd: z.number().nonnegative().optional(),
  detail: z
    .string()
    .max(2000)
    .optional()
    .describe('Why the tier ended without success (its last feedback, shortened).'),
});
/** One tier of an escalation chain. */
export type TierRecord = z.output<typeof tierSchema>;

/** One run of a coding agent, with the facts of its process (execa-style). */
export const agentRunSchema = z.object({
  pass: passSchema,
  attempt: count.describe('Outer attempt number.'),
  inner_attempt: positiveInt.describe('Fix iteration within the pass, from 1.'),
  agent: z.string().min(1),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  timed_out: z.boolean(),
  duration_ms: z.number().nonnegative(),
  output_tail: z.string().describe('End of the combined output, bounded by boundTail().'),
  changed_files: z.array(z.string()),
  outcome: z.enum(['changed', 'no_changes', 'failed', 'timeout', 'error']),
  tokens: z
    .object({ prompt: count, completion: count })
    .optional()
    .describe('Model tokens the run spent, for agents that call a model (token budget).'),
  model: z.string().max(200).optional().describe('The model the run used, as the agent reported it.'),
  cost_usd: z
    .number()
    .nonnegative()
    .optional()
    .describe("What the run cost in US dollars: the CLI's reported cost, else tokens × costs.prices."),
  model_calls: z
    .array(modelCallSchema)
    .max(500)
    .optional()
    .describe("Each model call (built-in agent), or a CLI's totals per model."),
  tier: count.optional().describe('Escalation tier the run belongs to (agents.escalation index, from 0).'),
});
/** One run of a coding agent. */
export type AgentRun = z.output<typeof agentRunSchema>;

/** The verification steps, in the order the worker runs them. */
export const verificationSteps = ['install', 'build', 'format', 'lint', 'test', 'dod'] as const;
/** One verification step. */
export type VerificationStep = (typeof verificationSteps)[number];

/** One verification command and its result. */
export const verificationSchema = z.object({
  pass: passSchema,
  attempt: count,
  inner_attempt: positiveInt,
  step: z.enum(verificationSteps),
  command: z.array(z.string()),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  timed_out: z.boolean(),
  duration_ms: z.number().nonnegative(),
  output_tail: z.string(),
  passed: z.boolean(),
  /** Not run (install up to date, an empty command): `passed` says only that it did not fail. */
  skipped: z.boolean().optional(),
  /**
   * Failed, and failed the same way on the untouched base commit: reported as pre-existing,
   * never held against the change (`passed` is false; the run went on).
   */
  preexisting: z.boolean().optional(),
  /** With `preexisting`: it could not really run at the base either (tool missing, timeout), so it checked nothing. */
  unverifiable: z.boolean().optional(),
});
/** One verification command and its result. */
export type Verification = z.output<typeof verificationSchema>;

/** Names kept per list of a grade: enough for any suite's named tests, bounded for a huge one. */
const maxGradeNames = 2000;
const gradeNames = z.array(z.string().max(500)).max(maxGradeNames);

/**
 * The verdict of a job's hidden tests (see the job's `hidden_tests`), run by the verifier
 * after the agent's last attempt in a copy of their own.
 */
export const gradeSchema = z.object({
  resolved: z.boolean().describe('Every named test passed (or, with none named, every check passed).'),
  reason: z
    .string()
    .max(2000)
    .describe('Why, in one line: the tests that failed or were missing, or the check that did.'),
  checks: z.array(
    z.object({
      step: z.enum(verificationSteps),
      command: z.array(z.string()),
      exit_code: z.number().int().nullable(),
      timed_out: z.boolean(),
      duration_ms: z.number().nonnegative(),
      passed: z.boolean(),
      output_tail: z.string(),
    }),
  ),
  /** Per-test statuses of the test step, as its reporter named them; each list bounded. */
  tests: z
    .object({
      passed: gradeNames,
      failed: gradeNames,
      skipped: gradeNames,
      /** Named tests the run did not report at all. */
      missing: gradeNames,
      /** Names left out of the lists above once one was full. */
      omitted: count,
    })
    .optional(),
  duration_ms: z.number().nonnegative(),
});
/** The verdict of a job's hidden tests. */
export type Grade = z.output<typeof gradeSchema>;

/** Result of the definition of done, as AM defines it. */
export const dodResults = ['passed', 'failed', 'skipped', 'timeout'] as const;
/** Result of the definition of done. */
export type DodResult = (typeof dodResults)[number];

/** How a run ended. */
export const runOutcomes = ['succeeded', 'failed', 'cancelled', 'no_changes', 'dod_failed'] as const;
/** How a run ended. */
export type RunOutcome = (typeof runOutcomes)[number];

/** One entry of the stage timeline. `attempt` is 0 before the first attempt starts. */
const stageEntrySchema = z.object({
  stage: z.enum(stages),
  at: isoTime,
  attempt: count,
  note: z.string().optional(),
});
/** One entry of the stage timeline. */
export type StageEntry = z.output<typeof stageEntrySchema>;

/** The pull request a run opened or updated. */
const pullRequestSchema = z.object({
  number: positiveInt,
  url: z.string().optional(),
  head: z.string().min(1),
  base: z.string().min(1),
  draft: z.boolean(),
});
/** The pull request a run opened or updated. */
export type PullRequestRef = z.output<typeof pullRequestSchema>;

/** What the sandbox stopped during a run: destinations its network policy refused, limits runs went past. */
export const sandboxFindingsSchema = z.object({
  network_refused: z.array(z.object({ destination: z.string().max(300), reason: z.string().max(300) })).max(50),
  /** Every refusal, the ones past the first 50 included. */
  network_refused_total: count,
  resource_limits: z
    .array(
      z.object({
        limit: z.string().max(40),
        max: z.number().nonnegative(),
        seen: z.number().nonnegative(),
        command: z.string().max(200),
      }),
    )
    .max(20),
});
/** What the sandbox stopped during a run. */
export type SandboxFindings = z.output<typeof sandboxFindingsSchema>;

/**
 * The full record of one job's run: plain JSON that round-trips through
 * `JSON.stringify` and {@link parseRun}. It is the audit trail and the source of the
 * task note; update it only through the helpers in run-update, which return new records.
 */
export const runRecordSchema = z.object({
  run_id: z.string().min(1),
  job: jobSchema,
  stage: z.enum(stages),
  stages: z.array(stageEntrySchema),
  attempts: z.array(attemptSchema),
  acceptance_criteria: z.array(z.string()),
  agent_runs: z.array(agentRunSchema),
  verification: z.array(verificationSchema),
  dod_result: z.enum(dodResults).optional(),
  outcome: z.enum(runOutcomes).optional(),
  error: runErrorSchema.optional(),
  branch: z.string().optional(),
  pull_request: pullRequestSchema.optional(),
  answer: z.string().max(40_000).optional().describe("An answer-mode job's answer, as reported back."),
  chain: z
    .strictObject({ name: z.string().min(1).max(64), tiers: z.array(z.string().min(1).max(64)).min(1).max(8) })
    .optional()
    .describe(
      'The escalation chain the job runs (`escalation` for agents.escalation, else an agents.chains name) and its tiers.',
    ),
  memory_updates: z
    .array(z.string().max(200))
    .max(100)
    .optional()
    .describe(
      'Memory bank files (.codefleet/memory/*.md) the change adds or edits: proposed in the PR, never silently.',
    ),
  tiers: z.array(tierSchema).optional().describe('The escalation tiers the job ran, in order (agents.escalation).'),
  sandbox: sandboxFindingsSchema
    .optional()
    .describe("Destinations the sandbox's network policy refused and limits a run went past."),
  redriven_from: z
    .string()
    .min(1)
    .optional()
    .describe('The failed run of the same job this run redrives out of the dead-letter queue.'),
  grade: gradeSchema.optional().describe("The verdict of the job's hidden tests, when it carries some."),
  created_at: isoTime,
  updated_at: isoTime,
});
/** The full record of one job's run. */
export type RunRecord = z.output<typeof runRecordSchema>;

/** Validates a stored run record; throws `CodefleetError` `invalid_run` naming each bad field. */
export function parseRun(raw: unknown): RunRecord {
  let parsed: ReturnType<typeof runRecordSchema.safeParse>;
  try {
    parsed = runRecordSchema.safeParse(raw, { reportInput: true, error: describeIssue });
  } catch (cause) {
    throw new CodefleetError('invalid_run', 'invalid run record: could not read input', { cause });
  }
  if (parsed.success) return parsed.data;
  const issues = toIssues(raw, parsed.error.issues);
  throw new CodefleetError('invalid_run', issuesMessage('invalid run record', issues), {
    details: { issues: issues.map((issue) => ({ path: issue.path, message: issue.message })) },
  });
}

import { createHash } from 'node:crypto';
import { objectIdPattern } from '@codefleet/core';
import { z } from 'zod';

// One task of a suite is one JSONL line with SWE-bench's field names (the published dataset's
// `repo`, `instance_id`, `base_commit`, `patch`, `test_patch`, `problem_statement`,
// `hints_text`, `created_at`, `FAIL_TO_PASS`, `PASS_TO_PASS`), so tools written for it read a
// codefleet suite, plus what codefleet adds: where the statement came from, the tests that do
// not exist at the base, those left out as flaky, the verification plan's digest and the split.

/** Test names as a list; SWE-bench's dataset writes each list as a JSON string, which is read too. */
const testList = z.preprocess(
  (value) => (typeof value === 'string' ? safeJson(value) : value),
  z.array(z.string().min(1).max(500)).max(5000),
);

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export const instanceSchema = z.object({
  instance_id: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,200}$/, { error: 'expected 1..200 of A-Z a-z 0-9 _ . -' })
    .describe('owner__name-<number>, as SWE-bench names them.'),
  repo: z.string().min(1).max(2048).describe('GitHub owner/name, a git URL or a local path.'),
  base_commit: z.string().regex(objectIdPattern, { error: 'expected a full commit id' }),
  created_at: z.iso.datetime({ offset: true }),
  problem_statement: z.string().max(65_536),
  statement_source: z
    .enum(['issue', 'pull_request', 'commit'])
    .describe('Where the statement came from: the linked issue, the pull request body or the commit message.'),
  hints_text: z.string().max(65_536).default(''),
  patch: z.string().min(1).describe('The fix: the change to non-test files.'),
  test_patch: z.string().min(1).describe('The change to test files: the hidden tests.'),
  FAIL_TO_PASS: testList.describe('Tests that fail at the base and pass with the fix.'),
  PASS_TO_PASS: testList.describe('Tests that pass at the base and with the fix.'),
  NEW_TO_PASS: testList.default([]).describe('Tests that do not exist at the base and pass with the fix.'),
  flaky_excluded: testList
    .default([])
    .describe('Tests left out of the lists above: their result changed between runs.'),
  plan_digest: z.string().default('').describe('SHA-256 of the verification plan the tests were validated under.'),
  split: z.enum(['dev', 'holdout']).default('dev'),
});

/** One task of a suite. */
export type Instance = z.output<typeof instanceSchema>;
/** What a suite line may hold before defaults. */
export type InstanceInput = z.input<typeof instanceSchema>;

/** A suite: its instances and its identity, the SHA-256 of its file. */
export interface Suite {
  digest: string;
  instances: Instance[];
}

/** A suite line that is not a valid instance: its line number and why. */
export class SuiteError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'SuiteError';
  }
}

/** The SHA-256 of a suite file's bytes: the suite's identity in jobs and reports. */
export function suiteDigest(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Reads a suite file: one instance per non-blank line. Throws {@link SuiteError} naming the
 * first bad line and field, and for an instance id seen twice.
 */
export function parseSuite(text: string): Suite {
  const instances: Instance[] = [];
  const seen = new Set<string>();
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const raw = safeJson(line);
    if (raw === line) throw new SuiteError(index + 1, 'not JSON');
    const parsed = instanceSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new SuiteError(index + 1, `${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
    if (seen.has(parsed.data.instance_id))
      throw new SuiteError(index + 1, `instance_id ${parsed.data.instance_id} appears twice`);
    seen.add(parsed.data.instance_id);
    instances.push(parsed.data);
  });
  return { digest: suiteDigest(text), instances };
}

/** A suite file's text: one line per instance, fields in schema order, lists as arrays. */
export function formatSuite(instances: readonly Instance[]): string {
  return instances.map((instance) => `${JSON.stringify(instanceSchema.parse(instance))}\n`).join('');
}

/**
 * The suite as SWE-bench's dataset writes it: its fields only, the test lists as JSON strings,
 * `version` and `environment_setup_commit` as a repository without releases has them. Flaky
 * tests stay out of both lists; tests new at the base count as FAIL_TO_PASS, as SWE-bench has them.
 */
export function toSwebench(instances: readonly Instance[]): string {
  return instances
    .map((i) =>
      JSON.stringify({
        repo: i.repo,
        instance_id: i.instance_id,
        base_commit: i.base_commit,
        patch: i.patch,
        test_patch: i.test_patch,
        problem_statement: i.problem_statement,
        hints_text: i.hints_text,
        created_at: i.created_at,
        version: '',
        FAIL_TO_PASS: JSON.stringify([...i.FAIL_TO_PASS, ...i.NEW_TO_PASS]),
        PASS_TO_PASS: JSON.stringify(i.PASS_TO_PASS),
        environment_setup_commit: i.base_commit,
      }),
    )
    .map((line) => `${line}\n`)
    .join('');
}

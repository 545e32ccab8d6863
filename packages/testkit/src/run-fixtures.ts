import { parseJob, type AgentRun, type Job, type Verification } from '@codefleet/core';

// Run record parts, for tests that build runs through core's own updates (the PR body, the
// CLI's `show`, GitHub's comments) without running a job. core's tests keep a copy of their
// own: core cannot depend on testkit, which depends on core.

/** A valid job from an issue, with overrides. */
export function jobFixture(overrides: Record<string, unknown> = {}): Job {
  return parseJob({
    id: 'job-1',
    idempotency_key: 'octo/repo#issue-7',
    repo: 'octo/repo',
    source: { kind: 'issue', number: 7 },
    title: 'Add a health endpoint',
    body: 'We need GET /healthz.',
    requested_by: 'alice',
    created_at: '2024-05-01T10:00:00Z',
    ...overrides,
  });
}

/** An agent run, with overrides. */
export function agentRunFixture(overrides: Partial<AgentRun> = {}): AgentRun {
  return {
    pass: 'implement',
    attempt: 1,
    inner_attempt: 1,
    agent: 'aider',
    exit_code: 0,
    signal: null,
    timed_out: false,
    duration_ms: 12_345,
    output_tail: 'done',
    changed_files: ['src/health.ts'],
    outcome: 'changed',
    ...overrides,
  };
}

/** A verification result, with overrides. */
export function verificationFixture(overrides: Partial<Verification> = {}): Verification {
  return {
    pass: 'test',
    attempt: 1,
    inner_attempt: 1,
    step: 'test',
    command: ['npm', 'test'],
    exit_code: 0,
    signal: null,
    timed_out: false,
    duration_ms: 4000,
    output_tail: 'ok',
    passed: true,
    ...overrides,
  };
}

/** `n` seconds after a fixed instant. */
export function fixtureTime(n: number): Date {
  return new Date(Date.parse('2024-05-01T10:00:00Z') + n * 1000);
}

import { describe, expect, it } from '@jest/globals';
import { finish, newRun, setGrade, startAttempt, type Job, type RunRecord } from '@codefleet/core';
import {
  buildReport,
  evalJob,
  evalJobId,
  evalTasks,
  failureOf,
  parseEvalConfig,
  renderMarkdown,
  runEvaluation,
  trialOf,
  type EvalTask,
  type Instance,
  type Suite,
} from '../src/index.js';

const at = new Date('2026-01-01T00:00:00Z');
const digest = 'd'.repeat(64);

function instance(n: number, repo = 'acme/widgets'): Instance {
  return {
    instance_id: `acme__widgets-${n}`,
    repo,
    base_commit: String(n).padStart(40, '0'),
    created_at: '2026-01-01T00:00:00Z',
    problem_statement: `Fix bug ${n}\n\nDetails.`,
    statement_source: 'issue',
    hints_text: '',
    patch: 'diff --git a/src/x b/src/x\n',
    test_patch: 'diff --git a/test/x b/test/x\n',
    FAIL_TO_PASS: ['t > fixed'],
    PASS_TO_PASS: ['t > kept', 't > flaky'],
    NEW_TO_PASS: [],
    flaky_excluded: ['t > flaky'],
    plan_digest: '',
    split: n % 5 === 0 ? 'holdout' : 'dev',
  };
}

/** A run of `job` that ended: resolved or not by its grade, or failed with `code`. */
function endedRun(job: Job, end: { resolved?: boolean; code?: string; usd?: number }): RunRecord {
  let run = startAttempt(newRun(job, { runId: job.id, now: at }), { workerId: 'w', now: at });
  run = {
    ...run,
    agent_runs: [
      {
        pass: 'implement',
        attempt: 1,
        inner_attempt: 2,
        agent: 'a',
        exit_code: 0,
        signal: null,
        timed_out: false,
        duration_ms: 1,
        output_tail: '',
        changed_files: [],
        outcome: 'changed',
        tokens: { prompt: 100, completion: 20 },
        ...(end.usd === undefined ? {} : { cost_usd: end.usd }),
      },
    ],
  };
  if (end.code !== undefined) {
    return {
      ...finish(run, 'failed', { now: new Date('2026-01-01T00:01:00Z') }),
      error: { code: end.code as never, verdict: 'permanent', message: end.code },
    };
  }
  // Ended as a graded run ends (the stages between do not matter here).
  run = setGrade(run, { resolved: end.resolved ?? false, reason: '', checks: [], duration_ms: 1 }, { now: at });
  return { ...run, stage: 'done', outcome: 'succeeded', dod_result: 'passed', updated_at: '2026-01-01T00:02:00.000Z' };
}

describe('eval jobs', () => {
  it('pin the base, grade by the named tests without the flaky ones, and run the configuration', () => {
    const suite: Suite = { digest, instances: [instance(1), instance(5)] };
    const configs = ['oracle', 'empty', 'sonnet=claude-sonnet'].map(parseEvalConfig);
    const tasks = evalTasks(suite, configs, { trials: 2 });
    expect(tasks).toHaveLength(6);
    expect(evalTasks(suite, configs, { trials: 1, split: 'all' })).toHaveLength(6);
    const [oracle, empty, sonnet] = [0, 2, 4].map((i) =>
      evalJob(digest, tasks[i] as EvalTask, { now: at, requestedBy: 'me' }),
    );
    expect(oracle).toMatchObject({
      base_commit: '1'.padStart(40, '0'),
      priority: 'low',
      title: 'Fix bug 1',
      patch: 'diff --git a/src/x b/src/x\n',
      hidden_tests: { patch: 'diff --git a/test/x b/test/x\n', tests: ['t > fixed', 't > kept'] },
      source: { kind: 'eval', suite: digest, instance: 'acme__widgets-1', config: 'oracle', trial: 1 },
    });
    expect(empty?.patch).toBe('');
    expect(sonnet).toMatchObject({ agent: 'claude-sonnet' });
    expect(sonnet).not.toHaveProperty('patch');
    // Fixed per task: the same again, another for another trial.
    expect(evalJobId(digest, tasks[0] as EvalTask)).toBe(oracle?.id);
    expect(evalJobId(digest, tasks[1] as EvalTask)).not.toBe(oracle?.id);
    expect(() => parseEvalConfig('Bad Name')).toThrow('a name is 1..64');
    expect(() => parseEvalConfig('x=Not/An/Agent')).toThrow('is no agent name');
  });
});

describe('runEvaluation', () => {
  it('keeps at most N per repository in flight, skips finished tasks and stops queueing past the budget', async () => {
    const suite: Suite = {
      digest,
      instances: [instance(1), instance(2), instance(3), instance(4, 'acme/other')],
    };
    const tasks = evalTasks(suite, [parseEvalConfig('oracle')], { trials: 1 });
    const runs = new Map<string, RunRecord>();
    // Finished by an earlier run of the suite, for $3.
    const earlier = evalJob(digest, tasks[0] as EvalTask, { now: at, requestedBy: 'me' });
    runs.set(earlier.id, endedRun(earlier, { resolved: true, usd: 3 }));
    const queued: Job[] = [];
    let inFlightMax = 0;
    const deps = {
      enqueue: async (job: Job) => {
        queued.push(job);
        const open = queued.filter((j) => j.repo === 'acme/widgets' && !runs.has(j.id)).length;
        inFlightMax = Math.max(inFlightMax, open);
      },
      // A worker that ends each queued job at the next look, for $2.
      getRun: async (id: string) => {
        const job = queued.find((j) => j.id === id);
        if (job !== undefined && !runs.has(id)) runs.set(id, endedRun(job, { resolved: true, usd: 2 }));
        return runs.get(id);
      },
    };
    const progress = await runEvaluation(deps, { digest, tasks, requestedBy: 'me', maxPerRepo: 1, pollMs: 1 });
    expect(progress).toMatchObject({ total: 4, earlier: 1, finished: 3, overBudget: 0, spentUsd: 9 });
    expect(inFlightMax).toBe(1);
    expect(queued.map((j) => j.id)).not.toContain(earlier.id);

    // The same start with $3 of budget, spent already by the earlier run: nothing is queued.
    for (const job of queued) runs.delete(job.id);
    queued.length = 0;
    const spent = await runEvaluation(deps, { digest, tasks, requestedBy: 'me', budgetUsd: 3, pollMs: 1 });
    expect(spent).toMatchObject({ earlier: 1, finished: 0, overBudget: 3, spentUsd: 3 });
    expect(queued).toEqual([]);
  });

  it('ends a job dead-lettered with no run at the next look at the dead letters, not at the deadline', async () => {
    const suite: Suite = { digest, instances: [instance(1), instance(2)] };
    const tasks = evalTasks(suite, [parseEvalConfig('oracle')], { trials: 1 });
    const queued: Job[] = [];
    const runs = new Map<string, RunRecord>();
    const [first, second] = tasks.map((task) => evalJobId(digest, task));
    const letters = [
      // Dead-lettered before this run queued it (an earlier run's): not this job's end.
      { id: second ?? '', reason: 'old', deadAt: Date.now() - 3_600_000 },
    ];
    let looks = 0;
    const deps = {
      enqueue: async (job: Job) => {
        queued.push(job);
        // The first job never verifies: the queue dead-letters it and no run ever ends.
        if (job.id === first) letters.push({ id: job.id, reason: 'signature_invalid', deadAt: Date.now() });
      },
      getRun: async (id: string) => {
        // The second ends after a few looks, as a worker would.
        const job = queued.find((j) => j.id === id);
        if (id === second && job !== undefined && (looks += 1) > 3)
          runs.set(id, endedRun(job, { resolved: true, usd: 0 }));
        return runs.get(id);
      },
      deadLetters: async () => letters,
    };
    const progress = await runEvaluation(deps, {
      digest,
      tasks,
      requestedBy: 'me',
      pollMs: 1,
      deadLetterEvery: 1,
      jobDeadlineMs: 3_600_000,
    });
    expect(progress).toMatchObject({
      finished: 1,
      abandoned: [],
      deadLettered: [{ id: first, reason: 'signature_invalid' }],
    });
  });
});

const jobOf0 = () =>
  evalJob(
    digest,
    { instance: instance(9), config: parseEvalConfig('empty'), trial: 1 },
    { now: at, requestedBy: 'me' },
  );

describe('the report', () => {
  it('classifies failures, keeps infrastructure out of the rates, and renders what it found', () => {
    const suite: Suite = { digest, instances: [1, 2, 3, 4].map((n) => instance(n)) };
    const configs = ['oracle', 'cheap', 'dear'].map(parseEvalConfig);
    const tasks = evalTasks(suite, configs, { trials: 1 });
    const ends: Record<string, { resolved?: boolean; code?: string; usd?: number }[]> = {
      oracle: [{ resolved: true }, { resolved: true }, { resolved: true }, { resolved: true }],
      cheap: [
        { resolved: true, usd: 1 },
        { resolved: false, usd: 1 },
        { code: 'git_failed' },
        { code: 'no_changes', usd: 1 },
      ],
      dear: [
        { resolved: true, usd: 5 },
        { resolved: true, usd: 5 },
        { code: 'budget_exceeded', usd: 5 },
        { code: 'agent_timeout' },
      ],
    };
    const results = tasks.map((task) => {
      const end = ends[task.config.name]?.[Number(task.instance.instance_id.split('-')[1]) - 1] ?? {};
      return trialOf(task, endedRun(evalJob(digest, task, { now: at, requestedBy: 'me' }), end));
    });
    expect(failureOf(undefined)).toBe('unfinished');
    // Out of fix attempts without ever changing a file: no changes, not failed checks.
    const idle = endedRun(jobOf0(), { code: 'fix_attempts_exhausted' });
    expect(failureOf(idle)).toBe('checks_failed');
    expect(
      failureOf({ ...idle, agent_runs: idle.agent_runs.map((r) => ({ ...r, outcome: 'no_changes' as const })) }),
    ).toBe('no_changes');
    const report = buildReport(
      results,
      { codefleet: '0.1.0 abc', suite: digest, configs, trials: 1, instances: 4 },
      { target: 0.5 },
    );
    const [oracle, cheap, dear] = report.configs;
    expect(oracle?.resolved).toMatchObject({ count: 4, of: 4, rate: 1 });
    // cheap: 1 of 3 counted (the git failure is infrastructure, not counted); $3 for 1 resolved.
    expect(cheap).toMatchObject({
      resolved: { count: 1, of: 3 },
      costUsd: 3,
      costPerResolvedUsd: 3,
      tokens: 480,
      fixAttempts: 4,
      failures: { unresolved: 1, infrastructure: 1, no_changes: 1 },
    });
    expect(dear).toMatchObject({
      resolved: { count: 2, of: 4, rate: 0.5 },
      costPerResolvedUsd: 7.5,
      failures: { budget: 1, timeout: 1 },
    });
    // Wall time: 2 minutes for graded runs, 1 for failed ones.
    expect(dear?.wallMs).toEqual({ p50: 60_000, p95: 120_000 });
    // At 50%, only dear reaches it (oracle is never a candidate).
    expect(report.cheapest).toMatchObject({ config: 'dear' });
    expect(report.comparisons.map((c) => [c.a, c.b, c.instances])).toEqual([
      ['oracle', 'cheap', 3],
      ['oracle', 'dear', 4],
      ['cheap', 'dear', 3],
    ]);
    const markdown = renderMarkdown(report);
    expect(markdown).toContain(`- suite: \`${digest}\` (4 instances, 1 trial(s) each)`);
    expect(markdown).toContain('| cheap | 1/3 (33.3%) |');
    expect(markdown).toContain('| dear | 0 | 0 | 0 | 0 | 1 | 1 | 0 | 0 |');
    expect(markdown).toContain('**Cheapest to 50.0%:** dear resolves 50%');
  });
});

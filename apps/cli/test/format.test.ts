import { describe, expect, it } from '@jest/globals';
import {
  addAgentRun,
  addVerification,
  advance,
  createJob,
  finish,
  newRun,
  setAnswer,
  startAttempt,
  type AgentRun,
  type RunRecord,
  type Verification,
} from '@codefleet/core';
import { summarize } from '@codefleet/store';
import { agentRunFixture, verificationFixture } from '@codefleet/testkit';
import { formatRun, formatRuns } from '../src/format.js';

// Hand-made run records: the shapes the pipeline writes, without running a job.
const at = (s: number) => new Date(Date.parse('2026-01-05T10:00:00Z') + s * 1000);

function started(): RunRecord {
  const job = createJob(
    { repo: 'octo/calc', source: { kind: 'cli' }, title: 'Add multiply', body: '', requested_by: 'ann' },
    { id: 'job-1', now: at(0) },
  );
  let run = startAttempt(newRun(job, { runId: 'job-1', now: at(0) }), { workerId: 'w1', now: at(1) });
  for (const [i, stage] of (['preparing', 'planning', 'implementing', 'testing'] as const).entries())
    run = advance(run, stage, { now: at(2 + i) });
  return run;
}

// The shared fixtures, with what this file's expected text was written for.
const agentRun = (overrides: Partial<AgentRun> = {}): AgentRun =>
  agentRunFixture({ agent: 'script', duration_ms: 51, output_tail: '', changed_files: ['src/calc.js'], ...overrides });

const check = (overrides: Partial<Verification> = {}): Verification =>
  verificationFixture({ duration_ms: 1_250, ...overrides });

// As runPass builds it around verify's feedbackFor().
const reason = [
  'pass test: still failing after 3 attempts. Last feedback:',
  'Step test failed (exit 1): npm test',
  'Failing tests:',
  '- multiplies by a negative number',
].join('\n');

describe('formatRun', () => {
  it("shows an answer-mode job's route and its answer, each line on its own, control characters made safe", () => {
    const job = createJob(
      {
        repo: 'octo/calc',
        source: { kind: 'cli' },
        title: 'How does add work?',
        requested_by: 'ann',
        mode: 'answer',
        route: { name: 'ANALYZE', source: 'command', confidence: 1, reason: '/analyze' },
      },
      { id: 'job-2', now: at(0) },
    );
    let run = startAttempt(newRun(job, { runId: 'job-2', now: at(0) }), { workerId: 'w1', now: at(1) });
    for (const stage of ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const)
      run = advance(run, stage, { now: at(2) });
    run = finish(setAnswer(run, 'add() sums two numbers.\nSee src/calc.js \u001b[2J', { now: at(3) }), 'succeeded', {
      now: at(3),
    });
    const lines = formatRun(run).split('\n');
    expect(lines).toContain('route ANALYZE (command, confidence 1): /analyze');
    expect(lines.slice(lines.indexOf('Answer (read-only; nothing was published):'))).toEqual([
      'Answer (read-only; nothing was published):',
      '  add() sums two numbers.',
      '  See src/calc.js \uFFFD[2J',
    ]);
  });

  it('sums the reason up in one line at the top and prints the whole of it below', () => {
    const run = finish(started(), 'failed', {
      now: at(9),
      error: { code: 'fix_attempts_exhausted', verdict: 'agent_fixable', message: reason },
    });
    const lines = formatRun(run).split('\n');
    expect(lines[2]).toBe(
      'error fix_attempts_exhausted (agent_fixable): pass test: still failing after 3 attempts — Step test failed (exit 1): npm test',
    );
    expect(lines.slice(lines.indexOf('Reason:'))).toEqual([
      'Reason:',
      '  pass test: still failing after 3 attempts. Last feedback:',
      '  Step test failed (exit 1): npm test',
      '  Failing tests:',
      '  - multiplies by a negative number',
    ]);
    const oneLine = finish(started(), 'failed', {
      now: at(9),
      error: { code: 'no_changes', verdict: 'permanent', message: 'the agent changed nothing' },
    });
    expect(formatRun(oneLine)).toContain('error no_changes (permanent): the agent changed nothing');
    expect(formatRun(oneLine)).not.toContain('Reason:');
  });

  it('shows skipped and pre-existing checks as such, and counts them apart', () => {
    let run = started();
    run = addVerification(
      run,
      check({
        pass: 'implement',
        step: 'install',
        command: ['npm', 'ci'],
        exit_code: null,
        duration_ms: 0,
        skipped: true,
        output_tail: 'node_modules matches the lockfile: install skipped',
      }),
      { now: at(6) },
    );
    run = addVerification(
      run,
      check({ step: 'lint', command: ['npm', 'run', 'lint'], exit_code: 1, passed: false, preexisting: true }),
      { now: at(7) },
    );
    run = addVerification(run, check({ exit_code: 1, passed: false }), { now: at(8) });
    run = addVerification(run, check({ inner_attempt: 2 }), { now: at(9) });
    const shown = formatRun(run).split('\n');
    const checks = shown.slice(shown.findIndex((l) => l.startsWith('Checks')));
    expect(checks).toEqual([
      'Checks (latest run of each step: 1 passed, 1 skipped, 1 failing on the base commit too (pre-existing)):',
      '  skip implement attempt 1.1  install npm ci  — skipped: node_modules matches the lockfile: install skipped',
      '  base test      attempt 1.1  lint    npm run lint  (exit 1, 1.2s) — failing on the base commit too (pre-existing, not caused by this change)',
      '  FAIL test      attempt 1.1  test    npm test  (exit 1, 1.2s)',
      '  ok   test      attempt 1.2  test    npm test  (exit 0, 1.2s)',
    ]);
  });

  it('lists the files the run changed, bounded', () => {
    let run = addAgentRun(started(), agentRun(), { now: at(6) });
    run = addAgentRun(run, agentRun({ pass: 'test', changed_files: ['src/calc.js', 'test/calc.test.js'] }), {
      now: at(7),
    });
    expect(formatRun(run)).toContain('Changed files (2):\n  src/calc.js\n  test/calc.test.js\n');
    const many = addAgentRun(
      run,
      agentRun({ changed_files: Array.from({ length: 30 }, (_, i) => `gen/${String(i).padStart(2, '0')}.js`) }),
      { now: at(8) },
    );
    expect(formatRun(many)).toContain('Changed files (32):\n  gen/00.js\n');
    expect(formatRun(many)).toContain('  gen/19.js\n  … and 12 more\n');
  });
});

describe('formatRun: models, calls, cost and tiers', () => {
  it('shows per agent run its model, tokens, cost and model calls, the total cost and the tiers; agent text made safe', () => {
    let run = addAgentRun(
      started(),
      agentRun({
        agent: 'ollama',
        model: 'qwen2.5-coder:7b',
        tokens: { prompt: 3_000, completion: 750 },
        cost_usd: 0.0045,
        tier: 0,
        model_calls: [
          {
            provider: 'ollama',
            model: 'qwen2.5-coder:7b',
            prompt_tokens: 1_000,
            completion_tokens: 500,
            latency_ms: 850,
            cost_usd: 0.002,
            outcome: 'unusable',
          },
          {
            provider: 'ollama',
            model: 'qwen2.5-coder:7b',
            prompt_tokens: 2_000,
            completion_tokens: 250,
            latency_ms: 1_250,
            cost_usd: 0.0025,
            outcome: 'ok',
          },
        ],
      }),
      { now: at(6) },
    );
    run = addAgentRun(
      run,
      agentRun({
        pass: 'test',
        agent: 'claude',
        model: 'evil\u001b[2J\nmodel',
        cost_usd: 0.1,
        tier: 1,
        model_calls: [
          {
            provider: 'claude',
            model: 'evil\u001b[2J\nmodel',
            prompt_tokens: 10,
            completion_tokens: 20,
            latency_ms: 61_000,
            outcome: 'ok',
          },
        ],
      }),
      { now: at(7) },
    );
    run = addAgentRun(run, agentRun({ pass: 'test', inner_attempt: 2 }), { now: at(8) });
    run = {
      ...run,
      tiers: [
        {
          tier: 0,
          profile: 'local',
          agent: 'ollama',
          model: 'qwen2.5-coder:7b',
          started_at: at(5).toISOString(),
          outcome: 'failed',
          cost_usd: 0.0045,
          detail: 'fix attempts exhausted',
        },
        {
          tier: 1,
          profile: 'strongest',
          agent: 'claude',
          started_at: at(7).toISOString(),
          outcome: 'succeeded',
          cost_usd: 0.1,
        },
      ],
    };
    const lines = formatRun(run).split('\n');
    expect(lines.slice(lines.indexOf('Agent runs:'), lines.indexOf('Checks: none') - 1)).toEqual([
      'Agent runs:',
      '  implement attempt 1.1  changed    exit 0  51ms  1 file(s)',
      '      model qwen2.5-coder:7b · tokens 3000 in / 750 out · $0.0045 · tier 0',
      '      call ollama qwen2.5-coder:7b  in 1000 out 500  850ms  $0.0020  unusable',
      '      call ollama qwen2.5-coder:7b  in 2000 out 250  1.2s  $0.0025  ok',
      '  test      attempt 1.1  changed    exit 0  51ms  1 file(s)',
      '      model evil\uFFFD[2J model · $0.1000 · tier 1',
      '      call claude evil\uFFFD[2J model  in 10 out 20  1m 01s  cost unknown  ok',
      '  test      attempt 1.2  changed    exit 0  51ms  1 file(s)',
      '  total cost $0.1045 (1 agent run(s) without a known cost not included)',
      '',
      'Escalation tiers:',
      '  tier 0  local (ollama qwen2.5-coder:7b)  failed  $0.0045  — fix attempts exhausted',
      '  tier 1  strongest (claude)  succeeded  $0.1000',
    ]);
  });

  it('a run whose agents report nothing of it shows neither cost nor tiers', () => {
    const text = formatRun(addAgentRun(started(), agentRun(), { now: at(6) }));
    expect(text).not.toMatch(/cost|tier|model|call /);
  });
});

describe('formatRuns', () => {
  it('times a run still going from its creation to now, a finished one to its end', () => {
    // Last written at 5 s (testing); the agent has been working since, with nothing to record.
    const going = started();
    const ended = finish(
      ['validating', 'publishing'].reduce((r, stage) => advance(r, stage as 'validating', { now: at(40) }), started()),
      'succeeded',
      { now: at(42) },
    );
    const table = formatRuns([summarize(going), { ...summarize(ended), runId: 'job-2' }], at(600).getTime()).split(
      '\n',
    );
    expect(table[1]).toMatch(/^job-1 +testing .* 10m 00s so far /);
    expect(table[2]).toMatch(/^job-2 +done +succeeded .* 42s /);
  });
});

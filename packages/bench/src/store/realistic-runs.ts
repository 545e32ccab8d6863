/**
 * Run records as a fleet's history holds them, for the run store benchmark: about 3.5–4 KB
 * each (stage timeline, attempts, agent runs and checks with output tails), spread over 200
 * repositories with a few busy ones, every source, three agents, the outcomes in the
 * proportions a working fleet shows, and a handful of runs still active among the newest.
 */
import {
  addAgentRun,
  addVerification,
  advance,
  createJob,
  finish,
  newRun,
  setAcceptanceCriteria,
  setPublication,
  startAttempt,
  type AgentRun,
  type CreateJobInput,
  type RunOutcome,
  type RunRecord,
} from '@codefleet/core';

/** The filters the benchmark asks for, each matching a known share of the runs. */
export const benchRepos = 200;
export const benchAgents = ['claude', 'codex', 'gemini'] as const;

const sources: { share: number; source: CreateJobInput['source'] }[] = [
  { share: 0.45, source: { kind: 'issue', number: 1 } },
  { share: 0.15, source: { kind: 'issue', number: 1, via: 'ci' } },
  { share: 0.1, source: { kind: 'chat', platform: 'slack', channel: 'C01', thread_id: '1700000000.000100' } },
  { share: 0.1, source: { kind: 'api', callback_url: 'https://ci.example.com/hooks/codefleet' } },
  { share: 0.15, source: { kind: 'cli' } },
  { share: 0.05, source: { kind: 'issue', number: 1, via: 'review' } },
];

const endings: { share: number; outcome: RunOutcome }[] = [
  { share: 0.7, outcome: 'succeeded' },
  { share: 0.12, outcome: 'failed' },
  { share: 0.08, outcome: 'no_changes' },
  { share: 0.05, outcome: 'cancelled' },
  { share: 0.05, outcome: 'dod_failed' },
];

/** A deterministic pseudo-random sequence, so two runs of the bench hold the same history. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function pick<T extends { share: number }>(items: readonly T[], r: number): T {
  let left = r;
  for (const item of items) {
    left -= item.share;
    if (left < 0) return item;
  }
  return items[items.length - 1] as T;
}

const tail = (what: string) =>
  Array.from({ length: 10 }, (_, i) => `${what} line ${i + 1}: src/module-${i}.ts ok (${(i * 37) % 100} ms)`).join(
    '\n',
  );

const agentRun = (agent: string): AgentRun => ({
  pass: 'implement',
  attempt: 1,
  inner_attempt: 1,
  agent,
  exit_code: 0,
  signal: null,
  timed_out: false,
  duration_ms: 184_000,
  output_tail: tail('agent'),
  changed_files: ['src/parser.ts', 'src/parser.test.ts', 'README.md'],
  outcome: 'changed',
  tokens: { prompt: 48_213, completion: 6_120 },
  model: `${agent}-large`,
  cost_usd: 0.42,
});

/** One run: `n` numbers it, `createdMs` is when its job arrived. */
function buildRun(n: number, createdMs: number, active: boolean, r: () => number): RunRecord {
  const at = (offsetMs: number) => ({ now: new Date(createdMs + offsetMs) });
  const repo = `acme/repo-${Math.floor(r() ** 2 * benchRepos)}`;
  const agent = benchAgents[Math.floor(r() * benchAgents.length)] ?? 'claude';
  const job = createJob(
    {
      repo,
      source: pick(sources, r()).source,
      title: `Fix the parser's handling of edge case ${n} in the configuration loader`,
      body: 'When the configuration holds an empty section the loader throws. '.repeat(6),
      requested_by: `user-${n % 50}`,
      ...(r() < 0.5 ? { agent } : {}),
    },
    { id: `bench-run-${String(n).padStart(7, '0')}`, now: new Date(createdMs) },
  );
  let run = newRun(job, { runId: job.id, ...at(0) });
  run = advance(startAttempt(run, { workerId: `host-${n % 8}:4242:a1b2c3`, ...at(1_000) }), 'preparing', at(1_000));
  run = setAcceptanceCriteria(run, ['the loader accepts an empty section', 'existing tests pass'], at(2_000));
  run = advance(advance(run, 'planning', at(2_000)), 'implementing', at(3_000));
  run = addAgentRun(run, agentRun(agent), at(190_000));
  // Still running: half implementing, half testing.
  if (active) return n % 2 === 0 ? run : advance(run, 'testing', at(190_000));
  run = advance(run, 'testing', at(190_000));
  for (const step of ['build', 'lint', 'test'] as const)
    run = addVerification(
      run,
      {
        pass: 'implement',
        attempt: 1,
        inner_attempt: 1,
        step,
        command: ['npm', 'run', step],
        exit_code: 0,
        signal: null,
        timed_out: false,
        duration_ms: 21_000,
        output_tail: tail(step),
        passed: true,
      },
      at(250_000),
    );
  const outcome = pick(endings, r()).outcome;
  const error =
    outcome === 'succeeded'
      ? undefined
      : { code: 'test_failed' as const, verdict: 'permanent' as const, message: 'tests fail' };
  if (outcome === 'succeeded') {
    run = advance(advance(run, 'validating', at(260_000)), 'publishing', at(270_000));
    const pull = 1_000 + n;
    run = setPublication(
      run,
      {
        branch: `codefleet/${job.id}`,
        pullRequest: {
          number: pull,
          url: `https://github.com/${repo}/pull/${pull}`,
          head: `codefleet/${job.id}`,
          base: 'main',
          draft: false,
        },
      },
      at(280_000),
    );
  }
  return finish(run, outcome, { ...at(300_000), ...(error === undefined ? {} : { error }) });
}

/**
 * `count` runs, oldest first, one every ~70 s back from `nowMs`; the newest `active` of them
 * are still running. Built once and shared, so building does not count in any figure.
 */
export function realisticRuns(count: number, options: { nowMs: number; active: number }): RunRecord[] {
  const r = random(29);
  const runs: RunRecord[] = [];
  for (let n = 0; n < count; n += 1) {
    const createdMs = options.nowMs - (count - n) * 70_000;
    runs.push(buildRun(n, createdMs, n >= count - options.active, r));
  }
  return runs;
}

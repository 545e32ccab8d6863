/**
 * Figure 1: trigger → agent start on a warm repository, per backend. A signed `issues.labeled`
 * delivery is POSTed to the real `codefleet producer webhook` process; its delivery processor
 * reads the issue and the sender's permission from the GitHub stand-in and enqueues the job;
 * a real `codefleet worker` process (concurrency 1, the sandbox as configured: bubblewrap
 * here) claims it, prepares the pooled working copy from its mirror (a fetch over git HTTP
 * from the stand-in) and starts the agent, a shell command that prints its start time and
 * writes one file, so the job goes on to push and open its pull request. One job at a time,
 * each after the previous one ended, so no job waits behind another. The first jobs are
 * not counted: they clone the mirror, make the pool slot and take the verification baseline.
 *
 * The times come from three clocks of the same host: the bench's (delivery sent, answered),
 * the run record (job created by the producer, attempt started = claimed, `planning`
 * entered = the copy is ready) and the agent's own first line.
 */
import { createHmac } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isTerminal, type RunRecord } from '@codefleet/core';
import { latestRun, type RunStore } from '@codefleet/store';
import { freePort, startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { backendLabel, processEnv, shellAgent, startBackend, writeConfig, type Backend } from './backends.js';
import { startCodefleet, type CodefleetProcess } from './codefleet-process.js';
import { percentile } from './stats.js';

/** The phases between the delivery and the agent's start, in order. */
export const phases = [
  'webhook answered (recorded)',
  'job enqueued',
  'job claimed',
  'working copy ready',
  'agent started',
] as const;
type Phase = (typeof phases)[number];

/** What one backend measured: per phase and in total, in ms, over the counted jobs. */
export interface LatencyResult {
  backend: Backend;
  label: string;
  phaseMs: Record<Phase, number[]>;
  totalMs: number[];
  /** Jobs that did not reach their agent, with why. */
  failures: string[];
}

const repo = 'acme/bench';
const secret = 'bench-webhook-secret';
const agentMark = 'bench-agent-start';

/** The smallest `issues.labeled` payload the webhook reads: GitHub's fields it uses. */
function labeledPayload(issue: number): string {
  return JSON.stringify({
    action: 'labeled',
    label: { name: 'codefleet' },
    issue: { number: issue, title: `bench ${issue}` },
    repository: { full_name: repo, name: 'bench', owner: { login: 'acme' } },
    sender: { login: 'alice' },
  });
}

async function deliver(port: number, id: string, body: string): Promise<number> {
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const answer = await fetch(`http://127.0.0.1:${port}/webhook`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': id,
      'x-hub-signature-256': signature,
    },
  });
  await answer.arrayBuffer();
  return answer.status;
}

async function finishedRun(store: RunStore, jobId: string, timeoutMs: number): Promise<RunRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { run } = await latestRun(store, jobId);
    if (run && isTerminal(run.stage)) return run;
    if (Date.now() > deadline)
      throw new Error(`job ${jobId} did not finish within ${timeoutMs / 1000} s (stage ${run?.stage ?? 'no run'})`);
    await sleep(100);
  }
}

/** The phase ends of one run: epoch ms, in the order of {@link phases} (after `sentAt`). */
function phaseEnds(run: RunRecord, answeredAt: number): number[] | string {
  const enqueued = Date.parse(run.job.created_at);
  const claimed = Date.parse(run.attempts[0]?.started_at ?? '');
  const ready = Date.parse(run.stages.find((s) => s.stage === 'planning')?.at ?? '');
  const output = run.agent_runs[0]?.output_tail ?? '';
  const agent = Number(new RegExp(`${agentMark} (\\d+)`).exec(output)?.[1] ?? Number.NaN);
  const ends = [answeredAt, enqueued, claimed, ready, agent];
  return ends.every(Number.isFinite)
    ? ends
    : `run ${run.run_id} ended ${run.outcome ?? run.stage} without every phase (${run.error?.message ?? 'no error'})`;
}

/** Runs `warmup + jobs` labeled issues through one backend; counts the last `jobs`. */
export async function measureTriggerLatency(
  backend: Backend,
  options: { root: string; jobs: number; warmup: number; hostPath: string; say(line: string): void },
): Promise<LatencyResult> {
  const dir = await mkdtemp(join(options.root, `trigger-${backend}-`));
  const result: LatencyResult = {
    backend,
    label: backendLabel[backend],
    phaseMs: Object.fromEntries(phases.map((p) => [p, []])) as unknown as Record<Phase, number[]>,
    totalMs: [],
    failures: [],
  };
  const services = await startBackend(backend);
  let gh: GithubStandIn | undefined;
  let store: RunStore | undefined;
  const processes: CodefleetProcess[] = [];
  try {
    gh = await startGithubStandIn();
    await gh.createRepo(repo, { 'README.md': '# bench\n', 'src/index.js': 'export const answer = 42;\n' });
    gh.setPermission(repo, 'alice', 'write');
    const port = await freePort();
    const config = writeConfig(dir, [
      ...services.yaml,
      ...shellAgent(`t=$(date +%s%3N); echo "$t" > bench-change.txt; echo "${agentMark} $t"`),
      'forge:',
      '  type: github',
      '  github:',
      `    api_url: ${gh.url}`,
      `    repos: [${repo}]`,
      `    webhook_port: ${port}`,
      'worker:',
      '  concurrency: 1',
      'logging:',
      '  level: warn',
    ]);
    const env = processEnv(dir, options.hostPath, { GITHUB_TOKEN: gh.token, GITHUB_WEBHOOK_SECRET: secret });
    const producer = startCodefleet(['producer', 'webhook'], { config, env, dir, name: 'producer' });
    processes.push(producer);
    processes.push(startCodefleet(['worker'], { config, env, dir, name: 'worker' }));
    await producer.waitForLine(/listening for GitHub webhooks/, 60_000);
    store = services.openStore(dir);

    for (let n = 0; n < options.warmup + options.jobs; n += 1) {
      const issue = gh.createIssue(repo, { title: `Bench job ${n}`, body: 'Write bench-change.txt.' });
      gh.labelIssue(repo, issue.number, 'codefleet', 'alice');
      const id = `bench-${backend}-${n}`;
      const sentAt = Date.now();
      const status = await deliver(port, id, labeledPayload(issue.number));
      const answeredAt = Date.now();
      if (status !== 202) throw new Error(`the webhook answered ${status} to delivery ${id}`);
      const run = await finishedRun(store, `gh-delivery-${id}`, 180_000);
      const ends = phaseEnds(run, answeredAt);
      if (n < options.warmup) continue;
      if (typeof ends === 'string') {
        result.failures.push(ends);
        continue;
      }
      let previous = sentAt;
      for (const [i, phase] of phases.entries()) {
        result.phaseMs[phase].push((ends[i] ?? previous) - previous);
        previous = ends[i] ?? previous;
      }
      result.totalMs.push(previous - sentAt);
      if ((n - options.warmup + 1) % 25 === 0)
        options.say(
          `  ${backend}: ${n - options.warmup + 1} of ${options.jobs} jobs, p95 so far ${percentile(result.totalMs, 95).toFixed(0)} ms`,
        );
    }
    return result;
  } finally {
    for (const p of processes.reverse()) await p.stop();
    await store?.close();
    await gh?.close();
    await services.stop();
  }
}

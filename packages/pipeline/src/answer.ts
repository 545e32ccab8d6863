import { constants } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Agent } from '@codefleet/agents';
import { addAgentRun, CodefleetError, finish, setAnswer, type Job } from '@codefleet/core';
import { maskSecrets } from '@codefleet/log';
import type { Workspace } from '@codefleet/workspace';
import { agentRunSettings } from './agent-run.js';
import { budgetsLeft, budgetStop, moneyLimits, pricedRun, recordSpend } from './budget.js';
import type { Enter, JobContext, PipelineDeps } from './deps.js';
import type { JobResult, Prepared, RunningJob } from './running-job.js';
import type { JobRunners } from './sandboxed.js';
import type { RunTracker } from './tracker.js';

/** Where the agent writes its answer, inside the working copy (never committed). */
const answerFile = '.codefleet/answer.md';

/** Bytes of the answer file read; the run record keeps at most 40 000 characters anyway. */
const maxAnswerBytes = 64 * 1024;

/** What each read-only route asks of the agent. */
const routeAsks: Record<string, string> = {
  PLAN: 'Write an implementation plan: the steps, the files to change, the risks, and how to test it.',
  ANALYZE: 'Analyze the code the request is about: explain how it works and point out problems, with file paths.',
  RESEARCH: 'Research the request in this repository: find the relevant code and prior art, and compare the options.',
};

/**
 * The prompt of an answer-mode job, with the repository's memory bank (`memory`, as
 * `readMemoryBank` summarised it) after the request, as in a change job: an answer about the
 * code should know its conventions and decisions as much as a change to it.
 */
function answerPrompt(job: Job, memory = ''): string {
  const parts = [
    'Answer the request below about this repository. This is a read-only task: do not change any file of the repository.',
    routeAsks[job.route?.name ?? ''] ?? 'Answer the question, citing file paths.',
    `Write your complete answer, in Markdown, to the file ${answerFile} (create it); it is sent back to the person who asked.`,
    '',
    `Request: ${job.title}`,
    '',
    job.body,
    '',
    'The full request is in .codefleet/task.md.',
  ];
  if (memory !== '') parts.push('', memory);
  return parts.join('\n');
}

/** Inputs of {@link answerOnCopy}. */
interface AnswerInput {
  deps: PipelineDeps;
  ctx: JobContext;
  tracker: RunTracker;
  agent: Agent;
  ws: Workspace;
  runners: JobRunners;
  enter: Enter;
  /** The repository's memory bank, summarised (readMemoryBank); '' for none. */
  memory?: string;
}

/**
 * The stages of a read-only job (PLAN, ANALYZE, RESEARCH), from planning on: the agent
 * answers on the job's working copy ({@link answerOnCopy}), the run ends `done` with the
 * answer, and the answer goes back to whoever asked.
 */
export async function answerJob(running: RunningJob, prepared: Prepared): Promise<JobResult> {
  await running.enter('planning', 'answer mode: read-only, no branch');
  const { deps, ctx, tracker, now, enter } = running;
  const { ws, runners, memory } = prepared;
  // Only the chain's first tier answers: there is no check to fail.
  const agent = prepared.agents[0]!;
  const answer = await answerOnCopy({ deps, ctx, tracker, agent, ws, runners, enter, memory });
  await tracker.update((r) => finish(setAnswer(r, answer, { now: now() }), 'succeeded', { now: now() }));
  await running.tell({ kind: 'answered', job: ctx.job, run: tracker.run, answer: tracker.run.answer ?? answer });
  ctx.onProgress?.({ stage: 'done' });
  return { action: 'ack', run: tracker.run };
}

/**
 * A read-only job (PLAN, ANALYZE, RESEARCH): the agent runs once on the job's working copy
 * and its answer is the result: no verification, no commit, no branch, no pull request.
 * Whatever the agent changed stays in the copy, which is thrown away. The answer is the
 * file it wrote ({@link answerFile}), else the end of its output (CLI agents print it).
 * The stages are walked with notes saying what was skipped, so the record reads like any run.
 */
async function answerOnCopy(input: AnswerInput): Promise<string> {
  const { deps, ctx, tracker, agent, ws, runners, enter, memory = '' } = input;
  const now = () => (deps.now ?? (() => new Date()))();
  await enter('implementing', 'answer mode: the agent answers on a copy; nothing is committed or published');
  const limits = moneyLimits({ deps });
  const left = await budgetsLeft(deps, agent, tracker.run, limits);
  const result = pricedRun(
    await agent.run({
      workdir: ws.dir,
      prompt: answerPrompt(ctx.job, memory),
      pass: 'implement',
      attempt: 1,
      ...agentRunSettings(deps, agent, runners, left, ctx.signal),
    }),
    agent,
    deps.settings.prices,
  );
  await tracker.update((run) =>
    addAgentRun(
      run,
      {
        pass: 'implement',
        attempt: ctx.attempt,
        inner_attempt: 1,
        agent: agent.name,
        exit_code: result.exitCode,
        signal: result.signal,
        timed_out: result.timedOut,
        duration_ms: result.durationMs,
        output_tail: result.outputTail,
        changed_files: result.changedFiles,
        outcome: result.outcome,
        ...(result.tokens === undefined ? {} : { tokens: result.tokens }),
        ...(result.costUsd === undefined ? {} : { cost_usd: result.costUsd }),
      },
      { now: now() },
    ),
  );
  await recordSpend(deps, ctx.job.id, result.costUsd, {
    repo: ctx.job.repo,
    agent: agent.name,
    ...(result.model === undefined ? {} : { model: result.model }),
  });
  if (ctx.signal.aborted)
    throw new CodefleetError('cancelled', 'the job was stopped while the agent ran', { verdict: 'transient' });
  if (result.outcome === 'timeout')
    throw new CodefleetError(
      'agent_timeout',
      `agent ${agent.name} timed out after ${agent.timeoutMs ?? deps.settings.agentTimeoutMs} ms`,
    );
  if (result.outcome === 'error') {
    throw new CodefleetError(
      'agent_crashed',
      `agent ${agent.name} could not run: ${result.detail ?? 'unknown error'}`,
      result.permanent ? { verdict: 'permanent' } : {},
    );
  }
  if (result.budgetExceeded) throw await budgetStop(deps, agent, tracker.run, limits, left, result.detail);
  const written = await readAnswerFile(ws.dir);
  const answer = (written ?? (result.outcome === 'failed' ? '' : withoutNodeWarnings(result.outputTail))).trim();
  if (answer === '') {
    throw new CodefleetError(
      'agent_failed',
      `agent ${agent.name} gave no answer (${answerFile} is missing or empty${result.outcome === 'failed' ? `, and it ${result.detail ?? `exited with ${result.exitCode}`}` : ''})`,
      { verdict: 'permanent' },
    );
  }
  const note =
    result.changedFiles.length > 0
      ? `answer mode: the agent changed ${result.changedFiles.length} file(s); discarded with the copy`
      : 'answer mode: nothing to verify';
  await enter('testing', note);
  await enter('validating', 'answer mode: no definition of done');
  await enter('publishing', 'answer mode: the answer is reported back; no branch, no pull request');
  return maskSecrets(answer, deps.settings.secrets);
}

/**
 * Reads the answer file the agent wrote, as data from an attacker: `.codefleet` must be a
 * real directory and the answer a regular file, never a link (a symlink to a host file
 * would have the worker post that file) nor a FIFO (which would block the read). Bounded.
 * Undefined when there is no such file.
 */
async function readAnswerFile(workdir: string): Promise<string | undefined> {
  const dir = await lstat(join(workdir, '.codefleet')).catch(() => undefined);
  if (dir === undefined || !dir.isDirectory()) return undefined;
  let handle;
  try {
    handle = await open(join(workdir, answerFile), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!(await handle.stat()).isFile()) return undefined;
    const buffer = Buffer.alloc(maxAnswerBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxAnswerBytes, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * The output without Node's own runtime warnings (`(node:12) [UNDICI-EHPA] Warning: …` and its
 * `(Use \`node --trace-warnings …\`)` line): Node 22 prints one in every run, as the sandbox sets
 * NODE_USE_ENV_PROXY, and a warning is no answer.
 */
function withoutNodeWarnings(output: string): string {
  return output
    .split('\n')
    .filter((line) => !/^\(node:\d+\) (\[[\w-]+\] )?\w*Warning: /.test(line) && !/^\(Use `node --trace-/.test(line))
    .join('\n');
}

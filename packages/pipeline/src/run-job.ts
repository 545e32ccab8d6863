import {
  advance,
  cancelOf,
  cancelRequested,
  classify,
  CodefleetError,
  decideOuter,
  LeaseLostError,
  endAttempt,
  finish,
  isTerminal,
  newRun,
  renderTaskNote,
  setAcceptanceCriteria,
  setAnswer,
  setDodResult,
  setMemoryUpdates,
  setPublication,
  isMemoryFile,
  defaultMemoryChars,
  startAttempt,
  addVerification,
  type Classified,
  type RunRecord,
  type Stage,
} from '@codefleet/core';
import { createPatchAgent } from '@codefleet/agents';
import { pushedMarker, taskTrailerValue } from '@codefleet/forge';
import { maskForPublishing, maskSecrets } from '@codefleet/log';
import { refuseSecrets } from './secrets-check.js';
import { planEnv, planVerification, runDod, type StepResult } from '@codefleet/verify';
import type { LeaseVerdict } from '@codefleet/queue';
import { branchName, type Workspace } from '@codefleet/workspace';
import type { JobContext, PipelineDeps } from './deps.js';
import { acceptanceCriteria, agentInstructions, taskFile } from './plan.js';
import { answerJob } from './answer.js';
import { finalReportOf } from './final-report.js';
import { runReporter } from './undelivered.js';
import type { JobReporter } from '@codefleet/requester';
import { baselineFor } from './baseline.js';
import { readMemoryBank } from './memory.js';
import { installAtBase, providePackageManager } from './install.js';
import { commitMessage, runPass, verificationEntry, type PassInput, type PassResult } from './passes.js';
import { chainOf, runChain, type Enter } from './escalation.js';
import { latestRun, runIdOf } from '@codefleet/store';
import { jobRunners, sandboxObservers } from './sandboxed.js';
import { RunTracker } from './tracker.js';
import { pushWork } from './publish.js';
import { checkStillOpen, publishLease } from './published-branch.js';

/** What the worker should do with the lease after a run. */
export type JobResult = LeaseVerdict & { run: RunRecord };

/**
 * Runs one delivery of a job: claim → prepare → plan → implement → test → validate →
 * publish. Every step lands in the run record. Redelivery converges: a job whose run is
 * already done is acknowledged, the branch name never depends on the attempt, and forge
 * writes are `ensure*`.
 */
export async function runJob(deps: PipelineDeps, ctx: JobContext): Promise<JobResult> {
  const now = deps.now ?? (() => new Date());
  const { job } = ctx;
  const latest = await latestRun(deps.store, job.id);
  let existing = latest.run;
  let runId = runIdOf(job.id, latest.generation);
  let origin: string | undefined;
  if (existing && isTerminal(existing.stage)) {
    // A job redriven out of the dead-letter queue starts again at attempt 1 (every queue
    // backend resets the count; conformance-tested): that is a new run of the same job,
    // its failed run kept as it ended (a failed run stays failed). Any other delivery of
    // finished work is a redelivery (the ack was lost): converge, do not redo.
    if (!(existing.stage === 'failed' && ctx.attempt === 1 && existing.attempts.length > 0)) {
      // The worker that finished it may have died before its final report: send it again.
      const final = finalReportOf(existing);
      if (final) await runReporter(deps, existing.run_id, { before: () => fenceFor(deps, ctx, 'comment') }).tell(final);
      return existing.stage === 'failed'
        ? { action: 'dead_letter', reason: existing.error?.message ?? 'failed', run: existing }
        : { action: 'ack', run: existing };
    }
    origin = `redriven from the dead-letter queue; the previous run ${existing.run_id} failed (${existing.error?.code ?? 'failed'})`;
    runId = runIdOf(job.id, latest.generation + 1);
    existing = undefined;
  }
  let run = existing ?? newRun(job, { runId, now: now(), ...(origin === undefined ? {} : { note: origin }) });
  if (run.stage !== 'queued' && run.stage !== 'retry_wait') {
    // The previous holder vanished mid-run (crash, lost lease).
    run = advance(run, 'retry_wait', { now: now(), note: 'previous attempt abandoned' });
  }
  const tracker = new RunTracker(run, deps.store, deps.log.child({ job_id: job.id }), deps.settings.secrets);
  const enter = async (stage: Stage, note?: string) => {
    // A cancel asked for on the issue stops the job at the next stage boundary (the worker
    // also checks at every heartbeat, to stop a running agent sooner).
    const cancel = await deps.store.cancelRequested(job.idempotency_key).catch(() => undefined);
    if (cancel) throw cancelRequested(cancel.by);
    await tracker.update((r) => advance(r, stage, { now: now(), ...(note === undefined ? {} : { note }) }));
    ctx.onProgress?.({ stage });
    deps.log.info({ event: 'stage.entered', job_id: job.id, stage, attempt: ctx.attempt }, stage);
    // `started` says preparing; requesters that show progress (a Slack status message) edit
    // it per stage, the others ignore it.
    if (stage !== 'preparing') await tell({ kind: 'progress', job, stage, ...(note === undefined ? {} : { note }) });
  };

  const fence = (action: 'push' | 'pull_request' | 'comment') => fenceFor(deps, ctx, action);
  // Whoever asked is told where the job is: best effort, and fenced like every publishing write.
  // Progress goes in the background (the job never waits for an edit); a final report is awaited under its deadline.
  // Not under the job's signal: a cancel or a lost lease aborts it, and the cancel must still be told.
  const { tell } = runReporter(deps, runId, { before: () => fence('comment') });
  await tracker.update((r) => startAttempt(r, { workerId: ctx.workerId, now: now() }));
  // The job's wall-clock budget counts from its first attempt, across redeliveries: past
  // it, the running agent is stopped and the job fails with budget_exceeded (not a hang).
  const budget = new AbortController();
  const budgetMs = deps.settings.jobBudgetMs;
  const firstStart = Date.parse(tracker.run.attempts[0]?.started_at ?? '') || now().getTime();
  const budgetLeft = budgetMs === undefined ? undefined : budgetMs - (now().getTime() - firstStart);
  const budgetTimer = budgetLeft === undefined ? undefined : setTimeout(() => budget.abort(), Math.max(0, budgetLeft));
  const work: JobContext = { ...ctx, signal: AbortSignal.any([ctx.signal, budget.signal]) };
  let ws: Workspace | undefined;
  let failed = false;
  try {
    await enter('preparing');
    await tell({ kind: 'started', job, attempt: ctx.attempt });
    // A job that carries a patch (from a chat coder) is applied by the patch engine, no model.
    // A job on an escalation chain has an agent per tier, all built now: a tier that cannot be
    // built fails the job before any work, not after the first tier's.
    const chain = chainOf(job, deps.settings);
    const agents =
      job.patch !== undefined
        ? [
            createPatchAgent(
              job.patch,
              deps.settings.patchPolicy === undefined ? {} : { policy: deps.settings.patchPolicy },
            ),
          ]
        : (chain?.tiers ?? [job.agent ?? deps.settings.defaultAgent]).map((name) => deps.agentFor(name));
    // An answer job (read-only) runs the chain's first tier only: there is no check to fail.
    const agent = agents[0]!;
    const criteria = acceptanceCriteria(job);
    const configuredScope = deps.settings.scope ?? { exclude: [], read: [] };
    // Workflow files stay out of the commit even when the sandbox cannot mount them read-only
    // (a new file in a directory that did not exist, or no sandbox at all).
    const scope =
      deps.settings.protectWorkflows === false
        ? configuredScope
        : { ...configuredScope, read: [...configuredScope.read, '.github/workflows/**', '.github/actions/**'] };
    const context: Record<string, string> = { '.codefleet/task.md': taskFile(job, criteria, scope) };
    for (const each of agents) if (each.contextFile) context[each.contextFile] = agentInstructions();
    // From the title as it may be published: a secret in it (plain or encoded) never reaches
    // the branch, not even as the part of it a slug keeps.
    const branch = branchName({ ...job, title: maskForPublishing(job.title, deps.settings.secrets) });
    ws = await deps.workspaces.prepare({
      jobId: job.id,
      repoUrl: deps.forge.remoteUrl(job.repo),
      branch,
      scope,
      context,
      signal: work.signal,
      ...(job.base_branch === undefined ? {} : { baseBranch: job.base_branch }),
    });
    const runners = jobRunners(deps.sandbox, ws, {
      protectWorkflows: deps.settings.protectWorkflows ?? true,
      ...sandboxObservers(deps, job, tracker),
    });
    // The base commit's memory bank: what the repository holds, not what an earlier attempt wrote.
    const memory = await readMemoryBank(ws.dir, ws.baseSha, deps.settings.memoryChars ?? defaultMemoryChars, {
      gitPath: deps.settings.gitPath,
      env: deps.settings.verifyEnv,
    });
    if (memory.text !== '') {
      deps.log.info(
        {
          event: 'memory.loaded',
          job_id: job.id,
          whole: memory.whole.length,
          outlined: memory.outlined.length,
          omitted: memory.omitted.length,
        },
        'memory bank in the prompt',
      );
    }
    if (job.mode === 'answer') {
      await enter('planning', 'answer mode: read-only, no branch');
      const answer = await answerJob({ deps, ctx: work, tracker, agent, ws, runners, enter, memory: memory.text });
      await tracker.update((r) => finish(setAnswer(r, answer, { now: now() }), 'succeeded', { now: now() }));
      await tell({ kind: 'answered', job, run: tracker.run, answer: tracker.run.answer ?? answer });
      ctx.onProgress?.({ stage: 'done' });
      return { action: 'ack', run: tracker.run };
    }
    await tracker.update((r) => setPublication(r, { branch }, { now: now() }));
    // A follow-up whose pull request ended, or whose branch someone else took, since it was
    // queued stops before the agent runs; publishing looks again.
    await publishLease(deps, { job, ws, branch, task: taskTrailerValue(job.idempotency_key), signal: work.signal });

    await enter('planning');
    await tracker.update((r) => setAcceptanceCriteria(r, criteria, { now: now() }));
    const plan = await planVerification(ws.dir, {
      config: deps.settings.verification,
      env: deps.settings.verifyEnv,
      ...(job.dod ? { jobDod: job.dod } : {}),
    });

    const input: PassInput = { deps, ctx: work, tracker, agent, ws, plan, criteria, runners, memory: memory.text };
    await providePackageManager(input);
    input.baseInstallFailure = await installAtBase(input);
    input.baseline = await baselineFor(input);
    const {
      inner: testedOn,
      preexisting,
      unverifiable,
    } = chain === undefined ? await runPasses(input, enter) : await runChain(input, chain, agents, enter);
    // What verification passed on: the commit must hold exactly this.
    const verified = await ws.fingerprint();

    // The DoD is enforced, not optional: a job's or .codefleet.yml's own commands run
    // now; without them the DoD is the repository's verification steps (SPEC: those are the
    // DoD list unless overridden), which pass 2 has just passed on this very tree, so
    // running them again would double the job's test time and show nothing new. `skipped`
    // is left for a repository with nothing to verify at all.
    const checks = plan.steps.filter((step) => step.name !== 'install');
    const ownDod = plan.dod.length > 0;
    // A check that could not run at the base either checked nothing: without DoD commands of
    // its own, the job cannot claim its definition of done (a draft PR says why).
    const named = (steps: typeof preexisting) =>
      steps.map((step) => `${step.name} (\`${step.command.join(' ')}\`)`).join(', ');
    const unchecked = named(unverifiable);
    const known = named(preexisting);
    await enter(
      'validating',
      ownDod
        ? `definition of done: ${plan.source === 'job' ? "the job's" : "the repository's"} ${plan.dod.length} command(s)${unchecked === '' ? '' : `; not checked by ${unchecked}, which cannot run on this worker (${whyUnchecked(unverifiable)})`}`
        : unchecked !== ''
          ? `definition of done not met: ${unchecked} cannot run on this worker (it fails the same way on the base commit without running on the code: ${whyUnchecked(unverifiable)}), so the change was not checked by it`
          : checks.length > 0
            ? `definition of done: the verification steps pass 2 passed (${[...new Set(checks.map((step) => step.name))].join(', ')})${known === '' ? '' : `, but for what fails on the base commit too: ${known}`}`
            : 'definition of done: nothing to run (no DoD commands, no verification steps detected)',
    );
    const dod = ownDod
      ? await runDod(ws.dir, plan.dod, {
          env: planEnv(plan, deps.settings.verifyEnv),
          timeoutMs: deps.settings.stepTimeoutMs,
          signal: work.signal,
          runner: runners.runner,
          ...(ctx.onOutput === undefined ? {} : { onOutput: ctx.onOutput }),
        })
      : {
          result:
            unchecked !== '' ? ('failed' as const) : checks.length > 0 ? ('passed' as const) : ('skipped' as const),
          results: [],
        };
    await tracker.update((r) =>
      setDodResult(
        dod.results.reduce(
          (acc: RunRecord, res) =>
            addVerification(acc, verificationEntry(res, 'test', ctx.attempt, testedOn), { now: now() }),
          r,
        ),
        dod.result,
        { now: now() },
      ),
    );
    const dodOk = dod.result === 'passed' || dod.result === 'skipped';

    // chmod cannot stop an agent running as root, nor one that commits: whatever it wrote
    // out of scope stays out of the commit (Workspace.commit), and the record says so.
    const outOfScope = await ws.outOfScopeChanges();
    if (outOfScope.length > 0) {
      deps.log.warn(
        { event: 'scope.changes_left_out', job_id: job.id, files: outOfScope.slice(0, 50) },
        'out-of-scope changes left out of the commit',
      );
    }
    await enter(
      'publishing',
      outOfScope.length > 0
        ? `left out of the commit (out of scope): ${outOfScope.slice(0, 20).join(', ')}`
        : undefined,
    );
    if ((await ws.changedFiles()).filter((file) => !outOfScope.includes(file)).length === 0) {
      throw new CodefleetError('no_changes', 'the agent finished without changing any file', { verdict: 'permanent' });
    }
    if ((await ws.fingerprint()) !== verified) {
      // Only the DoD's own commands ran since: they changed the tree verification passed on.
      throw new CodefleetError(
        'dod_failed',
        'the definition of done changed files after verification passed; what would be pushed is not what was verified. DoD commands must only check',
        { verdict: 'permanent' },
      );
    }
    // A memory bank update is proposed, never silent: its own section of the PR body.
    const memoryUpdates = (await ws.changedFiles()).filter((file) => isMemoryFile(file) && !outOfScope.includes(file));
    if (memoryUpdates.length > 0) await tracker.update((r) => setMemoryUpdates(r, memoryUpdates, { now: now() }));
    // The record's job has its secrets masked (RunTracker): the commit and the PR carry that title.
    const shown = tracker.run.job;
    // From the key as queued, not as shown: its hash reveals nothing, and every delivery of
    // the task must name it alike whatever masking sees in it.
    const task = taskTrailerValue(job.idempotency_key);
    const message = commitMessage(shown, deps.settings.commitPrefix, task);
    await ws.commit(message, deps.settings.commitAuthor);
    const outcome = dodOk ? 'succeeded' : 'dod_failed';
    // The body is the note as it will read once this PR is open, not "in progress (publishing)".
    const note = renderTaskNote(finish(tracker.run, outcome, { now: now(), dodResult: dod.result }));
    await refuseSecrets(ws, deps.settings.secrets, {
      'the commit message': message,
      'the branch name': branch,
      'the pull request title': shown.title,
      'the pull request body': note,
    });
    await fence('push');
    // The world as it is now, not as it was when the job was queued: a follow-up's pull request may have ended meanwhile.
    const lease = await publishLease(deps, { job, ws, branch, task, signal: work.signal });
    const pushed = await pushWork(deps, {
      job,
      ws,
      branch,
      task,
      signal: work.signal,
      fence: () => fence('push'),
      lease,
    });
    if (!dodOk && deps.settings.onDodFailure === 'none') {
      throw new CodefleetError(
        'dod_failed',
        `definition of done ${dod.result}; no pull request opened (verification.on_dod_failure: none)`,
      );
    }
    if (lease.continues !== undefined) await checkStillOpen(deps, job, lease.continues, branch, work.signal);
    await fence('pull_request');
    const pr = await deps.forge.ensurePullRequest({
      repo: job.repo,
      head: branch,
      base: ws.baseBranch,
      title: shown.title,
      // Ends with the commit pushed: CI feedback tells codefleet's head from one a human moved since.
      body: `${note}\n\n${pushedMarker(pushed.sha)}`,
      draft: !dodOk,
    });
    await tracker.update((r) =>
      setPublication(
        r,
        {
          branch,
          pullRequest: { number: pr.number, url: pr.url, head: branch, base: ws!.baseBranch, draft: pr.draft },
        },
        { now: now() },
      ),
    );
    await tracker.update((r) => finish(r, outcome, { now: now(), dodResult: dod.result }));
    await tell({
      kind: 'finished',
      job,
      run: tracker.run,
      pullRequest: { number: pr.number, url: pr.url, draft: pr.draft },
    });
    ctx.onProgress?.({ stage: 'done' });
    return { action: 'ack', run: tracker.run };
  } catch (err) {
    failed = true;
    const cancel = cancelOf(err) ?? (ctx.signal.aborted ? cancelOf(ctx.signal.reason) : undefined);
    if (cancel) {
      await tracker.update((r) => finish(r, 'cancelled', { now: now(), note: `cancelled by @${cancel}` }));
      await tell({ kind: 'cancelled', job, run: tracker.run, by: cancel });
      deps.log.info({ event: 'job.cancelled', job_id: job.id, by: cancel }, 'cancelled on request');
      return { action: 'ack', run: tracker.run };
    }
    if ((err as { code?: unknown }).code === 'lease_lost') {
      // Another worker owns the task: its record and its writes win, this one stops here.
      deps.log.warn({ event: 'publish.fenced', job_id: job.id, attempt: ctx.attempt }, (err as Error).message);
      return { action: 'release', run: tracker.run };
    }
    if (ctx.signal.aborted) {
      await tracker.update((r) =>
        endAttempt(advance(r, 'retry_wait', { now: now(), note: 'stopped from outside' }), {
          now: now(),
          outcome: 'abandoned',
        }),
      );
      return { action: 'release', run: tracker.run };
    }
    const error = budget.signal.aborted
      ? classify(
          new CodefleetError(
            'budget_exceeded',
            `the job ran past its wall-clock budget of ${Math.round((budgetMs ?? 0) / 1000)} s (worker.job_budget_seconds)`,
            { verdict: 'permanent' },
          ),
        )
      : classify(err);
    return await settleFailure(deps, ctx, tracker, error, tell);
  } finally {
    clearTimeout(budgetTimer);
    await ws
      ?.release({ keep: failed && deps.settings.keepFailed })
      .catch((err: unknown) =>
        deps.log.warn({ err, event: 'workspace.release_failed', job_id: job.id }, 'could not release the working copy'),
      );
  }
}

// Why each check that ran on nothing could not run: the line of its output that says so
// (repository output: one line, bounded, and escaped where the note is rendered).
function whyUnchecked(steps: readonly StepResult[]): string {
  return steps
    .map((step) => `${step.name}: ${(step.unverifiableReason ?? 'no output').replace(/\s+/g, ' ').slice(0, 200)}`)
    .join('; ');
}

// One agent, no chain: pass 1 then pass 2.
async function runPasses(input: PassInput, enter: Enter): Promise<PassResult> {
  await enter('implementing');
  await runPass(input, 'implement');
  await enter('testing');
  return runPass(input, 'test');
}

async function settleFailure(
  deps: PipelineDeps,
  ctx: JobContext,
  tracker: RunTracker,
  error: Classified,
  tell: JobReporter['tell'],
): Promise<JobResult> {
  const now = deps.now ?? (() => new Date());
  const mask = (text: string) => maskSecrets(text, deps.settings.secrets);
  const { job } = ctx;
  const decision =
    ctx.attempt >= deps.settings.maxAttempts
      ? {
          action: 'give_up' as const,
          reason: `${error.message} (attempts exhausted: ${ctx.attempt} of ${deps.settings.maxAttempts})`,
        }
      : decideOuter(deps.settings.outer, { attemptsMade: ctx.attempt, error }, deps.random ?? Math.random);
  deps.log.warn(
    {
      event: 'job.attempt_failed',
      job_id: job.id,
      code: error.code,
      verdict: error.verdict,
      attempt: ctx.attempt,
      decision: decision.action,
    },
    error.message,
  );
  if (decision.action === 'retry') {
    await tracker.update((r) =>
      endAttempt(advance(r, 'retry_wait', { now: now() }), { now: now(), outcome: 'retrying', error }),
    );
    return {
      action: 'retry',
      delayMs: decision.delayMs,
      reason: mask(`${error.code}: ${error.message}`),
      run: tracker.run,
    };
  }
  const outcome = error.code === 'no_changes' ? 'no_changes' : error.code === 'dod_failed' ? 'dod_failed' : 'failed';
  await tracker.update((r) => finish(r, outcome, { now: now(), error }));
  await tell({ kind: 'failed', job, run: tracker.run, error, reason: mask(decision.reason) });
  return { action: 'dead_letter', reason: mask(`${error.code}: ${decision.reason}`), run: tracker.run };
}

/**
 * A worker paused past its lease (or cut off) must not publish: each write asks the shared
 * store first. A refusal is recorded there and ends this delivery untouched.
 */
async function fenceFor(
  deps: PipelineDeps,
  ctx: JobContext,
  action: 'push' | 'pull_request' | 'comment',
): Promise<void> {
  const { job } = ctx;
  if (ctx.leaseToken === undefined) return;
  if (!(await deps.store.fence(job.idempotency_key, ctx.leaseToken, action, job.id))) {
    throw new LeaseLostError(
      job.id,
      `lease on task ${job.idempotency_key} was lost before the ${action} write; another worker owns it now`,
    );
  }
}

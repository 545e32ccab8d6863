import { createPatchAgent, type Agent } from '@codefleet/agents';
import { setPublication, type Job } from '@codefleet/core';
import { taskTrailerValue } from '@codefleet/forge';
import { maskForPublishing } from '@codefleet/log';
import { branchName } from '@codefleet/workspace';
import type { PipelineDeps, PipelineSettings } from './deps.js';
import { chainOf, type Chain } from './escalation.js';
import { readMemoryBank } from './memory.js';
import { defaultMemoryChars } from './memory-summary.js';
import { acceptanceCriteria, agentInstructions, taskFile } from './plan.js';
import { publishLease } from './published-branch.js';
import type { Prepared, RunningJob } from './running-job.js';
import { jobRunners, sandboxObservers } from './sandboxed.js';

/**
 * The preparing stage: the job's agents (all of a chain's tiers built now, so a tier that
 * cannot be built fails the job before any work, not after the first tier's), its working
 * copy on its branch with the task file, the sandbox bound to it, and the base commit's
 * memory bank. A change job's branch is recorded and, for a follow-up, checked: one whose
 * pull request ended, or whose branch someone else took, since it was queued stops before
 * the agent runs (publishing looks again).
 */
export async function prepareJob(running: RunningJob): Promise<Prepared> {
  await running.enter('preparing');
  const { deps, ctx, tracker, now } = running;
  const { job } = ctx;
  await running.tell({ kind: 'started', job, attempt: ctx.attempt });
  const chain = chainOf(job, deps.settings);
  const agents = agentsOf(job, chain, deps);
  const criteria = acceptanceCriteria(job);
  const scope = scopeOf(deps.settings);
  const context: Record<string, string> = { '.codefleet/task.md': taskFile(job, criteria, scope) };
  for (const each of agents) if (each.contextFile) context[each.contextFile] = agentInstructions();
  // From the title as it may be published: a secret in it (plain or encoded) never reaches
  // the branch, not even as the part of it a slug keeps.
  const branch = branchName({ ...job, title: maskForPublishing(job.title, deps.settings.secrets) });
  const ws = await deps.workspaces.prepare({
    jobId: job.id,
    repoUrl: deps.forge.remoteUrl(job.repo),
    branch,
    scope,
    context,
    signal: ctx.signal,
    ...(job.base_branch === undefined ? {} : { baseBranch: job.base_branch }),
    ...(job.base_commit === undefined ? {} : { baseCommit: job.base_commit }),
  });
  running.ws = ws;
  const runners = jobRunners(deps.sandbox, ws, {
    protectWorkflows: deps.settings.protectWorkflows ?? true,
    ...sandboxObservers(deps, job, tracker),
  });
  const memory = await memoryOf(deps, job, ws);
  if (job.mode !== 'answer') {
    await tracker.update((r) => setPublication(r, { branch }, { now: now() }));
    await publishLease(deps, { job, ws, branch, task: taskTrailerValue(job.idempotency_key), signal: ctx.signal });
  }
  return { chain, agents, criteria, branch, ws, runners, memory };
}

// A job that carries a patch (from a chat coder) is applied by the patch engine, no model;
// otherwise an agent per tier of its chain, or its one agent.
function agentsOf(job: Job, chain: Chain | undefined, deps: PipelineDeps): Agent[] {
  if (job.patch !== undefined) {
    const policy = deps.settings.patchPolicy;
    return [createPatchAgent(job.patch, policy === undefined ? {} : { policy })];
  }
  return (chain?.tiers ?? [job.agent ?? deps.settings.defaultAgent]).map((name) => deps.agentFor(name));
}

// Workflow files stay out of the commit even when the sandbox cannot mount them read-only
// (a new file in a directory that did not exist, or no sandbox at all).
function scopeOf(settings: PipelineSettings): { exclude: string[]; read: string[] } {
  const configured = settings.scope ?? { exclude: [], read: [] };
  if (settings.protectWorkflows === false) return configured;
  return { ...configured, read: [...configured.read, '.github/workflows/**', '.github/actions/**'] };
}

// The base commit's memory bank: what the repository holds, not what an earlier attempt wrote.
async function memoryOf(deps: PipelineDeps, job: Job, ws: Prepared['ws']): Promise<string> {
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
  return memory.text;
}

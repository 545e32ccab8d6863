import type { Agent } from '@codefleet/agents';
import { CodefleetError, endTier, setChain, startTier, type Job, type RunRecord } from '@codefleet/core';
import type { Enter, PipelineSettings } from './deps.js';
import { runPass, type PassInput, type PassResult } from './passes.js';

// Local first, escalate on failure. A job on a chain runs the two passes with its first
// tier's agent; when that tier exhausts its fix attempts, or spends its own budget, the next
// tier runs the two passes again:
// - from the base: the copy is reset to where the job started (Workspace.resetToStart), so a
//   stronger model does not inherit a weaker one's half-broken tree, and what is published
//   is one tier's work, verified as a whole;
// - with the earlier tier's last feedback (the error that ended it, at most 2000 characters,
//   as its TierRecord keeps it) in its first prompt, so it need not rediscover the problem.
// Any other failure (a timeout, a crash, the job's own budget) ends the tier as `error` and
// goes to the outer retry as before; a retried delivery resumes at the tier it was on.

/** An escalation chain as a job runs it: its name and its tiers (profile or agent names), in order. */
export interface Chain {
  name: string;
  tiers: readonly string[];
}

/**
 * The chain `job` runs, or undefined when it runs a single agent: the chain the job names,
 * else `escalation` (agents.escalation) when the job names no agent and it has tiers. A job
 * with a patch runs no agent at all.
 *
 * @throws {CodefleetError} `invalid_config` (permanent) when the job names `escalation` and
 *   agents.escalation is empty.
 */
export function chainOf(
  job: Pick<Job, 'agent' | 'patch'>,
  settings: Pick<PipelineSettings, 'chains'>,
): Chain | undefined {
  if (job.patch !== undefined) return undefined;
  const chains = settings.chains ?? {};
  const name = job.agent ?? ((chains.escalation?.length ?? 0) > 0 ? 'escalation' : undefined);
  if (name === undefined || !Object.hasOwn(chains, name)) return undefined;
  const tiers = chains[name] ?? [];
  if (tiers.length === 0) {
    throw new CodefleetError(
      'invalid_config',
      `the job names the escalation chain "${name}", which has no tiers (agents.escalation is empty)`,
      { verdict: 'permanent' },
    );
  }
  return { name, tiers };
}

/** True for the failures that hand the job to the next tier: fix attempts exhausted, or the tier's own budget spent. */
export function endsTier(error: unknown): boolean {
  const { code, details } = error as { code?: unknown; details?: { scope?: unknown } };
  return code === 'fix_attempts_exhausted' || (code === 'budget_exceeded' && details?.scope === 'tier');
}

/**
 * The tier a delivery starts at: 0 on a fresh run; on a retried one the tier it was on (read
 * from `run.tiers`: the open one, or one that stopped on an error), or the next one when the
 * delivery died right after its tier gave up. A run recorded under another chain (the config
 * changed in between) starts over.
 */
export function resumeAt(run: Pick<RunRecord, 'tiers' | 'chain'>, chain: Chain): number {
  const same = run.chain?.name === chain.name && run.chain.tiers.join('\n') === chain.tiers.join('\n');
  const last = same ? run.tiers?.at(-1) : undefined;
  if (last === undefined) return 0;
  const gaveUp = last.outcome === 'failed' || last.outcome === 'budget_exceeded';
  return Math.min(gaveUp ? last.tier + 1 : last.tier, chain.tiers.length - 1);
}

/**
 * The implementing and testing stages on a chain: the two passes tier by tier (see the top
 * of this file), each tier entering `implementing` as it starts. Resolves what the passing
 * tier's test pass ended with. `agents` are the chain's agents, built by the caller in tier
 * order. The last tier's failure is the job's, its message saying that every tier was tried.
 */
export async function runChain(
  input: PassInput,
  chain: Chain,
  agents: readonly Agent[],
  enter: Enter,
): Promise<PassResult> {
  const { deps, ctx, tracker, ws } = input;
  const now = () => (deps.now ?? (() => new Date()))();
  const first = resumeAt(tracker.run, chain);
  await tracker.update((r) => setChain(r, chain, { now: now() }));
  for (let index = first; index < chain.tiers.length; index += 1) {
    const name = chain.tiers[index] ?? '';
    const agent = agents[index];
    if (agent === undefined)
      throw new CodefleetError(
        'invalid_config',
        `no agent built for tier ${index + 1} (${name}) of chain ${chain.name}`,
        { verdict: 'permanent' },
      );
    const settings = deps.settings.tiers?.[name] ?? { agent: agent.name };
    const label = tierLabel(chain, index);
    if (index > first) {
      await ws.resetToStart();
      const note = `${label} takes over from the base`;
      // Back to pass 1; a tier that gave up in pass 1 leaves the run there already.
      if (tracker.run.stage !== 'implementing') await enter('implementing', note);
      deps.log.info(
        { event: 'escalation.next_tier', job_id: ctx.job.id, tier: index, profile: name, agent: settings.agent },
        note,
      );
    }
    await tracker.update((r) =>
      startTier(
        r,
        {
          tier: index,
          profile: name,
          agent: settings.agent,
          ...(settings.model === undefined ? {} : { model: settings.model }),
        },
        { now: now() },
      ),
    );
    const earlier = index > 0 ? tracker.run.tiers?.find((t) => t.tier === index - 1)?.detail : undefined;
    const tierInput: PassInput = {
      ...input,
      agent,
      earlierTier: earlier,
      budget: { tier: index, ...(settings.budgetUsd === undefined ? {} : { tierUsd: settings.budgetUsd }) },
    };
    try {
      if (tracker.run.stage !== 'implementing')
        await enter('implementing', index === first && index > 0 ? `${label} (resumed)` : undefined);
      await runPass(tierInput, 'implement');
      await enter('testing');
      const tested = await runPass(tierInput, 'test');
      await tracker.update((r) => endTier(r, index, { now: now(), outcome: 'succeeded' }));
      return tested;
    } catch (error) {
      await tierFailed(input, chain, index, error);
    }
  }
  // Reached only when resumeAt points past a chain whose every tier gave up.
  throw new CodefleetError('fix_attempts_exhausted', `every tier of the escalation chain ${chain.name} gave up`);
}

/**
 * A tier's failure: recorded on the tier, then rethrown unless it hands the job to the next
 * tier (see {@link endsTier}); the last tier's is the job's, saying the chain is used up.
 */
async function tierFailed(input: PassInput, chain: Chain, index: number, error: unknown): Promise<void> {
  const { deps, ctx, tracker } = input;
  const now = () => (deps.now ?? (() => new Date()))();
  // A lost lease or a stop from outside: this worker writes nothing more; the tier stays open for the retry.
  if (ctx.signal.aborted || (error as { code?: unknown }).code === 'lease_lost') throw error;
  const message = (error as Error).message;
  const escalate = endsTier(error);
  const outcome = !escalate
    ? 'error'
    : (error as { code?: unknown }).code === 'budget_exceeded'
      ? 'budget_exceeded'
      : 'failed';
  await tracker.update((r) => endTier(r, index, { now: now(), outcome, detail: message }));
  if (!escalate) throw error;
  if (index === chain.tiers.length - 1) throw lastTierFailed(error, chain);
  deps.log.warn(
    {
      event: 'escalation.tier_failed',
      job_id: ctx.job.id,
      tier: index,
      profile: chain.tiers[index] ?? '',
      code: (error as { code?: unknown }).code,
    },
    `${tierLabel(chain, index)} gave up`,
  );
}

function tierLabel(chain: Chain, index: number): string {
  return `tier ${index + 1} of ${chain.tiers.length}: ${chain.tiers[index] ?? ''}`;
}

// The job's error: the last tier's, saying the chain is used up.
function lastTierFailed(error: unknown, chain: Chain): CodefleetError {
  const { code, verdict, details, message } = error as CodefleetError;
  return new CodefleetError(
    code,
    `every tier of the escalation chain ${chain.name} (${chain.tiers.join(' → ')}) gave up; the last: ${message}`,
    {
      verdict,
      ...(details === undefined ? {} : { details }),
      cause: error,
    },
  );
}

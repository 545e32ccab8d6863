import { createHash } from 'node:crypto';
import { createJob, type Job } from '@codefleet/core';
import type { Instance, Suite } from './task.js';

/**
 * A configuration under evaluation. `oracle` runs the instance's own fix (the gold patch: a
 * suite whose oracle is not resolved is broken); `empty` an empty patch (an agent that does
 * nothing: it must not be resolved); `agent` a configured agent, profile or escalation chain
 * by name, as a job's `agent` names it.
 */
export type EvalConfig = { name: string; kind: 'oracle' | 'empty' } | { name: string; kind: 'agent'; agent: string };

const configName = /^[a-z0-9_.-]{1,64}$/;

/**
 * Reads `--config`: `oracle`, `empty`, an agent's name (`claude`), or `<name>=<agent>` to name
 * the configuration apart from what it runs (`sonnet=claude-sonnet`, a profile).
 * @throws Error naming what is wrong.
 */
export function parseEvalConfig(spec: string): EvalConfig {
  const [name = '', agent] = spec.includes('=') ? spec.split('=', 2) : [spec, undefined];
  if (!configName.test(name)) throw new Error(`configuration "${spec}": a name is 1..64 of a-z 0-9 _ . -`);
  if (agent === undefined && (name === 'oracle' || name === 'empty')) return { name, kind: name };
  const runs = agent ?? name;
  if (!/^[a-z0-9_-]{1,64}$/.test(runs)) throw new Error(`configuration "${spec}": "${runs}" is no agent name`);
  return { name, kind: 'agent', agent: runs };
}

/** One run of an evaluation: an instance under a configuration, the n-th time. */
export interface EvalTask {
  instance: Instance;
  config: EvalConfig;
  trial: number;
}

/** The tasks of a suite, instance by instance, in suite order. */
export function evalTasks(
  suite: Suite,
  configs: readonly EvalConfig[],
  options: { trials: number; split?: Instance['split'] | 'all'; only?: ReadonlySet<string> },
): EvalTask[] {
  const split = options.split ?? 'dev';
  return suite.instances
    .filter((instance) => split === 'all' || instance.split === split)
    .filter((instance) => options.only === undefined || options.only.has(instance.instance_id))
    .flatMap((instance) =>
      configs.flatMap((config) =>
        Array.from({ length: options.trials }, (_, i) => ({ instance, config, trial: i + 1 })),
      ),
    );
}

/**
 * The job id of a task: the same for the same suite, instance, configuration and trial, so a
 * run of the suite again finds the earlier one's record and does not run it twice.
 */
export function evalJobId(digest: string, task: Pick<EvalTask, 'instance' | 'config' | 'trial'>): string {
  const key = JSON.stringify([digest, task.instance.instance_id, task.config.name, task.trial]);
  return `eval-${digest.slice(0, 12)}-${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}

/** The statement's first line, as a job title is (at most 256 characters). */
function titleOf(instance: Instance): string {
  const first = instance.problem_statement.split('\n').find((line) => line.trim() !== '') ?? instance.instance_id;
  return first.trim().slice(0, 256);
}

/**
 * The job of a task: pinned to the instance's base commit, graded by its tests (the named
 * ones: every test the suite expects to pass, flaky ones left out; none named, the whole
 * test step), at low priority so an evaluation never starves real work.
 */
export function evalJob(
  digest: string,
  task: EvalTask,
  options: { now: Date; requestedBy: string; repo?: string },
): Job {
  const { instance, config, trial } = task;
  const named = [...instance.FAIL_TO_PASS, ...instance.NEW_TO_PASS, ...instance.PASS_TO_PASS].filter(
    (name) => !instance.flaky_excluded.includes(name),
  );
  return createJob(
    {
      id: evalJobId(digest, task),
      repo: options.repo ?? instance.repo,
      base_commit: instance.base_commit,
      source: { kind: 'eval', suite: digest, instance: instance.instance_id, config: config.name, trial },
      title: titleOf(instance),
      body: instance.problem_statement,
      type: 'bug',
      priority: 'low',
      requested_by: options.requestedBy,
      hidden_tests: { patch: instance.test_patch, ...(named.length === 0 ? {} : { tests: named }) },
      ...(config.kind === 'oracle' ? { patch: instance.patch } : {}),
      ...(config.kind === 'empty' ? { patch: '' } : {}),
      ...(config.kind === 'agent' ? { agent: config.agent } : {}),
    },
    { id: evalJobId(digest, task), now: options.now },
  );
}

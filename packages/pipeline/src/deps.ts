import type { Agent, PatchPolicy, PriceTable } from '@codefleet/agents';
import type { VerificationConfig } from '@codefleet/config';
import type { Job, OuterPolicy, Pass, Stage } from '@codefleet/core';
import type { Forge } from '@codefleet/forge';
import type { Requester } from '@codefleet/requester';
import type { Logger, SecretSource } from '@codefleet/log';
import type { Sandbox } from '@codefleet/sandbox';
import type { RunStore } from '@codefleet/store';
import type { WorkspaceManager } from '@codefleet/workspace';

/** What the pipeline needs to know, derived once from the config by the worker. */
export interface PipelineSettings {
  defaultAgent: string;
  agentTimeoutMs: number;
  /** Inner attempts per pass (default 3). */
  maxFixAttempts: number;
  /** Deliveries per job (1 + worker.max_retries); the last one never schedules a retry. */
  maxAttempts: number;
  outer: OuterPolicy;
  verification: VerificationConfig;
  stepTimeoutMs: number;
  onDodFailure: 'draft' | 'none';
  /** The allowlisted environment an agent runs with (its own API key at most, never a forge token). */
  agentEnv(agent: Agent): Record<string, string>;
  /** The environment of verification commands; no forge token either. */
  verifyEnv: Record<string, string>;
  /**
   * What else shapes check results on this host (the sandbox's settings): part of a
   * verification baseline's cache key, so changing it verifies the base again.
   */
  environmentKey?: string;
  commitAuthor: { name: string; email: string };
  /** Optional commit subject prefix (e.g. `[Worker Auto-Commit]`). */
  commitPrefix?: string;
  keepFailed: boolean;
  /** Wall-clock budget of a job across its attempts (worker.job_budget_seconds); unset: none. */
  jobBudgetMs?: number;
  /** How long a final report may take before it is journaled undelivered; default the requester's. */
  reportDeadlineMs?: number;
  scope?: { exclude: string[]; read: string[] };
  /**
   * Secret values (config's collected secrets: API keys, tokens) masked in everything a
   * run writes out, as the logger masks logs: run records (agent and check output, errors),
   * PR bodies, comments and dead-letter reasons. Known token shapes are masked regardless.
   */
  secrets?: SecretSource;
  /** config.yaml's `patch:` safeguards for jobs that carry a patch; default: the engine's. */
  patchPolicy?: PatchPolicy;
  /**
   * Workflow files (`.github/workflows/**`) are read-only for agents and left out of the
   * commit (default true): on the forge they run with the repository's secrets.
   */
  protectWorkflows?: boolean;
  /** The git binary the worker resolved at start, for agents' own listings; default `git`. */
  gitPath?: string;
  /**
   * Escalation chains by name, each a list of profile or agent names tried in order:
   * `escalation` (agents.escalation) and agents.chains. A job that names a chain runs it; a
   * job that names no agent runs `escalation` when it has tiers. Unset: no chains.
   */
  chains?: Readonly<Record<string, readonly string[]>>;
  /** What each profile or agent name of a chain runs (for the record and the PR body) and its money limit as a tier. */
  tiers?: Readonly<Record<string, TierSettings>>;
  /** Prices per model (config `costs.prices`): a run's tokens in dollars when the agent does not say its cost. */
  prices?: PriceTable;
  /**
   * Money budgets in US dollars (config `costs.budget_usd`): most one job may spend (`job`),
   * most the fleet may spend in one UTC day (`day`, summed in the run store's ledger).
   */
  budgetUsd?: { job?: number | undefined; day?: number | undefined };
  /**
   * Bound on the memory bank section of each prompt (`workspace.memory_chars`); 0 leaves
   * it out. Default `defaultMemoryChars` (4000).
   */
  memoryChars?: number;
}

/** One tier name of a chain, as the config defines it. */
export interface TierSettings {
  /** The agent it runs (`ollama`, `claude`, …). */
  agent: string;
  /** Its model, when the config names one (the profile's, else the agent's). */
  model?: string;
  /** Most one job may spend on it as a tier, in US dollars (`profiles.<name>.budget_usd`). */
  budgetUsd?: number;
}

/** Everything the pipeline talks to, passed in (no singletons). */
export interface PipelineDeps {
  workspaces: WorkspaceManager;
  /** Where every agent run and repository command of a job runs. */
  sandbox: Sandbox;
  /** Where branches and pull requests go. */
  forge: Forge;
  /** Where the job's progress and outcome are reported: the issue, the chat thread, a callback. */
  requester: Requester;
  agentFor(name: string): Agent;
  store: RunStore;
  log: Logger;
  settings: PipelineSettings;
  now?: () => Date;
  random?: () => number;
}

/** One delivery of a job to this worker. */
export interface JobContext {
  job: Job;
  /** 1-based delivery count from the queue lease. */
  attempt: number;
  workerId: string;
  /** Aborted when the lease is lost or the worker shuts down. */
  signal: AbortSignal;
  /**
   * The token of this delivery's task lease in the run store. When set, every publishing
   * write (push, pull request, status comment) is fenced: it happens only while the store
   * says this token still owns the task; otherwise the write is refused and recorded.
   */
  leaseToken?: string;
  /** Progress for a terminal UI: stage changes and inner attempts. */
  onProgress?: (progress: { stage: Stage; pass?: Pass; innerAttempt?: number }) => void;
  /**
   * The output of the running agent (`source` = `agent`) or check (`source` = the step:
   * `install`, `build`, `format`, `lint`, `test`, `dod`) as it arrives, for live progress.
   * Attacker data: whoever shows it must sanitize it.
   */
  onOutput?: (source: string, chunk: string) => void;
}

/** How a stage is entered (startRun's `enter`): the cancel check, the record, the progress report. */
export type Enter = (stage: Stage, note?: string) => Promise<void>;

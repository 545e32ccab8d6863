import type { Pass } from '@codefleet/core';
import type { ProcessRunner } from '@codefleet/process';

/** The conventions file an agent reads on its own; the workspace writes it, never commits it. */
export type ContextFile = 'CLAUDE.md' | 'AGENTS.md' | 'CONVENTIONS.md' | 'GEMINI.md';

/** One run of a coding agent in a prepared working copy. */
export interface AgentRunRequest {
  /** Root of the working copy (a git work tree); the agent runs with it as cwd. */
  workdir: string;
  /** The full instructions for this run (task, acceptance criteria, pass). */
  prompt: string;
  pass: Pass;
  /** Inner (fix) attempt within the pass, from 1. */
  attempt: number;
  /** Trimmed failure feedback from the previous attempt; absent on the first one. */
  feedback?: string;
  /** Aborting stops the agent and its whole process tree (lease lost, shutdown). */
  signal?: AbortSignal;
  /** Wall-clock limit of the run; the process tree is killed when it passes. */
  timeoutMs: number;
  /**
   * The complete environment of the agent, already allowlisted by {@link buildAgentEnv}.
   * Nothing else is inherited; forge credentials are stripped again as a safety net.
   */
  env: Record<string, string>;
  /** Receives output as it arrives, for live logs and progress. */
  onOutput?: (chunk: string) => void;
  /**
   * Where the agent's process runs: the job's sandbox (the pipeline passes one), else plain
   * `runProcess`. Agents that run no process (the built-in one, patches) ignore it.
   */
  runner?: ProcessRunner;
  /**
   * True when `runner` isolates the run (codefleet's sandbox is bwrap, sandbox-exec or a
   * container). A CLI with a sandbox of its own (Codex) then turns that off: it cannot
   * nest one in codefleet's (no user namespaces inside, HOME under /tmp) and would fail
   * every edit. Absent or false: the CLI's own sandbox is the only one, so it stays on.
   */
  isolated?: boolean;
  /**
   * The git binary the worker resolved at start, for the listings the adapter makes itself
   * (what changed): a `git` planted later on PATH never runs. Default `git` on `env.PATH`.
   */
  gitPath?: string;
  /**
   * Model tokens this run may still spend (the job's {@link Agent.tokenBudget} minus what
   * earlier runs used); absent: no budget. Only agents that call a model read it.
   */
  tokenBudget?: number;
  /**
   * Money (US dollars) this run may still spend: the least of what is left of the job's,
   * the tier's and the fleet's day budgets. The adapter stops the agent when the run's
   * cost reaches it (the CLI's own cap where it has one, else by watching its reported
   * usage, else before each model call) and sets {@link AgentRunResult.budgetExceeded}.
   * Absent: no money budget.
   */
  budgetUsd?: number;
  /** Prices per model, to turn tokens into money where the agent does not say its cost (config `costs.prices`). */
  prices?: PriceTable;
}

/** Dollars per million tokens of one model (config `costs.prices`). */
export interface ModelPrice {
  inputPerMtok: number;
  outputPerMtok: number;
}

/**
 * Prices by model name. A key may end in `*` to match every model starting with what comes
 * before it (`qwen2.5-coder:*`); the exact name wins over a prefix, a longer prefix over a shorter.
 */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * One model call (AgentRunner): the built-in agent records each call it makes; a CLI agent
 * records one entry per model from its own run totals (`provider` is then the CLI's name).
 */
export interface ModelCall {
  /** `ollama`, `openai`, `anthropic` for the built-in agent; `claude`, `codex`, `gemini` for a CLI's totals. */
  provider: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** Wall time of the call (built-in) or of the whole run (a CLI's totals). */
  latencyMs: number;
  /** What it cost: as the CLI reported it, else tokens × the price table; absent when neither knows. */
  costUsd?: number;
  /** `ok`, or why it failed: a ModelErrorKind (`unreachable`, `unauthorized`, …), `unusable` (a reply that could not be applied), `budget`. */
  outcome: string;
}

/**
 * How a run ended, judged from the facts and never flattered:
 * - `changed`: exited 0 and the working copy differs from the start of the run;
 * - `no_changes`: exited 0 but changed nothing, which is not a success;
 * - `failed`: exited with a non-zero code (the pipeline may feed the output back);
 * - `timeout`: stopped by the timeout (exit code 124), process tree killed;
 * - `error`: never ran or ended abnormally (missing binary, killed by a signal,
 *   cancelled, working copy unreadable afterwards); `detail` says which.
 */
export type AgentOutcome = 'changed' | 'no_changes' | 'failed' | 'timeout' | 'error';

/** The facts of one agent run, shaped like the run record's `agent_runs` entries. */
export interface AgentRunResult {
  /** 124 on timeout; null when the process never started or a signal ended it. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  /** End of the combined stdout and stderr, bounded. */
  outputTail: string;
  /**
   * Paths (relative to `workdir`, sorted) that differ from HEAD as it was when the run
   * started: uncommitted edits, untracked files, and files in any commit the agent made.
   * `.codefleet/` is left out. Edits left by earlier attempts of the same job count too,
   * since the pipeline does not commit between attempts.
   */
  changedFiles: string[];
  outcome: AgentOutcome;
  /** Why, in a short sentence, for `no_changes`, `failed`, `timeout` and `error`. */
  detail?: string;
  /** Model tokens the run spent, as the server counted them; absent for agents that cannot tell. */
  tokens?: { prompt: number; completion: number };
  /**
   * Set on an `error` that no retry can fix until someone acts: the API refused the key, the
   * model does not exist, the CLI rejected its arguments. The pipeline then dead-letters
   * the job at once instead of spending its outer retries.
   */
  permanent?: boolean;
  /**
   * Set when the run stopped because its token budget (`tokenBudget`) cannot pay for
   * another model call: spent, or too little left for the prompt. The pipeline ends the job
   * as `budget_exceeded` instead of trying again with the same budget.
   */
  budgetExceeded?: boolean;
  /** The model the run used, as the agent reported it (a CLI's main model). */
  model?: string;
  /** What the run cost in US dollars: the CLI's reported cost, else tokens × `prices`; absent when unknown. */
  costUsd?: number;
  /** Every model call of the run (built-in agent), or the CLI's totals per model. */
  modelCalls?: ModelCall[];
}

/**
 * The agent port: runs one coding agent once, headless, in a prepared working copy.
 *
 * Every adapter promises:
 * - **headless**: stdin is closed (interactive CLIs hang on an open stdin), arguments are
 *   argument arrays, and task text is passed as a file or as one argument, never through
 *   a shell;
 * - **no forge token**: the process sees only `req.env`, with forge credentials removed;
 * - **nothing survives**: on timeout or abort the whole process tree is killed, and a
 *   timeout is recorded as exit code 124;
 * - **an honest outcome** (see {@link AgentOutcome}): exit 0 without changes is
 *   `no_changes`, and the result keeps the raw facts next to the verdict;
 * - `run()` resolves for anything the agent process does. It rejects only when the run
 *   cannot be set up (workdir missing or not a git work tree, bad request).
 *
 * It deliberately leaves out verification, committing, pushing and retries: the pipeline
 * owns those. Agents must not commit; if one does, its commits still count as changes.
 */
export interface Agent {
  /** The name runs are recorded under (`command`, `script`, later `aider`, `claude`, …). */
  readonly name: string;
  /** The conventions file this agent reads, for the workspace to write. */
  readonly contextFile?: ContextFile;
  /** Configured limit of one run; callers pass it as `timeoutMs` unless a job sets its own. */
  readonly timeoutMs?: number;
  /** Variables beyond the base allowlist this agent needs (its API key): `buildAgentEnv`'s `allow`. */
  readonly allowEnv?: readonly string[];
  /**
   * Model tokens (prompt + completion) one job may spend with this agent; the pipeline adds
   * up {@link AgentRunResult.tokens} and ends the job as `budget_exceeded` when another run
   * is needed and nothing is left. Unset: no budget.
   */
  readonly tokenBudget?: number;
  /**
   * The model the config names for this agent (its section's or its profile's `model`):
   * what the pipeline prices a run's tokens at when the run does not say which model it
   * used. Unset: the agent's own default, unknown here.
   */
  readonly model?: string;
  run(req: AgentRunRequest): Promise<AgentRunResult>;
}

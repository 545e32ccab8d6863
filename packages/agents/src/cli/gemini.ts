import { formatUsd } from '@codefleet/core';
import type { OutcomeVerdict } from '../outcome.js';
import { createProcessAgent, type ProcessAgentSpec } from '../process-agent.js';
import type { Agent, AgentRunRequest, AgentRunResult } from '../port.js';
import { budgetSpent, writeGeminiHome } from './gemini-home.js';
import { geminiUsage, type GeminiUsage } from './gemini-usage.js';
import {
  apiErrorVerdict,
  capVerdict,
  type CliAgentSettings,
  cliSpecBase,
  endedOnItsOwn,
  firstMatchingLine,
  lastJsonObject,
  promptArgument,
} from './shared.js';

/** Options of the Gemini CLI adapter: `agents.gemini` of the config. */
export interface GeminiAgentOptions extends CliAgentSettings {
  /** How the CLI may act without asking; default `--approval-mode yolo --skip-trust`. */
  approvalArgs?: readonly string[] | undefined;
  /**
   * Model turns one run may take (`model.maxSessionTurns`; the CLI has no flag for it).
   * Set, or a money budget in the request: the run gets its own `GEMINI_CLI_HOME` holding
   * the settings codefleet writes (see `writeGeminiHome`).
   */
  maxTurns?: number | undefined;
}

// Headless exit codes besides 0 and 1: 41 auth, 42 input, 52 config, 53 turn limit.
// An API error exits with its HTTP status modulo 256 (400 → 144, 500 → 244).
const authExit = 41;
const inputErrorExit = 42;
const configExit = 52;
const turnLimitExit = 53;
const apiErrorPatterns = [/^\[API Error\b/, /^Error when talking to Gemini API/i];

/**
 * The Gemini CLI adapter: `gemini --prompt=<task>` (headless: one prompt, then exit) with
 * `--approval-mode yolo`, which current releases prefer to the deprecated `-y`/`--yolo`
 * (the two together are an error), and `--skip-trust`: where folder trust is enabled a new
 * working copy is untrusted, and an untrusted folder silently falls back to asking for
 * approval, which headless means no edits. `--output-format json` prints one object at
 * the end, with `error` when the run failed and `stats.models` (tokens per model) either
 * way: they become the result's tokens, model, model calls and cost (tokens × `prices`).
 * `--prompt=` keeps a task starting with `-` from reading as an option. A CLI too old for
 * these flags takes `agents.gemini.approval_args: [-y]`. Checked against 0.61.0.
 *
 * A money budget (`req.budgetUsd`) is enforced while the CLI runs by an AfterModel hook in
 * the run's own home (0.61.0 prints usage nowhere before its final object, `stream-json`
 * neither); the hook's count, or the final cost, reaching it sets `budgetExceeded`.
 */
export function createGeminiAgent(options: GeminiAgentOptions): Agent {
  const base = cliSpecBase('gemini', 'GEMINI.md', options);
  const spec = (onUsage: (usage: GeminiUsage | undefined) => void, req: AgentRunRequest): ProcessAgentSpec => ({
    ...base,
    // The pretty-printed JSON verdict holds the whole response: read all of it, keep the usual tail.
    interpretTailBytes: 262_144,
    argv: (request, files) => [
      options.binary,
      ...(options.approvalArgs ?? ['--approval-mode', 'yolo', '--skip-trust']),
      '--output-format',
      'json',
      ...(options.model === undefined ? [] : ['--model', options.model]),
      ...(options.extraArgs ?? []),
      `--prompt=${promptArgument(request, files)}`,
    ],
    interpret: (facts, generic) => {
      const verdict = lastJsonObject(facts.process.outputTail);
      onUsage(geminiUsage(verdict, req.prices));
      return interpretGemini(facts.process.exitCode, facts.process.outputTail, verdict, generic);
    },
  });
  return {
    name: base.name,
    ...(base.contextFile === undefined ? {} : { contextFile: base.contextFile }),
    ...(base.timeoutMs === undefined ? {} : { timeoutMs: base.timeoutMs }),
    ...(base.allowEnv === undefined ? {} : { allowEnv: [...base.allowEnv] }),
    run: async (req) => {
      // A fresh process agent per run: its `interpret` hands this run's usage to this run only.
      let usage: GeminiUsage | undefined;
      const agent = createProcessAgent(
        spec((u) => {
          usage = u;
        }, req),
      );
      const ownHome = options.maxTurns !== undefined || req.budgetUsd !== undefined;
      const home = ownHome
        ? await writeGeminiHome(req, { maxTurns: options.maxTurns, budgetUsd: req.budgetUsd, prices: req.prices })
        : undefined;
      const result = await agent.run(home === undefined ? req : { ...req, env: { ...req.env, GEMINI_CLI_HOME: home } });
      return withUsage(result, usage, req.budgetUsd, home === undefined ? undefined : await budgetSpent(home));
    },
  };
}

/** The Gemini CLI's own reading of a run that ended by itself, on top of the generic verdict. */
function interpretGemini(
  exit: number | null,
  output: string,
  verdict: Record<string, unknown> | undefined,
  generic: OutcomeVerdict,
): OutcomeVerdict | undefined {
  if (!endedOnItsOwn(generic)) return undefined;
  if (exit === turnLimitExit) return capVerdict(`Gemini CLI reached its turn limit (exit ${turnLimitExit})`);
  const error = verdict?.error;
  const message =
    typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string'
      ? (error as { message: string }).message.slice(0, 300)
      : undefined;
  if (exit === inputErrorExit)
    return {
      outcome: 'error',
      permanent: true,
      detail: `Gemini CLI refused its input (exit ${inputErrorExit}): check agents.gemini.extra_args and the CLI version`,
    };
  if (exit === authExit || exit === configExit) {
    // No retry helps: the key, the auth method or the settings must change first.
    return {
      outcome: 'error',
      permanent: true,
      detail: `Gemini CLI could not start (exit ${exit}, ${exit === authExit ? 'authentication' : 'configuration'}): ${message ?? 'see the output'}`,
    };
  }
  if (typeof error === 'object' && error !== null) {
    return apiErrorVerdict('Gemini CLI', message ?? JSON.stringify(error).slice(0, 300), generic);
  }
  const apiError = firstMatchingLine(output, apiErrorPatterns);
  return apiError === undefined ? undefined : apiErrorVerdict('Gemini CLI', apiError, generic);
}

/**
 * The result with what the CLI reported spending, and `budgetExceeded` when the budget
 * hook's count (`hookSpentUsd`, which stopped the run) or the final cost reached the money left.
 */
function withUsage(
  result: AgentRunResult,
  usage: GeminiUsage | undefined,
  budgetUsd: number | undefined,
  hookSpentUsd: number | undefined,
): AgentRunResult {
  // A run the hook stopped can lack the last response in its final stats; the router's calls
  // are in the stats but not in the hook's count: the larger is the better estimate.
  const known = [usage?.costUsd, hookSpentUsd].filter((cost): cost is number => cost !== undefined);
  const costUsd = known.length === 0 ? undefined : Math.max(...known);
  const over = budgetUsd !== undefined && costUsd !== undefined && costUsd >= budgetUsd;
  return {
    ...result,
    ...(usage?.tokens === undefined ? {} : { tokens: usage.tokens }),
    ...(usage?.model === undefined ? {} : { model: usage.model }),
    ...(costUsd === undefined ? {} : { costUsd }),
    ...(usage?.modelCalls === undefined ? {} : { modelCalls: usage.modelCalls }),
    ...(over
      ? {
          budgetExceeded: true,
          detail: `${result.detail === undefined ? '' : `${result.detail}; `}cost ${formatUsd(costUsd)} reached the budget ${formatUsd(budgetUsd)}`,
        }
      : {}),
  };
}

import { formatUsd } from '@codefleet/core';
import { changedFiles } from '../changed-files.js';
import { withoutForgeCredentials } from '../env.js';
import { createProcessAgent } from '../process-agent.js';
import type { Agent, AgentRunRequest, AgentRunResult } from '../port.js';
import { claudeReport, claudeVerdict, readClaudeResult } from './claude-result.js';
import { type CliAgentSettings, cliSpecBase, modelExtraAndPrompt } from './shared.js';

/** Options of the Claude Code adapter: `agents.claude` of the config. */
export interface ClaudeAgentOptions extends CliAgentSettings {
  /** `--max-turns`: the agentic turns one run may take. */
  maxTurns: number;
}

/**
 * Where the CLI sends its model calls (a gateway, a proxy, a test stand-in): passed through
 * from the worker's environment when set, like the API key.
 */
const passedThrough = ['ANTHROPIC_BASE_URL'];

/**
 * Set for every run: no telemetry, error reports, update checks or other calls to
 * Anthropic's servers besides the model API. A sandboxed run with a fresh HOME would
 * otherwise make them all again each time.
 */
const quiet = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };

/**
 * The Claude Code adapter: `claude -p` (print mode: one prompt, then exit) with
 * `--output-format json`, whose final result object says how the run ended (turn cap,
 * budget, API error; see {@link readClaudeResult}) and what it used and cost. Permissions are
 * skipped (`--dangerously-skip-permissions`): nobody is there to approve, and the working
 * copy is an isolated branch without a forge token. Claude Code refuses that flag to root
 * unless `IS_SANDBOX=1`; the adapter leaves that choice to the operator. `req.budgetUsd`
 * becomes `--max-budget-usd`. The prompt is the last argument, after `--`, so a task
 * starting with `-` stays text.
 */
export function createClaudeAgent(options: ClaudeAgentOptions): Agent {
  const agent = createProcessAgent({
    ...cliSpecBase('claude', 'CLAUDE.md', options, passedThrough),
    env: quiet,
    // The final JSON result holds the whole answer text: read all of it, keep the usual tail.
    interpretTailBytes: 262_144,
    argv: (req, files) => [
      options.binary,
      '-p',
      '--output-format',
      'json',
      '--dangerously-skip-permissions',
      '--max-turns',
      String(options.maxTurns),
      ...(req.budgetUsd === undefined ? [] : ['--max-budget-usd', String(req.budgetUsd)]),
      ...modelExtraAndPrompt(options, req, files),
    ],
    interpret: (facts, generic, req) =>
      claudeVerdict(facts, generic, { maxTurns: options.maxTurns, budgetUsd: req.budgetUsd }),
    report: (facts, run) => {
      const result = readClaudeResult(facts.process.outputTail);
      return result === undefined
        ? undefined
        : claudeReport(result, { durationMs: run.durationMs, prices: run.req.prices });
    },
  });
  return {
    ...agent,
    run: (req) => (req.budgetUsd !== undefined && !(req.budgetUsd > 0) ? nothingLeft(req) : agent.run(req)),
  };
}

/**
 * A run with no money left is not started: the CLI refuses `--max-budget-usd 0`, and any
 * positive amount would still pay for one model call.
 */
async function nothingLeft(req: AgentRunRequest): Promise<AgentRunResult> {
  const env = withoutForgeCredentials(req.env);
  const files = await changedFiles(req.workdir, env, { gitPath: req.gitPath }).catch(() => []);
  return {
    exitCode: null,
    signal: null,
    timedOut: false,
    durationMs: 0,
    outputTail: '',
    changedFiles: files,
    outcome: 'failed',
    detail: `Claude Code not started: no money budget left (${formatUsd(Math.max(0, req.budgetUsd ?? 0))})`,
    budgetExceeded: true,
    costUsd: 0,
    modelCalls: [],
  };
}

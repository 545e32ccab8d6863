import { createProcessAgent } from '../process-agent.js';
import type { Agent } from '../port.js';
import { apiErrorVerdict, capVerdict, type CliAgentSettings, cliSpecBase, endedOnItsOwn, firstMatchingLine, lastJsonObject, modelExtraAndPrompt } from './shared.js';

/** Options of the Claude Code adapter: `agents.claude` of the config. */
export interface ClaudeAgentOptions extends CliAgentSettings {
  /** `--max-turns`: the agentic turns one run may take. */
  maxTurns: number;
}

// Printed in text mode, or as the result text, when the API refused or failed.
const apiErrorPatterns = [/^API Error\b/, /^Invalid API key/i, /^Credit balance is too low/i];

/**
 * The Claude Code adapter: `claude -p` (print mode: one prompt, then exit) with
 * `--output-format json`, whose final result object says how the run ended —
 * `subtype: error_max_turns` when the turn cap stopped it, `is_error` when the API failed —
 * even when the exit code is 0. Permissions are skipped (`--dangerously-skip-permissions`):
 * nobody is there to approve, and the working copy is an isolated branch without a forge
 * token. The prompt is the last argument, after `--`, so a task starting with `-` stays text.
 */
export function createClaudeAgent(options: ClaudeAgentOptions): Agent {
  return createProcessAgent({
    ...cliSpecBase('claude', 'CLAUDE.md', options),
    // The final JSON result holds the whole answer text: read all of it, keep the usual tail.
    interpretTailBytes: 262_144,
    argv: (req, files) => [
      options.binary,
      '-p',
      '--output-format', 'json',
      '--dangerously-skip-permissions',
      '--max-turns', String(options.maxTurns),
      ...modelExtraAndPrompt(options, req, files),
    ],
    interpret: (facts, generic) => {
      if (!endedOnItsOwn(generic)) return undefined;
      const result = lastJsonObject(facts.process.outputTail);
      if (result?.type === 'result') {
        if (result.subtype === 'error_max_turns') {
          const turns = typeof result.num_turns === 'number' ? ` after ${result.num_turns} turns` : '';
          return capVerdict(`Claude Code reached its turn cap (--max-turns ${options.maxTurns})${turns}`);
        }
        if (result.is_error === true) {
          const text = typeof result.result === 'string' && result.result !== '' ? result.result : String(result.subtype ?? 'error');
          return apiErrorVerdict('Claude Code', text.slice(0, 300), generic);
        }
        return undefined;
      }
      const apiError = firstMatchingLine(facts.process.outputTail, apiErrorPatterns);
      return apiError === undefined ? undefined : apiErrorVerdict('Claude Code', apiError, generic);
    },
  });
}

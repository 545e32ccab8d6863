import { createProcessAgent } from '../process-agent.js';
import type { Agent } from '../port.js';
import { apiErrorVerdict, type CliAgentSettings, cliSpecBase, endedOnItsOwn, firstMatchingLine, modelExtraAndPrompt } from './shared.js';

/** Options of the Codex adapter: `agents.codex` of the config. */
export interface CodexAgentOptions extends CliAgentSettings {
  /** How `exec` may edit the working copy; default `--sandbox workspace-write`. */
  approvalArgs?: readonly string[] | undefined;
}

// `codex exec` prints failures as `ERROR: ...` lines (for example
// `ERROR: unexpected status 401 Unauthorized`) and some versions still exit 0.
// Only API-shaped ERROR lines: a plain `ERROR:` may be output of a build Codex ran.
const apiErrorPatterns = [/^ERROR: .*(?:unexpected status|stream disconnected|rate limit|quota|unauthorized|api key)/i];

/**
 * The Codex adapter: `codex exec`, the non-interactive mode, which never asks for
 * approvals. `--sandbox workspace-write` lets it edit the working copy and nothing outside
 * it. That is what the older `--full-auto` meant; current Codex documentation marks
 * `--full-auto` as a deprecated alias that prints a warning (and some releases dropped it),
 * so the explicit flag is used (`agents.codex.approval_args` puts `--full-auto` back for a
 * CLI too old to know `--sandbox`). The prompt is the last argument, after `--`.
 */
export function createCodexAgent(options: CodexAgentOptions): Agent {
  return createProcessAgent({
    ...cliSpecBase('codex', 'AGENTS.md', options),
    argv: (req, files) => [
      options.binary,
      'exec',
      ...(options.approvalArgs ?? ['--sandbox', 'workspace-write']),
      '--color', 'never',
      ...modelExtraAndPrompt(options, req, files),
    ],
    interpret: (facts, generic) => {
      if (!endedOnItsOwn(generic)) return undefined;
      const apiError = firstMatchingLine(facts.process.outputTail, apiErrorPatterns);
      return apiError === undefined ? undefined : apiErrorVerdict('Codex', apiError, generic);
    },
  });
}

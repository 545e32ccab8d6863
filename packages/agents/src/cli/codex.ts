import { createProcessAgent } from '../process-agent.js';
import type { Agent } from '../port.js';
import { codexObserver, codexTurnFailure } from './codex-events.js';
import { apiErrorVerdict, type CliAgentSettings, cliSpecBase, endedOnItsOwn, firstMatchingLine, modelExtraAndPrompt } from './shared.js';

/** Options of the Codex adapter: `agents.codex` of the config. */
export interface CodexAgentOptions extends CliAgentSettings {
  /** How `exec` may edit the working copy; default `--sandbox workspace-write`. */
  approvalArgs?: readonly string[] | undefined;
}

// Without `--json` (a CLI too old for it), `codex exec` prints failures as `ERROR: ...` lines
// (`ERROR: unexpected status 401 Unauthorized`) and some versions exit 0. Only API-shaped
// ERROR lines: a plain `ERROR:` may be output of a build Codex ran.
const apiErrorPatterns = [/^ERROR: .*(?:unexpected status|stream disconnected|rate limit|quota|unauthorized|api key)/i];

/**
 * The Codex adapter: `codex exec`, the non-interactive mode, which never asks for
 * approvals. `--sandbox workspace-write` lets it edit the working copy and nothing outside
 * it. That is what the older `--full-auto` meant; current Codex documentation marks
 * `--full-auto` as a deprecated alias that prints a warning (and some releases dropped it),
 * so the explicit flag is used (`agents.codex.approval_args` puts `--full-auto` back for a
 * CLI too old to know `--sandbox`). The prompt is the last argument, after `--`.
 *
 * `--json` makes it print its events as JSON lines (see codex-events.ts): the usage of
 * each turn, read live to stop a run at `req.budgetUsd`, and a fatal API error as a
 * `turn.failed` event (0.169.0 then exits 1, after its own retries).
 */
export function createCodexAgent(options: CodexAgentOptions): Agent {
  return createProcessAgent({
    ...cliSpecBase('codex', 'AGENTS.md', options),
    argv: (req, files) => [
      options.binary,
      'exec',
      ...(options.approvalArgs ?? ['--sandbox', 'workspace-write']),
      '--color', 'never',
      '--json',
      ...modelExtraAndPrompt(options, req, files),
    ],
    observe: (req) => codexObserver(req, options.model),
    interpret: (facts, generic) => {
      if (!endedOnItsOwn(generic)) return undefined;
      // Only Codex's own exit says a turn failed: a `turn.failed` line with exit 0 would be
      // one a command printed (Codex logs failed commands' output on stderr).
      const failed = generic.outcome === 'failed' ? codexTurnFailure(facts.process.outputTail) : undefined;
      if (failed !== undefined) return apiErrorVerdict('Codex', failed, generic);
      const apiError = firstMatchingLine(facts.process.outputTail, apiErrorPatterns);
      return apiError === undefined ? undefined : apiErrorVerdict('Codex', apiError, generic);
    },
  });
}

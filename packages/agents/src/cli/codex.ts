import { createProcessAgent } from '../process-agent.js';
import type { Agent } from '../port.js';
import { codexObserver, codexTurnFailure } from './codex-events.js';
import {
  apiErrorVerdict,
  type CliAgentSettings,
  cliSpecBase,
  endedOnItsOwn,
  firstMatchingLine,
  modelExtraAndPrompt,
} from './shared.js';

/** Options of the Codex adapter: `agents.codex` of the config. */
export interface CodexAgentOptions extends CliAgentSettings {
  /**
   * How `exec` may edit the working copy, whatever runs it. Default: `--sandbox
   * workspace-write`, or `--sandbox danger-full-access` when codefleet's sandbox isolates
   * the run (`req.isolated`).
   */
  approvalArgs?: readonly string[] | undefined;
}

// Without `--json` (a CLI too old for it), `codex exec` prints failures as `ERROR: ...` lines
// (`ERROR: unexpected status 401 Unauthorized`) and some versions exit 0. Only API-shaped
// ERROR lines: a plain `ERROR:` may be output of a build Codex ran.
const apiErrorPatterns = [/^ERROR: .*(?:unexpected status|stream disconnected|rate limit|quota|unauthorized|api key)/i];

// Codex's own sandbox failing to start, as 0.169.0 says it: no user namespaces to nest, its
// helper missing, or its refusal to create that helper under the temp dir.
const ownSandboxBroken =
  /bwrap: Creating new namespace failed[^"\\]*|bwrap: execvp codex-linux-sandbox[^"\\]*|Refusing to create helper binaries under temporary dir[^"\\]*/;

/**
 * The Codex adapter: `codex exec`, the non-interactive mode, which never asks for
 * approvals. `--sandbox workspace-write` lets it edit the working copy and nothing outside
 * it. That is what the older `--full-auto` meant; current Codex documentation marks
 * `--full-auto` as a deprecated alias that prints a warning (and some releases dropped it),
 * so the explicit flag is used (`agents.codex.approval_args` puts `--full-auto` back for a
 * CLI too old to know `--sandbox`). The prompt is the last argument, after `--`.
 *
 * Inside codefleet's own sandbox (`req.isolated`) Codex's sandbox cannot run: 0.169.0
 * builds it with bubblewrap, which finds no user namespaces to nest (codefleet's bwrap
 * disables them), and it refuses to set up its helper under the temp dir that holds the
 * run's HOME; every edit and command would fail. There `--sandbox danger-full-access`
 * leaves the isolation to codefleet's sandbox, which confines writes the same way (the
 * working copy only); the commands Codex runs then have the network `sandbox.network`
 * gives, where Codex's own sandbox would have cut it.
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
      ...(options.approvalArgs ?? ['--sandbox', req.isolated === true ? 'danger-full-access' : 'workspace-write']),
      '--color',
      'never',
      '--json',
      ...modelExtraAndPrompt(options, req, files),
    ],
    // Codex's built-in OpenAI provider reads its key from CODEX_API_KEY (or a login saved
    // in CODEX_HOME, which a fresh HOME has not); OPENAI_API_KEY it leaves to providers
    // configured with `env_key`. The configured key is given under both names.
    environment: (env) => {
      const key = options.apiKeyEnv === undefined ? undefined : env[options.apiKeyEnv];
      return key === undefined || env.CODEX_API_KEY !== undefined ? { ...env } : { ...env, CODEX_API_KEY: key };
    },
    observe: (req) => codexObserver(req, options.model),
    interpret: (facts, generic) => {
      if (!endedOnItsOwn(generic)) return undefined;
      // Every edit failed for a reason no retry fixes: say it instead of "no changes".
      const broken =
        generic.outcome === 'no_changes' ? ownSandboxBroken.exec(facts.process.outputTail)?.[0] : undefined;
      if (broken !== undefined) {
        return {
          outcome: 'error',
          permanent: true,
          detail: `Codex's own sandbox could not run here (${broken.trim().slice(0, 200)}): run it inside codefleet's sandbox (sandbox.mode), which turns Codex's off, or give it a HOME outside TMPDIR`,
        };
      }
      // Only Codex's own exit says a turn failed: a `turn.failed` line with exit 0 would be
      // one a command printed (Codex logs failed commands' output on stderr).
      const failed = generic.outcome === 'failed' ? codexTurnFailure(facts.process.outputTail) : undefined;
      if (failed !== undefined) return apiErrorVerdict('Codex', failed, generic);
      const apiError = firstMatchingLine(facts.process.outputTail, apiErrorPatterns);
      return apiError === undefined ? undefined : apiErrorVerdict('Codex', apiError, generic);
    },
  });
}

import { createProcessAgent } from '../process-agent.js';
import type { Agent } from '../port.js';
import { apiErrorVerdict, capVerdict, type CliAgentSettings, cliSpecBase, endedOnItsOwn, firstMatchingLine, lastJsonObject, promptArgument } from './shared.js';

/** Options of the Gemini CLI adapter: `agents.gemini` of the config. */
export interface GeminiAgentOptions extends CliAgentSettings {
  /** How the CLI may act without asking; default `--approval-mode yolo --skip-trust`. */
  approvalArgs?: readonly string[] | undefined;
}

// Documented headless exit codes besides 0 (success) and 1 (error or API failure).
const inputErrorExit = 42;
const turnLimitExit = 53;
const apiErrorPatterns = [/^\[API Error\b/, /^Error when talking to Gemini API/i];

/**
 * The Gemini CLI adapter: `gemini --prompt=<task>` (headless: one prompt, then exit) with
 * `--approval-mode yolo`, which current releases prefer to the deprecated `-y`/`--yolo`
 * (the two together are an error), and `--skip-trust`: where folder trust is enabled a new
 * working copy is untrusted, and an untrusted folder silently falls back to asking for
 * approval, which headless means no edits. `--output-format json` carries an `error`
 * object when the request failed; exit 53 is the turn limit, 42 an input error.
 * `--prompt=` keeps a task starting with `-` from reading as an option. A CLI too old for
 * these flags takes `agents.gemini.approval_args: [-y]`.
 */
export function createGeminiAgent(options: GeminiAgentOptions): Agent {
  return createProcessAgent({
    ...cliSpecBase('gemini', 'GEMINI.md', options),
    // The pretty-printed JSON verdict holds the whole response: read all of it, keep the usual tail.
    interpretTailBytes: 262_144,
    argv: (req, files) => [
      options.binary,
      ...(options.approvalArgs ?? ['--approval-mode', 'yolo', '--skip-trust']),
      '--output-format', 'json',
      ...(options.model === undefined ? [] : ['--model', options.model]),
      ...(options.extraArgs ?? []),
      `--prompt=${promptArgument(req, files)}`,
    ],
    interpret: (facts, generic) => {
      if (!endedOnItsOwn(generic)) return undefined;
      const exit = facts.process.exitCode;
      if (exit === turnLimitExit) return capVerdict(`Gemini CLI reached its turn limit (exit ${turnLimitExit})`);
      if (exit === inputErrorExit) return { outcome: 'error', permanent: true, detail: `Gemini CLI refused its input (exit ${inputErrorExit}): check agents.gemini.extra_args and the CLI version` };
      const error = lastJsonObject(facts.process.outputTail)?.error;
      if (typeof error === 'object' && error !== null) {
        const message = (error as { message?: unknown }).message;
        return apiErrorVerdict('Gemini CLI', typeof message === 'string' ? message.slice(0, 300) : JSON.stringify(error).slice(0, 300), generic);
      }
      const apiError = firstMatchingLine(facts.process.outputTail, apiErrorPatterns);
      return apiError === undefined ? undefined : apiErrorVerdict('Gemini CLI', apiError, generic);
    },
  });
}

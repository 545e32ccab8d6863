import { Buffer } from 'node:buffer';
import { relative } from 'node:path';
import type { OutcomeVerdict } from '../outcome.js';
import type { ProcessAgentSpec } from '../process-agent.js';
import type { AgentRunRequest, ContextFile } from '../port.js';
import type { RunFiles } from '../run-files.js';

/**
 * Largest prompt passed as one argument. Linux refuses a single argument over 128 KiB
 * (MAX_ARG_STRLEN); past this bound the agent is pointed at the prompt file instead.
 */
export const maxPromptArgumentBytes = 100_000;

/** What every CLI adapter takes from its `agents.<name>` section. */
export interface CliAgentSettings {
  /** Executable: a name looked up on the agent's PATH, or a path. */
  binary: string;
  model?: string | undefined;
  /** Per-run timeout in milliseconds, reported as the agent's `timeoutMs`. */
  timeoutMs?: number | undefined;
  /** Appended after codefleet's own options, before the prompt. */
  extraArgs?: readonly string[] | undefined;
  /** The one API key variable this agent may see; its value comes from the worker's environment. */
  apiKeyEnv?: string | undefined;
  killGraceMs?: number | undefined;
}

/**
 * The parts of a process agent's spec every CLI adapter fills the same way: its name, the
 * conventions file it reads, the configured timeout and kill grace, and the environment
 * it may see beyond the base allowlist (its API key, plus `extraEnv`).
 */
export function cliSpecBase(
  name: string,
  contextFile: ContextFile,
  options: CliAgentSettings,
  extraEnv: readonly string[] = [],
): Pick<ProcessAgentSpec, 'name' | 'contextFile' | 'timeoutMs' | 'killGraceMs' | 'allowEnv'> {
  const allowEnv = [...extraEnv, ...(options.apiKeyEnv === undefined ? [] : [options.apiKeyEnv])];
  return {
    name,
    contextFile,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.killGraceMs === undefined ? {} : { killGraceMs: options.killGraceMs }),
    ...(allowEnv.length === 0 ? {} : { allowEnv }),
  };
}

/**
 * The prompt as one argument: verbatim when it fits, else a short instruction naming the
 * prompt file (relative to the working copy, which is the agent's cwd) so nothing is cut.
 */
export function promptArgument(req: Pick<AgentRunRequest, 'prompt' | 'workdir'>, files: RunFiles): string {
  if (Buffer.byteLength(req.prompt, 'utf8') <= maxPromptArgumentBytes) return req.prompt;
  return `The task is too long for the command line. Read it in ${relative(req.workdir, files.promptFile)} and do what it says.`;
}

/**
 * Lines at the end of an output tail where a tool's own final error appears. Looking only
 * there keeps an error the model quoted or a build the agent ran (which print such lines
 * too) from passing for the tool's fatal error.
 */
const finalLines = 30;

/** The first of the last output lines matching one of `patterns` (anchored to what the tool prints), trimmed and bounded. */
export function firstMatchingLine(text: string, patterns: readonly RegExp[]): string | undefined {
  for (const line of text.trimEnd().split('\n').slice(-finalLines)) {
    if (patterns.some((pattern) => pattern.test(line))) return line.trim().slice(0, 300);
  }
  return undefined;
}

/**
 * The last JSON object in an output tail: one line (`--output-format json` of Claude
 * Code) or pretty-printed over several lines (Gemini CLI), possibly with stderr lines
 * around it. Undefined when there is none.
 */
export function lastJsonObject(text: string): Record<string, unknown> | undefined {
  const lines = text.split('\n');
  const starts = lines
    .flatMap((line, i) => (line.startsWith('{') ? [i] : []))
    .reverse()
    .slice(0, 20);
  for (const start of starts) {
    for (let end = lines.length; end > start; end -= 1) {
      const last = lines[end - 1]?.trimEnd() ?? '';
      if (!last.endsWith('}')) continue;
      try {
        const value: unknown = JSON.parse(lines.slice(start, end).join('\n'));
        if (typeof value === 'object' && value !== null && !Array.isArray(value))
          return value as Record<string, unknown>;
      } catch {
        // Not this span; try a shorter one.
      }
    }
  }
  return undefined;
}

/**
 * A CLI that printed a fatal API error ran nothing useful, whatever its exit code says:
 * `error`, which the pipeline retries later, rather than `failed`, which it would feed
 * back to a model that never answered. Edits made before the error still stand, so a run
 * that changed files keeps `changed` and only gains the detail.
 */
export function apiErrorVerdict(tool: string, message: string, generic: OutcomeVerdict): OutcomeVerdict {
  const detail = `${tool} reported an API error: ${message}`;
  if (generic.outcome === 'changed') return { outcome: 'changed', detail };
  // A refused key fails the same way on every retry: the job waits in the dead letters.
  return authFailure.test(message) ? { outcome: 'error', detail, permanent: true } : { outcome: 'error', detail };
}

const authFailure =
  /\b40[13]\b|unauthori[sz]ed|authentication|invalid[\s\w-]{0,20}api[\s_-]?key|api key not valid|permission denied/i;

/** A turn or iteration cap ends the run unfinished: `failed`, so the next attempt continues it. */
export function capVerdict(detail: string): OutcomeVerdict {
  return { outcome: 'failed', detail };
}

/**
 * Whether an adapter may read more into a verdict: only for runs that ended by themselves.
 * A timeout, a cancel, a signal or a start failure says all there is to say.
 */
export function endedOnItsOwn(generic: OutcomeVerdict): boolean {
  return generic.outcome === 'changed' || generic.outcome === 'no_changes' || generic.outcome === 'failed';
}

/** The end of a CLI's argv: `--model <model>` when set, the extra args, then `--` and the prompt. */
export function modelExtraAndPrompt(
  options: CliAgentSettings,
  req: Pick<AgentRunRequest, 'prompt' | 'workdir'>,
  files: RunFiles,
): string[] {
  return [
    ...(options.model === undefined ? [] : ['--model', options.model]),
    ...(options.extraArgs ?? []),
    '--',
    promptArgument(req, files),
  ];
}

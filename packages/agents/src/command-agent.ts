import { commandTemplateProblem, isPlaceholder, placeholderShape, type CommandPlaceholder } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import type { Agent, AgentRunRequest, ContextFile } from './port.js';
import { createProcessAgent } from './process-agent.js';
import type { RunFiles } from './run-files.js';

export { commandPlaceholders, type CommandPlaceholder } from '@codefleet/config';

/**
 * Checks a command template (see `commandTemplateProblem` in @codefleet/config, which also
 * checks `agents.command.argv` when the config loads): a program is named, every `{name}`
 * is a known placeholder, and the task text is not spliced into a shell script nor into a
 * larger argument.
 *
 * @throws {CodefleetError} `invalid_config` naming the bad element.
 */
export function checkCommandTemplate(template: readonly string[], configPath = 'agents.command.argv'): void {
  const problem = commandTemplateProblem(template);
  if (problem === undefined) return;
  const path = problem.index < 0 ? configPath : `${configPath}[${problem.index}]`;
  throw new CodefleetError('invalid_config', `${path}${problem.index < 0 ? ' ' : ': '}${problem.message}`, {
    details: { path },
  });
}

/**
 * Fills the placeholders of a command template. Each element stays exactly one argument:
 * placeholders are replaced inside it in a single pass, so a value is never split, never
 * read by a shell, and never expanded again (a prompt containing `{workdir}` or `$&` stays
 * as written).
 */
export function expandCommandTemplate(
  template: readonly string[],
  values: Readonly<Record<CommandPlaceholder, string>>,
): string[] {
  return template.map((element) =>
    element.replace(placeholderShape, (whole: string, name: string) => (isPlaceholder(name) ? values[name] : whole)),
  );
}

/** The placeholder values of one run. */
function placeholderValues(req: AgentRunRequest, files: RunFiles): Record<CommandPlaceholder, string> {
  return {
    prompt_file: files.promptFile,
    feedback_file: files.feedbackFile,
    workdir: req.workdir,
    pass: req.pass,
    attempt: String(req.attempt),
    prompt: req.prompt,
  };
}

/** Options for {@link createCommandAgent}. */
export interface CommandAgentOptions {
  /** Recorded agent name; default `command`. */
  name?: string;
  /**
   * The argument vector, with placeholders from {@link commandPlaceholders}, run without a
   * shell. Prefer `{prompt_file}`: `{prompt}` is bounded by the OS argument size limit
   * (128 KiB per argument on Linux), and a prompt starting with `-` can look like an option
   * to the program unless the template puts it after `--` or inside `--flag={prompt}`.
   */
  argv: readonly string[];
  contextFile?: ContextFile;
  /** Configured per-run timeout, reported as {@link Agent.timeoutMs}. */
  timeoutMs?: number;
  /** Variables the agent needs beyond the base allowlist (its API key). */
  allowEnv?: readonly string[];
  killGraceMs?: number;
  tailBytes?: number;
}

/**
 * The `command` adapter: runs any coding CLI described by an argument template, with the
 * prompt and feedback in files under `<workdir>/.codefleet/`, stdin closed, `req.env` as
 * the whole environment, and the process tree killed on timeout (exit code 124) or abort.
 *
 * @throws {CodefleetError} `invalid_config` for an empty template or an unknown placeholder.
 */
export function createCommandAgent(options: CommandAgentOptions): Agent {
  checkCommandTemplate(options.argv);
  const template = [...options.argv];
  return createProcessAgent({
    name: options.name ?? 'command',
    ...(options.contextFile === undefined ? {} : { contextFile: options.contextFile }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.allowEnv === undefined ? {} : { allowEnv: options.allowEnv }),
    ...(options.killGraceMs === undefined ? {} : { killGraceMs: options.killGraceMs }),
    ...(options.tailBytes === undefined ? {} : { tailBytes: options.tailBytes }),
    argv: (req, files) => expandCommandTemplate(template, placeholderValues(req, files)),
  });
}

import { basename } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import type { Agent, AgentRunRequest, ContextFile } from './port.js';
import { createProcessAgent } from './process-agent.js';
import type { RunFiles } from './run-files.js';

/** The placeholders a command template may use, and what each becomes. */
export const commandPlaceholders = {
  prompt_file: 'absolute path of the file holding the prompt',
  feedback_file: 'absolute path of the file holding the previous attempt\'s feedback (empty on the first)',
  workdir: 'absolute path of the working copy (also the current directory)',
  pass: '`implement` or `test`',
  attempt: 'inner attempt number, from 1',
  prompt: 'the prompt text itself, as part of one argument',
} as const;

/** One of {@link commandPlaceholders}. */
export type CommandPlaceholder = keyof typeof commandPlaceholders;

// Anything shaped like a placeholder, so a typo such as {promptfile} is caught early while
// JSON-looking arguments such as {"a":1} are left alone.
const placeholderShape = /\{([A-Za-z][A-Za-z0-9_-]*)\}/g;

const isPlaceholder = (name: string): name is CommandPlaceholder => Object.hasOwn(commandPlaceholders, name);

const shells = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'fish']);
// `-c`, `-lc`, `-ec`…: the next argument is a script the shell parses.
const shellScriptFlag = /^-[a-z]*c[a-z]*$/;

/**
 * Index of an element that splices `{prompt}` into a script a shell will parse
 * (`bash -c "agent {prompt}"`), or -1. Passing it as a positional argument after the
 * script (`bash -c 'agent "$1"' _ {prompt}`) is safe and allowed.
 */
function shellSplicedPrompt(template: readonly string[]): number {
  for (let i = 0; i < template.length; i += 1) {
    if (!shells.has(basename(template[i] ?? ''))) continue;
    for (let j = i + 1; j < template.length - 1; j += 1) {
      if (shellScriptFlag.test(template[j] ?? '')) return template[j + 1]?.includes('{prompt}') ? j + 1 : -1;
    }
  }
  return -1;
}

/**
 * Checks a command template: a program is named, every `{name}` is a known placeholder,
 * and the task text is not spliced into a shell script nor into a larger argument.
 *
 * @throws {CodefleetError} `invalid_config` naming the bad element.
 */
export function checkCommandTemplate(template: readonly string[], configPath = 'agents.command.argv'): void {
  if (template.length === 0 || template[0] === '') {
    throw new CodefleetError('invalid_config', `${configPath} is empty: set the command that runs your agent`);
  }
  const spliced = shellSplicedPrompt(template);
  if (spliced >= 0) {
    throw new CodefleetError(
      'invalid_config',
      `${configPath}[${spliced}]: {prompt} inside a shell script would let task text run commands; pass {prompt_file} instead`,
      { details: { path: `${configPath}[${spliced}]` } },
    );
  }
  template.forEach((element, index) => {
    // Inside a larger argument the task text becomes part of something a program may parse
    // as code (`env -S "sh -c '… {prompt}'"`, `node -e "run('{prompt}')"`): only a whole
    // argument, or an option's value, is taken as plain data by the usual CLIs.
    if (element.includes('{prompt}') && element !== '{prompt}' && !/^--?[A-Za-z0-9][\w-]*=\{prompt\}$/.test(element)) {
      throw new CodefleetError(
        'invalid_config',
        `${configPath}[${index}]: {prompt} must be a whole argument (or --option={prompt}); inside a larger one a program may parse task text as code: pass {prompt_file} instead`,
        { details: { path: `${configPath}[${index}]` } },
      );
    }
    for (const match of element.matchAll(placeholderShape)) {
      const name = match[1] ?? '';
      if (!isPlaceholder(name)) {
        const known = Object.keys(commandPlaceholders).map((key) => `{${key}}`).join(', ');
        throw new CodefleetError('invalid_config', `${configPath}[${index}]: unknown placeholder {${name}} (known: ${known})`, {
          details: { path: `${configPath}[${index}]`, placeholder: name },
        });
      }
    }
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
export function placeholderValues(req: AgentRunRequest, files: RunFiles): Record<CommandPlaceholder, string> {
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

/** One thing wrong with a config file: where (`queue.sqs.visibility_timeout`) and what. */
export interface ConfigProblem {
  /** Dotted key path with `[n]` for list items; empty for file-level problems (YAML syntax, unreadable file). */
  path: string;
  /** What is wrong, including the offending value where there is one. */
  message: string;
}

/** Stable error codes of this package, the same strings as the core error taxonomy. */
export const CONFIG_ERROR_CODES = ['invalid_config'] as const;

/** A code from {@link CONFIG_ERROR_CODES}. */
export type ConfigErrorCode = (typeof CONFIG_ERROR_CODES)[number];

/**
 * The configuration cannot be used. Retrying does not help until a human edits the file or
 * the environment, hence the `permanent` verdict. Match by `code`, not by message text.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** Stable code; see {@link CONFIG_ERROR_CODES}. */
  readonly code: ConfigErrorCode = 'invalid_config';
  /** What the worker should do: nothing automatic, a human has to fix the config. */
  readonly verdict = 'permanent' as const;
  /** Every problem found, in the order they were found. */
  readonly problems: readonly ConfigProblem[];
  /** The file the problems were found in, if the config came from a file. */
  readonly source: string | undefined;

  constructor(problems: readonly ConfigProblem[], source?: string) {
    super(formatMessage(problems, source));
    this.problems = problems;
    this.source = source;
  }
}

/** Renders one problem as the `<key.path>: <message>` line used in error messages. */
export function formatProblem(problem: ConfigProblem): string {
  return problem.path === '' ? problem.message : `${problem.path}: ${problem.message}`;
}

function formatMessage(problems: readonly ConfigProblem[], source: string | undefined): string {
  const where = source === undefined ? 'configuration' : `configuration in ${source}`;
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  return [`invalid ${where} (${count}):`, ...problems.map((p) => `  ${formatProblem(p)}`)].join('\n');
}

/** Renders a key path such as `['agents', 'command', 'argv', 0]` as `agents.command.argv[0]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

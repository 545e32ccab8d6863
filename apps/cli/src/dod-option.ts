import { InvalidArgumentError } from 'commander';
import { splitCommandLine } from '@codefleet/core';
import { parse } from 'yaml';

/** What `--dod` takes, shown in the help and in every refusal. */
export const dodExamples = `--dod '[npm, test]' '[sh, -c, "npm test && npm run lint"]', or a list: --dod '[[npm, test], [npm, run, lint]]'`;

/**
 * Parses one `--dod` value into DoD commands (argv arrays), for commander's option parser.
 * A command is given as a YAML or JSON list (`[npm, test]`, `["npm","test"]`), several as a
 * list of lists. A value is never split into words here: `"npm test"` once arrived as one
 * string and `[sh, -c, "a && b"]` as `[sh,` `-c,` ..., which failed in the worker with no
 * reason. A single word (`make`) is a one-word command; anything else is refused with the
 * argv this value would need.
 */
export function parseDodArgument(value: string, previous: string[][] = []): string[][] {
  const text = value.trim();
  if (text.startsWith('[')) return [...previous, ...parseList(text)];
  if (text !== '' && !/\s/.test(text) && !/^[{"']/.test(text)) return [...previous, [text]];
  throw new InvalidArgumentError(
    `${describe(text)} is not a command list; write each command as an argv list${suggestion(text)}. Examples: ${dodExamples}`,
  );
}

function parseList(text: string): string[][] {
  let parsed: unknown;
  try {
    // failsafe: every scalar stays a string (`0`, `true`, `null` are arguments, not values).
    parsed = parse(text, { schema: 'failsafe' });
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0] ?? '';
    throw new InvalidArgumentError(
      `${describe(text)} is not a valid YAML/JSON list (${reason}). Examples: ${dodExamples}`,
    );
  }
  if (isArgv(parsed) && parsed.length > 0) return [parsed];
  if (Array.isArray(parsed) && parsed.length > 0 && parsed.every((item) => isArgv(item) && item.length > 0))
    return parsed as string[][];
  throw new InvalidArgumentError(
    `${describe(text)} must be a non-empty list of strings (one command) or of such lists (several). Examples: ${dodExamples}`,
  );
}

function isArgv(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** The argv a plain command string would be, as a YAML list, when it splits cleanly. */
function suggestion(text: string): string {
  const split = splitCommandLine(text);
  // An argument with a quote of its own would need shell quoting this hint does not do.
  if (!('argv' in split) || split.argv.length === 0 || split.argv.some((arg) => arg.includes("'"))) return '';
  return `: --dod '${JSON.stringify(split.argv)}'`;
}

function describe(text: string): string {
  return `--dod ${JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text)}`;
}

import { basename } from 'node:path';

/** The placeholders a command template (`agents.command.argv`) may use, and what each becomes. */
export const commandPlaceholders = {
  prompt_file: 'absolute path of the file holding the prompt',
  feedback_file: "absolute path of the file holding the previous attempt's feedback (empty on the first)",
  workdir: 'absolute path of the working copy (also the current directory)',
  pass: '`implement` or `test`',
  attempt: 'inner attempt number, from 1',
  prompt: 'the prompt text itself, as part of one argument',
} as const;

/** One of {@link commandPlaceholders}. */
export type CommandPlaceholder = keyof typeof commandPlaceholders;

/**
 * Anything shaped like a placeholder, so a typo such as {promptfile} is caught early while
 * JSON-looking arguments such as {"a":1} are left alone.
 */
export const placeholderShape = /\{([A-Za-z][A-Za-z0-9_-]*)\}/g;

/** True for a name in {@link commandPlaceholders}. */
export const isPlaceholder = (name: string): name is CommandPlaceholder => Object.hasOwn(commandPlaceholders, name);

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
 * What is wrong with a command template, or undefined: a program must be named, every
 * `{name}` must be a known placeholder, and the task text must be neither spliced into a
 * shell script nor into a larger argument. `index` is the element at fault (-1: the whole).
 */
export function commandTemplateProblem(template: readonly string[]): { index: number; message: string } | undefined {
  if (template.length === 0 || template[0] === '')
    return { index: -1, message: 'is empty: set the command that runs your agent' };
  const spliced = shellSplicedPrompt(template);
  if (spliced >= 0)
    return {
      index: spliced,
      message: '{prompt} inside a shell script would let task text run commands; pass {prompt_file} instead',
    };
  for (const [index, element] of template.entries()) {
    // Inside a larger argument the task text becomes part of something a program may parse
    // as code (`env -S "sh -c '… {prompt}'"`, `node -e "run('{prompt}')"`): only a whole
    // argument, or an option's value, is taken as plain data by the usual CLIs.
    if (element.includes('{prompt}') && element !== '{prompt}' && !/^--?[A-Za-z0-9][\w-]*=\{prompt\}$/.test(element)) {
      return {
        index,
        message:
          '{prompt} must be a whole argument (or --option={prompt}); inside a larger one a program may parse task text as code: pass {prompt_file} instead',
      };
    }
    for (const match of element.matchAll(placeholderShape)) {
      const name = match[1] ?? '';
      if (!isPlaceholder(name)) {
        const known = Object.keys(commandPlaceholders)
          .map((key) => `{${key}}`)
          .join(', ');
        return { index, message: `unknown placeholder {${name}} (known: ${known})` };
      }
    }
  }
  return undefined;
}

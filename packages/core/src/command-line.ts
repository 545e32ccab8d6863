/**
 * Splits a command written as one string (`dod: ["npm run lint -- --max-warnings 0"]`,
 * `--dod "node -e 'process.exit(1)'"`) into an argument vector, the way a POSIX shell
 * splits words, without running a shell: single quotes keep everything literal, double
 * quotes keep everything but `\"` and `\\`, a backslash outside quotes escapes the next
 * character. What only a shell would do is refused with the reason rather than passed on
 * as literal text (which once made `node -e 'process.exit(1)'` a passing check): pipes,
 * redirections, `;`, `&`, `$` expansions, backticks, parentheses, comments. Globs and `~`
 * stay literal (tools such as eslint and jest expand their own patterns).
 *
 * @returns the argv, or the problem in one sentence.
 */
export function splitCommandLine(text: string): { argv: string[] } | { problem: string } {
  const argv: string[] = [];
  let word: string | undefined;
  const shellOnly = (what: string) => ({
    problem: `${what} is shell syntax, and commands run without a shell; use the argv form, e.g. [sh, -c, "…"], to run one`,
  });
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) {
      if (word !== undefined) argv.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return { problem: 'unterminated single quote' };
      word = (word ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let value = '';
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j += 1) {
        const d = text[j] ?? '';
        if (d === '$' || d === '`') return shellOnly(`\`${d}\` inside double quotes`);
        if (d === '\\' && (text[j + 1] === '"' || text[j + 1] === '\\')) {
          value += text[j + 1];
          j += 1;
        } else {
          value += d;
        }
      }
      if (j >= text.length) return { problem: 'unterminated double quote' };
      word = (word ?? '') + value;
      i = j;
    } else if (c === '\\') {
      if (i + 1 >= text.length) return { problem: 'a backslash at the end escapes nothing' };
      word = (word ?? '') + text[i + 1];
      i += 1;
    } else if ('|&;<>()$`'.includes(c)) {
      return shellOnly(`\`${c}\``);
    } else if (c === '#' && word === undefined) {
      return shellOnly('`#` (a comment)');
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== undefined) argv.push(word);
  return { argv };
}

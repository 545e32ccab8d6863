import { describe, expect, it } from '@jest/globals';
import { splitCommandLine } from '../src/index.js';

describe('splitCommandLine', () => {
  it.each([
    ['npm test', ['npm', 'test']],
    ['  npm   run  lint -- --max-warnings 0 ', ['npm', 'run', 'lint', '--', '--max-warnings', '0']],
    ["node -e 'process.exit(1)'", ['node', '-e', 'process.exit(1)']],
    ['echo "a b" c', ['echo', 'a b', 'c']],
    [String.raw`echo "say \"hi\" \\ \n"`, ['echo', String.raw`say "hi" \ \n`]],
    ["a'b c'd", ['ab cd']],
    [String.raw`a\ b`, ['a b']],
    ["sh -c 'echo $HOME | wc -c > out'", ['sh', '-c', 'echo $HOME | wc -c > out']],
    ['eslint src/**/*.ts ~/x', ['eslint', 'src/**/*.ts', '~/x']],
    ['', []],
  ])('%s', (text, argv) => {
    expect(splitCommandLine(text)).toEqual({ argv });
  });

  it.each([
    ['echo hi > /tmp/x', '`>` is shell syntax'],
    ['make | tee log', '`|` is shell syntax'],
    ['make && make test', '`&` is shell syntax'],
    ['make; make test', '`;` is shell syntax'],
    ['echo $HOME', '`$` is shell syntax'],
    ['echo "$HOME"', '`$` inside double quotes is shell syntax'],
    ['echo `id`', '``` is shell syntax'],
    ['(make)', '`(` is shell syntax'],
    ['make # all', '`#` (a comment) is shell syntax'],
    ["echo 'open", 'unterminated single quote'],
    ['echo "open', 'unterminated double quote'],
    ['echo \\', 'a backslash at the end escapes nothing'],
  ])('refuses %s', (text, problem) => {
    const result = splitCommandLine(text);
    expect('problem' in result ? result.problem : `accepted as ${JSON.stringify(result.argv)}`).toContain(problem);
  });
});

import { describe, expect, it } from '@jest/globals';
import { parseRepoConfig } from '../src/index.js';

const problems = (text: string) => {
  try {
    parseRepoConfig(text);
  } catch (error) {
    return (error as { problems: { path: string; message: string }[] }).problems;
  }
  throw new Error('expected parseRepoConfig to throw');
};

describe('parseRepoConfig', () => {
  it('splits command strings like a shell would and refuses shell syntax', () => {
    expect(parseRepoConfig(`dod: ["node -e 'process.exit(1)'", 'echo "a b"']\n`).dod).toEqual([
      ['node', '-e', 'process.exit(1)'],
      ['echo', 'a b'],
    ]);
    const [problem] = problems('verify:\n  test: npm test > log\n');
    expect(problem).toMatchObject({ path: 'verify.test', message: expect.stringContaining('`>` is shell syntax') });
  });

  it('accepts dod, verify and toolchain', () => {
    expect(
      parseRepoConfig('toolchain: python\ndod: [make check]\nverify: { test: [python, -m, pytest, -x], lint: [] }\n'),
    ).toEqual({
      toolchain: 'python',
      dod: [['make', 'check']],
      verify: { test: ['python', '-m', 'pytest', '-x'], lint: [] },
    });
  });

  it('treats an empty file and empty sections as "nothing set"', () => {
    expect(parseRepoConfig('')).toEqual({ verify: {} });
    expect(parseRepoConfig('dod:\nverify:\n')).toEqual({ dod: [], verify: {} });
  });

  it('reports YAML syntax errors with their position', () => {
    const [problem] = problems('dod: [npm test\nverify: x\n');
    expect(problem?.path).toBe('');
    expect(problem?.message).toMatch(/^YAML syntax error at line \d+, column \d+/);
  });

  it('refuses a file that is not a mapping', () => {
    expect(problems('- npm test\n')[0]?.message).toContain('expected a mapping');
    expect(problems('just text\n')[0]?.message).toContain('got a string');
  });

  it('names the key path of every bad value', () => {
    const found = problems(
      [
        'toolchain: java',
        'dod: npm test',
        'verify:',
        '  test: { run: pytest }',
        '  lint: [eslint, ""]',
        '  install: npm ci',
      ].join('\n'),
    );
    expect(found.map((p) => p.path)).toEqual(['toolchain', 'dod', 'verify.test', 'verify.lint[1]', 'verify']);
    expect(found[4]?.message).toBe('unknown step at line 6; expected one of build, format, lint, test');
    expect(found[0]?.message).toContain('node, go, rust, python, none');
    expect(found[1]?.message).toContain('expected a list of commands');
  });

  it('bounds the DoD list and argument sizes', () => {
    const many = `dod:\n${Array.from({ length: 33 }, () => '  - make\n').join('')}`;
    expect(problems(many)[0]?.message).toContain('at most 32 commands');
    expect(problems(`dod: ["${'x'.repeat(5000)}"]\n`)[0]?.path).toBe('dod[0]');
  });

  it('survives alias bombs with an error instead of exhausting memory', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
    ].join('\n');
    expect(problems(bomb)[0]?.path).toBe('');
  });
});

describe('parseRepoConfig: problems never quote the file', () => {
  // Stands for whatever the file holds that must not reach a public comment: a token the
  // file was linked to, or one the agent wrote into it.
  const secret = 'Zq9SeCrEtVaLuE7xK2';
  const messages = (text: string) => {
    try {
      parseRepoConfig(text);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected parseRepoConfig to throw');
  };

  it.each([
    ['a file that is only the secret', `${secret}\n`],
    ['a block scalar header the parser quotes', `dod: |${secret}\n  x\n`],
    ['a token the parser quotes', `- a\nverify: ${secret}\n`],
    ['a bad escape', `dod: ["x\\q${secret}"]\n`],
    ['a wrong value', `toolchain: ${secret}\n`],
    ['a wrong type in a command', `dod: [[node, { ${secret}: 1 }]]\n`],
    ['an unknown key', `${secret}: 1\nverify:\n  ${secret}: x\n`],
  ])('%s', (_name, text) => {
    const message = messages(text);
    expect(message).toContain('.codefleet.yml');
    expect(message).not.toContain(secret);
    expect(message).not.toContain(secret.slice(0, 8));
  });

  it('says where a syntax error is and what kind it is', () => {
    expect(messages(`dod: |${secret}\n  x\n`)).toContain('YAML syntax error at line 1, column 7: an unexpected token');
  });
});

/**
 * What models write that is not quite a patch git applies: hunk counts one off, a stale
 * context line, SEARCH/REPLACE blocks and `*** Begin Patch` sections. Each is applied (and
 * says how), and each new format goes through the same path checks as every command.
 */
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch, patchSucceeded, type ApplyOptions } from '../src/index.js';
import { applyEdits } from '../src/text-edits.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
const lines = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`);
const text = (edit: (l: string, i: number) => string = (l) => l) => `${lines.map(edit).join('\n')}\n`;
const py = 'class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n';

describe('tolerance', () => {
  let repo: TempRepo;
  let outside: TempDir;
  beforeEach(async () => {
    repo = await createTempRepo({
      files: { 'src/a.txt': text(), 'src/a.py': py, 'src/old.ts': 'const a = 1;\nconst b = 2;\n' },
    });
    outside = await createTempDir('tolerance-outside');
  });
  afterEach(async () => {
    await repo.dispose();
    await outside.dispose();
  });
  const apply = async (patch: string, options: Partial<ApplyOptions> = {}) => {
    const parsed = parsePatch(patch);
    const result = await applyPatch(parsed.commands, { root: repo.path, env, ...options });
    return { parsed, result, ok: patchSucceeded(parsed, result) };
  };
  const read = (path: string) => readFile(join(repo.path, path), 'utf8');

  it('hunk counts one off either way are recounted and the diff applies exactly', async () => {
    const over = [
      '--- a/src/a.txt',
      '+++ b/src/a.txt',
      '@@ -3,7 +3,7 @@',
      ' line 3',
      ' line 4',
      ' line 5',
      '-line 6',
      '+six',
      ' line 7',
      ' line 8',
      '',
    ].join('\n');
    const first = await apply(over);
    expect(first).toMatchObject({ ok: true, parsed: { warnings: [expect.stringMatching(/recounted/)] } });
    // Too small: git would apply the hunk without its last line, silently.
    const under = [
      '--- a/src/a.txt',
      '+++ b/src/a.txt',
      '@@ -9,2 +9,2 @@',
      ' line 9',
      '-line 10',
      '+ten',
      ' line 11',
      '+eleven and a half',
      '',
    ].join('\n');
    expect((await apply(under)).ok).toBe(true);
    expect(await read('src/a.txt')).toBe(
      text((l, i) => (i === 5 ? 'six' : i === 9 ? 'ten' : i === 10 ? `${l}\neleven and a half` : l)),
    );
  });

  it('a stale first context line applies with reduced context, reported as fuzz', async () => {
    const stale = [
      '--- a/src/a.txt',
      '+++ b/src/a.txt',
      '@@ -4,7 +4,7 @@',
      ' line four',
      ' line 5',
      ' line 6',
      '-line 7',
      '+seven',
      ' line 8',
      ' line 9',
      ' line 10',
      '',
    ].join('\n');
    const { ok, result } = await apply(stale);
    expect(ok).toBe(true);
    expect(result.results[0]?.notes).toEqual([
      expect.stringMatching(/reduced context \(fuzz\)/),
      expect.stringMatching(/^Context reduced to/),
    ]);
    expect(await read('src/a.txt')).toBe(text((l, i) => (i === 6 ? 'seven' : l)));
  });

  it('SEARCH/REPLACE: exact, then ignoring indentation (re-indented), all or nothing per block', async () => {
    const reply = [
      'src/a.py',
      '```python',
      '<<<<<<< SEARCH',
      'def g(self):',
      '    return 2',
      '=======',
      'def g(self):',
      '    return 3',
      '>>>>>>> REPLACE',
      '```',
      '',
      'src/a.txt',
      '```',
      '<<<<<<< SEARCH',
      'line 2',
      '=======',
      'two',
      '>>>>>>> REPLACE',
      '```',
      '',
      'src/a.txt',
      '```',
      '<<<<<<< SEARCH',
      'line 99',
      '=======',
      'never',
      '>>>>>>> REPLACE',
      '```',
      '',
    ].join('\n');
    const { result, ok } = await apply(reply);
    expect(ok).toBe(false);
    expect(result.results.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'failed']);
    expect(result.results[0]?.notes).toEqual(['the edit: matched ignoring indentation']);
    expect(result.results[2]?.error).toMatch(/SEARCH lines were not found.*"line 99"/);
    expect(await read('src/a.py')).toBe(py.replace('return 2', 'return 3'));
    expect(await read('src/a.txt')).toBe(text((l, i) => (i === 1 ? 'two' : l)));
  });

  it('*** Begin Patch: update with a move, add, delete', async () => {
    const patch = [
      '*** Begin Patch',
      '*** Update File: src/old.ts',
      '*** Move to: src/lib/new.ts',
      '@@',
      ' const a = 1;',
      '-const b = 2;',
      '+const b = 3;',
      '*** Add File: src/added.ts',
      '+export {};',
      '*** Delete File: src/a.txt',
      '*** End Patch',
      '',
    ].join('\n');
    const { ok } = await apply(patch);
    expect(ok).toBe(true);
    expect(await read('src/lib/new.ts')).toBe('const a = 1;\nconst b = 3;\n');
    expect(await read('src/added.ts')).toBe('export {};\n');
    expect(await git(repo.path, ['status', '--porcelain'])).toBe(
      'D src/a.txt\n D src/old.ts\n?? src/added.ts\n?? src/lib/',
    );
  });

  it('the new formats go through the same checks: outside, .git, symlinks, protected files; --dry-run checks the match', async () => {
    await writeFile(join(repo.path, '.env'), 'TOKEN=1\n');
    await symlink(outside.path, join(repo.path, 'out'));
    await mkdir(join(outside.path, 'x'));
    await writeFile(join(outside.path, 'x', 'f.txt'), 'a\n');
    const sr = (path: string) => [path, '<<<<<<< SEARCH', 'a', '=======', 'b', '>>>>>>> REPLACE', ''].join('\n');
    const results = [];
    for (const path of ['../escape.txt', '.git/config', 'out/x/f.txt', '.env'])
      results.push((await apply(sr(path))).result.results[0]?.error);
    const bp = (path: string) => `*** Begin Patch\n*** Add File: ${path}\n+x\n*** End Patch\n`;
    for (const path of ['../escape.txt', 'out/x/new.txt', 'config/.env.local'])
      results.push((await apply(bp(path))).result.results[0]?.error);
    expect(results).toEqual([
      expect.stringMatching(/leaves the workspace/),
      expect.stringMatching(/inside \.git/),
      expect.stringMatching(/symlink on the way leads outside/),
      expect.stringMatching(/protected file \.env/),
      expect.stringMatching(/leaves the workspace/),
      expect.stringMatching(/symlink on the way leads outside/),
      expect.stringMatching(/protected file/),
    ]);
    expect(await readFile(join(outside.path, 'x', 'f.txt'), 'utf8')).toBe('a\n');
    const dry = await apply(
      ['src/a.txt', '<<<<<<< SEARCH', 'no such line', '=======', 'x', '>>>>>>> REPLACE', ''].join('\n'),
      { dryRun: true },
    );
    expect(dry.result.results[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(/not found/) });
    expect(await read('src/a.txt')).toBe(text());
  });
});

describe('applyEdits', () => {
  it('keeps CRLF line ends and a missing final newline; follows an anchor; an empty search appends or creates', () => {
    expect(applyEdits('a\r\nb\r\nc', [{ search: 'b\n', replace: 'B\n' }])).toEqual({
      ok: true,
      text: 'a\r\nB\r\nc',
      notes: [],
    });
    expect(applyEdits('x\nf()\ny\nf()\n', [{ search: 'f()\n', replace: 'g()\n', anchor: 'y' }])).toMatchObject({
      text: 'x\nf()\ny\ng()\n',
    });
    expect(applyEdits('a\n', [{ search: '', replace: 'b\n' }])).toMatchObject({ text: 'a\nb\n' });
    expect(applyEdits(undefined, [{ search: '', replace: 'new\n' }])).toMatchObject({ text: 'new\n' });
    expect(applyEdits(undefined, [{ search: 'x', replace: 'y' }])).toMatchObject({ ok: false });
  });

  it('later edits search after earlier ones first, then from the top; trailing white space is forgiven and said', () => {
    expect(
      applyEdits('k\nv\nk\nv\n', [
        { search: 'k\n', replace: 'K1\n' },
        { search: 'k\n', replace: 'K2\n' },
      ]),
    ).toMatchObject({ text: 'K1\nv\nK2\nv\n' });
    expect(applyEdits('a  \nb\n', [{ search: 'a\nb\n', replace: 'c\n' }])).toEqual({
      ok: true,
      text: 'c\n',
      notes: ['the edit: matched ignoring trailing white space'],
    });
    expect(
      applyEdits('a\n', [
        { search: 'a\n', replace: 'b\n' },
        { search: 'zzz\n', replace: 'y\n' },
      ]),
    ).toMatchObject({ ok: false, error: expect.stringMatching(/^edit 2:/) });
  });
});

describe('applyEdits, read as a careful human would', () => {
  it('an anchor not in the file fails; with one, the lines are looked for after it only', () => {
    const twice = 'def f():\n    return 1\ndef g():\n    pass\n';
    expect(applyEdits(twice, [{ search: '    return 1\n', replace: '    return 2\n', anchor: 'def h' }])).toEqual({
      ok: false,
      error: expect.stringMatching(/@@ line "def h" is not in the file/),
    });
    expect(applyEdits(twice, [{ search: '    return 1\n', replace: '    return 2\n', anchor: 'def g' }])).toEqual({
      ok: false,
      error: expect.stringMatching(/not found after its @@ line/),
    });
  });

  it('loose matches: lines the edit keeps stay as the file has them; new lines get its indentation, or the edit fails', () => {
    expect(
      applyEdits('\tx = 1\n\ty = 2\n', [{ search: '  x = 1\n  y = 2\n', replace: '  x = 1\n  z = 3\n  y = 2\n' }]),
    ).toMatchObject({ text: '\tx = 1\n\tz = 3\n\ty = 2\n' });
    // A block quoted with four more spaces everywhere: a shift, not another step of indentation.
    expect(
      applyEdits('    x = 1\n', [{ search: '        x = 1\n', replace: '        x = 1\n            y = 2\n' }]),
    ).toMatchObject({ text: '    x = 1\n        y = 2\n' });
    // The model indented alike what the file indents differently: no way to know where a new line goes.
    expect(applyEdits('a\n    b\n', [{ search: 'a\nb\n', replace: 'a\nc\n' }])).toMatchObject({
      ok: false,
      error: expect.stringMatching(/indented alike/),
    });
  });

  it('typographic quotes: matched as ASCII; new lines lose the ones the file does not use, keep the ones it does', () => {
    expect(applyEdits('say("hi")\n', [{ search: 'say(“hi”)\n', replace: 'say(“bye”)\n' }])).toMatchObject({
      ok: true,
      text: 'say("bye")\n',
    });
    expect(applyEdits('t = "“a”"\nx\n', [{ search: 't = "“a”"\nx\n', replace: 't = "“b”"\nx\n' }])).toMatchObject({
      text: 't = "“b”"\nx\n',
    });
  });

  it('"..." parts: each found once after the one before; an ambiguous part fails', () => {
    expect(applyEdits('}\na\n}\n', [{ search: 'a\n...\n}\n', replace: 'A\n...\n}\n' }])).toMatchObject({
      ok: true,
      text: '}\nA\n}\n',
    });
    expect(applyEdits('x\n}\n}\n', [{ search: 'x\n...\n}\n', replace: 'X\n...\n}\n' }])).toMatchObject({
      ok: false,
      error: expect.stringMatching(/found more than once/),
    });
  });
});

/**
 * The parser reads what models and tools write: Markdown replies with several kinds of
 * blocks, diffs in fences or without prefixes, bytes that are not UTF-8, SEARCH/REPLACE
 * blocks, `*** Begin Patch` sections and the seed's own JSON commands.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { parsePatch, PatchParseError } from '../src/index.js';
import { recountHunks } from '../src/recount.js';

const diffLines = ['diff --git a/src/a.ts b/src/a.ts', '--- a/src/a.ts', '+++ b/src/a.ts', '@@ -1 +1 @@', '-a', '+b'];
const diff = `${diffLines.join('\n')}\n`;

describe('Markdown replies', () => {
  it('the path is the first token after lang: (attributes after it are not part of it)', () => {
    expect(parsePatch('```ts:src/a.ts title="src/a.ts"\nx\n```\n').commands).toEqual([
      { type: 'file_edit', action: 'create', target: 'src/a.ts', content: 'x\n' },
    ]);
    expect(parsePatch('```ts: src/b.ts {1,3}\nx\n```\n').commands).toMatchObject([{ target: 'src/b.ts' }]);
    expect(parsePatch('```ts:"src/c d.ts" title=x\nx\n```\n').commands).toMatchObject([{ target: 'src/c d.ts' }]);
  });

  it('a file block and a diff block in one reply are each applied, in order', () => {
    const reply = [
      'Plan: add b, change a.',
      '',
      '```ts:src/b.ts',
      'export const b = 1;',
      '```',
      '',
      '```diff',
      ...diffLines,
      '```',
      '',
    ].join('\n');
    const parsed = parsePatch(reply);
    expect(parsed.format).toBe('markdown');
    expect(parsed.commands).toMatchObject([
      { type: 'file_edit', action: 'create', target: 'src/b.ts', content: 'export const b = 1;\n' },
      { type: 'diff', paths: ['src/a.ts'], content: `${diff}` },
    ]);
  });

  it("a diff shown inside a file block is that file's content, not a change", () => {
    const reply = ['Docs:', '```md:docs/patching.md', '# Patching', '', ...diffLines, '```', ''].join('\n');
    expect(parsePatch(reply).commands).toEqual([
      { type: 'file_edit', action: 'create', target: 'docs/patching.md', content: `# Patching\n\n${diff}` },
    ]);
  });

  it('console blocks are transcripts, never run; shell blocks run', () => {
    const parsed = parsePatch('```console\n$ rm -rf build\n```\n```bash\nnpm test\n```\n');
    expect(parsed.commands).toEqual([{ type: 'shell_command', action: 'run', content: 'npm test' }]);
    expect(parsed.warnings).toEqual([expect.stringMatching(/"console".*transcript.*not run/)]);
  });

  it('fences indented in a list item are found and their indentation taken off; an unclosed one is warned about', () => {
    const reply = [
      '1. Add the helper:',
      '',
      '   ```ts:src/h.ts',
      '   export function h() {',
      '     return 1;',
      '   }',
      '   ```',
      '2. Done.',
      '',
    ].join('\n');
    expect(parsePatch(reply).commands).toEqual([
      { type: 'file_edit', action: 'create', target: 'src/h.ts', content: 'export function h() {\n  return 1;\n}\n' },
    ]);
    const cut = parsePatch('```ts:src/a.ts\nexport const a =\n');
    expect(cut.commands).toEqual([]);
    expect(cut.warnings).toEqual([expect.stringMatching(/never closed/)]);
  });

  it('a reply opening with a Markdown link is Markdown, not invalid JSON; broken JSON is still an error', () => {
    expect(parsePatch('[the docs](https://example.com) say so:\n```ts:src/a.ts\nx\n```\n').commands).toMatchObject([
      { target: 'src/a.ts' },
    ]);
    expect(() => parsePatch('[{"type": ')).toThrow(/invalid JSON patch/);
  });

  it('a fenced diff is a diff (pure renames and mode changes have no ---/+++ lines)', () => {
    const rename = [
      'diff --git a/a.txt b/b.txt',
      'similarity index 100%',
      'rename from a.txt',
      'rename to b.txt',
      '',
    ].join('\n');
    const mode = ['diff --git a/run.sh b/run.sh', 'old mode 100644', 'new mode 100755', ''].join('\n');
    expect(parsePatch(`\`\`\`diff\n${rename}\`\`\`\n`).commands).toMatchObject([
      { type: 'diff', paths: ['a.txt', 'b.txt'] },
    ]);
    expect(parsePatch(`Here:\n\n\`\`\`\n${mode}\`\`\`\n`).commands).toMatchObject([
      { type: 'diff', paths: ['run.sh'] },
    ]);
  });

  it('text with no patch in it is no success: a warning, not format "empty"', () => {
    const parsed = parsePatch('I would change the add function.\n');
    expect(parsed).toMatchObject({ format: 'markdown', commands: [] });
    expect(parsed.warnings).toEqual([expect.stringMatching(/no patch in it/)]);
    expect(parsePatch(' \n').format).toBe('empty');
  });
});

describe('diffs', () => {
  it('without a/ b/ prefixes: the names are paths from the workspace root', () => {
    const bare = [
      'diff --git src/new/b.ts src/new/b.ts',
      'new file mode 100644',
      '--- /dev/null',
      '+++ src/new/b.ts',
      '@@ -0,0 +1 @@',
      '+b',
      '',
    ].join('\n');
    expect(parsePatch(bare).commands).toMatchObject([{ type: 'diff', paths: ['src/new/b.ts'] }]);
    expect(parsePatch(diff).commands).toMatchObject([{ paths: ['src/a.ts'] }]);
  });

  it('bytes that are not UTF-8 are kept for git; only a diff may carry them', () => {
    const latin1 = Buffer.concat([
      Buffer.from('--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-caf'),
      Buffer.from([0xe9]),
      Buffer.from('\n+caf'),
      Buffer.from([0xe8]),
      Buffer.from('\n'),
    ]);
    const [command] = parsePatch(latin1).commands;
    expect(command).toMatchObject({ type: 'diff', paths: ['n.txt'] });
    expect(Buffer.from((command as { bytes: Uint8Array }).bytes).equals(latin1)).toBe(true);
    expect(() => parsePatch(Buffer.from([0x23, 0x20, 0xff, 0x0a]))).toThrow(/not UTF-8/);
    expect(parsePatch(Buffer.from('```ts:a.ts\nx\n```\n', 'utf8')).commands).toMatchObject([{ target: 'a.ts' }]);
  });

  it('hunk counts one off are recounted, with a warning; git would refuse or drop lines', () => {
    const over = ['--- a/f', '+++ b/f', '@@ -1,4 +1,4 @@', ' a', '-b', '+B', ' c', ''].join('\n');
    const under = ['--- a/f', '+++ b/f', '@@ -1,2 +1,2 @@', ' a', '-b', '+B', ' c', '+d', ''].join('\n');
    expect(parsePatch(over)).toMatchObject({
      commands: [{ content: over.replace('-1,4 +1,4', '-1,3 +1,3') }],
      warnings: [expect.stringMatching(/recounted \(1 hunk\)/)],
    });
    expect(parsePatch(under).commands).toMatchObject([{ content: under.replace('-1,2 +1,2', '-1,3 +1,4') }]);
  });

  it('recount leaves hunks that fit as they are: prose after the diff, format-patch signature, blank separators (property)', () => {
    const hunkLine = fc
      .tuple(fc.constantFrom(' ', '-', '+'), fc.stringMatching(/^[a-z -]{0,6}$/))
      .map(([c, t]) => c + t);
    const hunk = fc
      .array(hunkLine, { minLength: 1, maxLength: 6 })
      .filter((ls) => ls.some((l) => l[0] !== ' '))
      .map((ls) => {
        const old = ls.filter((l) => l[0] !== '+').length;
        const neu = ls.filter((l) => l[0] !== '-').length;
        return [`@@ -1,${old} +1,${neu} @@`, ...ls];
      });
    const after = fc.constantFrom([], [''], ['', 'Let me know.'], ['-- ', '2.39.5', ''], ['', '']);
    fc.assert(
      fc.property(fc.array(hunk, { minLength: 1, maxLength: 3 }), after, (hunks, tail) => {
        const text = ['--- a/f', '+++ b/f', ...hunks.flat(), ...tail].join('\n');
        expect(recountHunks(text)).toEqual({ text, recounted: 0 });
      }),
      { numRuns: 2_000 },
    );
  });

  it("a diff outside any fence is one edit among the reply's others; alone (shell blocks aside) it is the whole reply", () => {
    const parsed = parsePatch(`Here is the change:\n\n${diff}\n\`\`\`ts:src/extra.ts\nx\n\`\`\`\n`);
    expect(parsed).toMatchObject({ format: 'markdown', warnings: [] });
    expect(parsed.commands).toEqual([
      { type: 'diff', action: 'apply', target: 'src/a.ts', content: diff, paths: ['src/a.ts'] },
      { type: 'file_edit', action: 'create', target: 'src/extra.ts', content: 'x\n' },
    ]);
    const alone = `Here is the change:\n\n${diff}\n\`\`\`bash\nnpm test\n\`\`\`\n`;
    expect(parsePatch(alone)).toMatchObject({ format: 'diff', commands: [{ type: 'diff', content: alone }] });
  });
});

describe('SEARCH/REPLACE and Begin Patch', () => {
  it('Aider blocks: the file name on the line above the fence or the marker, several blocks, unfenced too', () => {
    const reply = [
      'src/a.py',
      '```python',
      '<<<<<<< SEARCH',
      'def a():',
      '    return 1',
      '=======',
      'def a():',
      '    return 2',
      '>>>>>>> REPLACE',
      '```',
      '',
      '**src/b.py**',
      '```python',
      '<<<<<<< SEARCH',
      '=======',
      'print(1)',
      '>>>>>>> REPLACE',
      '<<<<<<< SEARCH',
      'x',
      '=======',
      'y',
      '>>>>>>> REPLACE',
      '```',
      '',
    ].join('\n');
    expect(parsePatch(reply)).toEqual({
      format: 'markdown',
      warnings: [],
      commands: [
        {
          type: 'file_edit',
          action: 'replace',
          target: 'src/a.py',
          edits: [{ search: 'def a():\n    return 1\n', replace: 'def a():\n    return 2\n' }],
        },
        { type: 'file_edit', action: 'replace', target: 'src/b.py', edits: [{ search: '', replace: 'print(1)\n' }] },
        { type: 'file_edit', action: 'replace', target: 'src/b.py', edits: [{ search: 'x\n', replace: 'y\n' }] },
      ],
    });
    const raw = parsePatch(['c.txt', '<<<<<<< SEARCH', 'a', '=======', 'b', '>>>>>>> REPLACE', ''].join('\n'));
    expect(raw).toMatchObject({ format: 'search-replace', commands: [{ action: 'replace', target: 'c.txt' }] });
    expect(parsePatch(['<<<<<<< SEARCH', 'a', '=======', 'b', '>>>>>>> REPLACE', ''].join('\n')).warnings).toEqual([
      expect.stringMatching(/names no file/),
    ]);
  });

  it('*** Begin Patch: add, update (with its @@ line and a move), delete', () => {
    const patch = [
      '*** Begin Patch',
      '*** Add File: src/new.ts',
      '+export const n = 1;',
      '*** Update File: src/old.ts',
      '*** Move to: src/moved.ts',
      '@@ function f() {',
      ' const a = 1;',
      '-const b = 2;',
      '+const b = 3;',
      '*** Delete File: src/gone.ts',
      '*** End Patch',
      '',
    ].join('\n');
    expect(parsePatch(patch)).toEqual({
      format: 'begin-patch',
      warnings: [],
      commands: [
        { type: 'file_edit', action: 'create', target: 'src/new.ts', content: 'export const n = 1;\n' },
        {
          type: 'file_edit',
          action: 'replace',
          target: 'src/old.ts',
          metadata: { destination: 'src/moved.ts' },
          edits: [
            {
              search: 'const a = 1;\nconst b = 2;\n',
              replace: 'const a = 1;\nconst b = 3;\n',
              anchor: 'function f() {',
            },
          ],
        },
        { type: 'file_edit', action: 'delete', target: 'src/gone.ts', fileOnly: true },
      ],
    });
    expect(() => parsePatch('*** Begin Patch\n*** Update File: a\n-x\n+y\n')).toThrow(/no "\*\*\* End Patch"/);
    expect(() => parsePatch('*** Begin Patch\nhello\n*** End Patch\n')).toThrow(PatchParseError);
  });
});

describe("PicoClaw's JSON commands, as its examples write them", () => {
  it('a rename or copy names its destination in content; /workspace/ is the workspace root', () => {
    const seed = [
      { type: 'file_edit', action: 'mkdir', target: '/workspace/src/utils' },
      { type: 'file_edit', action: 'create', target: '/workspace/src/utils/helper.go', content: 'package utils\n' },
      { type: 'file_edit', action: 'rename', target: '/workspace/old_name.go', content: '/workspace/new_name.go' },
      { type: 'file_edit', action: 'copy', target: '/workspace/template.go', content: '/workspace/new_file.go' },
      {
        type: 'shell_command',
        action: 'run',
        target: 'npm install',
        workdir: '/workspace/frontend',
        env: { NODE_ENV: 'production' },
      },
    ];
    expect(parsePatch(JSON.stringify(seed)).commands).toEqual([
      { type: 'file_edit', action: 'mkdir', target: 'src/utils' },
      { type: 'file_edit', action: 'create', target: 'src/utils/helper.go', content: 'package utils\n' },
      { type: 'file_edit', action: 'rename', target: 'old_name.go', metadata: { destination: 'new_name.go' } },
      { type: 'file_edit', action: 'copy', target: 'template.go', metadata: { destination: 'new_file.go' } },
      {
        type: 'shell_command',
        action: 'run',
        content: 'npm install',
        workdir: 'frontend',
        env: { NODE_ENV: 'production' },
      },
    ]);
    expect(() => parsePatch('{"type":"file_edit","action":"rename","target":"a"}')).toThrow(/destination path/);
  });
});

import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { parsePatch, PatchParseError } from '../src/index.js';

describe('parsePatch', () => {
  it('JSON: commands in order, with env, workdir and metadata', () => {
    const patch = JSON.stringify([
      { type: 'file_edit', action: 'create', target: 'src/a.js', content: 'x', metadata: {} },
      { type: 'file_edit', action: 'rename', target: 'a', metadata: { destination: 'b' } },
      { type: 'shell_command', action: 'run', content: 'npm test', env: { CI: '1' }, workdir: 'pkg' },
      { type: 'git_operation', action: 'add', target: '.' },
    ]);
    expect(parsePatch(patch)).toEqual({
      format: 'json',
      warnings: [],
      commands: [
        { type: 'file_edit', action: 'create', target: 'src/a.js', content: 'x' },
        { type: 'file_edit', action: 'rename', target: 'a', metadata: { destination: 'b' } },
        { type: 'shell_command', action: 'run', content: 'npm test', env: { CI: '1' }, workdir: 'pkg' },
        { type: 'git_operation', action: 'add', target: '.' },
      ],
    });
  });

  it('invalid JSON is an error naming the position', () => {
    const error = (() => {
      try {
        parsePatch('[{"type": "file_edit",, }]');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(PatchParseError);
    expect((error as PatchParseError).message).toMatch(/invalid JSON patch at position \d+/);
    expect(() => parsePatch('[{"type":"file_edit","action":"explode","target":"a"}]')).toThrow(
      /command 0: unknown file_edit action "explode"/,
    );
  });

  it('Markdown: lang:path blocks write files, bash/sh blocks run, in order; unknown blocks warn', () => {
    const md = [
      'Here is the change:',
      '```js:src/add.js',
      'export const add = (a, b) => a + b;',
      '```',
      '```python',
      'print(1)',
      '```',
      '```sh',
      'npm test',
      '```',
      '',
    ].join('\n');
    expect(parsePatch(md)).toEqual({
      format: 'markdown',
      commands: [
        { type: 'file_edit', action: 'create', target: 'src/add.js', content: 'export const add = (a, b) => a + b;\n' },
        { type: 'shell_command', action: 'run', content: 'npm test' },
      ],
      warnings: ['block at line 5 ("python") is neither lang:path, a diff nor a shell block; skipped'],
    });
  });

  it('unified diff: one command with every path it touches; empty patch: no commands', () => {
    const diff = [
      'diff --git a/src/x.js b/src/x.js',
      '--- a/src/x.js',
      '+++ b/src/x.js',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      '',
    ].join('\n');
    expect(parsePatch(diff)).toMatchObject({ format: 'diff', commands: [{ type: 'diff', paths: ['src/x.js'] }] });
    expect(parsePatch('  \n')).toEqual({ format: 'empty', commands: [], warnings: [] });
  });

  it('never throws anything but PatchParseError, whatever the input (property)', () => {
    const anything = fc.oneof(
      fc.string(),
      fc.json(),
      fc.anything(),
      fc
        .array(
          fc.record({
            type: fc.constantFrom('file_edit', 'shell_command', 'git_operation', 'x'),
            action: fc.string(),
            target: fc.oneof(fc.string(), fc.integer()),
            content: fc.anything(),
          }),
          { maxLength: 5 },
        )
        .map((a) => JSON.stringify(a)),
      fc
        .array(fc.tuple(fc.constantFrom('```', '~~~', '````'), fc.string(), fc.string()), { maxLength: 4 })
        .map((blocks) => blocks.map(([f, info, body]) => `${f}${info}\n${body}\n${f}`).join('\n')),
    );
    fc.assert(
      fc.property(anything, (input) => {
        try {
          parsePatch(input);
        } catch (error) {
          if (!(error instanceof PatchParseError)) throw error;
        }
      }),
      { numRuns: 10_000 },
    );
  });
});

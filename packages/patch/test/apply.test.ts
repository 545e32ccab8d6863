import { readdirSync, readFileSync } from 'node:fs';
import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { applyPatch, type PatchCommand } from '../src/index.js';

/**
 * Every file under `dir` with its content, to compare before and after. Synchronous on
 * purpose: the property test takes 20,000 of them, and on a loaded machine each awaited
 * file operation waits for the scheduler, which made that one test run ten minutes.
 */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, prefix: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      const key = `${prefix}${entry.name}`;
      if (entry.isSymbolicLink()) out[key] = '<link>';
      else if (entry.isDirectory()) walk(path, `${key}/`);
      else out[key] = readFileSync(path, 'utf8');
    }
  };
  walk(dir, '');
  return out;
}

describe('applyPatch: file edits inside the workspace', () => {
  let tmp: TempDir;
  let ws: string;
  let outside: string;
  beforeAll(async () => {
    tmp = await createTempDir('patch');
    ws = join(tmp.path, 'ws');
    outside = join(tmp.path, 'outside');
    await mkdir(join(ws, '.git', 'hooks'), { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'secret.txt'), 'secret\n');
    await writeFile(join(ws, 'README.md'), '# r\n');
    // Planted links: to a directory outside, to a file outside, into .git.
    await symlink(outside, join(ws, 'escape'));
    await symlink(join(outside, 'secret.txt'), join(ws, 'linked-secret'));
    await symlink(join(ws, '.git'), join(ws, 'gitdir'));
  });
  afterAll(async () => {
    await tmp.dispose();
  });

  it('creates, appends, renames, copies and deletes; the summary counts them', async () => {
    const commands: PatchCommand[] = [
      { type: 'file_edit', action: 'create', target: 'src/a.txt', content: 'a\n' },
      { type: 'file_edit', action: 'append', target: 'src/a.txt', content: 'b\n' },
      { type: 'file_edit', action: 'copy', target: 'src/a.txt', metadata: { destination: 'src/c.txt' } },
      { type: 'file_edit', action: 'rename', target: 'src/c.txt', metadata: { destination: 'lib/d.txt' } },
      { type: 'file_edit', action: 'update', target: 'missing.txt', content: 'x' },
      { type: 'file_edit', action: 'mkdir', target: 'empty/dir' },
    ];
    const result = await applyPatch(commands, { root: ws });
    expect(result.summary).toBe('executed 6, succeeded 5, failed 1');
    expect(await readFile(join(ws, 'src/a.txt'), 'utf8')).toBe('a\nb\n');
    expect(await readFile(join(ws, 'lib/d.txt'), 'utf8')).toBe('a\nb\n');
    expect((await lstat(join(ws, 'empty/dir'))).isDirectory()).toBe(true);
  });

  it('refuses hostile paths in every field, protected files, and symlink escapes, with reasons', async () => {
    const hostile: PatchCommand[] = [
      { type: 'file_edit', action: 'create', target: '../outside/x', content: 'x' },
      { type: 'file_edit', action: 'create', target: '/etc/passwd', content: 'x' },
      { type: 'file_edit', action: 'create', target: '.git/hooks/pre-commit', content: 'x' },
      { type: 'file_edit', action: 'create', target: 'escape/planted.txt', content: 'x' },
      { type: 'file_edit', action: 'update', target: 'linked-secret', content: 'x' },
      { type: 'file_edit', action: 'create', target: 'gitdir/hooks/post-checkout', content: 'x' },
      { type: 'file_edit', action: 'rename', target: 'README.md', metadata: { destination: '../moved.md' } },
      { type: 'file_edit', action: 'copy', target: 'linked-secret', metadata: { destination: 'leak.txt' } },
      { type: 'file_edit', action: 'create', target: '.env.production', content: 'KEY=x' },
    ];
    const before = snapshot(tmp.path);
    const result = await applyPatch(hostile, { root: ws });
    expect(result.failed).toBe(hostile.length);
    expect(result.results.every((r) => typeof r.error === 'string' && r.error.length > 0)).toBe(true);
    expect(snapshot(tmp.path)).toEqual(before);
  });

  it('dry-run plans and writes nothing; stop-on-error stops at the first failure', async () => {
    const before = snapshot(ws);
    const plan = await applyPatch([{ type: 'file_edit', action: 'create', target: 'new.txt', content: 'x' }], {
      root: ws,
      dryRun: true,
    });
    expect(plan.results[0]?.status).toBe('planned');
    expect(snapshot(ws)).toEqual(before);
    const stopped = await applyPatch(
      [
        { type: 'file_edit', action: 'create', target: '../x', content: 'x' },
        { type: 'file_edit', action: 'create', target: 'after.txt', content: 'x' },
      ],
      { root: ws, onError: 'stop' },
    );
    expect(stopped.results).toHaveLength(1);
    expect(snapshot(ws)).toEqual(before);
  });

  // 10 000 generated patches in ten parts of 1 000: each part has a timeout to itself, so a
  // loaded machine that gives this process a sliver of a core still finishes each one. At
  // load 40, with fork bombs beside it, a part took over 300 s (20–40 s on a quiet machine):
  // each part's 15 minutes only catch a hang.
  it.each(Array.from({ length: 10 }, (_, i) => i + 1))(
    'property (part %i of 10): 1 000 generated patches never write outside the workspace or into .git',
    async () => {
      const segment = fc.constantFrom(
        '..',
        '.',
        '.git',
        '.GIT',
        'escape',
        'gitdir',
        'linked-secret',
        'src',
        'a',
        'b.txt',
        '',
        '/',
        '~',
        'C:',
        '..\\..',
      );
      const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => parts.join('/'));
      const command: fc.Arbitrary<PatchCommand> = fc.record({
        type: fc.constant('file_edit' as const),
        action: fc.constantFrom('create', 'update', 'append', 'delete', 'rename', 'copy', 'mkdir'),
        target: fc.oneof(path, fc.string()),
        content: fc.string({ maxLength: 5 }),
        metadata: fc.record({ destination: fc.oneof(path, fc.string()) }),
      });
      const before = snapshot(outside);
      const gitBefore = snapshot(join(ws, '.git'));
      await fc.assert(
        fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 3 }), async (commands) => {
          await applyPatch(commands, { root: ws });
          expect(snapshot(outside)).toEqual(before);
          expect(snapshot(join(ws, '.git'))).toEqual(gitBefore);
        }),
        { numRuns: 1_000 },
      );
    },
    900_000,
  );
});

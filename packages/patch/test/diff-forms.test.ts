/**
 * Diffs as git and diff tools write them, applied for real in temporary repositories:
 * renames and mode changes without ---/+++ lines, binary patches, bytes that are not UTF-8,
 * names without prefixes, a work tree with uncommitted changes, a 3-way merge that fails,
 * and dry runs. Each expects the exact files a plain `git apply` of the same diff writes.
 */
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { createTempRepo, git, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch, patchSucceeded, type ApplyOptions } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
const text = (edit: (l: string, i: number) => string = (l) => l) => `${lines.map(edit).join('\n')}\n`;

/** `git <args>` in `cwd`, stdout as bytes (a diff of non-UTF-8 files must stay as it is). */
const gitBytes = async (cwd: string, args: string[]) =>
  Buffer.from(
    (await execa('git', args, { cwd, env, encoding: 'buffer', stdin: 'ignore', stripFinalNewline: false })).stdout,
  );

describe('diff forms', () => {
  let repo: TempRepo;
  beforeEach(async () => {
    repo = await createTempRepo({ files: { 'src/a.txt': text(), 'run.sh': 'echo hi\n', 'notes.txt': 'n\n' } });
    await writeFile(join(repo.path, 'img.bin'), Buffer.from([0, 1, 2, 3, 255, 254, 0, 10]));
    await writeFile(join(repo.path, 'latin1.txt'), Buffer.from('caf\xe9\n', 'latin1'));
    await git(repo.path, ['add', '--all']);
    await git(repo.path, ['commit', '--quiet', '-m', 'binary and latin1']);
  });
  afterEach(async () => {
    await repo.dispose();
  });

  /** The diff `change` makes (staged, `git diff --cached <args>`), with the work tree then put back. */
  async function diffOf(change: () => Promise<void>, args: string[] = ['--binary', '-M']): Promise<Buffer> {
    await change();
    await git(repo.path, ['add', '--all']);
    const diff = await gitBytes(repo.path, ['diff', '--cached', ...args]);
    await git(repo.path, ['reset', '--quiet', '--hard']);
    await git(repo.path, ['clean', '-fdq']);
    return diff;
  }
  const apply = async (patch: string | Buffer, options: Partial<ApplyOptions> = {}) => {
    const parsed = parsePatch(patch);
    const result = await applyPatch(parsed.commands, { root: repo.path, env, ...options });
    return { parsed, result, ok: patchSucceeded(parsed, result) };
  };
  // A reply that is only the block, and a word after it.
  const fenced = (diff: Buffer) => `\`\`\`diff\n${diff.toString('utf8')}\`\`\`\nThat is the whole change.\n`;

  it('a pure rename, a mode change and a GIT binary patch alone apply from a ```diff block of a reply', async () => {
    const rename = await diffOf(() => git(repo.path, ['mv', 'notes.txt', 'docs.txt']).then(() => undefined));
    const mode = await diffOf(() => chmod(join(repo.path, 'run.sh'), 0o755));
    const binary = await diffOf(() => writeFile(join(repo.path, 'img.bin'), Buffer.from([9, 9, 0, 255])));
    expect(rename.toString()).not.toMatch(/^\+\+\+/m);
    for (const patch of [fenced(rename), fenced(mode), fenced(binary)]) expect((await apply(patch)).ok).toBe(true);
    expect(await readFile(join(repo.path, 'docs.txt'), 'utf8')).toBe('n\n');
    expect((await stat(join(repo.path, 'run.sh'))).mode & 0o777).toBe(0o755);
    expect([...(await readFile(join(repo.path, 'img.bin')))]).toEqual([9, 9, 0, 255]);
  });

  it('a binary patch next to a text change, in a reply, is checked like any path: a protected one refused', async () => {
    const diff = await diffOf(async () => {
      await writeFile(
        join(repo.path, 'src/a.txt'),
        text((l, i) => (i === 0 ? 'one' : l)),
      );
      await writeFile(join(repo.path, 'deploy.key'), Buffer.from([0, 1, 2, 0, 3]));
    });
    const { result, ok } = await apply(fenced(diff));
    expect(ok).toBe(false);
    expect(result.results[0]?.error).toMatch(/protected file deploy\.key/);
    expect(await readFile(join(repo.path, 'src/a.txt'), 'utf8')).toBe(text());
  });

  it('"Binary files differ" has no data: refused for what it is, and nothing else of the diff is applied', async () => {
    const diff = await diffOf(async () => {
      await writeFile(
        join(repo.path, 'src/a.txt'),
        text((l, i) => (i === 0 ? 'one' : l)),
      );
      await writeFile(join(repo.path, 'img.bin'), Buffer.from([7, 0, 7]));
    }, []);
    expect(diff.toString()).toMatch(/^Binary files a\/img\.bin and b\/img\.bin differ$/m);
    const { result, ok } = await apply(diff);
    expect(ok).toBe(false);
    expect(result.results[0]?.error).toMatch(/change without its data \("Binary files \.\.\. differ"\) for img\.bin: /);
    expect(result.results[0]?.error).not.toMatch(/Applied patch|cleanly/);
    expect(await readFile(join(repo.path, 'src/a.txt'), 'utf8')).toBe(text());
  });

  it('diff -r: a binary file or a file that became a directory, which git would skip as prose, fails the diff', async () => {
    const hunk = [
      'diff -ruN a/src/a.txt b/src/a.txt',
      '--- a/src/a.txt\t2024-01-01 00:00:00.000000000 +0000',
      '+++ b/src/a.txt\t2024-01-01 00:00:01.000000000 +0000',
      '@@ -1,3 +1,3 @@',
      '-line 1',
      '+one',
      ' line 2',
      ' line 3',
    ];
    for (const line of [
      'Binary files a/img.bin and b/img.bin differ',
      'File a/notes.txt is a regular file while file b/notes.txt is a directory',
    ]) {
      const { result, ok } = await apply([...hunk, line, ''].join('\n'));
      expect(ok).toBe(false);
      expect(result.results[0]?.error).toMatch(/without its data .* for b\/(img\.bin|notes\.txt): /);
    }
    expect(await readFile(join(repo.path, 'src/a.txt'), 'utf8')).toBe(text());
  });

  it('bytes, not text: a diff of a latin1 file applies byte for byte', async () => {
    const diff = await diffOf(() =>
      writeFile(join(repo.path, 'latin1.txt'), Buffer.from('caf\xe8 cr\xe8me\n', 'latin1')),
    );
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(diff)).toThrow();
    expect((await apply(diff)).ok).toBe(true);
    expect(await readFile(join(repo.path, 'latin1.txt'))).toEqual(Buffer.from('caf\xe8 cr\xe8me\n', 'latin1'));
  });

  it('names without a/ b/ prefixes are paths from the root: a new nested file lands where it was meant to', async () => {
    const diff = await diffOf(async () => {
      await writeFile(
        join(repo.path, 'src/a.txt'),
        text((l, i) => (i === 0 ? 'one' : l)),
      );
      await execa('mkdir', ['-p', join(repo.path, 'src/lib')]);
      await writeFile(join(repo.path, 'src/lib/new.txt'), 'new\n');
    }, ['--no-prefix']);
    expect(diff.toString()).toMatch(/^\+\+\+ src\/lib\/new\.txt$/m);
    const { result, ok } = await apply(diff);
    expect(ok).toBe(true);
    expect(result.results[0]?.notes).toEqual([expect.stringMatching(/-p0/)]);
    expect(await readFile(join(repo.path, 'src/lib/new.txt'), 'utf8')).toBe('new\n');
    expect(await git(repo.path, ['status', '--porcelain'])).toBe('M src/a.txt\n?? src/lib/');
  });

  it('a diff against a file with uncommitted changes applies, merged 3-way; the index is left alone', async () => {
    // Made against the committed file; line 3 then changes in the work tree, uncommitted.
    const diff = await diffOf(
      () =>
        writeFile(
          join(repo.path, 'src/a.txt'),
          text((l, i) => (i === 7 ? 'eight' : l)),
        ),
      ['--full-index'],
    );
    await writeFile(
      join(repo.path, 'src/a.txt'),
      text((l, i) => (i === 4 ? 'five' : l)),
    );
    const index = await git(repo.path, ['ls-files', '--stage']);
    const { result, ok } = await apply(diff);
    expect(ok).toBe(true);
    expect(result.results[0]?.notes).toEqual([expect.stringMatching(/^merged 3-way/)]);
    expect(await readFile(join(repo.path, 'src/a.txt'), 'utf8')).toBe(
      text((l, i) => (i === 4 ? 'five' : i === 7 ? 'eight' : l)),
    );
    expect(await git(repo.path, ['ls-files', '--stage'])).toBe(index);
  });

  it('a 3-way merge that conflicts leaves every file exactly as it was', async () => {
    const diff = await diffOf(
      () =>
        writeFile(
          join(repo.path, 'src/a.txt'),
          text((l, i) => (i === 7 ? 'eight' : l)),
        ),
      ['--full-index'],
    );
    // The line next to the change differs now: no reduced context can apply it, and a merge conflicts.
    await writeFile(
      join(repo.path, 'src/a.txt'),
      text((l, i) => (i === 6 ? 'seven' : l)),
    );
    const before = await readFile(join(repo.path, 'src/a.txt'));
    const index = await git(repo.path, ['ls-files', '--stage']);
    const { result, ok } = await apply(diff);
    expect(ok).toBe(false);
    expect(result.results[0]?.error).toMatch(
      /does not apply: patch failed: src\/a\.txt.*nor by a 3-way merge \(it had conflicts\), nor with reduced context/,
    );
    expect(await readFile(join(repo.path, 'src/a.txt'))).toEqual(before);
    expect(await git(repo.path, ['ls-files', '--stage'])).toBe(index);
    expect(await git(repo.path, ['status', '--porcelain'])).toBe('M src/a.txt');
  });

  it('--dry-run checks that a diff applies, and writes nothing', async () => {
    const good = await diffOf(() =>
      writeFile(
        join(repo.path, 'src/a.txt'),
        text((l, i) => (i === 0 ? 'one' : l)),
      ),
    );
    const bad = Buffer.from(good.toString().replace('-line 1', '-line one'));
    const planned = await apply(good, { dryRun: true });
    expect(planned.result.results.map((r) => r.status)).toEqual(['planned']);
    const refused = await apply(bad, { dryRun: true });
    expect(refused.result.results[0]).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/does not apply/),
    });
    expect(await readFile(join(repo.path, 'src/a.txt'), 'utf8')).toBe(text());
    expect(await git(repo.path, ['status', '--porcelain'])).toBe('');
  });
});

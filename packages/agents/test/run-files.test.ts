import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { writeRunFiles } from '../src/index.js';

describe('writeRunFiles', () => {
  const dirs: TempDir[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await dir.dispose();
  });
  const tempDir = async () => {
    const dir = await createTempDir('agents-files');
    dirs.push(dir);
    return dir.path;
  };

  it('writes the prompt verbatim and an empty feedback file on a first attempt', async () => {
    const workdir = await tempDir();
    const prompt = 'Ünïcode, "quotes", $(subshell) and `ticks`\n\n- [ ] criterion\n';
    const files = await writeRunFiles({ workdir, prompt, pass: 'implement', attempt: 1 });
    expect(files).toEqual({
      promptFile: join(workdir, '.codefleet/prompt-implement-1.md'),
      feedbackFile: join(workdir, '.codefleet/feedback-implement-1.md'),
    });
    expect(await readFile(files.promptFile, 'utf8')).toBe(prompt);
    expect(await readFile(files.feedbackFile, 'utf8')).toBe('');
  });

  it('refuses a .codefleet that is a symlink planted by the repository', async () => {
    const workdir = await tempDir();
    const elsewhere = await tempDir();
    await symlink(elsewhere, join(workdir, '.codefleet'));
    await expect(writeRunFiles({ workdir, prompt: 'p', pass: 'test', attempt: 2 })).rejects.toMatchObject({
      code: 'workspace_failed',
    });
    expect(existsSync(join(elsewhere, 'prompt-test-2.md'))).toBe(false);
  });

  it('replaces a planted symlink at the prompt path instead of writing through it', async () => {
    const workdir = await tempDir();
    const victim = join(await tempDir(), 'victim.txt');
    await writeFile(victim, 'keep me');
    await mkdir(join(workdir, '.codefleet'));
    await symlink(victim, join(workdir, '.codefleet/prompt-implement-1.md'));
    const files = await writeRunFiles({ workdir, prompt: 'new prompt', pass: 'implement', attempt: 1 });
    expect(await readFile(victim, 'utf8')).toBe('keep me');
    expect(await readFile(files.promptFile, 'utf8')).toBe('new prompt');
  });
});

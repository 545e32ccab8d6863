import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import type { Workspace } from '../src/index.js';
import { createFixture, exists, sampleFiles, type Fixture } from './helpers.js';

const author = { name: 'codefleet bot', email: 'bot@codefleet.invalid' };

// The next escalation tier starts from the base: whatever the earlier agent left (edits,
// new files, even a commit of its own) is gone; codefleet's context and warm dependencies stay.
describe('resetToStart', () => {
  let fixture: Fixture | undefined;
  let ws: Workspace | undefined;
  afterEach(async () => {
    await ws?.release();
    await fixture?.dispose();
    ws = undefined;
    fixture = undefined;
  });

  it.each([true, false])('puts the copy back at its start (reuse %s)', async (reuse) => {
    fixture = await createFixture(sampleFiles, reuse);
    ws = await fixture.manager.prepare({
      jobId: 'job-reset',
      repoUrl: fixture.origin.path,
      branch: 'ai/reset-00000001',
      context: { '.codefleet/task.md': '# Task\n', 'AGENTS.md': '# agents\n' },
    });
    await writeFile(join(ws.dir, 'src/index.js'), 'export const answer = 43;\n');
    await ws.commit('an earlier tier committed', author);
    await writeFile(join(ws.dir, 'src/util.js'), 'broken (\n');
    await mkdir(join(ws.dir, 'src/new'), { recursive: true });
    await writeFile(join(ws.dir, 'src/new/file.js'), 'new\n');
    await writeFile(join(ws.dir, '.codefleet/prompt-implement-1.md'), 'the prompt\n');
    await mkdir(join(ws.dir, 'node_modules/dep'), { recursive: true });
    await writeFile(join(ws.dir, 'node_modules/dep/index.js'), 'dep\n');
    expect(await ws.changedFiles()).toEqual(['src/index.js', 'src/new/file.js', 'src/util.js']);

    await ws.resetToStart();

    expect(await git(ws.dir, ['rev-parse', 'HEAD'])).toBe(ws.startSha);
    expect(await git(ws.dir, ['branch', '--show-current'])).toBe('ai/reset-00000001');
    expect(await ws.changedFiles()).toEqual([]);
    expect(await readFile(join(ws.dir, 'src/index.js'), 'utf8')).toBe(sampleFiles['src/index.js']);
    expect(await exists(join(ws.dir, 'src/new'))).toBe(false);
    for (const kept of [
      '.codefleet/task.md',
      '.codefleet/prompt-implement-1.md',
      'AGENTS.md',
      'node_modules/dep/index.js',
    ]) {
      expect(await exists(join(ws.dir, kept))).toBe(true);
    }
    // The next tier's work commits on the start, not on the earlier tier's commit.
    await writeFile(join(ws.dir, 'src/util.js'), 'export const twice = (x) => x + x;\n');
    await ws.commit('the next tier', author);
    expect(await git(ws.dir, ['rev-parse', 'HEAD~1'])).toBe(ws.startSha);
  });
});

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { historyDir } from '../src/history.js';
import { createFixture, exists, sampleFiles, type Fixture } from './helpers.js';

// A job pinned to a commit (`baseCommit`) starts there, and its runs read an object store of
// their own with that commit's history only. The pipeline's pinned-base test probes the same
// from inside the sandbox.
describe('prepare with a pinned base commit', () => {
  let fixture: Fixture | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it.each([true, false])(
    'starts at a commit no branch reaches (fetched by its id); its runs see its history only (reuse %s)',
    async (reuse) => {
      fixture = await createFixture(sampleFiles, reuse);
      const { origin, manager } = fixture;
      const first = await origin.git(['rev-parse', 'HEAD']);
      // The pinned commit, on a branch deleted since (a merged pull request's head).
      await origin.git(['checkout', '--quiet', '-b', 'gone']);
      const pinned = await origin.commit({ 'src/index.js': 'export const answer = 41;\n' }, 'the pinned state');
      await origin.git(['checkout', '--quiet', 'main']);
      await origin.git(['branch', '--quiet', '-D', 'gone']);
      const later = await origin.commit({ 'src/index.js': 'export const answer = 43;\n' }, 'later on main');

      const ws = await manager.prepare({
        jobId: 'pinned',
        repoUrl: origin.path,
        branch: 'ai/pinned',
        baseCommit: pinned,
      });
      try {
        expect([ws.baseBranch, ws.baseSha, ws.startSha]).toEqual(['main', pinned, pinned]);
        expect(await readFile(join(ws.dir, 'src/index.js'), 'utf8')).toBe('export const answer = 41;\n');
        const view = await ws.agentView();
        const objects = join(historyDir(ws.dir), 'objects');
        expect(view.mounts.filter((m) => m.target.endsWith('objects'))).toEqual([
          { source: objects, target: objects, writable: false },
        ]);
        const stored = await git(historyDir(ws.dir), ['cat-file', '--batch-all-objects', '--batch-check']);
        expect(stored).toContain(pinned);
        expect(stored).toContain(first);
        expect(stored).not.toContain(later);
      } finally {
        await ws.release();
      }
      expect(await exists(historyDir(ws.dir))).toBe(false);
    },
  );

  it('refuses a commit id that is not a full one, naming the field', async () => {
    fixture = await createFixture(sampleFiles, true);
    await expect(
      fixture.manager.prepare({ jobId: 'j', repoUrl: fixture.origin.path, branch: 'ai/j', baseCommit: 'abc123' }),
    ).rejects.toThrow(/invalid baseCommit: expected a full commit id/);
  });
});

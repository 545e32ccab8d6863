import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, startFixture } from '@codefleet/testkit';
import { mirrorPaths } from '../src/mirror.js';
import { sampleFiles, testGitEnv } from './helpers.js';

// Imports ../../dist/index.js: the package is built before its tests run.
const script = fileURLToPath(new URL('./fixtures/prepare-jobs.mjs', import.meta.url));

interface JobLine {
  jobId: string;
  dir: string;
  branch: string;
  sha: string;
  changed: string[];
  heldFrom: number;
  heldTo: number;
}

describe('several processes on one cache', () => {
  it('create, fetch and use one mirror concurrently without corrupting it', async () => {
    const origin = await createTempRepo({ files: sampleFiles });
    const cache = await createTempDir('ws-multi');
    try {
      const run = (jobs: string[]) =>
        startFixture(script, [
          JSON.stringify({ cacheDir: cache.path, repoUrl: origin.path, gitEnv: testGitEnv(), jobs }),
        ]);
      // Both start on an empty cache, so both race to create the mirror as well.
      const processes = [run(['p1-a', 'p1-b', 'p1-c']), run(['p2-a', 'p2-b', 'p2-c'])];
      const exits = await Promise.all(processes.map((p) => p.exited));
      // The stderr is part of the comparison so a failure shows why the process failed.
      for (const [i, exit] of exits.entries())
        expect({ exitCode: exit.exitCode, stderr: exit.exitCode === 0 ? '' : processes[i]?.stderr }).toEqual({
          exitCode: 0,
          stderr: '',
        });

      const results = processes.flatMap((p) =>
        p.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as JobLine),
      );
      expect(results).toHaveLength(6);
      const mirror = mirrorPaths(cache.path, origin.path).dir;
      for (const result of results) {
        expect(result.changed).toEqual([`${result.jobId}.txt`]);
        expect(result.sha).toMatch(/^[0-9a-f]{40}$/);
        expect(await git(mirror, ['rev-parse', `refs/heads/${result.branch}`])).toBe(result.sha);
        expect(await git(mirror, ['show', '--name-only', '--format=', result.sha])).toBe(`${result.jobId}.txt`);
      }
      // A slot is never held by two jobs at the same time (its lock is taken before the
      // job's `heldFrom` and freed after its `heldTo`).
      for (const a of results) {
        for (const b of results) {
          if (a !== b && a.dir === b.dir) expect(a.heldTo <= b.heldFrom || b.heldTo <= a.heldFrom).toBe(true);
        }
      }
      expect(new Set(results.map((r) => r.dir)).size).toBeGreaterThan(1);
      await git(mirror, ['fsck', '--no-dangling', '--no-progress']);
      // Git knows exactly the mirror itself and the pool slots.
      const worktrees = (await git(mirror, ['worktree', 'list', '--porcelain'])).match(/^worktree /gm)?.length;
      expect(worktrees).toBe(new Set(results.map((r) => r.dir)).size + 1);
    } finally {
      await cache.dispose();
      await origin.dispose();
    }
  });
});

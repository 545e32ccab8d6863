import { spawnSync } from 'node:child_process';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { createWorkspaceManager } from '../src/index.js';
import { mirrorPaths } from '../src/mirror.js';
import { poolDir } from '../src/pool.js';
import { createFixture, exists, sampleFiles, testGitEnv, type Fixture } from './helpers.js';

describe('sweep', () => {
  let fixture: Fixture | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it('removes the copy of a job that is not running any more, and only that one', async () => {
    fixture = await createFixture(sampleFiles, false);
    const { origin, cache, manager } = fixture;
    const abandoned = await manager.prepare({
      jobId: 'job-gone',
      repoUrl: origin.path,
      branch: 'ai/gone-00000001',
      scope: { read: ['docs/'] },
    });
    const running = await manager.prepare({ jobId: 'job-live', repoUrl: origin.path, branch: 'ai/live-00000002' });
    const mirror = mirrorPaths(cache.path, origin.path).dir;
    expect(await git(mirror, ['worktree', 'list'])).toContain(abandoned.dir);

    const result = await manager.sweep((jobId) => jobId === 'job-live');
    expect(result.removed).toEqual([abandoned.dir]);
    expect(await exists(abandoned.dir)).toBe(false);
    expect(await exists(running.dir)).toBe(true);
    expect(await git(mirror, ['worktree', 'list'])).not.toContain(abandoned.dir);

    // The abandoned job's own late release is harmless.
    await abandoned.release();
    expect(await exists(running.dir)).toBe(true);
    await running.release();
    expect(await exists(running.dir)).toBe(false);
    expect((await manager.sweep(() => false)).removed).toEqual([]);
  });

  it('deletes old leftovers of killed processes (lock and guard temp files, a mirror clone whose process is gone), never fresh ones or a live clone', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { origin, cache, manager } = fixture;
    const copy = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    await copy.release();
    const pool = poolDir(cache.path, mirrorPaths(cache.path, origin.path).hash);
    const mirrors = join(cache.path, 'mirrors');
    const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
    const old = new Date(Date.now() - 60 * 60_000);
    const leftovers = {
      oldLockTemp: join(pool, 'slot-0.lock.3f2a9c1e-0d4b-4b8e-9d8e-1a2b3c4d5e6f.tmp'),
      oldGuardTemp: join(pool, 'slot-0.lock.takeover-4377b1631bf9c6a6.tmp'),
      freshLockTemp: join(pool, 'slot-1.lock.7c1d2e3f-aaaa-bbbb-cccc-1234567890ab.tmp'),
      deadClone: join(mirrors, `${'a'.repeat(40)}.git.tmp-${deadPid}`),
      liveClone: join(mirrors, `${'b'.repeat(40)}.git.tmp-${process.pid}`),
    };
    await writeFile(leftovers.oldLockTemp, '{}');
    await writeFile(leftovers.oldGuardTemp, 'host 1');
    await writeFile(leftovers.freshLockTemp, '{}');
    await mkdir(join(leftovers.deadClone, 'objects'), { recursive: true });
    await mkdir(leftovers.liveClone, { recursive: true });
    for (const path of [leftovers.oldLockTemp, leftovers.oldGuardTemp, leftovers.deadClone, leftovers.liveClone])
      await utimes(path, old, old);

    await manager.sweep(() => false);
    expect(await exists(leftovers.oldLockTemp)).toBe(false);
    expect(await exists(leftovers.oldGuardTemp)).toBe(false);
    expect(await exists(leftovers.deadClone)).toBe(false);
    expect(await exists(leftovers.freshLockTemp)).toBe(true);
    expect(await exists(leftovers.liveClone)).toBe(true);
    expect(await exists(copy.dir)).toBe(true);
  });

  it('releases an abandoned pool slot for the next job, keeping its directory', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { origin, manager } = fixture;
    const abandoned = await manager.prepare({ jobId: 'job-gone', repoUrl: origin.path, branch: 'ai/gone-00000001' });
    await writeFile(join(abandoned.dir, 'junk.txt'), 'left behind\n');
    expect(await manager.sweep(async () => false)).toEqual({ removed: [], released: [abandoned.dir] });
    expect(await exists(abandoned.dir)).toBe(true);
    const next = await manager.prepare({ jobId: 'job-next', repoUrl: origin.path, branch: 'ai/next-00000002' });
    expect(next.dir).toBe(abandoned.dir);
    expect(await exists(join(next.dir, 'junk.txt'))).toBe(false);
    await next.release();
  });

  it('leaves copies kept for inspection, and removes lockless leftovers of crashed prepares', async () => {
    fixture = await createFixture(sampleFiles, false);
    const { origin, cache, manager } = fixture;
    const kept = await manager.prepare({ jobId: 'job-failed', repoUrl: origin.path, branch: 'ai/failed-00000001' });
    await kept.release({ keep: true });
    const leftover = join(poolDir(cache.path, mirrorPaths(cache.path, origin.path).hash), 'job-0123456789ab');
    await mkdir(join(leftover, 'src'), { recursive: true });

    const result = await manager.sweep(() => false);
    expect(result.removed).toEqual([leftover]);
    expect(await exists(kept.dir)).toBe(true);
    expect(await exists(leftover)).toBe(false);

    // A retry of the failed job gets a new copy next to the kept one.
    const pooled = createWorkspaceManager({ cacheDir: cache.path, reuse: false, gitEnv: testGitEnv() });
    const retry = await pooled.prepare({ jobId: 'job-failed', repoUrl: origin.path, branch: 'ai/failed-00000001' });
    expect(retry.dir).toBe(`${kept.dir}-1`);
    await retry.release();
  });
});

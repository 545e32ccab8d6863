import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, git, type TempRepo } from '@codefleet/testkit';
import { mirrorPaths } from '../src/mirror.js';
import { poolDir } from '../src/pool.js';
import { createFixture, exists, sampleFiles, type Fixture } from './helpers.js';

// The cache limits (workspace.cache) on real mirrors and worktrees of real repositories.
const dayMs = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * dayMs);
const author = { name: 'Fleet', email: 'fleet@example.com' };

async function writeBaseline(file: string, ageDays: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, '{}\n');
  await utimes(file, daysAgo(ageDays), daysAgo(ageDays));
}

describe('cache limits', () => {
  let fixture: Fixture | undefined;
  let other: TempRepo | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    await other?.dispose();
    fixture = other = undefined;
  });

  it("a running job's mirror is never evicted; idle repositories go least recently used first, old slots and baselines alone", async () => {
    fixture = await createFixture(sampleFiles, true);
    other = await createTempRepo({ files: { 'README.md': '# other\n' } });
    const { origin, cache, manager } = fixture;
    const mirrorA = mirrorPaths(cache.path, origin.path);
    const mirrorB = mirrorPaths(cache.path, other.path);

    // A: a job runs (its copy is held). B: two jobs ran and released their copies.
    const running = await manager.prepare({ jobId: 'job-a', repoUrl: origin.path, branch: 'ai/a-00000001' });
    const [b1, b2] = await Promise.all(
      [1, 2].map((n) => manager.prepare({ jobId: `job-b${n}`, repoUrl: other!.path, branch: `ai/b-0000000${n}` })),
    );
    await writeBaseline(running.baselineFile('old'), 40);
    await writeBaseline(running.baselineFile('new'), 0);
    await writeBaseline(b1!.baselineFile('k'), 0);
    await b1!.release();
    await b2!.release();
    // Slot 1 of B was last prepared 40 days ago; slot 0 today.
    const slot1 = join(poolDir(cache.path, mirrorB.hash), 'slot-1');
    await utimes(`${slot1}.state.json`, daysAgo(40), daysAgo(40));

    // By age: A's old baseline and B's idle old slot go; A's running copy and new baseline stay.
    const aged = await manager.evict({ maxAgeMs: 30 * dayMs, graceMs: 0 });
    expect(aged).toMatchObject({ mirrors: [], pooledCopies: 1, baselines: 1 });
    expect(await exists(running.baselineFile('old'))).toBe(false);
    expect(await exists(running.baselineFile('new'))).toBe(true);
    expect(await exists(slot1)).toBe(false);
    expect(await exists(join(poolDir(cache.path, mirrorB.hash), 'slot-0'))).toBe(true);

    // By size (nothing may stay): B goes whole, A is in use and stays, and its job goes on.
    const sized = await manager.evict({ maxBytes: 0, graceMs: 0 });
    expect(sized.mirrors).toEqual([mirrorB.dir]);
    expect(sized.pooledCopies).toBe(1);
    expect(sized.bytes).toBeGreaterThan(0);
    for (const path of [mirrorB.dir, `${mirrorB.dir}.baselines`, poolDir(cache.path, mirrorB.hash)])
      expect(await exists(path)).toBe(false);
    expect(await exists(mirrorA.dir)).toBe(true);
    await writeFile(join(running.dir, 'added.txt'), 'more\n');
    expect(await running.commit('add a file', author)).toMatch(/^[0-9a-f]{40}$/);
    await running.release();

    // B comes back on its next job. Within the grace period nothing is evicted; A, unused for
    // 40 days, then goes by age while B, used now, stays.
    const again = await manager.prepare({ jobId: 'job-b3', repoUrl: other.path, branch: 'ai/b-00000003' });
    await again.release();
    expect((await manager.evict({ maxBytes: 0 })).mirrors).toEqual([]);
    await utimes(`${mirrorA.dir}.used`, daysAgo(40), daysAgo(40));
    expect((await manager.evict({ maxAgeMs: 30 * dayMs, graceMs: 0 })).mirrors).toEqual([mirrorA.dir]);
    expect(await exists(mirrorB.dir)).toBe(true);
    expect(await git(mirrorB.dir, ['worktree', 'list'])).toContain('slot-0');
  });
});

describe('mirror upkeep', () => {
  let fixture: Fixture | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it("deletes finished jobs' work branches, never a running job's, and packs the refs", async () => {
    fixture = await createFixture(sampleFiles, true);
    const { origin, cache, manager } = fixture;
    const mirror = mirrorPaths(cache.path, origin.path).dir;
    // Three jobs in turn on the same pool slot, each committing; then one still running.
    for (const n of [1, 2, 3]) {
      const ws = await manager.prepare({ jobId: `job-${n}`, repoUrl: origin.path, branch: `ai/done-0000000${n}` });
      await writeFile(join(ws.dir, `file-${n}.txt`), `${n}\n`);
      await ws.commit(`job ${n}`, author);
      await ws.release();
    }
    const running = await manager.prepare({ jobId: 'job-4', repoUrl: origin.path, branch: 'ai/running-00000004' });
    const branches = async () =>
      (await git(mirror, ['for-each-ref', '--format=%(refname)', 'refs/heads/'])).split('\n').filter(Boolean).sort();
    expect(await branches()).toHaveLength(4);

    expect(await manager.maintain()).toBe(3);
    expect(await branches()).toEqual(['refs/heads/ai/running-00000004']);
    expect(await exists(join(mirror, 'packed-refs'))).toBe(true);
    // Nothing left to delete; the running job still commits on its branch.
    expect(await manager.maintain()).toBe(0);
    await writeFile(join(running.dir, 'more.txt'), 'more\n');
    expect(await running.commit('more', author)).toMatch(/^[0-9a-f]{40}$/);
    await running.release();
  });
});

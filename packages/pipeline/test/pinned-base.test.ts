/**
 * A job pinned to a commit (`base_commit`: a task replayed from a repository's history, as an
 * evaluation does) starts from that commit, and its sandboxed runs see that commit's history
 * only. The mirror every other job shares holds the later fix and other jobs' branches; an
 * agent that could read them would find the answer it is asked for. The same probe in an
 * unpinned job finds both, so the pinned job's clean result is not a probe that sees nothing.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from '@jest/globals';
import type { Job } from '@codefleet/core';
import { git } from '@codefleet/testkit';
import { createHarness, implementsFeature, outcomeOf, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

/** A file of a mirror's object store, in a listing of the mirrors' directory. */
const mirrorObjectFiles = /^[0-9a-f]{40}\.git\/objects\/(pack\/|[0-9a-f]{2}\/)/m;

/** What the scripted agent found, in its first pass, with the git in its sandbox and on disk. */
interface Probe {
  head: string;
  objects: string;
  log: string;
  refs: string;
  fixFile: boolean;
  mirrorObjects: string;
}

/** The agent: probes, then implements two() so the job has a change to publish. */
function probingAgent(mirrorsDir: string): string {
  return `
const { execFileSync } = await import('node:child_process');
const run = (...a) => { try { return execFileSync('git', a, { cwd: workdir, encoding: 'utf8' }); } catch (e) { return 'failed: ' + e.message; } };
const walk = (dir) => { try { return fs.readdirSync(dir, { recursive: true }).join('\\n'); } catch (e) { return 'unreadable: ' + e.code; } };
if (pass === 'implement') {
  const probe = {
    head: run('rev-parse', 'HEAD').trim(),
    objects: run('cat-file', '--batch-all-objects', '--batch-check'),
    log: run('log', '--all', '--format=%H'),
    refs: run('for-each-ref', '--format=%(refname)'),
    fixFile: fs.existsSync(path.join(workdir, 'src', 'fix.js')),
    mirrorObjects: walk(${JSON.stringify(mirrorsDir)}),
  };
  fs.writeFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'probe.json'), JSON.stringify(probe));
}
${implementsFeature}`;
}

it('starts from the pinned commit; its agent finds no later commit and no other branch, in git or on disk', async () => {
  h = await createHarness();
  const harness = h;
  const base = await git(harness.origin, ['rev-parse', 'main']);
  // After the base: the fix on main, and another job's work branch, both on the remote.
  const work = join(harness.dir.path, 'work');
  await git(harness.dir.path, ['clone', '--quiet', harness.origin, work]);
  await writeFile(join(work, 'src', 'fix.js'), 'export const fixed = true;\n');
  await git(work, ['add', '--all']);
  await git(work, ['commit', '--quiet', '-m', 'the fix']);
  await git(work, ['push', '--quiet', 'origin', 'main']);
  await git(work, ['checkout', '--quiet', '-b', 'ai/another-job']);
  await writeFile(join(work, 'src', 'other.js'), 'export const other = true;\n');
  await git(work, ['add', '--all']);
  await git(work, ['commit', '--quiet', '-m', "another job's work"]);
  await git(work, ['push', '--quiet', 'origin', 'ai/another-job']);
  const fix = await git(work, ['rev-parse', 'main']);
  const other = await git(work, ['rev-parse', 'ai/another-job']);
  const mirrors = join(harness.dir.path, 'cache', 'mirrors');
  await harness.agent(probingAgent(mirrors));
  /** Runs `job` to success; what its agent found. */
  const probed = async (job: Job): Promise<Probe> => {
    await harness.drain(job);
    expect(outcomeOf(await harness.store.get(job.id))).toBe('succeeded');
    return JSON.parse(await readFile(join(harness.agentModule(), '..', 'probe.json'), 'utf8')) as Probe;
  };

  // Unpinned: the job starts at main's head, and the mirror's objects show everything.
  const seen = await probed(harness.job({ title: 'Add two()' }));
  expect(seen.head).toBe(fix);
  expect(seen.objects).toContain(other);
  expect(seen.mirrorObjects).toMatch(mirrorObjectFiles);

  // Pinned at the base: none of it.
  const pinned = harness.job({ title: 'Add two() again', base_commit: base });
  const found = await probed(pinned);
  expect(found.head).toBe(base);
  expect(found.fixFile).toBe(false);
  expect(found.objects).toContain(base);
  for (const later of [fix, other]) {
    expect(found.objects).not.toContain(later);
    expect(found.log).not.toContain(later);
  }
  expect(found.refs.trim().split('\n')).toEqual([expect.stringMatching(/^refs\/heads\/ai\//)]);
  // The mirror's path is there (its worktree directory is where the job's own git directory
  // is shown), its objects are not.
  expect(found.mirrorObjects).not.toMatch(mirrorObjectFiles);

  // Published on top of the pinned commit, for the base branch.
  const record = await harness.store.get(pinned.id);
  expect(await git(harness.origin, ['rev-parse', `${record?.branch ?? ''}~1`])).toBe(base);
  expect(record?.pull_request).toMatchObject({ base: 'main' });
});

it('a pinned commit the repository does not have fails the job at once, saying which', async () => {
  h = await createHarness();
  await h.agent(implementsFeature);
  const job = h.job({ title: 'Add two()', base_commit: 'f'.repeat(40) });
  await h.drain(job);
  const record = await h.store.get(job.id);
  expect(record).toMatchObject({
    outcome: 'failed',
    attempts: [
      {
        n: 1,
        error: {
          code: 'git_failed',
          message: `base commit ${'f'.repeat(40)} is not in the repository`,
          verdict: 'permanent',
        },
      },
    ],
  });
  expect(record?.attempts).toHaveLength(1);
});

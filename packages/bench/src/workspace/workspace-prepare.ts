/**
 * `npm run bench` (workspace): per-job working copy preparation on a large repository
 * (≥ 25 000 files, ≥ 300 MB tree) against a fresh `git clone` of the same repository, in
 * one run. Prints the medians and the ratio fresh clone / warm prepare; target ≥ 20×.
 *
 * Measured: a fresh `git clone` (median of 3); the first prepare (cold: the mirror is
 * created and a pool slot checked out); warm prepares of a reused slot (median of 5, each
 * after a job that modified files, added untracked files and installed "dependencies");
 * release times; and, for the worktree vs `clone --shared` decision, a fresh worktree per
 * job (reuse off) and a `clone --shared` of the mirror plus checkout. Every measurement
 * starts after `sync`, so none pays for the writeback of the one before.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '@codefleet/process';
import { createWorkspaceManager, type Workspace } from '@codefleet/workspace';
import { ensureBigRepo } from './big-repo.js';

const env: Record<string, string> = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: process.env.HOME ?? '/tmp',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@codefleet.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@codefleet.invalid',
  GIT_TERMINAL_PROMPT: '0',
};
const hour = 3_600_000;

async function git(args: string[], cwd: string): Promise<void> {
  const result = await runProcess(['git', ...args], { cwd, env, timeoutMs: hour });
  if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.outputTail}`);
}

/**
 * Flushes dirty pages before a measurement. Deleting or writing 350 MB leaves seconds of
 * writeback behind, and without this whichever step runs next pays for it (on the machine
 * this was written on, the same checkout took 2.7 s or 11 s depending on what ran before).
 */
async function settle(): Promise<void> {
  await runProcess(['sync'], { cwd: tmpdir(), env, timeoutMs: hour });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

const show = (ms: number) => (ms >= 1_000 ? `${(ms / 1_000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const line = (label: string, value: string) => console.log(`${label.padEnd(50)} ${value}`);

/** What an agent and a verify run leave behind: edits, new files, build output, dependencies. */
async function simulateJob(ws: Workspace, n: number): Promise<void> {
  for (let i = 0; i < 5; i += 1)
    await writeFile(join(ws.dir, `packages/pkg-${i}/src/module-0/file-${n}.ts`), `// edited by job ${n}\n`);
  for (let i = 0; i < 20; i += 1)
    await writeFile(join(ws.dir, `packages/pkg-${i}/src/new-${n}-${i}.ts`), `export const x = ${i};\n`);
  await mkdir(join(ws.dir, 'dist'), { recursive: true });
  await writeFile(join(ws.dir, 'dist/bundle.js'), 'x'.repeat(100_000));
  const deps = join(ws.dir, 'node_modules/some-dep');
  await mkdir(deps, { recursive: true });
  for (let i = 0; i < 200; i += 1) await writeFile(join(deps, `f${i}.js`), `module.exports = ${i};\n`);
}

const work = await mkdtemp(join(tmpdir(), 'codefleet-bench-ws-'));

try {
  // Generated in this run's temp dir, removed with it: a bench leaves nothing behind.
  const repo = await ensureBigRepo(env, join(work, 'bigrepo'));
  const url = `file://${repo.path}`;
  console.log(
    `repository: ${repo.files.toLocaleString('en-US')} files, ${(repo.treeBytes / 1e6).toFixed(0)} MB tree (${repo.path})`,
  );
  // 1. Fresh clones: what every job would pay without a mirror and a pool.
  const clones: number[] = [];
  const cloneRemovals: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const dir = join(work, `clone-${i}`);
    await settle();
    clones.push((await timed(() => git(['clone', '--quiet', url, dir], work))).ms);
    cloneRemovals.push((await timed(() => rm(dir, { recursive: true, force: true }))).ms);
  }

  // 2. Pooled working copies (reuse on).
  const cacheDir = join(work, 'cache');
  const pooled = createWorkspaceManager({ cacheDir, reuse: true, gitEnv: env, gitTimeoutMs: hour });
  const prepare = (manager: typeof pooled, n: number) =>
    manager.prepare({
      jobId: `job-${n}`,
      repoUrl: url,
      branch: `ai/bench-${n}`,
      context: { '.codefleet/task.md': `# job ${n}\n` },
    });
  await settle();
  const cold = await timed(() => prepare(pooled, 0));
  await simulateJob(cold.value, 0);
  const releases: number[] = [(await timed(() => cold.value.release())).ms];
  const warm: number[] = [];
  for (let n = 1; n <= 5; n += 1) {
    await settle();
    const prepared = await timed(() => prepare(pooled, n));
    if (prepared.value.dir !== cold.value.dir) throw new Error('the warm prepare did not reuse the pool slot');
    warm.push(prepared.ms);
    await simulateJob(prepared.value, n);
    releases.push((await timed(() => prepared.value.release())).ms);
  }

  // 3. A fresh copy per job, from the now warm mirror: a worktree (reuse off, what the
  // package does) and, interleaved so both see the same disk conditions, the alternative,
  // `clone --shared` of the mirror plus a checkout.
  const fresh = createWorkspaceManager({ cacheDir, reuse: false, gitEnv: env, gitTimeoutMs: hour });
  const mirrorDir = join(cacheDir, 'mirrors');
  const mirror = join(mirrorDir, (await readdir(mirrorDir)).find((name) => name.endsWith('.git')) ?? '');
  const freshPrepares: number[] = [];
  const freshReleases: number[] = [];
  const shared: number[] = [];
  for (let n = 0; n < 3; n += 1) {
    await settle();
    const prepared = await timed(() => prepare(fresh, 10 + n));
    freshPrepares.push(prepared.ms);
    freshReleases.push((await timed(() => prepared.value.release())).ms);
    const dir = join(work, `shared-${n}`);
    await settle();
    const cloned = await timed(async () => {
      await git(['clone', '--quiet', '--shared', '--no-checkout', mirror, dir], work);
      // The clone has no remote-tracking refs of the mirror; its objects are there (alternates).
      await git(['checkout', '--quiet', '-B', `ai/shared-${n}`, cold.value.baseSha], dir);
    });
    shared.push(cloned.ms);
    await rm(dir, { recursive: true, force: true });
  }

  const ratio = median(clones) / median(warm);
  console.log('');
  line('fresh git clone (median of 3)', `${show(median(clones))}   [${clones.map(show).join(', ')}]`);
  line('  rm -rf of a fresh clone (median of 3)', show(median(cloneRemovals)));
  line('first prepare, cold (mirror + new slot)', show(cold.ms));
  line('warm prepare, pooled slot (median of 5)', `${show(median(warm))}   [${warm.map(show).join(', ')}]`);
  line('release, pooled slot (median of 6)', show(median(releases)));
  line(
    'fresh worktree per job, reuse off (median of 3)',
    `${show(median(freshPrepares))}   [${freshPrepares.map(show).join(', ')}]`,
  );
  line('  its release: worktree removed (median of 3)', show(median(freshReleases)));
  line('clone --shared + checkout (median of 3)', `${show(median(shared))}   [${shared.map(show).join(', ')}]`);
  console.log('');
  line('ratio fresh clone / warm prepare', `${ratio.toFixed(1)}x (target >= 20x: ${ratio >= 20 ? 'met' : 'NOT met'})`);
} finally {
  await rm(work, { recursive: true, force: true });
}

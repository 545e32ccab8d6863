import { randomBytes } from 'node:crypto';
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import { join } from 'node:path';
import { isAlive } from '../host.js';

/**
 * Where the worker may make a cgroup per run: the kernel then bounds a run's processes and
 * memory at once, where the warden's watch (every 25 ms) can come too late for a fast fork
 * bomb on a worker running as root (the kernel never applies RLIMIT_NPROC to uid 0).
 * - cgroup v2: a delegated cgroup (systemd `Delegate=yes`) where the worker may create
 *   children with the `pids` (and `memory`) controllers enabled for them;
 * - cgroup v1: the worker's `pids` (and `memory`, when there) hierarchies, when writable.
 * Neither: none, and the warden and the per-process limits hold alone (said by `doctor`).
 */
export interface CgroupParent {
  version: 1 | 2;
  /** Directories new run cgroups are made in: one (v2), or one per v1 controller. */
  pids: string;
  memory?: string;
}

const root = '/sys/fs/cgroup';

/** The cgroup parent this process may use, if any. */
export async function findCgroupParent(selfCgroup?: string): Promise<CgroupParent | undefined> {
  const lines = (selfCgroup ?? (await readFile('/proc/self/cgroup', 'utf8').catch(() => ''))).split('\n');
  const pathOf = (controller: string) =>
    lines.map((line) => line.split(':')).find(([, controllers]) => controllers?.split(',').includes(controller))?.[2];
  const unified = lines
    .map((line) => line.split(':'))
    .find(([id, controllers]) => id === '0' && controllers === '')?.[2];
  const v1Pids = pathOf('pids');
  if (v1Pids !== undefined) {
    const pids = join(root, 'pids', v1Pids);
    if (!(await usable(pids))) return undefined;
    const v1Memory = pathOf('memory');
    const memory = v1Memory === undefined ? undefined : join(root, 'memory', v1Memory);
    return { version: 1, pids, ...(memory !== undefined && (await usable(memory)) ? { memory } : {}) };
  }
  if (unified === undefined) return undefined;
  // cgroup v2 lets no cgroup both hold processes and enable controllers for children: run
  // cgroups go in the worker's own cgroup when it delegates pids to children (the worker
  // runs elsewhere), else beside the worker, in its parent (systemd `Delegate=yes` with
  // `DelegateSubgroup=`, which starts the worker in a leaf of its delegated cgroup).
  for (const dir of [join(root, unified), join(root, unified, '..')]) {
    const enabled = (await readFile(join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => '')).split(/\s+/);
    if (enabled.includes('pids') && (await usable(dir)))
      return { version: 2, pids: dir, ...(enabled.includes('memory') ? { memory: dir } : {}) };
  }
  return undefined;
}

/** One run's cgroup(s): the files a process joins by writing its pid, and their removal. */
export interface RunCgroup {
  procs: string[];
  /** Tasks in the run now, and how many forks the kernel refused at `pids.max` so far. */
  pids(): Promise<{ current: number; refused: number }>;
  /** Processes the kernel's OOM killer ended at the run's memory limit so far. */
  oomKills(): Promise<number>;
  remove(): Promise<void>;
}

/** Makes a run's cgroup(s) under `parent`, bounded to `maxProcesses` tasks and `maxMemoryBytes`. */
export async function createRunCgroup(
  parent: CgroupParent,
  maxProcesses: number,
  maxMemoryBytes: number,
): Promise<RunCgroup> {
  const name = `codefleet-${process.pid}-${randomBytes(4).toString('hex')}`;
  const made: string[] = [];
  try {
    const pids = join(parent.pids, name);
    await mkdir(pids);
    made.push(pids);
    await writeFile(join(pids, 'pids.max'), String(maxProcesses));
    if (parent.memory !== undefined) {
      const memory = parent.version === 2 ? pids : join(parent.memory, name);
      if (memory !== pids) {
        await mkdir(memory);
        made.push(memory);
      }
      await writeFile(
        join(memory, parent.version === 2 ? 'memory.max' : 'memory.limit_in_bytes'),
        String(maxMemoryBytes),
      );
    }
    const read = async (file: string) => readFile(join(pids, file), 'utf8').catch(() => '');
    return {
      procs: made.map((dir) => join(dir, 'cgroup.procs')),
      pids: async () => ({
        current: Number((await read('pids.current')).trim()) || 0,
        refused: Number(/^max (\d+)/m.exec(await read('pids.events'))?.[1] ?? 0),
      }),
      oomKills: async () => {
        if (parent.memory === undefined) return 0;
        const memory = parent.version === 2 ? pids : join(parent.memory, name);
        const text = await readFile(
          join(memory, parent.version === 2 ? 'memory.events' : 'memory.oom_control'),
          'utf8',
        ).catch(() => '');
        return Number(/^oom_kill (\d+)/m.exec(text)?.[1] ?? 0);
      },
      remove: () => removeAll(made),
    };
  } catch (error) {
    await removeAll(made);
    throw error;
  }
}

/** Removes the run cgroups a killed worker left behind (named by a pid that is gone). */
export async function removeStaleCgroups(parent: CgroupParent): Promise<void> {
  for (const dir of new Set([parent.pids, ...(parent.memory === undefined ? [] : [parent.memory])])) {
    for (const name of await readdir(dir).catch(() => [])) {
      const pid = /^codefleet-(\d+)-/.exec(name)?.[1];
      if (pid !== undefined && !isAlive(Number(pid))) await rmdir(join(dir, name)).catch(() => undefined);
    }
  }
}

/**
 * The argv that starts `argv` inside the run's cgroup(s): a fixed shell script joins them
 * (its own pid, before bubblewrap forks anything) and execs; the paths are arguments.
 */
export function inCgroup(procs: readonly string[], argv: readonly string[]): string[] {
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return ['/bin/sh', '-c', script, 'codefleet-cgroup', ...procs, '--', ...argv];
}

async function usable(dir: string): Promise<boolean> {
  return access(dir, constants.W_OK).then(
    () => true,
    () => false,
  );
}

// A run's processes are gone when bubblewrap is (its PID namespace dies with it), but the
// kernel frees the cgroup a moment later: a few tries, then it is left for the next start.
async function removeAll(dirs: readonly string[]): Promise<void> {
  for (const dir of [...dirs].reverse()) {
    for (let tries = 0; tries < 20; tries += 1) {
      const done = await rmdir(dir).then(
        () => true,
        (error: NodeJS.ErrnoException) => error.code === 'ENOENT',
      );
      if (done) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

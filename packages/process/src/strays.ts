import { readdir, readFile } from 'node:fs/promises';

/**
 * The variable that marks every process a guarded run started: children inherit their
 * environment, including the ones that leave the run's process group (`setsid`, a
 * daemonizing double fork), which a group kill cannot reach.
 */
export const runMarkVariable = 'CODEFLEET_RUN_MARK';

/**
 * Kills (SIGKILL) every process of this user whose environment carries the run mark `mark`:
 * what an agent or a check left running outside its process group, which would otherwise
 * keep writing into a working copy the next job reuses. Linux only (`/proc/<pid>/environ`;
 * other users' processes are unreadable and skipped); elsewhere nothing is found. A
 * process that cleared its own environment is not found either. Two passes, for strays
 * that were still forking during the first. Resolves to the number killed.
 */
export async function killMarkedStrays(mark: string): Promise<number> {
  if (process.platform !== 'linux') return 0;
  const needle = Buffer.from(`${runMarkVariable}=${mark}\0`);
  // A process killed in the first pass can still be listed in the second (SIGKILL is not
  // instant): counted once.
  const killed = new Set<number>();
  for (let pass = 0; pass < 2; pass += 1) {
    const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name)).map(Number);
    const marked = await Promise.all(
      pids.map(async (pid) => {
        if (pid === process.pid) return false;
        const environ = await readFile(`/proc/${pid}/environ`).catch(() => undefined);
        return environ !== undefined && environ.includes(needle);
      }),
    );
    const found = pids.filter((_, i) => marked[i]);
    if (found.length === 0) break;
    for (const pid of found) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch {
        // Gone already.
      }
    }
  }
  return killed.size;
}

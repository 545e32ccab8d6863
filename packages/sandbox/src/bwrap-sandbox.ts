import { realpath } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { runProcess, type ProcessResult, type ResourceLimitHit } from '@codefleet/process';
import { bwrapArgs, type HiddenPath } from './bwrap.js';
import { existingRealPaths, isWithin, type SystemEntry } from './host.js';
import { openRunProxy } from './network/proxy.js';
import type { NetworkPolicy } from './network/policy.js';
import { locate, notStarted, processOptions, withRunDir } from './sandbox-run.js';
import { scratchMounts } from './scratch.js';
import type { Sandbox, SandboxLimits, SandboxRunOptions } from './types.js';
import { createRunCgroup, inCgroup, type CgroupParent, type RunCgroup } from './warden/cgroup.js';
import {
  describeCgroup,
  describeLimits,
  describeNetwork,
  mb,
  socketPath,
  statusReader,
  wardenCommand,
  withFindings,
} from './warden/warden-command.js';

/** What a bubblewrap sandbox is made of, found once when it opens. */
export interface BwrapParts {
  bwrap: string;
  system: readonly SystemEntry[];
  readPaths: readonly string[];
  hidden: readonly HiddenPath[];
  runRoot: string;
  network: NetworkPolicy;
  limits: SandboxLimits;
  disableUserns: boolean;
  /** The Node that runs the warden, and the warden's script (see `warden/warden.ts`). */
  node: string;
  wardenScript: string;
  /** util-linux `prlimit`, which sets the per-process limits; without it only the warden's limits hold. */
  prlimit?: string;
  /** Where each run gets a cgroup bounding its processes and memory in the kernel, if this worker may make one. */
  cgroup?: CgroupParent;
}

/** `bwrap`: bubblewrap namespaces per run; see {@link Sandbox}. */
export function createBwrapSandbox(parts: BwrapParts): Sandbox {
  const shownDirs = [
    ...parts.system.flatMap((entry) => (entry.kind === 'dir' ? [entry.path] : [])),
    ...parts.readPaths,
  ];
  return {
    mode: 'bwrap',
    remapsPaths: true,
    description: `sandbox: bwrap — own PID and network namespaces, fresh HOME and /tmp, read-only system directories, writes to the working copy only; ${describeNetwork(parts.network)}; ${describeLimits(parts.limits, parts.prlimit !== undefined)}; ${describeCgroup(parts.cgroup)}`,
    async run(argv, options) {
      const [file] = argv;
      if (!file) throw new TypeError('sandbox.run: argv must name a program');
      const writable = await Promise.all(options.writable.map((path) => realpath(path)));
      const cwd = await realpath(options.cwd);
      if (!writable.some((root) => isWithin(root, cwd)))
        throw new Error(`sandbox.run: cwd ${cwd} is not inside a writable path`);
      // A mount shows its source at its target (a package manager from the hidden cache).
      const mounted = (options.mounts ?? [])
        .filter((mount) => mount.source === mount.target)
        .map((mount) => mount.target);
      const reshown = [...parts.readPaths, ...writable, ...mounted];
      const visible = (real: string) =>
        [...shownDirs, ...writable, ...mounted].some((root) => isWithin(root, real)) &&
        !(parts.hidden.some((entry) => isWithin(entry.path, real)) && !reshown.some((root) => isWithin(root, real)));
      const program = await locate(file, cwd, options.env.PATH, visible);
      if ('error' in program) return notStarted(argv, program.error);
      return withRunDir(parts.runRoot, (runDir) =>
        runInRunDir(parts, argv, options, { writable, cwd, program: program.path }, runDir),
      );
    },
  };
}

/** One bwrap run in its own run directory: the network proxy when the policy needs one, the mounts, the warden. */
async function runInRunDir(
  parts: BwrapParts,
  argv: readonly string[],
  options: SandboxRunOptions,
  at: { writable: string[]; cwd: string; program: string },
  runDir: string,
): Promise<ProcessResult> {
  const { writable, cwd } = at;
  // Resolved, and kept only inside the copy: a run can turn one of these paths into a
  // symlink (`.github/workflows -> /home/worker`), which would show its target.
  const readOnly = (await existingRealPaths(options.readOnly ?? [])).filter((real) =>
    writable.some((root) => isWithin(root, real)),
  );
  const proxy =
    parts.network.mode === 'none'
      ? undefined
      : await openRunProxy({
          policy: parts.network,
          listen: { path: socketPath(runDir) },
          ...(options.onNetworkRefused === undefined ? {} : { onRefused: options.onNetworkRefused }),
        });
  try {
    const mounts = [...(options.mounts ?? []), ...(await scratchMounts(options.scratch, readOnly, runDir))];
    const args = bwrapArgs({
      system: parts.system,
      readPaths: parts.readPaths,
      hidden: parts.hidden,
      runDir,
      writable,
      readOnly,
      mounts,
      cwd,
      network: parts.network.mode,
      disableUserns: parts.disableUserns,
      tmpBytes: mb(parts.limits.tmpMb),
      shmBytes: mb(parts.limits.shmMb),
      warden: {
        script: parts.wardenScript,
        ...(proxy !== undefined && 'path' in proxy.listen ? { socket: proxy.listen.path } : {}),
      },
    });
    const inside = wardenCommand(parts, options.env, at.program, argv.slice(1));
    return await runBounded(parts, argv, options, [parts.bwrap, ...args, '--', ...inside.argv], inside.env, proxy);
  } finally {
    await proxy?.close();
  }
}

/**
 * Runs `bwrapArgv` under the kernel's bounds (a cgroup, when this worker may make one) above
 * the warden's, and says which limit ended the run.
 */
async function runBounded(
  parts: BwrapParts,
  argv: readonly string[],
  options: SandboxRunOptions,
  bwrapArgv: string[],
  env: Record<string, string>,
  proxy: Pick<Awaited<ReturnType<typeof openRunProxy>>, 'refusals'> | undefined,
): Promise<ProcessResult> {
  // No guard process: bwrap's --die-with-parent and the PID namespace do its work (and
  // catch what leaves the process group, which the guard's mark could miss).
  // fd 3 goes through bwrap to the warden, which says on it that it started: its
  // silence tells bwrap's own failures from a program that prints "bwrap: ..." and exits 1.
  const status = statusReader();
  // The kernel's bounds sit above the warden's, so the warden sees a run go past its
  // limits and names them; the kernel's stop what the warden is too slow for. (A
  // cgroup counts threads as tasks: a Node process has about ten.)
  const cgroup =
    parts.cgroup === undefined
      ? undefined
      : await createRunCgroup(
          parts.cgroup,
          parts.limits.processes * 4 + 64,
          Math.ceil(mb(parts.limits.memoryMb) * 1.25),
        );
  // The kernel refusing a fork at the cgroup's cap is a limit hit whatever the warden
  // does (it may be starved, or stuck): the run is stopped from here too.
  const kernel = kernelWatch(cgroup, parts.limits.processes, options.signal);
  try {
    const result = await runProcess(cgroup === undefined ? bwrapArgv : inCgroup(cgroup.procs, bwrapArgv), {
      ...processOptions(options),
      env,
      onStatus: status.read,
      ...(kernel.signal === undefined ? {} : { signal: kernel.signal }),
    });
    // A memory bomb faster than the warden's look is stopped by the kernel's OOM killer.
    const oomKilled =
      status.limit() === undefined &&
      kernel.hit() === undefined &&
      cgroup !== undefined &&
      (await cgroup.oomKills()) > 0;
    const hit =
      status.limit() ??
      kernel.hit() ??
      (oomKilled ? { limit: 'memory', max: mb(parts.limits.memoryMb), seen: 0 } : undefined);
    const facts = fromBwrap(result, argv, status.ran());
    return withFindings(
      kernel.hit() === undefined ? facts : { ...facts, cancelled: false, exitCode: null, signal: 'SIGKILL' },
      hit,
      proxy?.refusals(),
    );
  } finally {
    kernel.stop();
    await cgroup?.remove();
  }
}

// Polls the run cgroup's refused forks; on the first, aborts the run (the caller's own abort
// still counts as the caller's).
function kernelWatch(cgroup: RunCgroup | undefined, processes: number, outer: AbortSignal | undefined) {
  if (cgroup === undefined) return { signal: outer, hit: () => undefined, stop: () => undefined };
  const stopper = new AbortController();
  let hit: ResourceLimitHit | undefined;
  const timer = setInterval(() => {
    void cgroup.pids().then(({ current, refused }) => {
      if (refused === 0 || hit !== undefined) return;
      hit = { limit: 'processes', max: processes, seen: current };
      stopper.abort();
    });
  }, 250);
  return {
    signal: outer === undefined ? stopper.signal : AbortSignal.any([outer, stopper.signal]),
    hit: () => (outer?.aborted === true ? undefined : hit),
    stop: () => clearInterval(timer),
  };
}

// bwrap's own process reports a program killed by a signal as 128 + the signal's number, and
// its own set-up failures as exit 1 with a `bwrap:` line; both are put back into the facts
// runProcess reports for an unsandboxed program.
function fromBwrap(result: ProcessResult, argv: readonly string[], ran: boolean): ProcessResult {
  const facts: ProcessResult = { ...result, command: [...argv] };
  if (result.timedOut || result.cancelled || result.exitCode === null) return facts;
  if (result.exitCode > 128 && result.exitCode <= 128 + 64) {
    const signal = Object.entries(osConstants.signals).find(([, number]) => number === result.exitCode! - 128)?.[0];
    if (signal !== undefined) return { ...facts, exitCode: null, signal };
  }
  const lastLine = result.outputTail.trimEnd().split('\n').at(-1) ?? '';
  if (!ran && result.exitCode === 1 && lastLine.startsWith('bwrap: ')) {
    return { ...facts, exitCode: null, spawnError: `the sandbox could not start it: ${lastLine}` };
  }
  return facts;
}

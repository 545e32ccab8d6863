import { randomBytes } from 'node:crypto';
import { access, chmod, mkdir, mkdtemp, readdir, realpath, rm, stat } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { runProcess, type ProcessResult } from '@codefleet/process';
import { bwrapArgs, type HiddenPath } from './bwrap.js';
import { openRunProxy } from './network/proxy.js';
import type { NetworkPolicy } from './network/policy.js';
import type { ResourceLimitHit } from '@codefleet/process';
import { createRunCgroup, inCgroup, type CgroupParent, type RunCgroup } from './warden/cgroup.js';
import {
  describeCgroup,
  describeLimits,
  describeNetwork,
  loopbackForwards,
  mb,
  proxyEnv,
  socketPath,
  statusReader,
  wardenCommand,
  withFindings,
} from './warden/warden-command.js';
import { containerArgs, containerNode } from './container.js';
import { existingRealPaths, isWithin, type SystemEntry } from './host.js';
import { scratchMounts } from './scratch.js';
import { seatbeltArgs, seatbeltProfile } from './seatbelt.js';
import type { Sandbox, SandboxLimits, SandboxRunOptions } from './types.js';

/** `none`: the program runs as the worker's user, with today's guards only. */
export function createNoSandbox(): Sandbox {
  return {
    mode: 'none',
    remapsPaths: false,
    description:
      "sandbox: none — agents and repository commands run as the worker's user: they can read its HOME, its config and token files, every working copy and mirror, see and signal its processes, and reach every network address it can (no network policy, no limits)",
    run(argv, options) {
      return runProcess(argv, { ...processOptions(options), dieWithParent: true });
    },
  };
}

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

/** What a Seatbelt sandbox is made of. */
export interface SeatbeltParts {
  program: string;
  readPaths: readonly string[];
  hidden: readonly string[];
  runRoot: string;
  network: NetworkPolicy;
}

/** `sandbox-exec` (macOS): a generated profile per run; see {@link seatbeltProfile}. */
export function createSeatbeltSandbox(parts: SeatbeltParts): Sandbox {
  return {
    mode: 'sandbox-exec',
    remapsPaths: false,
    description: `sandbox: sandbox-exec — fresh HOME and TMPDIR, read-only system directories, writes to the working copy only; ${describeNetwork(parts.network)}; macOS has no PID namespace (other processes are only shielded by the profile) and no per-run limits`,
    async run(argv, options) {
      const [file] = argv;
      if (!file) throw new TypeError('sandbox.run: argv must name a program');
      const moved = (options.mounts ?? []).find((mount) => mount.source !== mount.target);
      if (moved) throw new TypeError(`sandbox.run: sandbox-exec cannot show ${moved.source} at ${moved.target}`);
      const program = await locate(file, options.cwd, options.env.PATH, () => true);
      if ('error' in program) return notStarted(argv, program.error);
      return withRunDir(parts.runRoot, async (runDir) => {
        await mkdir(join(runDir, 'tmp'));
        // No network namespace to bridge into: the proxy listens on a loopback port, the only
        // one the profile lets the run connect to.
        const proxy =
          parts.network.mode === 'none'
            ? undefined
            : await openRunProxy({
                policy: parts.network,
                listen: { port: 0 },
                ...(options.onNetworkRefused === undefined ? {} : { onRefused: options.onNetworkRefused }),
              });
        try {
          const proxyPort = proxy !== undefined && 'port' in proxy.listen ? proxy.listen.port : undefined;
          const { profile, params } = seatbeltProfile({
            readPaths: parts.readPaths,
            hidden: parts.hidden,
            runDir,
            writable: options.writable,
            readOnly: options.readOnly ?? [],
            mounts: options.mounts ?? [],
            network: parts.network.mode,
            ...(proxyPort === undefined
              ? {}
              : { proxyPort, loopbackPorts: loopbackForwards(parts.network).map((forward) => forward.port) }),
          });
          const result = await runProcess(
            [parts.program, ...seatbeltArgs(profile, params), program.path, ...argv.slice(1)],
            {
              ...processOptions(options),
              dieWithParent: true,
              env: {
                ...options.env,
                ...(proxyPort === undefined ? {} : proxyEnv(`http://127.0.0.1:${proxyPort}`)),
                HOME: join(runDir, 'home'),
                TMPDIR: join(runDir, 'tmp'),
              },
            },
          );
          return withFindings({ ...result, command: [...argv] }, undefined, proxy?.refusals());
        } finally {
          await proxy?.close();
        }
      });
    },
  };
}

/** What a container sandbox is made of. */
export interface ContainerParts {
  runtime: string;
  runtimeName: 'docker' | 'podman';
  image: string;
  runRoot: string;
  network: NetworkPolicy;
  limits: SandboxLimits;
  /** The worker's PATH, for the runtime's own client. */
  hostPath: string;
  /** The worker's Node installation and the warden's script, shown in the container when it has a proxy. */
  nodePrefix: string;
  wardenScript: string;
}

/** `container`: a docker or podman container per run, from the configured image. */
export function createContainerSandbox(parts: ContainerParts): Sandbox {
  return {
    mode: 'container',
    remapsPaths: true,
    description: `sandbox: container (${parts.runtimeName}, ${parts.image}) — own namespaces, fresh HOME and /tmp, writes to the working copy only; ${describeNetwork(parts.network)}; ${describeLimits(parts.limits, true)}`,
    async run(argv, options) {
      return withRunDir(parts.runRoot, async (runDir) => {
        const name = `codefleet-${randomBytes(8).toString('hex')}`;
        const proxy =
          parts.network.mode === 'none'
            ? undefined
            : await openRunProxy({
                policy: parts.network,
                listen: { path: socketPath(runDir) },
                ...(options.onNetworkRefused === undefined ? {} : { onRefused: options.onNetworkRefused }),
              });
        const { PATH: _path, HOME: _home, TMPDIR: _tmp, ...rest } = options.env;
        const inside =
          proxy === undefined
            ? { argv: [...argv], env: rest }
            : wardenCommand(
                { node: `${containerNode}/bin/node`, network: parts.network, limits: parts.limits },
                rest,
                argv[0] ?? '',
                argv.slice(1),
              );
        const { HOME: _h, TMPDIR: _t, ...programEnv } = inside.env;
        const readOnly = await existingRealPaths(options.readOnly ?? []);
        const args = containerArgs({
          runtime: parts.runtimeName,
          image: parts.image,
          name,
          runDir,
          writable: options.writable,
          readOnly,
          mounts: [...(options.mounts ?? []), ...(await scratchMounts(options.scratch, readOnly, runDir))],
          cwd: options.cwd,
          network: parts.network.mode,
          envNames: Object.keys(programEnv),
          limits: parts.limits,
          user: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 },
          ...(proxy !== undefined && 'path' in proxy.listen
            ? { warden: { script: parts.wardenScript, socket: proxy.listen.path, nodePrefix: parts.nodePrefix } }
            : {}),
        });
        try {
          const result = await runProcess([parts.runtime, ...args, ...inside.argv], {
            ...processOptions(options),
            env: { ...programEnv, PATH: parts.hostPath },
            dieWithParent: true,
          });
          return withFindings({ ...result, command: [...argv] }, undefined, proxy?.refusals());
        } finally {
          // A killed client leaves its container running: remove it by name (gone already after --rm).
          await runProcess([parts.runtime, 'rm', '--force', name], {
            cwd: '/',
            env: { PATH: parts.hostPath },
            timeoutMs: 30_000,
          });
          await proxy?.close();
        }
      });
    },
  };
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

function processOptions(options: SandboxRunOptions) {
  const { writable: _w, readOnly: _r, mounts: _m, scratch: _s, onNetworkRefused: _n, ...rest } = options;
  return rest;
}

// Each run gets its own directory for HOME and /tmp, removed afterwards whatever the run left
// there (read-only directories included).
async function withRunDir<T>(runRoot: string, fn: (runDir: string) => Promise<T>): Promise<T> {
  const runDir = await mkdtemp(join(runRoot, 'run-'));
  await mkdir(join(runDir, 'home'));
  try {
    return await fn(runDir);
  } finally {
    await removeAll(runDir);
  }
}

async function removeAll(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    await makeWritable(path);
    await rm(path, { recursive: true, force: true, maxRetries: 3 });
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory()) await makeWritable(join(dir, entry.name));
  }
}

// Where the program would be started from inside, found here with the same PATH (the paths
// inside are the host's): the first match the sandbox shows. A match it does not show is
// named with the fix, so a toolchain outside the system directories is not a mystery.
async function locate(
  file: string,
  cwd: string,
  path: string | undefined,
  visible: (real: string) => boolean,
): Promise<{ path: string } | { error: string }> {
  const candidates = file.includes('/')
    ? [isAbsolute(file) ? file : resolve(cwd, file)]
    : (path ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(isAbsolute(dir) ? dir : resolve(cwd, dir), file));
  let hiddenMatch: string | undefined;
  for (const candidate of candidates) {
    if (!(await isExecutableFile(candidate))) continue;
    const real = await realpath(candidate).catch(() => candidate);
    if (visible(real)) return { path: candidate };
    hiddenMatch ??= candidate;
  }
  if (hiddenMatch !== undefined) {
    return {
      error: `${file} is at ${hiddenMatch}, which the sandbox does not show; add its directory (or its toolchain's) to sandbox.read_paths`,
    };
  }
  return { error: `${file}: not found${file.includes('/') ? '' : ' on PATH'}` };
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, fsConstants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function notStarted(argv: readonly string[], error: string): ProcessResult {
  return {
    command: [...argv],
    exitCode: null,
    signal: null,
    timedOut: false,
    cancelled: false,
    durationMs: 0,
    outputTail: '',
    spawnError: error,
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

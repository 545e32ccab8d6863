import { randomBytes } from 'node:crypto';
import { access, lstat, mkdir, readdir, realpath, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { captureProcess, findExecutable } from '@codefleet/process';
import type { HiddenPath } from './bwrap.js';
import { etcLinkTargets, existingRealPaths, isAlive, linuxSystemDirs, nodePrefix, systemEntries } from './host.js';
import { createRunCgroup, findCgroupParent, removeStaleCgroups, type CgroupParent } from './warden/cgroup.js';
import { createBwrapSandbox, type BwrapParts } from './bwrap-sandbox.js';
import { createContainerSandbox } from './container-sandbox.js';
import { createNoSandbox } from './no-sandbox.js';
import { createSeatbeltSandbox } from './seatbelt-sandbox.js';
import { defaultLimits, type Sandbox, type SandboxMode, type SandboxSettings } from './types.js';

/** Why a sandbox mode cannot run on this host, and what to do about it. */
export class SandboxUnavailableError extends Error {
  override readonly name = 'SandboxUnavailableError';
  constructor(
    readonly mode: SandboxMode,
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`sandbox ${mode} is not available: ${problem}; ${fix}`);
  }
}

/** The host facts a sandbox is chosen by; passed in so tests can ask about another OS. */
export interface SandboxHost {
  platform: NodeJS.Platform;
  /** PATH of the worker, where bwrap, sandbox-exec, docker or podman are looked up. */
  path: string;
}

/** The mode `auto` stands for on `platform`. */
export function autoMode(platform: NodeJS.Platform): SandboxMode | undefined {
  if (platform === 'linux') return 'bwrap';
  if (platform === 'darwin') return 'sandbox-exec';
  return undefined;
}

/**
 * Opens the sandbox `settings` ask for, after checking that it really works here (bwrap is
 * started once: installed is not enough where user namespaces are switched off).
 *
 * @throws {SandboxUnavailableError} naming the fix; the worker refuses to start on it.
 */
export async function openSandbox(settings: SandboxSettings, host: SandboxHost): Promise<Sandbox> {
  const mode = settings.mode === 'auto' ? autoMode(host.platform) : settings.mode;
  if (mode === undefined) {
    throw new SandboxUnavailableError(
      'none',
      `no sandbox is known for ${host.platform}`,
      "set sandbox.mode: container, or sandbox.mode: none to run without one (agents then run as the worker's user)",
    );
  }
  if (mode === 'none') return createNoSandbox();
  const common = {
    wardenScript: await wardenScriptPath(),
    runRoot: await ownRunRoot(settings.runRoot),
    readPaths: await existingRealPaths(settings.readPaths),
    hidden: await hiddenPaths(settings.hiddenPaths),
  };
  if (mode === 'bwrap') return openBwrap(settings, host, common);
  if (mode === 'sandbox-exec') return openSeatbelt(settings, host, common);
  return openContainer(settings, host, common);
}

/** What every sandbox mode is opened with, found once by {@link openSandbox}. */
interface OpenParts {
  wardenScript: string;
  runRoot: string;
  readPaths: string[];
  hidden: Awaited<ReturnType<typeof hiddenPaths>>;
}

/** bubblewrap, on Linux: found, probed with one run, then opened. */
async function openBwrap(
  settings: SandboxSettings,
  host: SandboxHost,
  { wardenScript, runRoot, readPaths, hidden }: OpenParts,
): Promise<Sandbox> {
  const mode = 'bwrap';
  if (host.platform !== 'linux')
    throw new SandboxUnavailableError(
      mode,
      `bubblewrap runs on Linux only (this is ${host.platform})`,
      'set sandbox.mode: auto',
    );
  const bwrap = await findExecutable('bwrap', '/', host.path);
  if (bwrap === undefined) {
    throw new SandboxUnavailableError(
      mode,
      'bwrap is not installed (not on PATH)',
      'install it: apt-get install bubblewrap (Debian, Ubuntu), dnf install bubblewrap (Fedora)',
    );
  }
  const system = await systemEntries(linuxSystemDirs);
  const shownReads = [
    ...new Set([...readPaths, ...(await existingRealPaths([nodePrefix(), ...(await etcLinkTargets())]))]),
  ];
  const help = await captureProcess([bwrap, '--help'], { cwd: '/', env: { PATH: host.path } });
  const disableUserns = `${help.stdout}${help.stderr}`.includes('--disable-userns');
  const prlimit = await findExecutable('prlimit', '/', '/usr/bin:/bin');
  const cgroup = await usableCgroup();
  const parts = {
    bwrap,
    system,
    readPaths: shownReads,
    hidden,
    runRoot,
    network: settings.network,
    limits: settings.limits ?? defaultLimits,
    disableUserns,
    node: process.execPath,
    wardenScript,
    ...(prlimit === undefined ? {} : { prlimit }),
    ...(cgroup === undefined ? {} : { cgroup }),
  };
  await probeBwrap(parts);
  return createBwrapSandbox(parts);
}

/** Seatbelt (`sandbox-exec`), on macOS. */
async function openSeatbelt(
  settings: SandboxSettings,
  host: SandboxHost,
  { runRoot, readPaths, hidden }: OpenParts,
): Promise<Sandbox> {
  const mode = 'sandbox-exec';
  const program = '/usr/bin/sandbox-exec';
  if (
    host.platform !== 'darwin' ||
    !(await access(program, constants.X_OK).then(
      () => true,
      () => false,
    ))
  ) {
    throw new SandboxUnavailableError(
      mode,
      `${program} is not here (it ships with macOS)`,
      'set sandbox.mode: auto, or bwrap on Linux',
    );
  }
  return createSeatbeltSandbox({
    program,
    readPaths: [...readPaths, ...(await existingRealPaths([nodePrefix()]))],
    hidden: hidden.map((entry) => entry.path),
    runRoot,
    network: settings.network,
  });
}

/** A container (docker or podman) whose engine answers. */
async function openContainer(
  settings: SandboxSettings,
  host: SandboxHost,
  { wardenScript, runRoot }: OpenParts,
): Promise<Sandbox> {
  const mode = 'container';
  const container = settings.container;
  if (container === undefined)
    throw new SandboxUnavailableError(
      mode,
      'no image is set',
      'set sandbox.container.image (and runtime: docker or podman)',
    );
  const runtime = await findExecutable(container.runtime, '/', host.path);
  if (runtime === undefined)
    throw new SandboxUnavailableError(
      mode,
      `${container.runtime} is not on PATH`,
      `install ${container.runtime}, or choose sandbox.mode: auto`,
    );
  const info = await captureProcess([runtime, 'info', '--format', '{{.ServerVersion}}'], {
    cwd: '/',
    env: { PATH: host.path },
  });
  if (info.exitCode !== 0) {
    throw new SandboxUnavailableError(
      mode,
      `${container.runtime} has no engine to talk to: ${firstLine(info.stderr || info.spawnError || '')}`,
      `start the ${container.runtime} engine, or choose sandbox.mode: auto`,
    );
  }
  return createContainerSandbox({
    runtime,
    runtimeName: container.runtime,
    image: container.image,
    runRoot,
    network: settings.network,
    limits: settings.limits ?? defaultLimits,
    hostPath: host.path,
    nodePrefix: nodePrefix(),
    wardenScript,
  });
}

// Installed is not enough: user namespaces may be switched off (sysctl, AppArmor), and then
// every run would fail. One run of `true` through the warden at start tells, Node included.
async function probeBwrap(parts: BwrapParts): Promise<void> {
  const sandbox = createBwrapSandbox({ ...parts, network: { mode: 'none', allow: [] } });
  const result = await sandbox.run(['true'], {
    cwd: parts.runRoot,
    writable: [parts.runRoot],
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 30_000,
  });
  if (result.exitCode !== 0) {
    throw new SandboxUnavailableError(
      'bwrap',
      `bwrap cannot create its namespaces here: ${firstLine(result.outputTail || result.spawnError || `exit ${String(result.exitCode)}`)}`,
      'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 an AppArmor profile for bwrap or kernel.apparmor_restrict_unprivileged_userns=0), or run the worker in a container with sandbox.mode: none',
    );
  }
}

/**
 * This process's own directory under `root` for its runs' HOME and /tmp, made afresh, after
 * removing those of processes that are gone (a worker killed with SIGKILL cannot clean up).
 */
async function ownRunRoot(root: string): Promise<string> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  for (const name of await readdir(root)) {
    const pid = /^w(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && !isAlive(Number(pid)))
      await rm(join(root, name), { recursive: true, force: true }).catch(() => undefined);
  }
  const own = join(await realpath(root), `w${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(own, { mode: 0o700 });
  return own;
}

async function hiddenPaths(paths: readonly string[]): Promise<HiddenPath[]> {
  const hidden: HiddenPath[] = [];
  for (const path of paths) {
    const real = await realpath(path).catch(() => undefined);
    if (real === undefined) continue;
    const info = await lstat(real);
    hidden.push({ path: real, kind: info.isDirectory() ? 'dir' : 'file' });
  }
  return hidden;
}

// A cgroup per run where this worker may make one (tried once here, leftovers of killed
// workers removed); otherwise none, and the warden and per-process limits hold alone.
async function usableCgroup(): Promise<CgroupParent | undefined> {
  const parent = await findCgroupParent();
  if (parent === undefined) return undefined;
  try {
    await removeStaleCgroups(parent);
    await (await createRunCgroup(parent, 8, 64 * 1024 * 1024)).remove();
    return parent;
  } catch {
    return undefined;
  }
}

// The warden runs from the package's build output, whether this module runs from src (tests) or dist.
async function wardenScriptPath(): Promise<string> {
  const script = fileURLToPath(new URL('../dist/warden/warden.js', import.meta.url));
  if (
    !(await access(script, constants.R_OK).then(
      () => true,
      () => false,
    ))
  ) {
    throw new SandboxUnavailableError('bwrap', `the sandbox's warden is not built (${script})`, 'run npm run build');
  }
  return script;
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line !== '') ?? ''
  );
}

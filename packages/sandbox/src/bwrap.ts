import type { SystemEntry } from './host.js';
import { isWithin } from './host.js';
import type { RunLayout } from './types.js';

/** A path hidden inside the sandbox: a directory becomes an empty tmpfs, a file /dev/null. */
export interface HiddenPath {
  path: string;
  kind: 'dir' | 'file';
}

/** Everything one bubblewrap run is built from; paths absolute. /tmp is a tmpfs of its own (HOME is /tmp/home). */
export interface BwrapPlan extends RunLayout {
  /** Sizes of the run's /tmp and /dev/shm tmpfs, in bytes. */
  tmpBytes: number;
  shmBytes: number;
  /** Host paths bound in for the warden: its script, and the run proxy's socket (unless the network is none). */
  warden?: { script: string; socket?: string };
  system: readonly SystemEntry[];
  /** Shown read-only besides the system directories (toolchains, this Node, /etc link targets). */
  readPaths: readonly string[];
  /** Existing paths to hide; only those under something shown need hiding at all. */
  hidden: readonly HiddenPath[];
  /** bwrap ≥ 0.8: forbid new user namespaces inside (a way back to capabilities). */
  disableUserns?: boolean;
}

/** Writable kernel interfaces under /proc, shown read-only (as container runtimes do). */
const procReadOnly = ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs'];

/** HOME inside a bwrap run: in its own /tmp, so both go away with the run. */
export const sandboxHome = '/tmp/home';

/** Where the warden's script and the proxy's socket are inside a run (a directory the run cannot write). */
export const wardenScript = '/run/codefleet/warden.mjs';
export const proxySocket = '/run/codefleet/proxy.sock';

/**
 * The bubblewrap arguments for `plan` (everything before the program's argv). Order matters:
 * bwrap applies them in sequence, so the run's /tmp comes first, then the read-only system
 * directories, the hidden paths on top of them, the writable working copy, the read-only
 * parts of the copy, the warden's files, and last the root and /dev made read-only (both are
 * tmpfs in RAM that a run could otherwise fill without bound).
 */
export function bwrapArgs(plan: BwrapPlan): string[] {
  const args = [
    // The sandbox (and everything in it: its PID namespace dies with its first process) goes
    // when the worker goes, even by SIGKILL.
    '--die-with-parent',
    // A user namespace of its own and no capabilities in it: a worker running as root would
    // otherwise hand the run every capability (mount, mknod: the host's disks).
    '--unshare-user',
    ...(plan.disableUserns === true ? ['--disable-userns'] : []),
    '--cap-drop',
    'ALL',
    // A network of its own, whatever the policy: only a loopback, where the warden relays to
    // the worker's proxy. The host's loopback and abstract unix sockets are out of reach.
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--unshare-net',
    // A new session: no terminal to push keystrokes into (TIOCSTI).
    '--new-session',
    // First, so the read paths and the working copy may lie under /tmp (as a test's do).
    '--size',
    String(plan.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--dir',
    sandboxHome,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(plan.shmBytes),
    '--tmpfs',
    '/dev/shm',
    // Kernel settings stay read-only, whatever uid the run has (root's, on a root worker).
    ...procReadOnly.flatMap((path) => ['--ro-bind-try', path, path]),
  ];
  const shown: string[] = [];
  for (const entry of plan.system) {
    if (entry.kind === 'symlink') args.push('--symlink', entry.target, entry.path);
    else {
      args.push('--ro-bind', entry.path, entry.path);
      shown.push(entry.path);
    }
  }
  for (const path of plan.readPaths) {
    args.push('--ro-bind', path, path);
    shown.push(path);
  }
  const hidden = plan.hidden.filter((entry) => shown.some((root) => isWithin(root, entry.path)));
  for (const entry of hidden) {
    if (entry.kind === 'dir') args.push('--tmpfs', entry.path);
    else args.push('--ro-bind', '/dev/null', entry.path);
  }
  // A read path inside a hidden one (a toolchain under the hidden HOME) is shown again.
  for (const path of plan.readPaths) {
    if (hidden.some((entry) => entry.path !== path && isWithin(entry.path, path))) args.push('--ro-bind', path, path);
  }
  for (const path of plan.writable) args.push('--bind', path, path);
  for (const path of plan.readOnly) args.push('--ro-bind', path, path);
  for (const mount of plan.mounts) args.push(mount.writable ? '--bind' : '--ro-bind', mount.source, mount.target);
  if (plan.warden !== undefined) args.push('--ro-bind', plan.warden.script, wardenScript);
  if (plan.warden?.socket !== undefined) args.push('--bind', plan.warden.socket, proxySocket);
  args.push('--remount-ro', '/dev', '--remount-ro', '/', '--chdir', plan.cwd);
  return args;
}

import type { NetworkMode } from './network/policy.js';
import type { SandboxMount } from './types.js';

/** Everything one `sandbox-exec` run is built from; paths absolute and real (macOS matches real paths). */
export interface SeatbeltPlan {
  /** Shown read-only besides the system directories. */
  readPaths: readonly string[];
  /** Never readable, even under a shown directory. */
  hidden: readonly string[];
  /** The run's own directory: HOME and TMPDIR are inside it. */
  runDir: string;
  writable: readonly string[];
  readOnly: readonly string[];
  mounts: readonly SandboxMount[];
  network: NetworkMode;
  /** The run proxy's loopback port (unless the network is none), and host loopback ports `allow` names. */
  proxyPort?: number;
  loopbackPorts?: readonly number[];
}

/** macOS directories shown read-only: the system, developer tools, Homebrew under /opt. */
export const macSystemDirs = [
  '/usr',
  '/bin',
  '/sbin',
  '/System',
  '/Library',
  '/opt',
  '/private/etc',
  '/private/var/db',
  '/Applications/Xcode.app',
  '/dev',
] as const;

/**
 * The Seatbelt profile and its parameters for `plan`. Paths never appear in the profile text:
 * each is a `-D NAME=path` parameter read with `(param "NAME")`, so no path (a repository
 * name, a data directory) can change the profile's meaning. Rules are written with
 * `require-not` rather than relying on rule order. macOS has no PID namespace: the profile
 * lets a run signal and inspect only processes of its own sandbox, and no network namespace:
 * a run may listen on loopback (a test's own server) and connect out only to its proxy's
 * port and the loopback ports `allow` names (for a test's own server on another port,
 * a repository's tests fail here: the price of keeping Redis and the dashboard out of reach).
 * Unix sockets only inside what the run may write.
 *
 * Generated and unit-tested here; run only on macOS (these machines are Linux).
 */
export function seatbeltProfile(plan: SeatbeltPlan): { profile: string; params: Record<string, string> } {
  const params: Record<string, string> = {};
  const named = (prefix: string, paths: readonly string[]) =>
    paths.map((path, i) => {
      params[`${prefix}_${i}`] = path;
      return `(subpath (param "${prefix}_${i}"))`;
    });
  const system = named('SYSTEM', macSystemDirs);
  const reads = named('READ', plan.readPaths);
  const hidden = named('HIDDEN', plan.hidden);
  params.RUN = plan.runDir;
  const writes = [
    ...named('WRITE', plan.writable),
    '(subpath (param "RUN"))',
    ...named(
      'MOUNT',
      plan.mounts.filter((m) => m.writable).map((m) => m.source),
    ),
  ];
  const readOnly = named('READONLY', [
    ...plan.readOnly,
    ...plan.mounts.filter((m) => !m.writable).map((m) => m.source),
  ]);
  const unless = (allowed: string[], denied: string[]) =>
    denied.length === 0
      ? `(require-any ${allowed.join(' ')})`
      : `(require-all (require-any ${allowed.join(' ')}) (require-not (require-any ${denied.join(' ')})))`;
  const lines = [
    '(version 1)',
    '(deny default)',
    '(allow process-exec process-fork)',
    '(allow signal (target same-sandbox))',
    '(allow process-info* (target same-sandbox))',
    '(allow sysctl-read mach-lookup ipc-posix-shm ipc-posix-sem pseudo-tty file-ioctl)',
    // Metadata (stat) everywhere: path resolution walks every parent directory.
    '(allow file-read-metadata)',
    '(allow file-read* (literal "/"))',
    `(allow file-read* ${unless([...system, ...reads], hidden)})`,
    `(allow file-read* ${unless([...writes, ...readOnly], [])})`,
    `(allow file-write* ${unless(writes, readOnly)})`,
    '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))',
    ...networkRules(plan),
  ];
  return { profile: `${lines.join('\n')}\n`, params };
}

function networkRules(plan: SeatbeltPlan): string[] {
  // A unix socket is matched by its path, as Apple's own profiles do (`(literal "/var/run/…")`).
  const unixSockets = `(allow network-outbound (subpath (param "RUN")) ${plan.writable.map((_, i) => `(subpath (param "WRITE_${i}"))`).join(' ')})`;
  if (plan.network === 'none' || plan.proxyPort === undefined) return [unixSockets];
  const ports = [plan.proxyPort, ...(plan.loopbackPorts ?? [])];
  return [
    unixSockets,
    '(allow network-bind network-inbound (local ip "localhost:*"))',
    `(allow network-outbound ${ports.map((port) => `(remote ip "localhost:${port}")`).join(' ')})`,
  ];
}

/** The `sandbox-exec` argument vector for a profile (everything before the program's argv). */
export function seatbeltArgs(profile: string, params: Record<string, string>): string[] {
  return ['-p', profile, ...Object.entries(params).flatMap(([name, value]) => ['-D', `${name}=${value}`])];
}

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
  network: 'on' | 'none';
}

/** macOS directories shown read-only: the system, developer tools, Homebrew under /opt. */
export const macSystemDirs = ['/usr', '/bin', '/sbin', '/System', '/Library', '/opt', '/private/etc', '/private/var/db', '/Applications/Xcode.app', '/dev'] as const;

/**
 * The Seatbelt profile and its parameters for `plan`. Paths never appear in the profile text:
 * each is a `-D NAME=path` parameter read with `(param "NAME")`, so no path (a repository
 * name, a data directory) can change the profile's meaning. Rules are written with
 * `require-not` rather than relying on rule order. macOS has no PID namespace: the profile
 * lets a run signal and inspect only processes of its own sandbox.
 *
 * Generated and unit-tested here; run only on macOS (these machines are Linux).
 */
export function seatbeltProfile(plan: SeatbeltPlan): { profile: string; params: Record<string, string> } {
  const params: Record<string, string> = {};
  const named = (prefix: string, paths: readonly string[]) => paths.map((path, i) => {
    params[`${prefix}_${i}`] = path;
    return `(subpath (param "${prefix}_${i}"))`;
  });
  const system = named('SYSTEM', macSystemDirs);
  const reads = named('READ', plan.readPaths);
  const hidden = named('HIDDEN', plan.hidden);
  params.RUN = plan.runDir;
  const writes = [...named('WRITE', plan.writable), '(subpath (param "RUN"))', ...named('MOUNT', plan.mounts.filter((m) => m.writable).map((m) => m.source))];
  const readOnly = named('READONLY', [...plan.readOnly, ...plan.mounts.filter((m) => !m.writable).map((m) => m.source)]);
  const unless = (allowed: string[], denied: string[]) =>
    denied.length === 0 ? `(require-any ${allowed.join(' ')})` : `(require-all (require-any ${allowed.join(' ')}) (require-not (require-any ${denied.join(' ')})))`;
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
    plan.network === 'on' ? '(allow network*)' : '(allow network* (remote unix-socket))',
  ];
  return { profile: `${lines.join('\n')}\n`, params };
}

/** The `sandbox-exec` argument vector for a profile (everything before the program's argv). */
export function seatbeltArgs(profile: string, params: Record<string, string>): string[] {
  return ['-p', profile, ...Object.entries(params).flatMap(([name, value]) => ['-D', `${name}=${value}`])];
}

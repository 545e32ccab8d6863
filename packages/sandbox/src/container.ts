import { proxySocket, wardenScript } from './bwrap.js';
import type { RunLayout, SandboxLimits } from './types.js';

/** Where the worker's Node is shown in a container, to run the warden. */
export const containerNode = '/run/codefleet/node';

/** Everything one container run is built from. /tmp is a tmpfs of the run's own. */
export interface ContainerPlan extends RunLayout {
  limits: SandboxLimits;
  /** Host paths for the warden, which bridges the container's empty network to the run proxy's socket. */
  warden?: { script: string; socket: string; nodePrefix: string };
  runtime: 'docker' | 'podman';
  image: string;
  /** A name unique to the run, so it can be removed when the client is killed. */
  name: string;
  /** Names of the variables the program gets; their values come from the client's environment, never argv. */
  envNames: readonly string[];
  user: { uid: number; gid: number };
}

/** The label every codefleet container carries, to find leftovers of a killed worker. */
export const containerLabel = 'codefleet.sandbox=1';

/**
 * The `docker run` / `podman run` arguments for `plan` (everything before the program's argv).
 * Variables are passed as `-e NAME`, which takes the value from the client's own environment:
 * an API key never appears on a command line another process can read. Paths go through
 * `--mount`, whose syntax a comma would break: such paths are refused.
 *
 * The container's network is `none` whatever the policy: with a proxy, the warden (the worker's
 * Node, shown read-only: the image needs glibc) relays to the proxy's socket bound in. The
 * limits are the runtime's own (pids, memory, tmpfs sizes, ulimits).
 *
 * Generated and unit-tested here; these machines have the docker client but no engine.
 */
export function containerArgs(plan: ContainerPlan): string[] {
  const bind = (source: string, target: string, readOnly: boolean) => {
    for (const path of [source, target]) {
      if (path.includes(',')) throw new Error(`a container mount cannot hold a comma: ${JSON.stringify(path)}`);
    }
    return ['--mount', `type=bind,source=${source},target=${target}${readOnly ? ',readonly' : ''}`];
  };
  return [
    'run',
    '--rm',
    '--init',
    '--interactive=false',
    '--name',
    plan.name,
    '--label',
    containerLabel,
    '--network',
    'none',
    '--user',
    `${plan.user.uid}:${plan.user.gid}`,
    '--security-opt',
    'no-new-privileges',
    '--pids-limit',
    String(plan.limits.processes),
    '--memory',
    `${plan.limits.memoryMb}m`,
    '--shm-size',
    `${plan.limits.shmMb}m`,
    '--ulimit',
    `nofile=${plan.limits.openFiles}:${plan.limits.openFiles}`,
    '--ulimit',
    `cpu=${plan.limits.cpuSeconds}:${plan.limits.cpuSeconds}`,
    '--ulimit',
    `fsize=${plan.limits.fileSizeMb * 1024 * 1024}`,
    '--ulimit',
    'core=0',
    '--mount',
    `type=tmpfs,destination=/tmp,tmpfs-size=${plan.limits.tmpMb * 1024 * 1024}`,
    ...plan.writable.flatMap((path) => bind(path, path, false)),
    ...plan.readOnly.flatMap((path) => bind(path, path, true)),
    ...plan.mounts.flatMap((mount) => bind(mount.source, mount.target, !mount.writable)),
    ...(plan.warden === undefined
      ? []
      : [
          ...bind(plan.warden.script, wardenScript, true),
          ...bind(plan.warden.socket, proxySocket, false),
          ...bind(plan.warden.nodePrefix, containerNode, true),
        ]),
    '--workdir',
    plan.cwd,
    ...plan.envNames.flatMap((name) => ['-e', name]),
    plan.image,
  ];
}

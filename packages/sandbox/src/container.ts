import type { RunLayout } from './types.js';

/** Everything one container run is built from. The run's directory is shown as /tmp. */
export interface ContainerPlan extends RunLayout {
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
    'run', '--rm', '--init', '--interactive=false',
    '--name', plan.name, '--label', containerLabel,
    '--network', plan.network === 'none' ? 'none' : 'bridge',
    '--user', `${plan.user.uid}:${plan.user.gid}`,
    '--security-opt', 'no-new-privileges',
    ...bind(plan.runDir, '/tmp', false),
    ...plan.writable.flatMap((path) => bind(path, path, false)),
    ...plan.readOnly.flatMap((path) => bind(path, path, true)),
    ...plan.mounts.flatMap((mount) => bind(mount.source, mount.target, !mount.writable)),
    '--workdir', plan.cwd,
    ...plan.envNames.flatMap((name) => ['-e', name]),
    plan.image,
  ];
}

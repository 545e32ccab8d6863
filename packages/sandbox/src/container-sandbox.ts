import { randomBytes } from 'node:crypto';
import { runProcess } from '@codefleet/process';
import { containerArgs, containerNode } from './container.js';
import { existingRealPaths } from './host.js';
import { openRunProxy } from './network/proxy.js';
import type { NetworkPolicy } from './network/policy.js';
import { processOptions, withRunDir } from './sandbox-run.js';
import { scratchMounts } from './scratch.js';
import type { Sandbox, SandboxLimits } from './types.js';
import { describeLimits, describeNetwork, socketPath, wardenCommand, withFindings } from './warden/warden-command.js';

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

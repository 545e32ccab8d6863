import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { runProcess } from '@codefleet/process';
import { openRunProxy } from './network/proxy.js';
import type { NetworkPolicy } from './network/policy.js';
import { locate, notStarted, processOptions, withRunDir } from './sandbox-run.js';
import { seatbeltArgs, seatbeltProfile } from './seatbelt.js';
import type { Sandbox } from './types.js';
import { describeNetwork, loopbackForwards, proxyEnv, withFindings } from './warden/warden-command.js';

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

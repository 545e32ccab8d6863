import * as z from 'zod';

const hostPath = z.string().min(1).max(4096);

/** `sandbox:` — how agents and repository commands are isolated from the worker. */
export const sandboxSchema = z
  .strictObject({
    mode: z
      .enum(['auto', 'bwrap', 'sandbox-exec', 'container', 'none'])
      .default('auto')
      .describe(
        'auto: bubblewrap on Linux, sandbox-exec on macOS; the worker refuses to start when it is not available. container: docker or podman. '
          + "none: no sandbox: agents and checks run as the worker's user and can read its HOME, config, tokens and other jobs' working copies.",
      ),
    network: z
      .enum(['on', 'none'])
      .default('on')
      .describe('on: agents reach their APIs and installs reach registries (an agent can then also send the repository out). none: no network inside the sandbox.'),
    read_paths: z
      .array(hostPath)
      .max(64)
      .default([])
      .describe('Host paths shown read-only besides the system directories (/usr, /etc, /opt ...): toolchains installed elsewhere, e.g. ~/.cargo, ~/.rustup, ~/.pyenv. Relative to the config file.'),
    hidden_paths: z
      .array(hostPath)
      .max(64)
      .default([])
      .describe("Host paths never shown, even under a system directory: secret files of your own. The data directory, the config file, HOME and the forge's key file are always hidden."),
    container: z
      .strictObject({
        runtime: z.enum(['docker', 'podman']).default('docker').describe('Container runtime for mode: container.'),
        image: z.string().min(1).optional().describe('Image each run starts from (mode: container); it must hold the agents and the toolchains.'),
      })
      .prefault({})
      .describe('mode: container only.'),
  })
  .prefault({})
  .describe('The sandbox every agent run, verification step, DoD command and install runs in.');

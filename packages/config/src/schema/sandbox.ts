import * as z from 'zod';

const hostPath = z.string().min(1).max(4096);

// host, host:port, *.domain[:port], an IPv4 address[:port], or [IPv6][:port].
const allowEntry = z
  .string()
  .regex(
    /^(?:(?:\*\.)?[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/,
    'write host, host:port, *.domain or [ipv6]:port',
  )
  .describe('A destination: host, host:port, *.domain (any name under it), or [ipv6]:port.');

const networkMode = z.enum(['public', 'allowlist', 'none']);

const network = z
  .union([
    networkMode.or(z.literal('on')),
    z.strictObject({
      mode: networkMode
        .default('public')
        .describe('public: the public internet; allowlist: only the hosts in allow; none: no network.'),
      allow: z
        .array(allowEntry)
        .max(256)
        .default([])
        .describe(
          'Destinations runs may reach besides the policy: in allowlist mode the only ones; in every mode the way to open one internal address ' +
            '(a model server on the LAN or this host: ollama.lan:11434, 127.0.0.1:11434). Loopback entries with a port are reached inside the run at the same address.',
        ),
    }),
  ])
  .default('public')
  // `on` is the older name of `public`.
  .transform((value) =>
    typeof value === 'string' ? { mode: value === 'on' ? 'public' : value, allow: [] as string[] } : value,
  )
  .describe(
    "What agents and repository commands may reach. Every run has a network namespace of its own and goes out only through codefleet's proxy, which refuses " +
      "the host's loopback, private, link-local (cloud metadata) and reserved addresses, judged on the resolved address. " +
      'public (default): the public internet (an agent can then also send the repository out); allowlist: only allow; none: nothing. Write a mode, or { mode, allow }.',
  );

const count = (max: number) => z.number().int().min(1).max(max);

const limits = z
  .strictObject({
    processes: count(1_000_000).default(512).describe('Processes alive at once in one run (a fork bomb ends the run).'),
    memory_mb: count(1_048_576).default(8192).describe('Resident memory of all processes of one run together, in MiB.'),
    tmp_mb: count(1_048_576)
      .default(4096)
      .describe("Size of a run's /tmp in MiB (in RAM; HOME and package caches are inside it)."),
    tmp_files: count(100_000_000).default(500_000).describe("Files and directories in a run's /tmp and /dev/shm."),
    shm_mb: count(1_048_576).default(512).describe("Size of a run's /dev/shm in MiB."),
    open_files: count(1_048_576).default(8192).describe('Open files per process.'),
    cpu_seconds: count(10_000_000).default(7200).describe('CPU time per process, in seconds.'),
    file_size_mb: count(1_048_576).default(4096).describe('Largest file one process may write, in MiB.'),
  })
  .prefault({})
  .describe(
    'What one sandboxed run may use; a run past a limit ends with resource_limit, fed back like a failing check. Enforced with bwrap (and container); not by sandbox-exec.',
  );

/** The ways a sandbox can isolate a run, `auto` apart; what each does is said where the sandbox package implements it. */
export const SANDBOX_MODES = ['bwrap', 'sandbox-exec', 'container', 'none'] as const;

/** `sandbox:` — how agents and repository commands are isolated from the worker. */
export const sandboxSchema = z
  .strictObject({
    mode: z
      .enum(['auto', ...SANDBOX_MODES])
      .default('auto')
      .describe(
        'auto: bubblewrap on Linux, sandbox-exec on macOS; the worker refuses to start when it is not available. container: docker or podman. ' +
          "none: no sandbox: agents and checks run as the worker's user and can read its HOME, config, tokens and other jobs' working copies.",
      ),
    network,
    limits,
    read_paths: z
      .array(hostPath)
      .max(64)
      .default([])
      .describe(
        'Host paths shown read-only besides the system directories (/usr, /etc, /opt ...): toolchains installed elsewhere, e.g. ~/.cargo, ~/.rustup, ~/.pyenv. Relative to the config file.',
      ),
    hidden_paths: z
      .array(hostPath)
      .max(64)
      .default([])
      .describe(
        "Host paths never shown, even under a system directory: secret files of your own. The data directory, the config file, HOME and the forge's key file are always hidden.",
      ),
    container: z
      .strictObject({
        runtime: z.enum(['docker', 'podman']).default('docker').describe('Container runtime for mode: container.'),
        image: z
          .string()
          .min(1)
          .optional()
          .describe('Image each run starts from (mode: container); it must hold the agents and the toolchains.'),
      })
      .prefault({})
      .describe('mode: container only.'),
  })
  .prefault({})
  .describe('The sandbox every agent run, verification step, DoD command and install runs in.');

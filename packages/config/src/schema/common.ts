import * as z from 'zod';

/** Name of an environment variable (not its value: values never live in config files). */
export const envVarName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name such as GITHUB_TOKEN');

/**
 * A command as an argument vector, run without a shell so no value can inject shell syntax.
 * An empty list means "skip this step".
 */
export const argv = z.array(z.string().min(1));

/** A whole number of seconds, at least `min`. */
export function seconds(min = 0): z.ZodNumber {
  return z.number().int().min(min);
}

/** A per-agent timeout that falls back to `agents.timeout_seconds` during normalize. */
export function agentTimeout(): z.ZodOptional<z.ZodNumber> {
  return seconds(1)
    .optional()
    .describe('Timeout for one run of this agent in seconds. Default: agents.timeout_seconds.');
}

/** Proxy variables: installs and agents behind a proxy need them, in both spellings tools read. */
const proxyVariables = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'] as const;

/**
 * What a run gets of the worker's environment beyond the fixed allowlist (PATH, HOME, locale):
 * named variables passed through (toolchains installed outside HOME, proxies) and directories
 * put in front of PATH. Values stay in the environment, never in the config file.
 */
export function runEnv(what: string) {
  return z
    .strictObject({
      pass: z
        .array(envVarName)
        .default(() => [...proxyVariables])
        .describe(
          `Variables passed through to ${what} from the worker's environment when set (e.g. RUSTUP_HOME, CARGO_HOME). Forge credentials (GITHUB_TOKEN, …) are never passed. Default: the proxy variables.`,
        ),
      path: z
        .array(
          z
            .string()
            .min(1)
            .refine((dir) => dir.startsWith('/') || dir.startsWith('~'), 'expected an absolute directory'),
        )
        .default(() => [])
        .describe(
          `Directories put in front of PATH for ${what} (e.g. /usr/local/cargo/bin); they are shown read-only inside the sandbox.`,
        ),
    })
    .prefault({})
    .describe(`Environment of ${what} beyond the fixed allowlist.`);
}

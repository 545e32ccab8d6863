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
  return seconds(1).optional().describe('Timeout for one run of this agent in seconds. Default: agents.timeout_seconds.');
}

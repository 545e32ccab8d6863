/** Variables every agent gets when the source has them: enough to find tools and render text. */
export const baseAgentEnvNames = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'TZ', 'TMPDIR', 'TERM'] as const;

const localePattern = /^LC_[A-Z_]+$/;

const forgeCredentialNames = new Set([
  'GITHUB_TOKEN',
  'GH_TOKEN',
  'GH_ENTERPRISE_TOKEN',
  'GITHUB_ENTERPRISE_TOKEN',
  'GITHUB_APP_PRIVATE_KEY',
  'SSH_AUTH_SOCK',
  // GIT_CONFIG_COUNT/KEY_n/VALUE_n and GIT_CONFIG_PARAMETERS can set a credential helper or
  // an `http.extraHeader: Authorization` for every git call the agent makes.
  'GIT_CONFIG_PARAMETERS',
  'GIT_CONFIG_COUNT',
]);

const forgeCredentialPatterns = [
  /^GIT_CREDENTIAL/,
  /ASKPASS/,
  /^GIT_CONFIG_(KEY|VALUE)_\d+$/,
  /^CODEFLEET_.*_TOKEN$/,
  // The fleet key signs jobs: a run that held it could queue work of its own.
  /^CODEFLEET_FLEET_KEY/,
];

/**
 * True for variables that would let an agent act on the forge (push, comment, merge):
 * GitHub tokens and app keys, git credential helpers and askpass programs, the SSH agent
 * socket, git config injected through the environment, `CODEFLEET_*_TOKEN` and the fleet key
 * (`CODEFLEET_FLEET_KEY*`, whose other names the config refuses to pass). Names are
 * compared upper-cased so a lower-case spelling cannot slip through.
 */
export function isForgeCredential(name: string): boolean {
  const upper = name.toUpperCase();
  return forgeCredentialNames.has(upper) || forgeCredentialPatterns.some((pattern) => pattern.test(upper));
}

/** Options for {@link buildAgentEnv}. */
export interface AgentEnvOptions {
  /** Extra variable names copied from the source when set (e.g. the agent's API key). */
  allow?: readonly string[];
  /** Variables set explicitly; they win over the source. */
  extra?: Readonly<Record<string, string>>;
}

/**
 * Builds an agent's environment from `source` (the worker's environment, passed in) by
 * allowlist: {@link baseAgentEnvNames}, `LC_*`, the `allow` names and `extra`. Forge
 * credentials ({@link isForgeCredential}) are dropped even when `allow` or `extra` name
 * them: an agent never gets to push or comment on its own.
 */
export function buildAgentEnv(
  source: Readonly<Record<string, string | undefined>>,
  options: AgentEnvOptions = {},
): Record<string, string> {
  const allowed = new Set<string>([...baseAgentEnvNames, ...(options.allow ?? [])]);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (allowed.has(name) || localePattern.test(name)) env[name] = value;
  }
  Object.assign(env, options.extra);
  return withoutForgeCredentials(env);
}

/** A copy of `env` without forge credentials; adapters apply it to every request as a safety net. */
export function withoutForgeCredentials(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isForgeCredential(name)));
}

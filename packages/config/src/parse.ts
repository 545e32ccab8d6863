import { parseDocument } from 'yaml';
import { ConfigError, type ConfigProblem } from './errors.js';
import { type Env, expandTree, isPlainObject } from './expand.js';
import { normalize } from './normalize.js';
import { checkRules } from './rules.js';
import { syntaxProblem } from './syntax-problem.js';
import { redisPasswords } from './redis-url.js';
import { collectSecrets } from './secrets.js';
import type { HostHardware } from './host-model.js';
import type { Config, LoadedConfig } from './types.js';
import { validate } from './validate.js';

/** Inputs of {@link parseConfig}; everything the result depends on is passed in. */
export interface ParseConfigOptions {
  /** Environment for `${VAR}` expansion, tokens and secrets. */
  env: Env;
  /** Directory relative paths are resolved against (the config file's directory). */
  baseDir: string;
  /** Default `worker.worker_id`. */
  hostname: string;
  /** Where the text came from, for error messages and `LoadedConfig.source`. */
  sourceName?: string;
  /** The host's hardware, for `agents.ollama.model: auto` (`loadConfig` probes it); absent: qwen2.5-coder:7b. */
  hardware?: HostHardware;
}

// YAML aliases can expand exponentially ("billion laughs"); a config file needs few.
const MAX_ALIAS_COUNT = 100;

/**
 * Parses, validates and normalizes config text: YAML -> `${VAR}` expansion -> schema with
 * defaults -> normalize -> cross-field rules. Pure apart from its inputs; `loadConfig` adds
 * the file system and the process environment.
 *
 * @throws {ConfigError} listing every problem found (for YAML syntax errors, the syntax errors).
 */
export function parseConfig(text: string, options: ParseConfigOptions): LoadedConfig {
  const { env, baseDir, hostname, sourceName, hardware } = options;
  const fail = (problems: ConfigProblem[]) => new ConfigError(problems, sourceName);

  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) throw fail([syntaxProblem(text, doc.errors)]);
  const parsed: unknown = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  if (!isPlainObject(parsed)) {
    const kind = Array.isArray(parsed) ? 'a list' : JSON.stringify(parsed);
    throw fail([{ path: '', message: `the file must be a mapping of sections (queue:, agents:, ...), got ${kind}` }]);
  }

  const problems = refuseLiteralToken(parsed);
  const expansion = expandTree(parsed, env);
  problems.push(...expansion.problems);
  const validation = validate(expansion.tree, expansion.expanded, collectSecrets(env));
  if (!validation.ok) throw fail([...problems, ...validation.problems]);

  const config = normalize(validation.data, { baseDir, env, hostname, hardware });
  problems.push(...checkRules(config, env));
  if (problems.length > 0) throw fail(problems);

  return {
    config,
    source: sourceName,
    env: Object.freeze(snapshot(env)),
    secrets: collectSecrets(env, secretVariableNames(config), redisPasswords(config)),
  };
}

/**
 * Tokens must come from the environment, so a `token:` written into the file is refused with
 * a pointer to `token_env` (rather than the generic "unknown key"); the key is removed so the
 * value is neither expanded nor echoed anywhere.
 */
function refuseLiteralToken(tree: Record<string, unknown>): ConfigProblem[] {
  const forge = tree.forge;
  if (!isPlainObject(forge)) return [];
  const github = forge.github;
  if (!isPlainObject(github) || !Object.hasOwn(github, 'token')) return [];
  delete github.token;
  return [
    {
      path: 'forge.github.token',
      message: 'tokens are read from the environment only; set forge.github.token_env (default GITHUB_TOKEN)',
    },
  ];
}

/** Variables named in the config whose values are secrets whatever their names look like. */
function secretVariableNames(config: Config): string[] {
  const { agents, forge, logging, router, slack, line, http_api, dashboard } = config;
  const named = [
    forge.github.token_env,
    forge.github.webhook_secret_env,
    forge.github.private_key_env,
    agents.aider.api_key_env,
    agents.claude.api_key_env,
    agents.codex.api_key_env,
    agents.gemini.api_key_env,
    agents.ollama.api_key_env,
    agents.command.api_key_env,
    router.classifier.api_key_env,
    router.chat.api_key_env,
    slack.bot_token_env,
    slack.app_token_env,
    slack.signing_secret_env,
    line.channel_secret_env,
    line.channel_access_token_env,
    http_api.token_env,
    http_api.callback_secret_env,
    dashboard.token_env,
    ...Object.values(dashboard.operators),
    config.signing.key_env,
    config.signing.previous_key_env,
    ...logging.redact_values,
  ];
  return named.filter((name): name is string => name !== undefined);
}

function snapshot(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}

/**
 * @codefleet/config: loads `config.yaml` in three steps (schema with descriptions and
 * defaults -> normalize -> cross-field rules) after `${VAR}` expansion, and reports every
 * problem at once with its key path. The only package that reads `process.env`, and only as
 * the default of `loadConfig`'s `env` option.
 */
export { loadConfig, CONFIG_PATH_VARIABLE, DEFAULT_CONFIG_FILE, type LoadConfigOptions } from './load.js';
export { parseConfig, type ParseConfigOptions } from './parse.js';
export { ConfigError, CONFIG_ERROR_CODES, formatProblem, type ConfigErrorCode, type ConfigProblem } from './errors.js';
export { configJsonSchema, renderConfigJsonSchema } from './json-schema.js';
export {
  configSchema,
  AGENT_NAMES,
  LOG_LEVELS,
  ROUTES,
  SANDBOX_MODES,
  type AgentName,
  type ParsedConfig,
  type RouteName,
} from './schema/index.js';
export { collectSecrets, isSecretName } from './secrets.js';
export {
  closedRedisUrlExample,
  isLoopbackHost,
  readRedisUrl,
  redisUrlsInUse,
  type RedisUrlInUse,
  type RedisUrlSecurity,
} from './redis-url.js';
export { defaultAnthropicHost, defaultOllamaHost, ollamaHostFromEnv } from './normalize.js';
export {
  ACCELERATED_MODEL,
  AUTO_MODEL,
  CPU_MODEL,
  detectHardware,
  localModelFor,
  type HardwareProbe,
  type HostHardware,
  type LocalModelChoice,
} from './host-model.js';
export type { Env } from './expand.js';
export type {
  AgentsConfig,
  AiderAgentConfig,
  ClaudeAgentConfig,
  CodexAgentConfig,
  CommandAgentConfig,
  Config,
  CostsConfig,
  DashboardConfig,
  ForgeConfig,
  GeminiAgentConfig,
  GithubForgeConfig,
  HttpApiConfig,
  LineConfig,
  RouterConfig,
  SlackConfig,
  LoadedConfig,
  LoggingConfig,
  ServeConfig,
  OllamaAgentConfig,
  PatchConfig,
  QueueConfig,
  SandboxConfig,
  SigningConfig,
  StoreConfig,
  ScriptAgentConfig,
  VerificationConfig,
  WorkerConfig,
  WorkspaceConfig,
} from './types.js';
export {
  commandPlaceholders,
  commandTemplateProblem,
  isPlaceholder,
  placeholderShape,
  type CommandPlaceholder,
} from './command-template.js';

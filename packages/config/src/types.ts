import type { ParsedConfig } from './schema/index.js';

/** Flattens intersections so editors show plain object types. */
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** `T` with the keys `K` present and defined. */
type Filled<T, K extends keyof T> = Simplify<Omit<T, K> & { [P in K]-?: Exclude<T[P], undefined> }>;

type Raw = ParsedConfig;
type RawAgents = Raw['agents'];

/** `queue:` after normalize: heartbeat, local path and SQS region are always set. */
export type QueueConfig = Simplify<
  Omit<Filled<Raw['queue'], 'heartbeat_seconds'>, 'local' | 'sqs'> & {
    local: Filled<Raw['queue']['local'], 'path'>;
    sqs: Filled<Raw['queue']['sqs'], 'region'>;
  }
>;

/** `workspace:` after normalize: `cache_dir` is an absolute path. */
export type WorkspaceConfig = Filled<Raw['workspace'], 'cache_dir'>;

/** `agents.aider` after normalize. */
export type AiderAgentConfig = Filled<RawAgents['aider'], 'timeout_seconds'>;
/** `agents.claude` after normalize. */
export type ClaudeAgentConfig = Filled<RawAgents['claude'], 'timeout_seconds'>;
/** `agents.codex` after normalize. */
export type CodexAgentConfig = Filled<RawAgents['codex'], 'timeout_seconds'>;
/** `agents.gemini` after normalize. */
export type GeminiAgentConfig = Filled<RawAgents['gemini'], 'timeout_seconds'>;
/**
 * `agents.ollama` after normalize: `model` is a model name (`auto` resolved for the host) and
 * `model_reason` says how it was chosen (absent only in configs not made by normalize).
 */
export type OllamaAgentConfig = Filled<RawAgents['ollama'], 'timeout_seconds'> & { model_reason?: string };
/** `agents.command` after normalize. */
export type CommandAgentConfig = Filled<RawAgents['command'], 'timeout_seconds'>;
/** `agents.script` after normalize; `module`, when set, is an absolute path or a package name. */
export type ScriptAgentConfig = Filled<RawAgents['script'], 'timeout_seconds'>;

/** `agents:` after normalize: every agent has its own `timeout_seconds`. */
export interface AgentsConfig {
  /** Agent used when a job names none. */
  default: RawAgents['default'];
  /** Default timeout of one agent run in seconds. */
  timeout_seconds: number;
  /** What agents get of the worker's environment beyond the allowlist; `path` absolute. */
  env: RawAgents['env'];
  aider: AiderAgentConfig;
  claude: ClaudeAgentConfig;
  codex: CodexAgentConfig;
  gemini: GeminiAgentConfig;
  ollama: OllamaAgentConfig;
  command: CommandAgentConfig;
  script: ScriptAgentConfig;
  /** Named agent + model pairs, usable wherever an agent name is. */
  profiles: RawAgents['profiles'];
  /** The default escalation chain: profiles or agents tried in order (empty: none). */
  escalation: RawAgents['escalation'];
  /** More escalation chains by name. */
  chains: RawAgents['chains'];
}

/** `worker:` after normalize: `worker_id` is always set (the host name by default). */
export type WorkerConfig = Filled<Raw['worker'], 'worker_id'>;

/** `verification:` as written (no derived values). */
export type VerificationConfig = Raw['verification'];

/** `sandbox:` after normalize: `read_paths` and `hidden_paths` are absolute. */
export type SandboxConfig = Raw['sandbox'];

/** `patch:` as written (no derived values). */
export type PatchConfig = Raw['patch'];

/** `forge.github` after normalize; `token` comes only from the variable named by `token_env`. */
export type GithubForgeConfig = Simplify<
  Raw['forge']['github'] & { token?: string; webhook_secret?: string; private_key?: string }
>;

/** `forge:` after normalize. */
export interface ForgeConfig {
  /** Which forge jobs use. */
  type: Raw['forge']['type'];
  github: GithubForgeConfig;
}

/** `store:` as written. */
export type StoreConfig = Raw['store'];

/** `router:` after normalize: API keys read from their variables; `classifier.host`/`chat.host` always set. */
export type RouterConfig = Simplify<
  Omit<Raw['router'], 'classifier' | 'chat'> & {
    classifier: Filled<Raw['router']['classifier'], 'host'> & { api_key?: string };
    chat: Filled<Raw['router']['chat'], 'host'> & { api_key?: string };
  }
>;

/** `slack:` after normalize; secrets come only from the variables named by `*_env`. */
export type SlackConfig = Simplify<Raw['slack'] & { bot_token?: string; app_token?: string; signing_secret?: string }>;

/** `line:` after normalize; secrets come only from the variables named by `*_env`. */
export type LineConfig = Simplify<Raw['line'] & { channel_secret?: string; channel_access_token?: string }>;

/** `http_api:` after normalize; secrets come only from the variables named by `*_env`. */
export type HttpApiConfig = Simplify<Raw['http_api'] & { token?: string; callback_secret?: string }>;

/**
 * `dashboard:` after normalize; the shared token comes only from the variable named by
 * `token_env`, and `operator_tokens` holds the token of each operator whose variable is set.
 */
export type DashboardConfig = Simplify<Raw['dashboard'] & { token?: string; operator_tokens: Record<string, string> }>;

/**
 * `signing:` after normalize: `key_file` is absolute (default `<data_dir>/fleet.key`) and
 * `previous_key_file` too; `key` and `previous_key` come only from the variables named by
 * `key_env` and `previous_key_env`.
 */
export type SigningConfig = Simplify<Filled<Raw['signing'], 'key_file'> & { key?: string; previous_key?: string }>;

/** `costs:` as written: prices and money budgets. */
export type CostsConfig = Raw['costs'];

/** `serve:` as written: the one port of `codefleet serve`. */
export type ServeConfig = Raw['serve'];

/** `logging:` as written. */
export type LoggingConfig = Raw['logging'];

/** The validated, normalized configuration: paths are absolute and derived defaults filled in. */
export interface Config {
  /** Absolute directory for the local queue, the run store and caches. */
  data_dir: string;
  /** Accept a Redis URL to another host without a password (see `redisUrlProblems`). */
  allow_insecure_redis: boolean;
  queue: QueueConfig;
  store: StoreConfig;
  workspace: WorkspaceConfig;
  agents: AgentsConfig;
  costs: CostsConfig;
  worker: WorkerConfig;
  verification: VerificationConfig;
  sandbox: SandboxConfig;
  signing: SigningConfig;
  patch: PatchConfig;
  forge: ForgeConfig;
  router: RouterConfig;
  slack: SlackConfig;
  line: LineConfig;
  http_api: HttpApiConfig;
  dashboard: DashboardConfig;
  serve: ServeConfig;
  logging: LoggingConfig;
}

/** What `loadConfig` and `parseConfig` return. */
export interface LoadedConfig {
  /** The validated configuration. */
  config: Config;
  /** Absolute path of the file it came from; undefined when only defaults were used. */
  source: string | undefined;
  /**
   * Snapshot of the environment the config was loaded with, for modules that build child
   * process environments (the agent's env allowlist) without reading `process.env`.
   */
  env: Readonly<Record<string, string>>;
  /** Secret values found in the environment, longest first, for log masking. */
  secrets: string[];
}

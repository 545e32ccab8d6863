import { isAbsolute, join, resolve } from 'node:path';
import { type Env, readVariable } from './expand.js';
import type { ParsedConfig } from './schema/index.js';
import { AUTO_MODEL, localModelFor, type HostHardware } from './host-model.js';
import type { Config } from './types.js';

/** What normalize needs besides the parsed config. */
export interface NormalizeContext {
  /** Directory relative paths are resolved against: the config file's, else the working directory. */
  baseDir: string;
  env: Env;
  /** Default worker id. */
  hostname: string;
  /** The host's hardware, for `agents.ollama.model: auto`; absent: not probed. */
  hardware?: HostHardware | undefined;
}

/**
 * Step 2 of 3: makes paths absolute and fills in the defaults that depend on other values or
 * on the host, so later modules never repeat this logic:
 * - `data_dir`, `queue.local.path`, `workspace.cache_dir`, path-like agent binaries and
 *   `./` script modules are resolved against `baseDir`;
 * - `queue.local.path` defaults to `<data_dir>/queue.sqlite`, `workspace.cache_dir` to
 *   `<data_dir>/cache`, `queue.heartbeat_seconds` to `lease_seconds / 4`;
 * - `queue.sqs.region` defaults to `$AWS_REGION`, then `$AWS_DEFAULT_REGION`, then us-east-1;
 * - each agent's `timeout_seconds` defaults to `agents.timeout_seconds`;
 * - `agents.ollama.model: auto` (the default) becomes the model for the host's `hardware`
 *   (`localModelFor`), and `model_reason` says why, or that the config named it;
 * - `agents.ollama.host` defaults, for the ollama provider, to `$OLLAMA_HOST` read the way
 *   Ollama reads it (`host:port`, `:port`, a URL), else `http://127.0.0.1:11434`; for the
 *   anthropic provider to `https://api.anthropic.com`, its `api_key_env` to `ANTHROPIC_API_KEY`;
 * - `worker.worker_id` defaults to the host name;
 * - `~` in `sandbox.*_paths` and `verification.env.path` / `agents.env.path` is the HOME;
 * - `forge.github.token` is read from the variable named by `forge.github.token_env`, and
 *   `forge.github.webhook_secret` from the one named by `webhook_secret_env`; the chat and
 *   HTTP producers' secrets (`slack.bot_token`, `line.channel_secret`, `http_api.token`, …)
 *   and `dashboard.token` likewise from their `*_env` variables, and each of
 *   `dashboard.operators`' tokens (into `operator_tokens`, by name) from the variable it names;
 * - `signing.key_file` defaults to `<data_dir>/fleet.key`; `signing.key` and `previous_key`
 *   are read from the variables named by `key_env` and `previous_key_env`;
 * - `router.classifier.host` and `router.chat.host` default to `agents.ollama.host` for the
 *   ollama provider (the local model server the built-in agent uses).
 *
 * Long on purpose: the body is one object in the shape of `Config`, a line or two per key,
 * in the order of the list above, over a handful of resolvers (paths, HOME, secrets, the
 * local model host). Split by section, each part would only take the same resolvers and
 * the reader would lose the one place where every default is seen beside its siblings.
 */
export function normalize(parsed: ParsedConfig, context: NormalizeContext): Config {
  const { baseDir, env, hostname } = context;
  const path = (p: string) => resolve(baseDir, p);
  // `~/.cargo`: toolchains are usually named from HOME.
  const home = readVariable(env, 'HOME');
  const homePath = (p: string) =>
    home !== undefined && (p === '~' || p.startsWith('~/')) ? join(home, p.slice(1)) : path(p);
  const dataDir = path(parsed.data_dir);
  const { queue, agents, forge } = parsed;
  const timeout = (own: number | undefined) => own ?? agents.timeout_seconds;
  const token = nonEmpty(readVariable(env, forge.github.token_env));
  const webhookSecret = nonEmpty(readVariable(env, forge.github.webhook_secret_env));
  const privateKey =
    forge.github.private_key_env === undefined ? undefined : nonEmpty(readVariable(env, forge.github.private_key_env));
  const secret = (name: string | undefined) => (name === undefined ? undefined : nonEmpty(readVariable(env, name)));
  const ollamaHost = ollamaHostFromEnv(env) ?? defaultOllamaHost;
  const localModel = <
    T extends { provider: 'ollama' | 'openai'; host?: string | undefined; api_key_env?: string | undefined },
  >(
    model: T,
  ) => {
    const apiKey = secret(model.api_key_env);
    // An openai-provider model with no host is reported by the rules, not given a cloud default.
    const host = model.host ?? (model.provider === 'ollama' ? ollamaHost : '');
    return { ...model, host, ...(apiKey === undefined ? {} : { api_key: apiKey }) };
  };
  const withSecrets = <T extends object>(section: T, secrets: Record<string, string | undefined>) => ({
    ...section,
    ...Object.fromEntries(Object.entries(secrets).filter((entry): entry is [string, string] => entry[1] !== undefined)),
  });
  const cli = <T extends { binary: string; timeout_seconds?: number | undefined }>(agent: T) => ({
    ...agent,
    binary: binaryPath(agent.binary, baseDir),
    timeout_seconds: timeout(agent.timeout_seconds),
  });

  return {
    ...parsed,
    data_dir: dataDir,
    queue: {
      ...queue,
      heartbeat_seconds: queue.heartbeat_seconds ?? queue.lease_seconds / 4,
      local: { path: queue.local.path === undefined ? join(dataDir, 'queue.sqlite') : path(queue.local.path) },
      sqs: {
        ...queue.sqs,
        region: queue.sqs.region ?? envRegion(env) ?? 'us-east-1',
      },
    },
    workspace: {
      ...parsed.workspace,
      cache_dir: parsed.workspace.cache_dir === undefined ? join(dataDir, 'cache') : path(parsed.workspace.cache_dir),
    },
    agents: {
      ...agents,
      aider: cli(agents.aider),
      claude: cli(agents.claude),
      codex: cli(agents.codex),
      gemini: cli(agents.gemini),
      ollama: {
        ...agents.ollama,
        ...ollamaHostOf(agents.ollama, env),
        ...ollamaModelOf(agents.ollama.model, context.hardware),
        timeout_seconds: timeout(agents.ollama.timeout_seconds),
      },
      command: { ...agents.command, timeout_seconds: timeout(agents.command.timeout_seconds) },
      env: { ...agents.env, path: agents.env.path.map(homePath) },
      script: {
        ...agents.script,
        ...(agents.script.module === undefined ? {} : { module: modulePath(agents.script.module, baseDir) }),
        timeout_seconds: timeout(agents.script.timeout_seconds),
      },
    },
    verification: {
      ...parsed.verification,
      env: { ...parsed.verification.env, path: parsed.verification.env.path.map(homePath) },
    },
    worker: { ...parsed.worker, worker_id: parsed.worker.worker_id ?? hostname },
    sandbox: {
      ...parsed.sandbox,
      read_paths: parsed.sandbox.read_paths.map(homePath),
      hidden_paths: parsed.sandbox.hidden_paths.map(homePath),
    },
    forge: {
      ...forge,
      github: {
        ...forge.github,
        ...(token === undefined ? {} : { token }),
        ...(webhookSecret === undefined ? {} : { webhook_secret: webhookSecret }),
        ...(privateKey === undefined ? {} : { private_key: privateKey }),
      },
    },
    router: {
      ...parsed.router,
      classifier: localModel(parsed.router.classifier),
      chat: localModel(parsed.router.chat),
    },
    slack: withSecrets(parsed.slack, {
      bot_token: secret(parsed.slack.bot_token_env),
      app_token: secret(parsed.slack.app_token_env),
      signing_secret: secret(parsed.slack.signing_secret_env),
    }),
    line: withSecrets(parsed.line, {
      channel_secret: secret(parsed.line.channel_secret_env),
      channel_access_token: secret(parsed.line.channel_access_token_env),
    }),
    http_api: withSecrets(parsed.http_api, {
      token: secret(parsed.http_api.token_env),
      callback_secret: secret(parsed.http_api.callback_secret_env),
    }),
    dashboard: {
      ...withSecrets(parsed.dashboard, { token: secret(parsed.dashboard.token_env) }),
      operator_tokens: Object.fromEntries(
        Object.entries(parsed.dashboard.operators).flatMap(([name, variable]) => {
          const value = secret(variable);
          return value === undefined ? [] : [[name, value]];
        }),
      ),
    },
    serve: parsed.serve,
    signing: withSecrets(
      {
        ...parsed.signing,
        key_file: parsed.signing.key_file === undefined ? join(dataDir, 'fleet.key') : path(parsed.signing.key_file),
        ...(parsed.signing.previous_key_file === undefined
          ? {}
          : { previous_key_file: path(parsed.signing.previous_key_file) }),
      },
      { key: secret(parsed.signing.key_env), previous_key: secret(parsed.signing.previous_key_env) },
    ),
  };
}

/** Ollama's own default address. */
export const defaultOllamaHost = 'http://127.0.0.1:11434';

/**
 * `OLLAMA_HOST` as a URL, read like the Ollama CLI does: `0.0.0.0`, `host:port`, `:port`
 * and full URLs; a missing port is 11434 unless a scheme was given. `undefined` when unset;
 * `null` when set but not an address.
 */
export function ollamaHostFromEnv(env: Env): string | undefined | null {
  const value = nonEmpty(readVariable(env, 'OLLAMA_HOST')?.trim());
  if (value === undefined) return undefined;
  const explicit = value.includes('://');
  try {
    const url = new URL(explicit ? value : `http://${value.startsWith(':') ? `127.0.0.1${value}` : value}`);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    if (!explicit && url.port === '') url.port = '11434';
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return null;
  }
}

function ollamaModelOf(model: string, hardware: HostHardware | undefined): { model: string; model_reason: string } {
  if (model !== AUTO_MODEL) return { model, model_reason: 'set in config (agents.ollama.model)' };
  const choice = localModelFor(hardware);
  return { model: choice.model, model_reason: choice.reason };
}

function ollamaHostOf(ollama: ParsedConfig['agents']['ollama'], env: Env): { host?: string; api_key_env?: string } {
  if (ollama.provider === 'anthropic') {
    return { host: ollama.host ?? defaultAnthropicHost, api_key_env: ollama.api_key_env ?? 'ANTHROPIC_API_KEY' };
  }
  if (ollama.host !== undefined || ollama.provider !== 'ollama') return {};
  return { host: ollamaHostFromEnv(env) ?? defaultOllamaHost };
}

/** Where the anthropic provider of the built-in agent goes unless `agents.ollama.host` says otherwise. */
export const defaultAnthropicHost = 'https://api.anthropic.com';

function envRegion(env: Env): string | undefined {
  return nonEmpty(readVariable(env, 'AWS_REGION')) ?? nonEmpty(readVariable(env, 'AWS_DEFAULT_REGION'));
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** A bare name (`aider`) is looked up on PATH later; only a relative path is resolved. */
function binaryPath(binary: string, baseDir: string): string {
  return binary.includes('/') && !isAbsolute(binary) ? resolve(baseDir, binary) : binary;
}

/** `./agent.js` is a file next to the config; `some-package` is left for the module resolver. */
function modulePath(specifier: string, baseDir: string): string {
  return specifier.startsWith('./') || specifier.startsWith('../') ? resolve(baseDir, specifier) : specifier;
}

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildAgentEnv, createAgent, type Agent } from '@codefleet/agents';
import type { Config, LoadedConfig } from '@codefleet/config';
import { CodefleetError, type OuterPolicy } from '@codefleet/core';
import {
  createGithubForge, createLocalForge, githubAppTokens, githubCredentialEnv, staticToken, type Forge, type TokenSource,
} from '@codefleet/forge';
import { createLogger, type Logger } from '@codefleet/log';
import type { PipelineDeps, PipelineSettings } from '@codefleet/pipeline';
import { openQueue, queueSettingsFromConfig, type Queue } from '@codefleet/queue';
import { RedisRunStore, SqliteRunStore, type RunStore } from '@codefleet/store';
import { createWorkspaceManager } from '@codefleet/workspace';

/** Everything a command needs, opened once from the loaded config. */
export interface Runtime {
  loaded: LoadedConfig;
  config: Config;
  log: Logger;
  queue: Queue;
  store: RunStore;
  forge: Forge & { close?: () => Promise<void> | void };
  pipeline: PipelineDeps;
  close(): Promise<void>;
}

/** Names of the environment variables git needs; no credentials (the local forge needs none). */
const gitEnvNames = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'USER', 'GIT_CONFIG_GLOBAL', 'GIT_CONFIG_NOSYSTEM', 'GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL'];

/** The environment of git calls: a small allowlist, prompts off. */
export function gitEnvFrom(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { GIT_TERMINAL_PROMPT: '0' };
  for (const name of gitEnvNames) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Pipeline settings derived from the config. */
export function pipelineSettings(config: Config, env: Readonly<Record<string, string>>): PipelineSettings {
  const backoff = config.worker.backoff;
  const outer: OuterPolicy = {
    maxRetries: config.worker.max_retries,
    backoff: backoff.strategy === 'fixed'
      ? { strategy: 'fixed', delayMs: backoff.delay_seconds * 1000 }
      : { strategy: 'exponential', baseMs: backoff.delay_seconds * 1000, maxMs: backoff.max_delay_seconds * 1000, jitter: backoff.jitter },
  };
  const verifyEnv = buildAgentEnv(env);
  return {
    defaultAgent: config.agents.default,
    agentTimeoutMs: config.agents.timeout_seconds * 1000,
    maxFixAttempts: config.worker.max_fix_attempts,
    maxAttempts: config.worker.max_retries + 1,
    outer,
    verification: config.verification,
    stepTimeoutMs: config.verification.step_timeout_seconds * 1000,
    onDodFailure: config.verification.on_dod_failure,
    agentEnv: (agent: Agent) => buildAgentEnv(env, { allow: [...(agent.allowEnv ?? [])] }),
    verifyEnv,
    commitAuthor: { name: 'codefleet', email: 'codefleet@users.noreply.invalid' },
    ...(config.patch.auto_commit ? { commitPrefix: config.patch.commit_message_prefix } : {}),
    keepFailed: config.workspace.keep_failed,
    ...(config.worker.job_budget_seconds === undefined ? {} : { jobBudgetMs: config.worker.job_budget_seconds * 1000 }),
    ...(config.forge.type === 'github' ? {
      labels: {
        queued: config.forge.github.labels.queued, running: config.forge.github.labels.running,
        prOpened: config.forge.github.labels.pr_opened, failed: config.forge.github.labels.failed,
      },
    } : {}),
  };
}

/**
 * Where GitHub serves git for an API base: github.com for api.github.com, the server's
 * origin for GitHub Enterprise (`https://ghe.example.com/api/v3` → `https://ghe.example.com`).
 */
export function gitHostFor(apiUrl: string): string {
  const url = new URL(apiUrl);
  return url.hostname === 'api.github.com' ? 'https://github.com' : url.origin;
}

/** Opens the queue, stores, forge and workspace manager the config describes. */
export async function openRuntime(loaded: LoadedConfig, options: { log?: Logger } = {}): Promise<Runtime> {
  const { config, env } = loaded;
  const log = options.log ?? createLogger({
    level: config.logging.level, format: config.logging.format, secrets: loaded.secrets, base: { worker_id: config.worker.worker_id },
  });
  const { github } = config.forge;
  const token = github.token;
  const useApp = config.forge.type === 'github' && github.app_id !== undefined && github.private_key !== undefined && github.installation_id !== undefined;
  if (config.forge.type === 'github' && token === undefined && !useApp) {
    throw new CodefleetError('invalid_config', `forge.type is github but $${github.token_env} is not set: export a token there, or configure a GitHub App`);
  }
  // The SQLite files (forge, runs, local queue) live here; a fleet using Redis still has
  // a local forge and caches on each host.
  mkdirSync(config.data_dir, { recursive: true });
  const queue = await openQueue(queueSettingsFromConfig(config));
  const store: RunStore = config.store.backend === 'redis'
    ? new RedisRunStore({ url: config.store.redis_url, prefix: config.store.prefix })
    : new SqliteRunStore(join(config.data_dir, 'runs.sqlite'));
  const baseGitEnv = gitEnvFrom(env);
  // A GitHub App's installation tokens expire hourly: git reads the current one from a file.
  const tokenFile = join(config.data_dir, 'github-installation-token');
  const tokens: TokenSource | undefined = useApp
    ? githubAppTokens({ appId: github.app_id ?? 0, privateKey: github.private_key ?? '', installationId: github.installation_id ?? 0, apiUrl: github.api_url, tokenFile })
    : token === undefined ? undefined : staticToken(token);
  if (useApp) await tokens?.token();
  // On GitHub, clone and fetch authenticate like the push: a credential helper, never a URL.
  const gitEnv = config.forge.type !== 'github' ? baseGitEnv : githubCredentialEnv(baseGitEnv, useApp ? { tokenFile } : token ?? '');
  const forge: Runtime['forge'] = config.forge.type === 'github' && tokens !== undefined
    ? createGithubForge({
      ...(useApp ? { tokens, tokenFile } : { token: token ?? '' }),
      apiUrl: github.api_url, gitUrl: gitHostFor(github.api_url), gitEnv: baseGitEnv,
    })
    : createLocalForge({ dbPath: join(config.data_dir, 'forge.sqlite'), gitEnv });
  const workspaces = createWorkspaceManager({ cacheDir: config.workspace.cache_dir, reuse: config.workspace.reuse, gitEnv });
  const agents = new Map<string, Agent>();
  const pipeline: PipelineDeps = {
    workspaces,
    forge,
    store,
    log,
    settings: pipelineSettings(config, env),
    agentFor: (name) => {
      let agent = agents.get(name);
      if (!agent) {
        agent = createAgent(name, config.agents);
        agents.set(name, agent);
      }
      return agent;
    },
  };
  return {
    loaded, config, log, queue, store, forge, pipeline,
    close: async () => {
      await queue.close();
      await store.close();
      await forge.close?.();
    },
  };
}

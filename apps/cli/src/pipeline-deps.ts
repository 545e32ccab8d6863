import { join } from 'node:path';
import { buildAgentEnv, createAgent, patchPolicyFrom, pricesFrom, type Agent } from '@codefleet/agents';
import type { Config, LoadedConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { createLocalForge, type Forge, type IssueTracker } from '@codefleet/forge';
import {
  createGithubForge,
  createIssueRequester,
  githubAppTokens,
  githubCredentialEnv,
  staticToken,
  type TokenSource,
} from '@codefleet/github';
import type { Logger, SecretRegistry } from '@codefleet/log';
import type { PipelineDeps, PipelineSettings } from '@codefleet/pipeline';
import { cliRequester, requesterFor, type Requester } from '@codefleet/requester';
import type { Sandbox } from '@codefleet/sandbox';
import type { RunStore } from '@codefleet/store';
import type { WorkspaceManager } from '@codefleet/workspace';
import { outerPolicyOf } from './outer-policy.js';
import { escalationSettings } from './escalation-settings.js';

// What a job needs beyond the queue and the store: the forge, working copies, agents and
// the pipeline's settings. The runtime imports this module on first use, so a worker that
// is waiting for jobs does not hold this code in memory.

/** A forge as the runtime opens it, closed with the runtime. */
export type RuntimeForge = Forge & { readonly issues: IssueTracker; close?: () => Promise<void> | void };

/** Pipeline settings derived from the config. */
export function pipelineSettings(config: Config, env: Readonly<Record<string, string>>): PipelineSettings {
  const outer = outerPolicyOf(config);
  const verifyEnv = runEnvironment(env, config.verification.env);
  return {
    defaultAgent: config.agents.default,
    agentTimeoutMs: config.agents.timeout_seconds * 1000,
    maxFixAttempts: config.worker.max_fix_attempts,
    maxAttempts: config.worker.max_retries + 1,
    outer,
    verification: config.verification,
    stepTimeoutMs: config.verification.step_timeout_seconds * 1000,
    onDodFailure: config.verification.on_dod_failure,
    agentEnv: (agent: Agent) => runEnvironment(env, config.agents.env, agent.allowEnv),
    verifyEnv,
    // What the sandbox shows shapes which checks can run: a baseline taken under other
    // settings is not reused.
    environmentKey: JSON.stringify(config.sandbox),
    commitAuthor: { name: 'codefleet', email: 'codefleet@users.noreply.invalid' },
    ...(config.patch.auto_commit ? { commitPrefix: config.patch.commit_message_prefix } : {}),
    keepFailed: config.workspace.keep_failed,
    scope: config.workspace.scope,
    protectWorkflows: config.workspace.protect_workflows,
    memoryChars: config.workspace.memory_chars,
    patchPolicy: patchPolicyFrom(config.patch),
    ...(config.worker.job_budget_seconds === undefined ? {} : { jobBudgetMs: config.worker.job_budget_seconds * 1000 }),
    ...escalationSettings(config.agents),
    prices: pricesFrom(config.costs),
    budgetUsd: { job: config.costs.budget_usd.job, day: config.costs.budget_usd.day },
  };
}

/**
 * Where jobs are reported back, by their source: the issue (GitHub: comments and progress
 * labels; the local forge: its issues and CLI tasks), a Slack thread when a bot token is set,
 * LINE when a channel access token is set, an API job's signed callback when a callback secret and hosts are, and the CLI,
 * which needs nothing sent. A chat job of a platform with no client here is logged.
 */
export async function requesters(
  config: Config,
  forge: RuntimeForge,
  log: Logger,
  secrets: SecretRegistry,
  store: RunStore,
): Promise<Requester> {
  const { labels } = config.forge.github;
  const adapters: Requester[] = [
    createIssueRequester({
      issues: forge.issues,
      secrets,
      tasks: forge.kind === 'local',
      ...(config.forge.type === 'github'
        ? {
            labels: {
              queued: labels.queued,
              running: labels.running,
              prOpened: labels.pr_opened,
              failed: labels.failed,
            },
          }
        : {}),
    }),
    cliRequester,
  ];
  if (config.slack.bot_token !== undefined) {
    const { createSlackClient, createSlackRequester } = await import('@codefleet/slack');
    adapters.push(createSlackRequester({ client: createSlackClient(config.slack), store, secrets, log }));
  }
  if (config.line.channel_access_token !== undefined) {
    const { createLineRequester } = await import('@codefleet/line');
    adapters.push(createLineRequester({ config: config.line, secrets, log }));
  }
  const api = config.http_api;
  if (api.callback_secret !== undefined && api.callback_hosts.length > 0) {
    const { createCallbackRequester } = await import('@codefleet/http-api');
    adapters.push(
      createCallbackRequester({ secret: api.callback_secret, hosts: api.callback_hosts, log, sent: store, secrets }),
    );
  }
  return requesterFor(adapters, log);
}

/**
 * Every sandboxed run starts with an empty HOME, so npm (and CLIs built on the
 * update-notifier package) would look for a newer version of themselves on every call:
 * ~400 ms per npm command measured, most of a warm second job's verification overhead.
 * An operator who passes these through (verification.env.pass) keeps their own values.
 */
const quietTools: Readonly<Record<string, string>> = { npm_config_update_notifier: 'false', NO_UPDATE_NOTIFIER: '1' };

/**
 * The environment of verification steps or agents: the allowlist, the variables `extra`
 * names (proxies, RUSTUP_HOME; an agent's API key), and `extra.path` in front of PATH.
 */
export function runEnvironment(
  env: Readonly<Record<string, string>>,
  extra: { pass: readonly string[]; path: readonly string[] },
  allow: readonly string[] = [],
): Record<string, string> {
  const built = { ...quietTools, ...buildAgentEnv(env, { allow: [...extra.pass, ...allow] }) };
  if (extra.path.length > 0)
    built.PATH = [...extra.path, ...(built.PATH === undefined || built.PATH === '' ? [] : [built.PATH])].join(':');
  return built;
}

/**
 * Where GitHub serves git for an API base: github.com for api.github.com, the server's
 * origin for GitHub Enterprise (`https://ghe.example.com/api/v3` → `https://ghe.example.com`).
 */
export function gitHostFor(apiUrl: string): string {
  const url = new URL(apiUrl);
  return url.hostname === 'api.github.com' ? 'https://github.com' : url.origin;
}

/**
 * The forge the config names and git's environment for its repositories. On GitHub,
 * clone and fetch authenticate like the push, through a credential helper, never a URL;
 * a GitHub App's installation token is fetched here, so bad App credentials fail now.
 */
export async function openForge(
  loaded: LoadedConfig,
  baseGitEnv: Record<string, string>,
  secrets?: SecretRegistry,
  gitPath?: string,
): Promise<{ forge: RuntimeForge; gitEnv: Record<string, string> }> {
  const { config } = loaded;
  const { github } = config.forge;
  const token = github.token;
  if (config.forge.type !== 'github') {
    return {
      forge: createLocalForge({
        dbPath: join(config.data_dir, 'forge.sqlite'),
        gitEnv: baseGitEnv,
        ...(gitPath === undefined ? {} : { gitPath }),
      }),
      gitEnv: baseGitEnv,
    };
  }
  const useApp =
    github.app_id !== undefined && github.private_key !== undefined && github.installation_id !== undefined;
  if (!useApp && token === undefined) {
    throw new CodefleetError(
      'invalid_config',
      `forge.type is github but $${github.token_env} is not set: export a token there, or configure a GitHub App`,
    );
  }
  // A GitHub App's installation tokens expire hourly: git reads the current one from a file.
  const tokenFile = join(config.data_dir, 'github-installation-token');
  const tokens: TokenSource = useApp
    ? githubAppTokens({
        appId: github.app_id ?? 0,
        privateKey: github.private_key ?? '',
        installationId: github.installation_id ?? 0,
        apiUrl: github.api_url,
        tokenFile,
        ...(secrets === undefined ? {} : { secrets }),
      })
    : staticToken(token ?? '');
  if (useApp) await tokens.token();
  const gitUrl = gitHostFor(github.api_url);
  const forge = createGithubForge({
    ...(useApp ? { tokens, tokenFile } : { token: token ?? '' }),
    apiUrl: github.api_url,
    gitUrl,
    gitEnv: baseGitEnv,
    ...(gitPath === undefined ? {} : { gitPath }),
  });
  return { forge, gitEnv: githubCredentialEnv(baseGitEnv, useApp ? { tokenFile } : (token ?? ''), gitUrl) };
}

/** The pipeline's dependencies; agents are created on first use and kept. */
export function pipelineDeps(
  loaded: LoadedConfig,
  parts: {
    forge: RuntimeForge;
    requester: Requester;
    workspaces: WorkspaceManager;
    sandbox: Sandbox;
    store: RunStore;
    log: Logger;
    secrets: SecretRegistry;
    gitPath: string;
  },
): PipelineDeps {
  const agents = new Map<string, Agent>();
  const { secrets, gitPath, ...rest } = parts;
  return {
    ...rest,
    settings: { ...pipelineSettings(loaded.config, loaded.env), secrets, gitPath },
    agentFor: (name) => {
      let agent = agents.get(name);
      if (!agent) {
        agent = createAgent(name, loaded.config.agents, loaded.config.patch);
        agents.set(name, agent);
      }
      return agent;
    },
  };
}

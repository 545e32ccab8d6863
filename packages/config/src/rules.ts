import { commandTemplateProblem } from './command-template.js';
import { AGENT_NAMES } from './schema/index.js';
import type { ConfigProblem } from './errors.js';
import { type Env, readVariable } from './expand.js';
import { defaultOllamaHost, ollamaHostFromEnv } from './normalize.js';
import { redisUrlProblems } from './redis-url.js';
import type { Config } from './types.js';

/**
 * Step 3 of 3: rules that involve more than one field, or a field and the environment. Each
 * returns the problems it finds; all of them run, so one error reports everything at once.
 */
export function checkRules(config: Config, env: Env): ConfigProblem[] {
  return [
    ...queueRules(config),
    ...redisUrlProblems(config),
    ...agentRules(config, env),
    ...escalationRules(config),
    ...workerRules(config),
    ...forgeRules(config, env),
    ...sandboxRules(config),
    ...chatRules(config),
    ...signingRules(config),
  ];
}

/**
 * The fleet key never enters a sandbox: a run that held it could sign jobs of its own. Its
 * variables may not be passed to agents or checks.
 */
function signingRules({ signing, agents, verification }: Config): ConfigProblem[] {
  const keyNames = new Set([signing.key_env, signing.previous_key_env]);
  const passed: [string, readonly string[]][] = [
    ['agents.env.pass', agents.env.pass],
    ['verification.env.pass', verification.env.pass],
  ];
  return passed.flatMap(([path, names]) =>
    names
      .filter((name) => keyNames.has(name))
      .map((name) => ({
        path,
        message: `must not pass ${name}: it holds the fleet key, which never enters a sandbox`,
      })),
  );
}

function sandboxRules({ sandbox }: Config): ConfigProblem[] {
  if (sandbox.mode !== 'container' || sandbox.container.image !== undefined) return [];
  return [
    {
      path: 'sandbox.container.image',
      message: 'required when sandbox.mode is container: the image every run starts from',
    },
  ];
}

function queueRules({ queue }: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (queue.heartbeat_seconds >= queue.lease_seconds) {
    problems.push({
      path: 'queue.heartbeat_seconds',
      message: `must be < queue.lease_seconds (${queue.lease_seconds}), got ${queue.heartbeat_seconds}`,
    });
  }
  // On BullMQ the lock is the lease: a heartbeat slower than the lock lets the stalled
  // checker hand a running job to a second worker.
  if (queue.backend === 'bullmq' && queue.heartbeat_seconds * 1000 >= queue.bullmq.lock_duration_ms) {
    problems.push({
      path: 'queue.heartbeat_seconds',
      message:
        `must be < queue.bullmq.lock_duration_ms (${queue.bullmq.lock_duration_ms} ms) when queue.backend is bullmq, ` +
        `got ${queue.heartbeat_seconds} s`,
    });
  }
  // A share of nothing: the requester's bound is a part of the repository's.
  if (queue.per_requester_share !== undefined && queue.per_repo_concurrency === undefined) {
    problems.push({
      path: 'queue.per_requester_share',
      message: `needs queue.per_repo_concurrency (it is a share of a repository's slots), got ${queue.per_requester_share}`,
    });
  }
  if (queue.backend !== 'sqs') return problems;
  const { sqs } = queue;
  if (sqs.queue_url === undefined) {
    problems.push({ path: 'queue.sqs.queue_url', message: 'required when queue.backend is sqs' });
  } else if (sqs.fifo && !sqs.queue_url.endsWith('.fifo')) {
    problems.push({
      path: 'queue.sqs.queue_url',
      message: `must end in .fifo when queue.sqs.fifo is true, got ${JSON.stringify(sqs.queue_url)}`,
    });
  }
  // A heartbeat slower than the visibility timeout lets SQS hand a running job to a second worker.
  if (queue.heartbeat_seconds >= sqs.visibility_timeout) {
    problems.push({
      path: 'queue.heartbeat_seconds',
      message:
        `must be < queue.sqs.visibility_timeout (${sqs.visibility_timeout}) when queue.backend is sqs, ` +
        `got ${queue.heartbeat_seconds}`,
    });
  }
  return problems;
}

function agentRules({ agents }: Config, env: Env): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (agents.default === 'command' && agents.command.argv.length === 0) {
    problems.push({ path: 'agents.command.argv', message: 'must not be empty when agents.default is command' });
  }
  // Checked at load, not when the first job builds the agent and dead-letters on it.
  const template = agents.command.argv.length === 0 ? undefined : commandTemplateProblem(agents.command.argv);
  if (template !== undefined) {
    problems.push({
      path: template.index < 0 ? 'agents.command.argv' : `agents.command.argv[${template.index}]`,
      message: template.message,
    });
  }
  const { ollama } = agents;
  if (ollama.provider === 'openai' && ollama.host === undefined) {
    problems.push({
      path: 'agents.ollama.host',
      message: 'required when agents.ollama.provider is openai (the API base, e.g. https://api.openai.com/v1)',
    });
  }
  // `auto` picks a local Qwen model for the host's hardware: never a model Anthropic has.
  // A profile with its own model for the anthropic provider is fine; the section's own must be named.
  if (ollama.provider === 'anthropic' && !ollama.model_reason?.startsWith('set in config')) {
    problems.push({
      path: 'agents.ollama.model',
      message: 'must name a Claude model when agents.ollama.provider is anthropic (auto picks a local Ollama model)',
    });
  }
  // Only where the variable would be used: a stray OLLAMA_HOST must not stop a worker that
  // runs another agent, or one that names its Ollama host in the config.
  const hostFromEnv = ollama.provider === 'ollama' && ollama.host === defaultOllamaHost;
  if (agents.default === 'ollama' && hostFromEnv && ollamaHostFromEnv(env) === null) {
    problems.push({
      path: 'agents.ollama.host',
      message: `environment variable OLLAMA_HOST is not an address: ${JSON.stringify(readVariable(env, 'OLLAMA_HOST'))}`,
    });
  }
  return problems;
}

/** The names a job or route may give to run an escalation chain: `escalation` (when set) and agents.chains. */
function chainNames(agents: Config['agents']): string[] {
  return [...(agents.escalation.length > 0 ? ['escalation'] : []), ...Object.keys(agents.chains)];
}

/**
 * Every tier of a chain names an agent or a profile (a chain of chains would hide its
 * length and could loop); a chain's name is one a job can give without doubt of what it
 * means, so it takes no agent's or profile's name, nor `escalation`, which is agents.escalation.
 */
function escalationRules({ agents }: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const runnable = new Set<string>([...AGENT_NAMES, ...Object.keys(agents.profiles)]);
  const chains: [string, readonly string[]][] = [
    ['agents.escalation', agents.escalation],
    ...Object.entries(agents.chains).map(([name, tiers]): [string, readonly string[]] => [
      `agents.chains.${name}`,
      tiers,
    ]),
  ];
  for (const [path, tiers] of chains) {
    tiers.forEach((tier, i) => {
      if (!runnable.has(tier))
        problems.push({
          path: `${path}[${i}]`,
          message: `names no agent or agents.profiles entry: ${JSON.stringify(tier)}`,
        });
    });
  }
  for (const name of Object.keys(agents.chains)) {
    if (name === 'escalation' || runnable.has(name)) {
      problems.push({
        path: `agents.chains.${name}`,
        message:
          name === 'escalation'
            ? 'escalation names agents.escalation; set the default chain there'
            : 'a chain may not take the name of an agent or a profile',
      });
    }
  }
  if (agents.profiles.escalation !== undefined)
    problems.push({
      path: 'agents.profiles.escalation',
      message: 'escalation names the chain agents.escalation; name the profile for its role',
    });
  return problems;
}

function workerRules({ worker }: Config): ConfigProblem[] {
  const { backoff } = worker;
  if (backoff.max_delay_seconds < backoff.delay_seconds) {
    return [
      {
        path: 'worker.backoff.max_delay_seconds',
        message: `must be >= worker.backoff.delay_seconds (${backoff.delay_seconds}), got ${backoff.max_delay_seconds}`,
      },
    ];
  }
  return [];
}

function forgeRules({ forge }: Config, env: Env): ConfigProblem[] {
  const { github } = forge;
  const problems: ConfigProblem[] = [];
  const isSet = (name: string) => (readVariable(env, name) ?? '') !== '';
  if (github.app_id !== undefined) {
    if (github.installation_id === undefined) {
      problems.push({
        path: 'forge.github.installation_id',
        message: 'required when forge.github.app_id is set (the installation of the App on your repositories)',
      });
    }
    if (github.private_key_env === undefined) {
      problems.push({ path: 'forge.github.private_key_env', message: 'required when forge.github.app_id is set' });
    } else if (forge.type === 'github' && !isSet(github.private_key_env)) {
      problems.push({
        path: 'forge.github.private_key_env',
        message: `environment variable ${github.private_key_env} is not set (forge.type is github and forge.github.app_id is set)`,
      });
    }
  } else if (forge.type === 'github' && github.token === undefined) {
    problems.push({
      path: 'forge.github.token_env',
      message:
        `environment variable ${github.token_env} is not set; ` +
        'forge.type github needs a token (or forge.github.app_id with private_key_env)',
    });
  }
  return problems;
}

/**
 * What the chat and HTTP producers need: an agent name or profile wherever one is named, the
 * secrets of each enabled producer, and a host for an openai-provider local model.
 */
function chatRules({ agents, router, slack, line, http_api }: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const known = new Set<string>([...AGENT_NAMES, ...Object.keys(agents.profiles), ...chainNames(agents)]);
  for (const name of Object.keys(agents.profiles)) {
    if ((AGENT_NAMES as readonly string[]).includes(name))
      problems.push({
        path: `agents.profiles.${name}`,
        message: 'a profile may not take the name of an agent; name it for its role (e.g. implementer)',
      });
  }
  for (const [route, target] of Object.entries(router.routes)) {
    if (target.agent !== undefined && !known.has(target.agent)) {
      problems.push({
        path: `router.routes.${route}.agent`,
        message: `names no agent, agents.profiles entry or escalation chain: ${JSON.stringify(target.agent)}`,
      });
    }
  }
  for (const part of ['classifier', 'chat'] as const) {
    if (router[part].host === '')
      problems.push({
        path: `router.${part}.host`,
        message: 'required when the provider is openai (a local OpenAI-compatible server)',
      });
  }
  const need = (enabled: boolean, section: string, pairs: [string | undefined, string, string][]) => {
    if (!enabled) return;
    for (const [value, key, variable] of pairs) {
      if (value === undefined)
        problems.push({
          path: `${section}.${key}`,
          message: `environment variable ${variable} is not set (${section} is enabled)`,
        });
    }
  };
  need(slack.enabled, 'slack', [
    [slack.bot_token, 'bot_token_env', slack.bot_token_env],
    slack.mode === 'socket'
      ? [slack.app_token, 'app_token_env', slack.app_token_env]
      : [slack.signing_secret, 'signing_secret_env', slack.signing_secret_env],
  ]);
  need(line.enabled, 'line', [
    [line.channel_secret, 'channel_secret_env', line.channel_secret_env],
    [line.channel_access_token, 'channel_access_token_env', line.channel_access_token_env],
  ]);
  need(http_api.enabled, 'http_api', [[http_api.token, 'token_env', http_api.token_env]]);
  return problems;
}

import { AGENT_NAMES, type AgentsConfig, type PatchConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { createAiderAgent } from './cli/aider.js';
import { createClaudeAgent } from './cli/claude.js';
import { createCodexAgent } from './cli/codex.js';
import { createGeminiAgent } from './cli/gemini.js';
import { createBuiltinAgent } from './builtin/builtin-agent.js';
import { createCommandAgent } from './command-agent.js';
import type { CliAgentSettings } from './cli/shared.js';
import { patchPolicyFrom } from './patch-policy.js';
import type { Agent } from './port.js';
import { createScriptAgent } from './script-agent.js';

const isKnownAgent = (name: string): boolean => (AGENT_NAMES as readonly string[]).includes(name);

/**
 * Builds the agent called `name` from the normalized `agents:` config: the CLI adapters
 * (`aider`, `claude`, `codex`, `gemini`), the built-in model agent (`ollama`), `command` and `script`.
 * `patch` (config.yaml's `patch:`) sets how the built-in agent applies its replies.
 *
 * @throws {CodefleetError} `invalid_config` for an unknown or not yet available agent, or
 *   an incomplete section (`agents.command.argv` empty, `agents.script.module` unset).
 */
export function createAgent(name: string, agents: AgentsConfig, patch?: PatchConfig): Agent {
  const agent = buildAgent(name, agents, patch);
  const model = configuredModel(name, agents);
  return model === undefined || agent.model !== undefined ? agent : { ...agent, model };
}

/** The model the config names for agent or profile `name`, if any: what its runs are priced at. */
function configuredModel(name: string, agents: AgentsConfig): string | undefined {
  const profile = agents.profiles[name];
  if (profile !== undefined) return profile.model ?? configuredModel(profile.agent, agents);
  const section = (agents as unknown as Record<string, { model?: unknown } | undefined>)[name];
  return typeof section?.model === 'string' ? section.model : undefined;
}

function buildAgent(name: string, agents: AgentsConfig, patch?: PatchConfig): Agent {
  // A profile ("implementer", "strongest") is an agent with its own model (router.routes, a job's agent).
  const profile = agents.profiles[name];
  if (profile !== undefined) return createAgent(profile.agent, withModel(agents, profile.agent, profile.model), patch);
  switch (name) {
    case 'aider': {
      const c = agents.aider;
      return createAiderAgent({ ...cliSettings(c), model: c.model, mapTokens: c.map_tokens });
    }
    case 'claude': {
      const c = agents.claude;
      return createClaudeAgent({ ...cliSettings(c), maxTurns: c.max_turns });
    }
    case 'codex':
      return createCodexAgent({ ...cliSettings(agents.codex), approvalArgs: agents.codex.approval_args });
    case 'gemini':
      return createGeminiAgent({
        ...cliSettings(agents.gemini),
        approvalArgs: agents.gemini.approval_args,
        maxTurns: agents.gemini.max_turns,
      });
    case 'command': {
      const config = agents.command;
      return createCommandAgent({
        argv: config.argv,
        timeoutMs: config.timeout_seconds * 1000,
        ...(config.api_key_env === undefined ? {} : { allowEnv: [config.api_key_env] }),
      });
    }
    case 'ollama':
      return createBuiltinAgent(agents.ollama, patch === undefined ? undefined : patchPolicyFrom(patch));
    case 'script': {
      const config = agents.script;
      if (config.module === undefined) {
        throw new CodefleetError('invalid_config', 'agents.script.module is not set: name the script agent module', {
          details: { path: 'agents.script.module' },
        });
      }
      return createScriptAgent({ module: config.module, timeoutMs: config.timeout_seconds * 1000 });
    }
    default:
      if (isKnownAgent(name)) {
        throw new CodefleetError('invalid_config', `agent "${name}" is not available yet`, {
          details: { agent: name },
        });
      }
      throw new CodefleetError('invalid_config', `unknown agent "${name}" (known: ${AGENT_NAMES.join(', ')})`, {
        details: { agent: name },
      });
  }
}

/** The settings every CLI section shares, in the adapters' terms. */
function cliSettings(c: {
  binary: string;
  model?: string | undefined;
  timeout_seconds: number;
  extra_args: string[];
  api_key_env?: string | undefined;
}): CliAgentSettings {
  return {
    binary: c.binary,
    model: c.model,
    timeoutMs: c.timeout_seconds * 1000,
    extraArgs: c.extra_args,
    apiKeyEnv: c.api_key_env,
  };
}

/** `agents` with `agent`'s model replaced; agents without a model (command, script) are left as they are. */
function withModel(agents: AgentsConfig, agent: keyof AgentsConfig, model: string | undefined): AgentsConfig {
  if (model === undefined) return agents;
  switch (agent) {
    case 'aider':
    case 'claude':
    case 'codex':
    case 'gemini':
    case 'ollama':
      return { ...agents, [agent]: { ...agents[agent], model } };
    default:
      return agents;
  }
}

import { AGENT_NAMES, type AgentsConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { createCommandAgent } from './command-agent.js';
import type { Agent } from './port.js';
import { createScriptAgent } from './script-agent.js';

const isKnownAgent = (name: string): boolean => (AGENT_NAMES as readonly string[]).includes(name);

/**
 * Builds the agent called `name` from the normalized `agents:` config. Available now:
 * `command` and `script`; the other configured names arrive with their adapters.
 *
 * @throws {CodefleetError} `invalid_config` for an unknown or not yet available agent, or
 *   an incomplete section (`agents.command.argv` empty, `agents.script.module` unset).
 */
export function createAgent(name: string, agents: AgentsConfig): Agent {
  switch (name) {
    case 'command': {
      const config = agents.command;
      return createCommandAgent({
        argv: config.argv,
        timeoutMs: config.timeout_seconds * 1000,
        ...(config.api_key_env === undefined ? {} : { allowEnv: [config.api_key_env] }),
      });
    }
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
        throw new CodefleetError('invalid_config', `agent "${name}" is not available yet`, { details: { agent: name } });
      }
      throw new CodefleetError('invalid_config', `unknown agent "${name}" (known: ${AGENT_NAMES.join(', ')})`, {
        details: { agent: name },
      });
  }
}

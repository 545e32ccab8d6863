// Public API of @codefleet/agents: the agent port, its environment allowlist, the changed
// files of a working copy, and the adapters available today (command, script).
export type { Agent, AgentOutcome, AgentPass, AgentRunRequest, AgentRunResult, ContextFile } from './port.js';
export { baseAgentEnvNames, buildAgentEnv, isForgeCredential, withoutForgeCredentials, type AgentEnvOptions } from './env.js';
export { changedFiles, headCommit, parsePorcelainZ, runFilesDir, type ChangedFilesOptions } from './changed-files.js';
export { decideOutcome, type OutcomeFacts, type OutcomeVerdict } from './outcome.js';
export { writeRunFiles, type RunFiles } from './run-files.js';
export {
  checkCommandTemplate,
  commandPlaceholders,
  createCommandAgent,
  expandCommandTemplate,
  type CommandAgentOptions,
  type CommandPlaceholder,
} from './command-agent.js';
export { createScriptAgent, resolveScriptModule, type ScriptAgentOptions } from './script-agent.js';
export { createAgent } from './create-agent.js';
export { createPatchAgent } from './patch-agent.js';

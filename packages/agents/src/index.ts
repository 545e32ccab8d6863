// Public API of @codefleet/agents: the agent port, its environment allowlist, the changed
// files of a working copy, and the adapters (CLI agents, command, script, patch).
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
export { createAiderAgent, type AiderAgentOptions } from './cli/aider.js';
export { createClaudeAgent, type ClaudeAgentOptions } from './cli/claude.js';
export { createCodexAgent, type CodexAgentOptions } from './cli/codex.js';
export { createGeminiAgent, type GeminiAgentOptions } from './cli/gemini.js';
export { lastJsonObject, maxPromptArgumentBytes, promptArgument, type CliAgentSettings } from './cli/shared.js';
export { createPatchAgent } from './patch-agent.js';

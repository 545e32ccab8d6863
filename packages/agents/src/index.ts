// Public API of @codefleet/agents: the agent port, its environment allowlist, the changed
// files of a working copy, and the adapters (CLI agents, built-in model agent, command, script, patch).
export type {
  Agent,
  AgentOutcome,
  AgentRunRequest,
  AgentRunResult,
  ContextFile,
  ModelCall,
  ModelPrice,
  PriceTable,
} from './port.js';
export { costOf, priceOf, pricesFrom } from './pricing.js';
export {
  baseAgentEnvNames,
  buildAgentEnv,
  isForgeCredential,
  withoutForgeCredentials,
  type AgentEnvOptions,
} from './env.js';
export {
  agentGitOptions,
  changedFiles,
  headCommit,
  parsePorcelainZ,
  runFilesDir,
  type ChangedFilesOptions,
} from './changed-files.js';
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
export { createBuiltinAgent, createModelAgent, type ModelAgentOptions } from './builtin/builtin-agent.js';
export {
  displayHost,
  ModelCallError,
  modelErrorKind,
  type ChatMessage,
  type ChatModel,
  type ChatOptions,
  type ChatReply,
  type ModelErrorKind,
} from './builtin/chat-model.js';
export { createOllamaModel, probeOllama, type OllamaModelOptions, type OllamaProbe } from './builtin/ollama-model.js';
export { createOpenAiModel, type OpenAiModelOptions } from './builtin/openai-model.js';
export type { ModelCallPolicy } from './builtin/model-call-policy.js';
export {
  createAnthropicModel,
  defaultAnthropicMaxTokens,
  type AnthropicModelOptions,
} from './builtin/anthropic-model.js';
export { buildPrompt, relevanceOrder, systemPrompt, type BuiltPrompt, type PromptInput } from './builtin/prompt.js';
export { readReply, type ReadReply } from './builtin/reply.js';
export { applyOptionsFor, patchPolicyFrom, type PatchPolicy } from './patch-policy.js';

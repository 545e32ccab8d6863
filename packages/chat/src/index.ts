// Public API of @codefleet/chat: the router (explicit commands, rules, a local classifier,
// the CHAT fallback) and the chat service that carries a message's route out.
export type { ChatMessage, ChatOutcome, ChatService } from './port.js';
export { createChatService, type ChatServiceDeps } from './service.js';
export { createRouter, route, type RouteOptions, type Routed } from './router.js';
export { explicitCommand, explicitCommands, isAnswerRoute, isCodeRoute } from './commands.js';
export { compileRules, maxRuleInputChars, ruleTimeoutMs, type RuleBook, type RuleMatch } from './rules.js';
export { classify, readClassification, maxClassifierInputChars, type Classification } from './classifier.js';
export { agentLocality, isLocalEndpoint, type AgentLocality } from './local-endpoint.js';
export { defaultModelFactory, modelSpecOf, type LocalModelSpec, type ModelFactory } from './local-model.js';
export { checkAccess, checkManage, type AccessVerdict, type Permission, type PermissionCheck } from './access.js';
export { chooseRepo, repoInText, type RepoChoice, type RepoSources } from './repo-choice.js';
export { operate, opsHelp, type OpsDeps } from './ops.js';
export { readJobMeta, type JobMeta } from './job-meta.js';
export { jobMetaKey, messageKey, threadKey } from './request-keys.js';
export { chatAnswer, maxChatAnswerChars } from './chat-answer.js';
export { messageKeyTtlMs, threadKeyTtlMs, titleOf } from './work.js';
export {
  createFollowUpProcessor,
  followUpDelayMs,
  type FollowUpProcessor,
  type FollowUpProcessorOptions,
  type ProcessedFollowUp,
} from './follow-up-processor.js';
export { followUpJob, followUpOfJob, type Deferred, type FollowUpRecord } from './follow-up-record.js';
export {
  createInbox,
  inboxEntryOf,
  inboxJob,
  inboxRetryDelayMs,
  type Inbox,
  type InboxEntry,
  type InboxOptions,
  type ProcessedEntry,
} from './inbox.js';

export { createTempDir, type TempDir } from './temp-dir.js';
export { createTempRepo, git, gitTestEnv, writeFiles, type TempRepo, type TempRepoOptions } from './git-repo.js';
export { closedPort, freePort } from './ports.js';
export { FLEET_ACL_RULES, startRedis, type RedisOptions, type RedisServer } from './redis-server.js';
export { startFixture, type FixtureOptions, type FixtureProcess } from './fixture-process.js';
export { defaultWaitMs, isAlive, waitFor, withTimeoutsUntil, type WaitOptions } from './wait.js';
export { sampleJob } from './sample-job.js';
export { agentRunFixture, fixtureTime, jobFixture, verificationFixture } from './run-fixtures.js';
export {
  startGithubStandIn,
  type Exchange,
  type FaultRule,
  type GithubStandIn,
  type Permission,
  type RepoOptions,
  type StandInComment,
  type StandInEvent,
  type StandInIssue,
  type StandInPull,
  type CheckRunInput,
  type StandInCheckRun,
  type StandInStatus,
} from './github/stand-in.js';
export {
  startOllamaStandIn,
  type OllamaStandIn,
  type OllamaStandInOptions,
  type RecordedChat,
  type ScriptedReply,
} from './ollama-stand-in.js';
export {
  geminiErrorBody,
  startGeminiStandIn,
  type GeminiErrorKind,
  type GeminiErrorReply,
  type GeminiFunctionCall,
  type GeminiRequest,
  type GeminiStandIn,
  type GeminiStandInOptions,
  type GeminiTurn,
} from './gemini-stand-in.js';
export {
  signLineBody,
  startLineStandIn,
  type DeliverOptions,
  type LineExchange,
  type LineSent,
  type LineStandIn,
  type LineWebhookEvent,
  type TextEventOptions,
} from './line/stand-in.js';
export { startSlackStandIn, type PostEventOptions, type SlackStandIn } from './slack/stand-in.js';
export type { SlackStandInMessage } from './slack/state.js';
export type { SentEnvelope, SocketDeliveryOptions } from './slack/socket-mode.js';
export type { SlackApiCall, SlackFault } from './slack/web-api.js';
export { signSlackRequest } from './slack/events.js';
export { parsePrometheusText, type PromSample, type PromScrape } from './prometheus-text.js';
export { startCountingProxy, type CountingProxy } from './sqs-counting-proxy.js';
export {
  startOpenAiStandIn,
  type OpenAiStandIn,
  type OpenAiStandInOptions,
  type RecordedOpenAiRequest,
  type ResponsesReply,
} from './openai-stand-in.js';
export { addFilePatch, editItem, offeredTools, type OfferedTool } from './openai-tools.js';
export {
  errorReply,
  startAnthropicStandIn,
  textReply,
  toolReply,
  type AnthropicBlock,
  type AnthropicReply,
  type AnthropicStandIn,
  type AnthropicStandInOptions,
  type AnthropicUsage,
  type RecordedAnthropicRequest,
} from './anthropic-stand-in.js';
export { otherTestFleetKey, testFleetKey, testFleetKeyEnv } from './fleet-key.js';
export { hostNpmEnv } from './host-npm.js';
export { codeBlocks, docFiles, docSection, repoRoot } from './docs.js';

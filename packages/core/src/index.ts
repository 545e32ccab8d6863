// Public API of @codefleet/core: the job model, stages, run record, error taxonomy and
// retry policies. Everything here is pure: no I/O, no clock, no env.
export type { Classified, ClassifyOptions } from './classify.js';
export { classify, rateLimitDelay } from './classify.js';
export { redisRefusalCode, redisRefusalError, redisWhere } from './redis-refusal.js';
export type { CodefleetErrorJson, CodefleetErrorOptions, ErrorCode, JobIssue, JsonValue, Verdict } from './errors.js';
export {
  CodefleetError,
  cancelOf,
  cancelRequested,
  InvalidJobError,
  InvalidTransitionError,
  LeaseLostError,
  RateLimitedError,
  errorCodes,
  isErrorCode,
  isVerdict,
  verdictOf,
  verdicts,
} from './errors.js';
export type { CreateJobInput, Job, JobInput, JobRoute, JobSource, RouteName } from './job.js';
export {
  ciFollowUpKey,
  ciFollowUpRequestId,
  createJob,
  defaultIdempotencyKey,
  followedPullRequest,
  jobSchema,
  maxBodyChars,
  maxDodCommands,
  maxHiddenTests,
  maxPatchBytes,
  maxTestNameChars,
  objectIdPattern,
  parseJob,
  parseJobJson,
  recordKinds,
  routeNames,
} from './job.js';
export { runSourceName, sourceName, sourceNames, type SourceName } from './source-name.js';
export {
  canonicalJson,
  fleetKey,
  fleetKeyId,
  minFleetKeyChars,
  signJob,
  unsignedJob,
  unsignedReason,
  verifyJob,
  type FleetKey,
  type FleetKeyring,
  type JobSignature,
  type JobVerification,
  type UnsignedWhy,
} from './job-signature.js';
export type { JsonSyntaxProblem } from './json-position.js';
export { findJsonSyntaxProblem } from './json-position.js';
export { splitCommandLine } from './command-line.js';
export type { RepoRef } from './repo-ref.js';
export { branchNameProblem, checkRepoRef, maxRepoLength, parseRepoRef } from './repo-ref.js';
export type { AttemptShape, Backoff, InnerPolicy, OuterDecision, OuterPolicy } from './retry.js';
export {
  attemptWorstCaseMs,
  backoffDelayMs,
  decideOuter,
  defaultInnerPolicy,
  defaultOuterPolicy,
  maxBackoffDelayMs,
  shouldRetryInner,
  worstCaseWallTimeMs,
} from './retry.js';
export type {
  AgentRun,
  Attempt,
  AttemptOutcome,
  DodResult,
  Grade,
  ModelCallRecord,
  Pass,
  PullRequestRef,
  RunError,
  RunOutcome,
  RunRecord,
  StageEntry,
  SandboxFindings,
  TierRecord,
  Verification,
  VerificationStep,
} from './run.js';
export {
  agentRunSchema,
  attemptOutcomes,
  dodResults,
  gradeSchema,
  modelCallSchema,
  parseRun,
  runOutcomes,
  runRecordSchema,
  sandboxFindingsSchema,
  tierSchema,
  verificationSchema,
  verificationSteps,
} from './run.js';
export type { At } from './run-update.js';
export {
  addAgentRun,
  addSandboxFindings,
  addVerification,
  advance,
  currentAttempt,
  endAttempt,
  finish,
  newRun,
  setAcceptanceCriteria,
  setAnswer,
  setDodResult,
  setGrade,
  endTier,
  setChain,
  setMemoryUpdates,
  setPublication,
  startAttempt,
  startTier,
  tierCost,
} from './run-update.js';
export type { Stage } from './stage.js';
export {
  happyPath,
  isStage,
  isTerminal,
  nextStages,
  runningStages,
  stageDocs,
  stages,
  terminalStages,
  transition,
} from './stage.js';
export {
  boundTail,
  charSuffix,
  defaultSummaryChars,
  defaultTailBytes,
  graphemePrefix,
  previewValue,
  redactUrlCredentials,
  splitTailMarker,
  summarizeReason,
  truncateHead,
  truncateTail,
  utf8ByteLength,
  utf8Prefix,
  utf8Suffix,
  type BoundTailOptions,
} from './text.js';
export {
  changedFilesOf,
  checkStatus,
  countChecks,
  failsOnBase,
  describeCheck,
  formatCheckCounts,
  latestChecks,
  preexistingWords,
  skipReason,
  baseWords,
  unverifiableWords,
  type CheckCounts,
  type CheckStatus,
} from './run-facts.js';
export { formatDuration } from './duration.js';
export { checkedCount, checkedTimeoutMs } from './outbound.js';
export { formatUsd, runCostUsd } from './run-cost.js';
export { isMemoryFile, memoryDir } from './memory-bank.js';
export {
  needsPullRequestState,
  statusLabel,
  taskFactsOf,
  taskStatus,
  taskStatuses,
  taskStatusesOf,
  type PullRequestFact,
  type PullRequestStatesReader,
  type TaskFacts,
  type TaskStatus,
  type TaskStatusView,
} from './task-status.js';

// codefleet eval: tasks mined from a repository's history, graded in secret, reported per configuration.
export * from './stats.js';
export { instanceSchema, parseSuite, formatSuite, suiteDigest, toSwebench, SuiteError } from './task.js';
export type { Instance, InstanceInput, Suite } from './task.js';
export { mineCommits, instancePrefix, statementOf, type MineOptions, type MineProgress } from './mine.js';
export {
  linkedIssues,
  mineGithubPulls,
  type ClosedPullRequest,
  type MineGithubOptions,
  type PullRequestReads,
} from './mine-github.js';
export { isDocPath, isTestPath } from './test-paths.js';
export { evalJob, evalJobId, evalTasks, parseEvalConfig, type EvalConfig, type EvalTask } from './eval-jobs.js';
export { runEvaluation, type EvalProgress, type EvalRunDeps, type EvalRunOptions } from './runner.js';
export {
  buildReport,
  failureKinds,
  failureOf,
  reportFromRuns,
  trialOf,
  type ConfigSummary,
  type EvalReport,
  type FailureKind,
  type TrialResult,
} from './report.js';
export { renderMarkdown } from './render.js';
export { classifyTests, type Classified, type RunStatuses, type ValidationRuns } from './validate.js';

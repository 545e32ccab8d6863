/**
 * @codefleet/verify: decides how to check a working copy (toolchain detection, overridable by
 * `.codefleet.yml` and the job), runs install → build → format → lint → test and the
 * definition of done with timeouts, and trims a failure's output to feedback for the agent.
 */
export type {
  LogFindings,
  PlannedStep,
  RunOptions,
  StepName,
  StepResult,
  TestOutcome,
  Toolchain,
  VerifyPlan,
} from './types.js';
export { stepOrder, toolchains } from './types.js';
export { planEnv, planVerification, type PlanOptions } from './plan/plan.js';
export { referencedScripts, repoChecks, scriptStep } from './plan/repo-checks.js';
export { listingTestCommand } from './plan/test-listing.js';
export { markerFiles } from './plan/detect.js';
export {
  detectPackageManager,
  installCommand,
  scriptCommand,
  scriptOf,
  type PackageManager,
  type PackageManagerName,
} from './plan/package-manager.js';
export { packageSpec, provideManager, type ProvidedManager, type ProvideOptions } from './run/provide-manager.js';
export { parseRepoConfig, repoConfigFile, type RepoConfig } from './plan/repo-config.js';
export { isRepoFile, readRepoFile, type ReadRepoFileOptions, type RepoFile } from './plan/repo-file.js';
export { runVerification, type FormatScope, type VerificationOptions, type VerificationOutcome } from './run/verify.js';
export {
  compareWithBase,
  errorSignatures,
  isStale,
  planKey,
  readBaseline,
  runBaseline,
  stepKey,
  toolStamp,
  writeBaseline,
  type BaseComparison,
  type Baseline,
  type BaselineFailure,
} from './run/baseline.js';
export { runDod, type DodOutcome } from './run/dod.js';
export { notRunReason, ranOnCode } from './run/evidence.js';
export { dependencyHash, installStampFile, readInstallRecord, type InstallRecord } from './run/install.js';
export { defaultFeedbackBytes, extractFeedback, feedbackFor, fitFeedback } from './feedback/feedback.js';
export { LogScanner } from './feedback/scan.js';
export { testStatuses, TestStatusScanner, type TestStatuses } from './feedback/test-status.js';

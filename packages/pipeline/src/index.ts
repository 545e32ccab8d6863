export type { JobContext, PipelineDeps, PipelineSettings } from './deps.js';
export { cancelOf, cancelRequested, runJob, type JobResult } from './run-job.js';
export { acceptanceCriteria, promptFor, taskFile } from './plan.js';
export { failureComment, successComment } from './report.js';
export { settleLease, internalErrorRetryMs, type Settlement } from './settle.js';

export type { JobContext, PipelineDeps, PipelineSettings, TierSettings } from './deps.js';
export { chainOf, type Chain } from './escalation.js';
export { runJob, type JobResult } from './run-job.js';
export { acceptanceCriteria, taskFile } from './plan.js';
export { promptFor } from './prompt.js';
export { reportDeadLetters } from './dead-letters.js';
export { dirRunner, jobRunners, type JobRunners } from './sandboxed.js';

export type {
  ClaimOptions,
  DeadLetter,
  CancelPendingResult,
  DropResult,
  EnqueueResult,
  Lease,
  PendingJob,
  Queue,
  QueueBackendName,
  QueueStats,
  QueueTrim,
  QueueTrimOptions,
  RedriveResult,
} from './port.js';
export {
  queueSettingsFromConfig,
  type BullmqQueueSettings,
  type LocalQueueSettings,
  type QueueSettings,
  type SchedulingSettings,
  type SqsQueueSettings,
} from './settings.js';
export { openQueue } from './open-queue.js';
export { signedQueue, type JobSigning, type UnsignedJob } from './signed-queue.js';
export { paceEmptyClaim, processUntilAborted } from './process-loop.js';
export { LocalQueue } from './local/local-queue.js';
export { internalErrorRetryMs, settleLease, type LeaseVerdict, type Settlement } from './settle.js';
export { describeHold, type ConcurrencyLimits, type HeldBy } from './concurrency.js';

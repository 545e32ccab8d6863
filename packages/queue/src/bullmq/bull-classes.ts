import { createRequire } from 'node:module';
import type * as Bull from 'bullmq';

/**
 * The three BullMQ classes the adapter uses, loaded from their own files. BullMQ's index
 * also loads every backend it ships (PostgreSQL with its SQL, Bun, Valkey GLIDE,
 * node-redis) and the flow producer: about 0.5 MB of source that an idle worker would
 * otherwise keep, some 3 MB of its memory. bullmq has no `exports` map, so these paths
 * are reachable; the types still come from the package's own declarations, and the
 * conformance suite fails at once if a release moves a file.
 */
const require = createRequire(import.meta.url);

export const BullJob: typeof Bull.Job = (require('bullmq/dist/cjs/classes/job.js') as typeof Bull).Job;
export type BullJob = Bull.Job;
export const BullQueue: typeof Bull.Queue = (require('bullmq/dist/cjs/classes/queue.js') as typeof Bull).Queue;
export type BullQueue = Bull.Queue;
export const BullWorker: typeof Bull.Worker = (require('bullmq/dist/cjs/classes/worker.js') as typeof Bull).Worker;
export type BullWorker = Bull.Worker;
export type JobJson = Bull.JobJson;

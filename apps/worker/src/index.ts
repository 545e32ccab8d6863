export { runWorker, type JobRunner, type WorkerOptions, type WorkerSummary } from './worker.js';

export { runWorker, type JobRunner, type WorkerOptions, type WorkerSummary } from './worker.js';
export { WorkerMonitor, type MonitorOptions, type WorkerEvents } from './monitor.js';
export { startMonitorServer, type MonitorServer } from './http.js';
export { startPresence, type Presence, type PresenceOptions } from './presence.js';

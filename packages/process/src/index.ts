export { runProcess, timeoutExitCode, type ProcessResult, type RunProcessOptions } from './run-process.js';

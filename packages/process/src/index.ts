export { runProcess, timeoutExitCode, type ProcessResult, type RunProcessOptions } from './run-process.js';
export { findExecutable } from './find-executable.js';

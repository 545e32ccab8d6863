export { runProcess, timeoutExitCode, type ProcessResult, type ProcessRunner, type RunProcessOptions } from './run-process.js';
export { captureProcess, type CapturedProcess, type CaptureProcessOptions } from './capture-process.js';
export { findExecutable } from './find-executable.js';

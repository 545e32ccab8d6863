export {
  runProcess,
  timeoutExitCode,
  type NetworkRefusal,
  type ProcessResult,
  type ProcessRunner,
  type ResourceLimitHit,
  type RunProcessOptions,
} from './run-process.js';
export { captureProcess, type CapturedProcess, type CaptureProcessOptions } from './capture-process.js';
export { findExecutable } from './find-executable.js';

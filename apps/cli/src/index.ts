export { buildProgram, runCli, type Io } from './program.js';
export { openRuntime, gitEnvFrom, type Runtime } from './runtime.js';
export { pipelineSettings } from './pipeline-deps.js';

export { buildProgram, runCli, type Io } from './program.js';
export { openRuntime, pipelineSettings, gitEnvFrom, type Runtime } from './runtime.js';

export type { Sandbox, SandboxMode, SandboxMount, SandboxRunOptions, SandboxSettings } from './types.js';
export { sandboxModes } from './types.js';
export { autoMode, openSandbox, SandboxUnavailableError, type SandboxHost } from './open-sandbox.js';
export { createNoSandbox } from './sandboxes.js';
export { bwrapArgs, sandboxHome, type BwrapPlan, type HiddenPath } from './bwrap.js';
export { seatbeltArgs, seatbeltProfile, macSystemDirs, type SeatbeltPlan } from './seatbelt.js';
export { containerArgs, containerLabel, type ContainerPlan } from './container.js';
export { isWithin, linuxSystemDirs } from './host.js';

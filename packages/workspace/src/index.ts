// Public API of @codefleet/workspace: per-repository mirrors, pooled per-job working
// copies, deterministic work branches, scope control and agent context files.
export { branchName, maxSlugChars, slugify } from './branch-name.js';
export { defaultGitTimeoutMs } from './git.js';
export {
  createWorkspaceManager,
  workspaceManagerOptions,
  type WorkspaceManager,
  type WorkspaceManagerOptions,
} from './manager.js';
export type { PrepareRequest } from './prepare.js';
export type { Scope } from './scope.js';
export type { IsRunning, SweepResult } from './sweep.js';
export { diskBytes, type CacheLimits, type EvictResult } from './evict.js';
export { keptDependencyDirs } from './working-copy.js';
export type { Workspace } from './workspace.js';
export type { GradingCopy } from './grading-copy.js';
export { installedDirs, type AgentView, type AgentViewOptions, type ViewMount } from './agent-view.js';

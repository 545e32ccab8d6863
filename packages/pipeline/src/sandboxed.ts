import { join } from 'node:path';
import type { ProcessRunner, RunProcessOptions } from '@codefleet/process';
import type { Sandbox } from '@codefleet/sandbox';
import type { Workspace } from '@codefleet/workspace';

/** Where a job's agents and repository commands run: its sandbox, bound to its working copy. */
export interface JobRunners {
  /** Agents, verification steps, DoD commands: dependencies and workflow files read-only. */
  runner: ProcessRunner;
  /** Install steps: the only runs that may write the dependencies. */
  installRunner: ProcessRunner;
  /** The runs are isolated (the sandbox mode is not `none`): agents pass it as `isolated`, so a CLI turns off a sandbox of its own that cannot nest. */
  isolated: boolean;
}

/** Workflow files and the repository's own actions: they run on the forge with its secrets. */
export const workflowDirs = [join('.github', 'workflows'), join('.github', 'actions')];

/**
 * Binds `sandbox` to the job's working copy. Each run sees the copy through the job's view
 * (its own git directory, read-only parts) rebuilt for it, and afterwards the copy's git
 * link is put back before codefleet's own git reads the copy again.
 */
export function jobRunners(sandbox: Sandbox, ws: Workspace, options: { protectWorkflows: boolean }): JobRunners {
  const readOnly = options.protectWorkflows ? workflowDirs.map((dir) => join(ws.dir, dir)) : [];
  const make = (install: boolean): ProcessRunner => async (argv, processOptions: RunProcessOptions) => {
    const { dieWithParent: _guarded, ...rest } = processOptions;
    try {
      if (sandbox.mode === 'none') return await sandbox.run(argv, { ...rest, writable: [ws.dir] });
      const view = await ws.agentView({ readOnly, remap: sandbox.remapsPaths });
      return await sandbox.run(argv, { ...rest, writable: view.writable, readOnly: install ? view.installReadOnly : view.readOnly, mounts: install ? view.installMounts : view.mounts });
    } finally {
      await ws.restoreGitLink();
    }
  };
  return { runner: make(false), installRunner: make(true), isolated: sandbox.mode !== 'none' };
}

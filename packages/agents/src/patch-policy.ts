import type { PatchConfig } from '@codefleet/config';
import type { ApplyOptions } from '@codefleet/patch';

/**
 * The `patch:` safeguards as the agents that apply patches in a job use them (the patch
 * agent, the built-in agent): continue or stop at a failed command, protected files and
 * what touching one does, command timeouts, and whether the plan is shown first. No
 * auto-commit: in a job the pipeline makes the one commit.
 */
export interface PatchPolicy {
  onError: 'continue' | 'stop';
  protectedPatterns: readonly string[];
  onProtected: 'error' | 'skip' | 'log';
  shellTimeoutMs: number;
  gitTimeoutMs: number;
  showPlan: boolean;
}

/** The policy from config.yaml's `patch:` section. */
export function patchPolicyFrom(patch: PatchConfig): PatchPolicy {
  return {
    onError: patch.stop_on_error ? 'stop' : 'continue',
    protectedPatterns: [...patch.protected_patterns],
    onProtected: patch.action_on_protected_file,
    shellTimeoutMs: patch.command_timeout_seconds * 1000,
    gitTimeoutMs: patch.git_timeout_seconds * 1000,
    showPlan: patch.show_execution_summary,
  };
}

/**
 * `applyPatch` options for `policy` (the engine's defaults when there is none), the
 * workspace `root` and environment `env`; `say` receives the plan lines when shown.
 */
export function applyOptionsFor(
  policy: PatchPolicy | undefined,
  root: string,
  env: Record<string, string>,
  say: (line: string) => void,
  fallback: 'continue' | 'stop',
): ApplyOptions {
  if (policy === undefined) return { root, env, onError: fallback };
  return {
    root,
    env,
    onError: policy.onError,
    protected: { patterns: policy.protectedPatterns, action: policy.onProtected },
    shellTimeoutMs: policy.shellTimeoutMs,
    gitTimeoutMs: policy.gitTimeoutMs,
    ...(policy.showPlan ? { onPlan: (line: string) => say(`plan ${line}`) } : {}),
  };
}

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { LoadedConfig } from '@codefleet/config';
import { applyPatch, parsePatch, patchSucceeded, type ApplyResult } from '@codefleet/patch';

/** Options of `codefleet patch apply`. */
export interface PatchApplyOptions {
  workspace: string;
  dryRun?: boolean;
  stopOnError?: boolean;
  json?: boolean;
}

/**
 * `codefleet patch apply <file>`: parses the patch and applies it inside the workspace
 * with the `patch:` safeguards from the config. The file is read as bytes: a diff of files
 * in another encoding than UTF-8 applies as it is. Resolves to the exit code: 0 only when
 * the patch held a command and every command succeeded (a dry run: would apply).
 */
export async function patchApply(
  loaded: LoadedConfig,
  file: string,
  options: PatchApplyOptions,
  cwd: string,
  out: (line: string) => void,
): Promise<number> {
  const { patch } = loaded.config;
  const bytes = await readFile(resolve(cwd, file));
  const parsed = parsePatch(bytes);
  const plan: string[] = [];
  const result: ApplyResult = await applyPatch(parsed.commands, {
    root: resolve(cwd, options.workspace),
    dryRun: options.dryRun ?? false,
    onError: (options.stopOnError ?? patch.stop_on_error) ? 'stop' : 'continue',
    autoCommit: patch.auto_commit,
    protected: { patterns: patch.protected_patterns, action: patch.action_on_protected_file },
    // Commands from a patch see PATH and HOME only: no token from this shell reaches them.
    env: { PATH: loaded.env.PATH ?? '/usr/bin:/bin', HOME: loaded.env.HOME ?? '/tmp' },
    shellTimeoutMs: patch.command_timeout_seconds * 1000,
    gitTimeoutMs: patch.git_timeout_seconds * 1000,
    onPlan: (line) => plan.push(line),
  });
  const ok = patchSucceeded(parsed, result);
  if (options.json) {
    out(JSON.stringify({ format: parsed.format, warnings: parsed.warnings, ok, ...result }, null, 2));
  } else {
    if (patch.show_execution_summary) for (const line of plan) out(`plan   ${line}`);
    for (const warning of parsed.warnings) out(`warn   ${warning}`);
    for (const r of result.results) {
      out(
        `${r.status.padEnd(9)} ${r.index + 1}. ${r.command.type} ${r.command.action}${r.error ? ` — ${r.error}` : ''}`,
      );
      for (const note of r.notes ?? []) out(`note   ${note}`);
    }
    if (parsed.commands.length === 0 && parsed.format !== 'empty')
      out('nothing applied: the patch holds no command the engine can read');
    out(result.summary);
  }
  return ok ? 0 : 1;
}

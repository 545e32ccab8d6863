import { dirname } from 'node:path';
import { captureProcess, runProcess, type CapturedProcess, type ProcessResult } from '@codefleet/process';

// Passed to every git call. The repository's own config (.git/config) is written by
// whoever had the working copy before, an agent included: hooks, an fsmonitor command or
// a transport planted there would run here, in the worker, outside any sandbox. gc and
// maintenance would start detached processes that outlive the call; submodules would
// bring their own config.
const hardening = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'protocol.ext.allow=never',
  '-c',
  'submodule.recurse=false',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
];

const identity = {
  GIT_AUTHOR_NAME: 'codefleet patch',
  GIT_AUTHOR_EMAIL: 'patch@codefleet.invalid',
  GIT_COMMITTER_NAME: 'codefleet patch',
  GIT_COMMITTER_EMAIL: 'patch@codefleet.invalid',
};

/** Git variables a caller may pass: the commit identity. Any other GIT_* could point git elsewhere or add config. */
const keptGitVariable = /^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$/;

/** Git calls in one workspace, hardened. */
export interface PatchGit {
  /** A call that changes something: bounded output and time; its output is for people, never parsed. */
  run(args: readonly string[], env?: Record<string, string>): Promise<ProcessResult>;
  /** A listing whose output is parsed: stdout alone, stderr apart. */
  list(args: readonly string[]): Promise<CapturedProcess>;
}

/**
 * Git for the engine in `root` (a real path): every call gets the hardening flags, no
 * system or global config, no other repository than the one at `root` (no search above
 * it, and `root` as the work tree whatever `core.worktree` says), and the filter and merge
 * drivers the repository's config defines switched off: they are shell commands from that
 * config, run by `add`, `apply` and `reset`. `env` is the caller's environment (PATH at least).
 */
export async function openGit(
  root: string,
  env: Record<string, string>,
  timeoutMs: number,
  gitPath = 'git',
): Promise<PatchGit> {
  const base: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (!name.startsWith('GIT_') || keptGitVariable.test(name)) base[name] = value;
  Object.assign(base, {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CEILING_DIRECTORIES: dirname(root),
    GIT_WORK_TREE: root,
    LC_ALL: 'C',
  });
  const drivers = await captureProcess([gitPath, ...hardening, 'config', '-z', '--get-regexp', '^(filter|merge)\\.'], {
    cwd: root,
    env: base,
  });
  Object.assign(base, driversOff(drivers.exitCode === 0 ? drivers.stdout : ''));
  const withIdentity = { ...identity, ...base };
  return {
    run: (args, extra = {}) =>
      runProcess([gitPath, ...hardening, ...args], { cwd: root, env: { ...withIdentity, ...extra }, timeoutMs }),
    list: (args) => captureProcess([gitPath, ...hardening, ...args], { cwd: root, env: withIdentity }),
  };
}

/**
 * Config entries (as GIT_CONFIG_COUNT variables: no quoting of names needed) that empty
 * every configured `filter.<name>.*` command and `merge.<name>.driver`: git then runs no
 * filter (content passes through as is) and fails a merge that needs the driver.
 */
function driversOff(listing: string): Record<string, string> {
  const entries: [string, string][] = [];
  for (const record of listing.split('\0')) {
    const key = record.split('\n')[0] ?? '';
    const section = key.slice(0, key.indexOf('.'));
    const name = key.slice(section.length + 1, key.lastIndexOf('.'));
    if (name === '' || key.lastIndexOf('.') <= section.length) continue;
    if (section === 'filter') {
      for (const command of ['clean', 'smudge', 'process']) entries.push([`filter.${name}.${command}`, '']);
      entries.push([`filter.${name}.required`, 'false']);
    } else if (section === 'merge') {
      entries.push([`merge.${name}.driver`, '']);
    }
  }
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(entries.length) };
  entries.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

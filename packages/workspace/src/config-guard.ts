import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import type { Git } from './git.js';

// An agent runs in a worktree of the mirror as the same user, so it can write the mirror's
// config (`git remote set-url`, `git config url.….insteadOf`, `http.proxy`, `include.path`,
// `core.sshCommand`, filter drivers …), and so can a prompt that talks it into doing so.
// The next fetch into the mirror and this job's push read that config with credentials at
// hand. Before each, the config files are brought back to what codefleet wrote: every key
// outside a short list is removed, and the keys codefleet depends on get their values back.
// (Same-user isolation has limits this cannot lift: see WorkspaceManager.)

/** The remote-tracking layout of the mirror (see syncMirror). */
export const mirrorFetchRefspec = '+refs/heads/*:refs/remotes/origin/*';

/** What one config file may hold: keys as `git config --list` names them, and fixed values. */
interface ConfigRules {
  /** Keys that may stay with any value (what `git init` writes for the filesystem). */
  allowed: ReadonlySet<string>;
  /** Keys that must hold exactly this one value. */
  required: Readonly<Record<string, string>>;
}

/** The mirror's shared config, read by the mirror and every working copy. */
export function mirrorConfigRules(url: string): ConfigRules {
  return {
    allowed: new Set([
      'core.filemode',
      'core.ignorecase',
      'core.precomposeunicode',
      'core.symlinks',
      'core.logallrefupdates',
      'extensions.objectformat',
      'extensions.refstorage',
    ]),
    required: {
      'core.repositoryformatversion': '1',
      'extensions.worktreeconfig': 'true',
      'remote.origin.url': url,
      'remote.origin.fetch': mirrorFetchRefspec,
      'remote.origin.tagopt': '--no-tags',
      'gc.auto': '0',
      'maintenance.auto': 'false',
    },
  };
}

/** The mirror's own per-worktree config: it is the bare one. */
export const mirrorWorktreeRules: ConfigRules = { allowed: new Set(), required: { 'core.bare': 'true' } };

/** A working copy's per-worktree config: its sparse checkout (the exclude scope). */
export const copyWorktreeRules: ConfigRules = {
  allowed: new Set(['core.sparsecheckout', 'core.sparsecheckoutcone', 'index.sparse']),
  required: {},
};

/**
 * Brings the config file `file` back to `rules`: removes every other key (whatever its
 * section: `url.*`, `http.*`, `include.*`, `filter.*`, `credential.*` …) and resets the
 * required ones. Resolves to the keys it removed or reset, empty when the file was as
 * codefleet left it. A missing file is fine when nothing is required of it.
 *
 * @throws {CodefleetError} `workspace_failed` (permanent) when git cannot read the file.
 */
export async function guardConfigFile(
  git: Git,
  file: string,
  rules: ConfigRules,
  signal?: AbortSignal,
): Promise<string[]> {
  const cwd = join(file, '..');
  const present = await access(file).then(
    () => true,
    () => false,
  );
  if (!present && Object.keys(rules.required).length === 0) return [];
  const values = new Map<string, string[]>();
  if (present) {
    const listed = await git
      .run(['config', '--file', file, '--null', '--list'], { cwd, signal })
      .catch((error: unknown) => {
        if ((error as { code?: unknown }).code === 'cancelled') throw error;
        throw new CodefleetError(
          'workspace_failed',
          `git cannot read ${file}; delete the mirror directory to have it rebuilt`,
          { verdict: 'permanent', cause: error },
        );
      });
    // `--null`: each entry is `key\nvalue\0`, so a value may hold newlines.
    for (const entry of listed.output.split('\0')) {
      const newline = entry.indexOf('\n');
      const key = newline < 0 ? entry : entry.slice(0, newline);
      // The output is stdout and stderr together: a warning line is not a key.
      if (!/^[a-z0-9-]+(\..*)?\.[a-z][a-z0-9-]*$/.test(key)) continue;
      values.set(key, [...(values.get(key) ?? []), newline < 0 ? '' : entry.slice(newline + 1)]);
    }
  }
  const changed: string[] = [];
  for (const key of values.keys()) {
    if (rules.allowed.has(key) || key in rules.required) continue;
    await git.run(['config', '--file', file, '--unset-all', key], { cwd, signal, okExitCodes: [5] });
    changed.push(key);
  }
  for (const [key, value] of Object.entries(rules.required)) {
    const current = values.get(key) ?? [];
    if (current.length === 1 && current[0] === value) continue;
    await git.run(['config', '--file', file, '--replace-all', key, value], { cwd, signal });
    changed.push(key);
  }
  return changed;
}

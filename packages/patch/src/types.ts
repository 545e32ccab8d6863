/** What a `file_edit` command does. */
export const fileActions = ['create', 'update', 'delete', 'append', 'rename', 'mkdir', 'copy'] as const;
export type FileAction = (typeof fileActions)[number];
export const shellActions = ['run'] as const;
export const gitActions = ['add', 'commit', 'reset', 'checkout'] as const;
export type GitAction = (typeof gitActions)[number];

/** One command of a patch (PC 000 format). Paths are relative to the workspace. */
export type PatchCommand =
  | { type: 'file_edit'; action: FileAction; target: string; content?: string; metadata?: { destination?: string } }
  | { type: 'shell_command'; action: 'run'; target?: string; content: string; env?: Record<string, string>; workdir?: string; shell?: string }
  | { type: 'git_operation'; action: GitAction; target?: string; content?: string }
  /** A unified diff, applied as a whole with `git apply`; `paths` are the files it touches. */
  | { type: 'diff'; action: 'apply'; target: string; content: string; paths: string[] };

/** A parsed patch: its commands in order, and what was skipped on the way. */
export interface ParsedPatch {
  format: 'json' | 'markdown' | 'diff' | 'empty';
  commands: PatchCommand[];
  warnings: string[];
}

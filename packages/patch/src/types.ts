/** What a `file_edit` command does. `replace` edits an existing file in place (see {@link TextEdit}). */
export const fileActions = ['create', 'update', 'delete', 'append', 'rename', 'mkdir', 'copy', 'replace'] as const;
export type FileAction = (typeof fileActions)[number];
export const gitActions = ['add', 'commit', 'reset', 'checkout'] as const;
export type GitAction = (typeof gitActions)[number];

/**
 * One change of a `replace` edit: the lines `search` (whole lines) become `replace`. The
 * search starts after the previous edit of the same command, then from the top; with an
 * `anchor`, after the first line that holds it. An empty `search` inserts `replace` after
 * the anchor, or at the end of the file (a new file when there is none).
 */
export interface TextEdit {
  search: string;
  replace: string;
  anchor?: string;
  /**
   * Lines to find first, in order, each after the one before, and `anchor` after them:
   * Codex's nested `@@ class A` then `@@ def f` (the `f` of class A, not an earlier one).
   */
  outer?: string[];
}

/** One command of a JSON patch. Paths are relative to the workspace. */
export type PatchCommand =
  | {
      type: 'file_edit';
      action: FileAction;
      target: string;
      content?: string;
      metadata?: { destination?: string };
      /** `replace` only: the edits, applied in order, all or none. */
      edits?: TextEdit[];
      /**
       * `delete` only: the target must be an existing file (Begin Patch's `Delete File`, a
       * diff's `+++ /dev/null`); without it, `delete` also removes a directory, or nothing.
       */
      fileOnly?: boolean;
    }
  | {
      type: 'shell_command';
      action: 'run';
      target?: string;
      content: string;
      env?: Record<string, string>;
      workdir?: string;
      shell?: string;
    }
  | { type: 'git_operation'; action: GitAction; target?: string; content?: string }
  /**
   * A unified diff, applied as a whole with `git apply`; `paths` are the files it touches.
   * `bytes`: the diff as it came, when it is not UTF-8 text (file contents in another
   * encoding); git then applies those bytes and `content` is only for people to read.
   */
  | { type: 'diff'; action: 'apply'; target: string; content: string; paths: string[]; bytes?: Uint8Array };

/** How the patch was written: the format of the whole input. */
export type PatchFormat = 'json' | 'markdown' | 'diff' | 'search-replace' | 'begin-patch' | 'empty';

/** A parsed patch: its commands in order, and what was skipped or adjusted on the way. */
export interface ParsedPatch {
  format: PatchFormat;
  commands: PatchCommand[];
  warnings: string[];
}

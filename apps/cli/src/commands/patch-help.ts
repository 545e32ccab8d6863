/**
 * What `codefleet patch apply --help` says about the patch formats. Text only: the program
 * imports it up front, and must not load the patch engine to show help.
 */
export const patchFormatsHelp = `
Patch formats (told apart by their content):

JSON: one command object, or an array of them, run in order.
  {"type": "file_edit", "action": "create", "target": "src/a.ts", "content": "..."}
    create     write the file (directories are made)     update  an existing file
    append     add content at the end                     delete  the file or directory
    mkdir      make the directory
    rename, copy  to "metadata": {"destination": "lib/b.ts"}, or the destination in "content"
    replace    "edits": [{"search": "lines as they are", "replace": "lines as they become",
               "anchor": "a line the search starts after (optional)"}]; or "search" and
               "replace" on the command itself. All edits apply, or none.
  {"type": "shell_command", "action": "run", "content": "npm test",
   "workdir": "pkg", "env": {"CI": "1"}, "shell": "bash"}      (the command may be in "target")
  {"type": "git_operation", "action": "add" | "commit" | "reset" | "checkout",
   "target": "path", "content": "commit message"}
  Paths are relative to the workspace; "/workspace/..." means the workspace root.

Unified diff: git diff (renames, copies, mode changes, binary patches made with --binary),
  git format-patch mail, diff -ruN; names with or without a/ b/ prefixes. Hunk counts that
  do not fit their hunk are recounted, a diff made against another version of a file is
  merged 3-way, and stale context is tolerated: each is reported as a note.

Markdown: blocks in order of appearance.
  \`\`\`ts:src/a.ts            writes src/a.ts (the first word after the colon) with the block
  \`\`\`diff                   a unified diff            \`\`\`bash, \`\`\`sh   run as a script
  \`\`\`console                a transcript: never run
  SEARCH/REPLACE blocks (the file name on the line above <<<<<<< SEARCH) and
  *** Begin Patch ... *** End Patch sections edit files, fenced or not.

Every path must stay inside the workspace and off the protected patterns (patch: in the
config). Exit code 0 only when the patch held at least one command and every command
succeeded (with --dry-run: would apply).
`;

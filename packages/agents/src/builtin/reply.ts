import { parsePatch, type PatchCommand } from '@codefleet/patch';

/** A model reply read as a patch: the commands to apply, or why it cannot be used. */
export type ReadReply =
  { ok: true; commands: PatchCommand[]; notes: string[] } | { ok: false; problem: string; notes: string[] };

/** Blocks whose body may be a whole patch in another format (```diff, ```json). */
const wrappedFormats = /^(`{3,}|~{3,})[ \t]*(diff|patch|json)[ \t]*\n([\s\S]*?)^\1[ \t]*$/gm;

/**
 * Reads a model's reply with the patch engine's parser. The reply is usable when it holds
 * at least one file change: ```` ```lang:path ```` blocks, a unified diff, a JSON command
 * list, or a diff or JSON patch wrapped in a ```` ```diff ```` / ```` ```json ```` block.
 *
 * Shell commands and git operations are dropped with a note: the built-in agent runs
 * unattended on text a model produced, so it only writes files inside the workspace (the
 * patch engine checks every path); building and testing are the worker's verification
 * steps, and committing is the pipeline's. A reply left with no file change cannot be
 * used, and `problem` says why in words the model can act on.
 */
export function readReply(reply: string): ReadReply {
  const notes: string[] = [];
  let commands: PatchCommand[];
  try {
    const parsed = parsePatch(reply);
    notes.push(...parsed.warnings);
    commands = parsed.commands;
    if (commands.length === 0 && parsed.format !== 'json') commands = unwrap(reply, notes);
  } catch (error) {
    return {
      ok: false,
      problem: `the patch does not parse: ${error instanceof Error ? error.message : String(error)}`,
      notes,
    };
  }
  const kept = commands.filter((c) => c.type === 'file_edit' || c.type === 'diff');
  const dropped = commands.length - kept.length;
  if (dropped > 0)
    notes.push(
      `${dropped} shell or git command(s) not run: the built-in agent only writes files; the worker builds, tests and commits`,
    );
  if (kept.length === 0) {
    const why =
      dropped > 0
        ? 'it holds only shell or git commands, which are not run; write the files instead'
        : 'it holds no file blocks (```lang:path with the complete file content)';
    return { ok: false, problem: [why, ...notes.slice(0, 5)].join('; '), notes };
  }
  return { ok: true, commands: kept, notes };
}

/** Commands from ```diff / ```json blocks, when the reply had no usable blocks of its own. */
function unwrap(reply: string, notes: string[]): PatchCommand[] {
  const commands: PatchCommand[] = [];
  for (const match of reply.matchAll(wrappedFormats)) {
    const parsed = parsePatch(match[3] ?? '');
    commands.push(...parsed.commands);
  }
  if (commands.length > 0) notes.length = 0;
  return commands;
}

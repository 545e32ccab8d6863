/**
 * The memory bank (AgentMine): `.codefleet/memory/*.md` in the repository holds what every
 * task should know (conventions, decisions, known pitfalls). Which paths belong to it is
 * shared by the agents (a memory file is not a run file), the workspace (new memory files are
 * committed) and the pipeline, which summarizes it into each agent's prompt.
 */

/** Where the memory bank lives in a repository. */
export const memoryDir = '.codefleet/memory';

/**
 * True for a memory bank file: a `.md` file directly under {@link memoryDir} with a plain
 * name (letters, digits, `._-`): a name is quoted into the prompt, and one holding a newline
 * or markup would be a way to write outside the notes.
 */
export function isMemoryFile(path: string): boolean {
  return /^\.codefleet\/memory\/[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.md$/.test(path);
}

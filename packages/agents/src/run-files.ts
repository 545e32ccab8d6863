import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { runFilesDir } from './changed-files.js';
import type { AgentRunRequest } from './port.js';

/** The files written for one run, as absolute paths. */
export interface RunFiles {
  /** `<workdir>/.codefleet/prompt-<pass>-<attempt>.md`: the prompt, verbatim. */
  promptFile: string;
  /** `<workdir>/.codefleet/feedback-<pass>-<attempt>.md`: the feedback, empty when there is none. */
  feedbackFile: string;
}

/**
 * Writes the prompt and the feedback of one run under `<workdir>/.codefleet/`, so task
 * text reaches the agent as a file and never through a command line a shell could read.
 * The feedback file is written even when empty so a `{feedback_file}` argument always
 * names a real file.
 *
 * @throws {CodefleetError} `workspace_failed` when `.codefleet` is not a plain directory.
 */
export async function writeRunFiles(
  req: Pick<AgentRunRequest, 'workdir' | 'pass' | 'attempt' | 'prompt' | 'feedback'>,
): Promise<RunFiles> {
  const dir = join(req.workdir, runFilesDir);
  await mkdir(dir, { recursive: true });
  // The repository's own content could plant `.codefleet` as a symlink to somewhere
  // outside the working copy; refuse to write through it.
  const info = await lstat(dir);
  if (!info.isDirectory()) {
    throw new CodefleetError('workspace_failed', `${dir} is not a directory (a symlink or file in the repository?)`, {
      details: { path: dir },
    });
  }
  const suffix = `${req.pass}-${req.attempt}.md`;
  const files: RunFiles = {
    promptFile: join(dir, `prompt-${suffix}`),
    feedbackFile: join(dir, `feedback-${suffix}`),
  };
  await writeFresh(files.promptFile, req.prompt);
  await writeFresh(files.feedbackFile, req.feedback ?? '');
  return files;
}

/** Replaces `path` with a new file; `wx` never follows a symlink left where the file was. */
async function writeFresh(path: string, content: string): Promise<void> {
  await rm(path, { force: true });
  await writeFile(path, content, { flag: 'wx', mode: 0o644 });
}

import * as z from 'zod';
import { seconds } from './common.js';

/** `patch:` — safeguards of the patch engine: what a patch may touch and how its commands run. */
export const patchSchema = z
  .strictObject({
    auto_commit: z
      .boolean()
      .default(false)
      .describe('Commit before and after applying a patch, so a failure can be rolled back.'),
    commit_message_prefix: z.string().default('[Worker Auto-Commit]').describe('Prefix of auto-commit messages.'),
    command_timeout_seconds: seconds(1).default(300).describe('Timeout of one shell command from a patch.'),
    git_timeout_seconds: seconds(1).default(30).describe('Timeout of one git operation from a patch.'),
    stop_on_error: z
      .boolean()
      .default(false)
      .describe('Stop at the first failed command (and roll back when auto_commit is on) instead of continuing.'),
    protected_patterns: z
      .array(z.string().min(1))
      .default(() => ['.env*', '*credentials*', '*.key', '*.pem'])
      .describe('Glob patterns of files a patch must not touch.'),
    action_on_protected_file: z
      .enum(['error', 'skip', 'log'])
      .default('error')
      .describe('What a command touching a protected file does: fail, be skipped, or run with a log line.'),
    show_execution_summary: z
      .boolean()
      .default(true)
      .describe('Log a summary of the planned commands before running them.'),
  })
  .prefault({})
  .describe('Patch engine.');

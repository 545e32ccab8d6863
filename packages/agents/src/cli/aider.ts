import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { runFilesDir } from '../changed-files.js';
import { createProcessAgent } from '../process-agent.js';
import type { Agent } from '../port.js';
import {
  apiErrorVerdict,
  capVerdict,
  type CliAgentSettings,
  cliSpecBase,
  endedOnItsOwn,
  firstMatchingLine,
} from './shared.js';

/** Options of the Aider adapter: `agents.aider` of the config. */
export interface AiderAgentOptions extends CliAgentSettings {
  model: string;
  /** `--map-tokens`; 0 turns the repository map off (small local models choke on it). */
  mapTokens: number;
}

// Aider reaches every provider through litellm and prints its exception names; with
// --message-file it then exits 0 although the model never answered.
const apiErrorPatterns = [/^litellm\.[A-Za-z]+Error\b/, /^The API provider has rate limited you/i];
// Aider's own iteration cap: it stops fixing its edits after `max_reflections` tries.
const reflectionCap = /^Only \d+ reflections allowed, stopping/m;
// The tag cache of the repository map; its place cannot be configured.
const tagCache = /^\.aider\.tags\.cache\.v\d+$/;

/**
 * The Aider adapter (`aider --message-file`): one message, then exit. Auto-commits and
 * dirty-commits are off (the pipeline commits), `.gitignore` is left alone, history files go
 * under `.codefleet/`, the conventions file is passed with `--read`, and nothing asks the
 * network for updates or analytics. Besides its API key the agent may see `OLLAMA_API_BASE`,
 * which `ollama_chat/` models need to find the server.
 */
export function createAiderAgent(options: AiderAgentOptions): Agent {
  return createProcessAgent({
    ...cliSpecBase('aider', 'CONVENTIONS.md', options, ['OLLAMA_API_BASE']),
    argv: (req, files) => [
      options.binary,
      '--model',
      options.model,
      '--yes-always',
      '--no-auto-commits',
      '--no-dirty-commits',
      '--no-gitignore',
      '--no-check-update',
      '--no-show-release-notes',
      '--no-analytics',
      '--no-pretty',
      '--no-fancy-input',
      '--no-detect-urls',
      '--map-tokens',
      String(options.mapTokens),
      '--input-history-file',
      join(req.workdir, runFilesDir, 'aider.input.history'),
      '--chat-history-file',
      join(req.workdir, runFilesDir, 'aider.chat.history.md'),
      ...(existsSync(join(req.workdir, 'CONVENTIONS.md')) ? ['--read', 'CONVENTIONS.md'] : []),
      ...(options.extraArgs ?? []),
      '--message-file',
      files.promptFile,
    ],
    interpret: (facts, generic) => {
      if (!endedOnItsOwn(generic)) return undefined;
      const apiError = firstMatchingLine(facts.process.outputTail, apiErrorPatterns);
      if (apiError !== undefined) return apiErrorVerdict('aider', apiError, generic);
      if (reflectionCap.test(facts.process.outputTail))
        return capVerdict('aider stopped at its reflection cap before its edits applied cleanly');
      return undefined;
    },
    cleanup: async (workdir) => {
      for (const entry of await readdir(workdir)) {
        if (tagCache.test(entry)) await rm(join(workdir, entry), { recursive: true, force: true });
      }
    },
  });
}

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runFilesDir } from '../changed-files.js';
import type { AgentRunRequest, PriceTable } from '../port.js';
import { writeRunFiles } from '../run-files.js';
import { budgetHookScript } from './gemini-budget-hook.js';

/** Where a run's own `GEMINI_CLI_HOME` lives, inside the run files (never listed as changes). */
const geminiHomeDir = join(runFilesDir, 'gemini-home');

/** What the run's own home enforces: the turn cap and the money budget with its prices. */
export interface GeminiHomeLimits {
  maxTurns?: number | undefined;
  budgetUsd?: number | undefined;
  prices?: PriceTable | undefined;
}

/** The stop reason the budget hook gives; the CLI prints it as a warning ("Agent execution stopped: …"). */
const budgetStopReason = 'codefleet: money budget reached';

const hookFile = 'budget-hook.mjs';
const spentFile = 'budget-spent.json';

/**
 * The AfterModel hook that enforces a money budget while the CLI runs. Gemini CLI 0.61.0
 * prints no usage before its final object, but runs this hook after every response chunk
 * with the request's `model` and the chunk's `usageMetadata`; the chunk that carries a
 * `finishReason` has the response's final counts. The hook adds that response's cost to a
 * file, and once the total reaches the budget answers `continue: false`, which ends the
 * agent loop before the response's tool calls run (see `gemini-budget-hook.ts`). Budget,
 * prices and file path are written into the script, never into a command line.
 */
export function budgetHookSource(budgetUsd: number, prices: PriceTable, spentPath: string): string {
  return budgetHookScript({ budgetUsd, prices, spentPath, stopReason: budgetStopReason });
}

/** A path as one word of the POSIX shell the CLI runs hook commands with. */
const shellWord = (value: string) => `'${value.replaceAll("'", "'\\''")}'`;

/**
 * A run's own Gemini home (`GEMINI_CLI_HOME`) with the settings codefleet needs: the turn
 * cap (`model.maxSessionTurns`, which has no flag), the budget hook, no usage statistics
 * or update checks, and, when the key goes to a gateway (`GOOGLE_GEMINI_BASE_URL`), the
 * API-key auth method, which 0.61.0 headless otherwise refuses ("Invalid auth method
 * selected", exit 41). Fresh for every run; the host's `~/.gemini` is not read.
 */
export async function writeGeminiHome(req: AgentRunRequest, limits: GeminiHomeLimits): Promise<string> {
  // Checks `.codefleet` is a real directory of the working copy before writing under it.
  await writeRunFiles(req);
  const home = join(req.workdir, geminiHomeDir);
  await rm(home, { recursive: true, force: true });
  await mkdir(join(home, '.gemini'), { recursive: true });
  const gateway = req.env.GOOGLE_GEMINI_BASE_URL !== undefined && req.env.GEMINI_API_KEY !== undefined;
  let hooks = {};
  if (limits.budgetUsd !== undefined) {
    const script = join(home, hookFile);
    await writeFile(script, budgetHookSource(limits.budgetUsd, limits.prices ?? {}, join(home, spentFile)));
    hooks = {
      hooks: {
        AfterModel: [{ hooks: [{ type: 'command', name: 'codefleet-budget', command: `node ${shellWord(script)}` }] }],
      },
    };
  }
  const settings = {
    ...(limits.maxTurns === undefined ? {} : { model: { maxSessionTurns: limits.maxTurns } }),
    privacy: { usageStatisticsEnabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    ...(gateway ? { security: { auth: { selectedType: 'gemini-api-key' } } } : {}),
    ...hooks,
  };
  await writeFile(join(home, '.gemini', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  return home;
}

/** What the budget hook counted in `home`, or undefined when it counted nothing. */
export async function budgetSpent(home: string): Promise<number | undefined> {
  try {
    const spent = (JSON.parse(await readFile(join(home, spentFile), 'utf8')) as { spentUsd?: unknown }).spentUsd;
    return typeof spent === 'number' ? spent : undefined;
  } catch {
    return undefined;
  }
}

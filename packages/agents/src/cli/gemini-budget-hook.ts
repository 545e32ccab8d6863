import { readFileSync, writeFileSync } from 'node:fs';
import type { PriceTable } from '../port.js';
import { costOf, priceOf } from '../pricing.js';

// The budget hook runs inside the agent's sandbox, where codefleet's own install is not
// mounted, so the script written into the run's home must stand alone. Its code is this
// module's functions, carried as their compiled source (`Function.prototype.toString`):
// typechecked, linted and tested here, and the price lookup is the one the adapters use.
// Each carried function may use only the others, `node:fs`'s two imports and globals.

/** What the written hook is told: its budget, the prices, where it keeps its count, what it says when it stops. */
export interface BudgetHookSettings {
  budgetUsd: number;
  prices: PriceTable;
  spentPath: string;
  stopReason: string;
}

/** The part of Gemini CLI's AfterModel event the hook reads. */
interface AfterModelEvent {
  llm_request?: { model?: unknown } | null;
  llm_response?: {
    candidates?: readonly ({ finishReason?: unknown } | null)[] | null;
    usageMetadata?: Record<string, unknown> | null;
  } | null;
}

/**
 * What one AfterModel event adds to the spend, or undefined for a chunk that does not end
 * its response (only that one carries the response's final counts). Prompt tokens at the
 * input price, candidates and thoughts at the output price; a model without a price costs 0.
 */
export function finishedResponseCost(event: unknown, prices: PriceTable): number | undefined {
  const { llm_request: request, llm_response: response } = (event ?? {}) as AfterModelEvent;
  if (!(response?.candidates ?? []).some((candidate) => candidate?.finishReason)) return undefined;
  const usage = response?.usageMetadata ?? {};
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  const tokens = {
    prompt: count(usage.promptTokenCount),
    completion: count(usage.candidatesTokenCount) + count(usage.thoughtsTokenCount),
  };
  return costOf(prices, String(request?.model ?? ''), tokens) ?? 0;
}

/**
 * The hook's process: reads one event from stdin, adds a finished response's cost to the
 * count in `spentPath`, and answers `continue: false` once the count reaches the budget.
 * Anything it cannot read answers `{}`: a broken hook must not stop a run.
 */
function runBudgetHook(settings: BudgetHookSettings): void {
  let input = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    input += chunk;
  });
  process.stdin.on('end', () => {
    let answer = {};
    try {
      const cost = finishedResponseCost(JSON.parse(input), settings.prices);
      if (cost !== undefined) {
        let spent = 0;
        try {
          const before = (JSON.parse(readFileSync(settings.spentPath, 'utf8')) as { spentUsd?: unknown }).spentUsd;
          if (typeof before === 'number') spent = before;
        } catch {
          // No count yet: this is the first finished response.
        }
        spent += cost;
        writeFileSync(settings.spentPath, JSON.stringify({ spentUsd: spent }));
        if (spent >= settings.budgetUsd) answer = { continue: false, stopReason: settings.stopReason };
      }
    } catch {
      // An event it cannot read: answer nothing rather than stop the run.
    }
    process.stdout.write(JSON.stringify(answer));
  });
}

/** The hook as a standalone ES module: the functions above and one call with `settings`. */
export function budgetHookScript(settings: BudgetHookSettings): string {
  return [
    '// Written by codefleet for one Gemini CLI run: stops it when its cost reaches the budget.',
    "import { readFileSync, writeFileSync } from 'node:fs';",
    ...[priceOf, costOf, finishedResponseCost, runBudgetHook].map(String),
    `${runBudgetHook.name}(${JSON.stringify(settings)});`,
    '',
  ].join('\n');
}

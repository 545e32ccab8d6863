import * as z from 'zod';

const usd = z.number().positive().max(1_000_000);

const price = z.strictObject({
  input_per_mtok: z.number().min(0).describe('US dollars per million prompt (input) tokens.'),
  output_per_mtok: z.number().min(0).describe('US dollars per million completion (output) tokens.'),
});

/**
 * `costs:` — what model calls cost and how much may be spent. A CLI that reports its own
 * cost (Claude Code) is believed; otherwise cost is tokens × the price of the model.
 */
export const costsSchema = z
  .strictObject({
    prices: z
      .record(z.string().min(1).max(200), price)
      .default(() => ({}))
      .describe(
        'Prices by model name, for agents that report tokens but not cost (Codex, Gemini CLI, the built-in agent). ' +
          'A key ending in * matches every model starting with the rest ("qwen2.5-coder:*": free local models). ' +
          'A model without a price counts as unknown cost, never as free.',
      ),
    budget_usd: z
      .strictObject({
        job: usd
          .optional()
          .describe(
            'Most one job may spend, all tiers and attempts together; reaching it stops the running agent and ends the job as budget_exceeded.',
          ),
        day: usd
          .optional()
          .describe(
            'Most the whole fleet may spend in one UTC day; reaching it pauses claiming (jobs wait in the queue) until the next day.',
          ),
      })
      .prefault({})
      .describe('Money budgets in US dollars; unset: none.'),
  })
  .prefault({})
  .describe('Model costs and money budgets.');

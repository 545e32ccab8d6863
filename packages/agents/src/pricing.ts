import type { ModelPrice, PriceTable } from './port.js';

/**
 * The price of `model` in `prices`: its exact entry, else the entry with the longest `*`
 * prefix that matches it. Undefined when the table has none, so a missing price never
 * reads as free.
 */
export function priceOf(prices: PriceTable | undefined, model: string): ModelPrice | undefined {
  if (prices === undefined) return undefined;
  const exact = prices[model];
  if (exact !== undefined) return exact;
  let best: { length: number; price: ModelPrice } | undefined;
  for (const [key, price] of Object.entries(prices)) {
    if (!key.endsWith('*')) continue;
    const prefix = key.slice(0, -1);
    if (model.startsWith(prefix) && (best === undefined || prefix.length > best.length))
      best = { length: prefix.length, price };
  }
  return best?.price;
}

/** What `tokens` of `model` cost in US dollars, or undefined when the model has no price. */
export function costOf(
  prices: PriceTable | undefined,
  model: string,
  tokens: { prompt: number; completion: number },
): number | undefined {
  const price = priceOf(prices, model);
  if (price === undefined) return undefined;
  return (tokens.prompt * price.inputPerMtok + tokens.completion * price.outputPerMtok) / 1_000_000;
}

/** config.yaml's `costs.prices` in the agents' terms. */
export function pricesFrom(costs: {
  prices: Readonly<Record<string, { input_per_mtok: number; output_per_mtok: number }>>;
}): PriceTable {
  return Object.fromEntries(
    Object.entries(costs.prices).map(([model, price]) => [
      model,
      { inputPerMtok: price.input_per_mtok, outputPerMtok: price.output_per_mtok },
    ]),
  );
}

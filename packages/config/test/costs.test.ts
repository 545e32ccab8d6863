import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../src/index.js';

// README's "Costs and budgets" example is read from the README itself, so the docs and
// the schema cannot drift apart.
const readme = await readFile(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');

function costsExample(): string {
  const section = readme.slice(readme.indexOf('### Costs and budgets'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section);
  if (block?.[1] === undefined) throw new Error('README has no yaml block under "Costs and budgets"');
  return block[1];
}

const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/srv', hostname: 'h' }).config;

describe('costs:', () => {
  it("README's example loads: prefix and exact prices, job and day budgets", () => {
    const { costs } = parse(costsExample());
    expect(costs.prices['qwen2.5-coder:*']).toEqual({ input_per_mtok: 0, output_per_mtok: 0 });
    expect(Object.values(costs.prices).length).toBeGreaterThanOrEqual(2);
    expect(costs.budget_usd.job).toBeGreaterThan(0);
    expect(costs.budget_usd.day).toBeGreaterThan(costs.budget_usd.job ?? 0);
  });

  it('no budgets and no prices by default; a negative price or a zero budget is refused', () => {
    expect(parse('').costs).toEqual({ prices: {}, budget_usd: {} });
    expect(() => parse('costs:\n  prices:\n    m: { input_per_mtok: -1, output_per_mtok: 0 }\n')).toThrow(
      /costs\.prices\.m\.input_per_mtok/,
    );
    expect(() => parse('costs:\n  budget_usd: { job: 0 }\n')).toThrow(/costs\.budget_usd\.job/);
    expect(() => parse('costs:\n  budget_usd: { weekly: 3 }\n')).toThrow(/weekly/);
  });
});

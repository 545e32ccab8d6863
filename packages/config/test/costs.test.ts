import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../src/index.js';

const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/srv', hostname: 'h' }).config;

// The docs' example ("Costs and budgets") is tested with the docs: apps/cli/test/docs.test.ts.
describe('costs:', () => {
  it('no budgets and no prices by default; a negative price or a zero budget is refused', () => {
    expect(parse('').costs).toEqual({ prices: {}, budget_usd: {} });
    expect(() => parse('costs:\n  prices:\n    m: { input_per_mtok: -1, output_per_mtok: 0 }\n')).toThrow(
      /costs\.prices\.m\.input_per_mtok/,
    );
    expect(() => parse('costs:\n  budget_usd: { job: 0 }\n')).toThrow(/costs\.budget_usd\.job/);
    expect(() => parse('costs:\n  budget_usd: { weekly: 3 }\n')).toThrow(/weekly/);
  });
});

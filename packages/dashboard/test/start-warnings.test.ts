import { afterEach, describe, expect, it } from '@jest/globals';
import { openBackends, startDashboard, type Backends } from './helpers.js';

// `codefleet dashboard` is the first thing an operator starts: a framework deprecation
// warning on its stderr reads as something being wrong with their setup.

let b: Backends | undefined;
let dash: Awaited<ReturnType<typeof startDashboard>> | undefined;
const warnings: string[] = [];
const emitWarning = process.emitWarning;

afterEach(async () => {
  process.emitWarning = emitWarning;
  await dash?.close();
  await b?.dispose();
});

describe('starting the dashboard', () => {
  it('prints no process warning', async () => {
    // Caught where libraries call it: jest's process does not pass 'warning' events on.
    process.emitWarning = ((warning: string | Error) => {
      warnings.push(String(warning));
    }) as typeof process.emitWarning;
    b = await openBackends();
    dash = await startDashboard(b);
    expect((await fetch(`${dash.base}/login`)).status).toBe(200);
    expect(warnings).toEqual([]);
  });
});

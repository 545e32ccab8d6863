import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, withTimeoutsUntil, type TempDir } from '@codefleet/testkit';
import { runDod } from '../src/index.js';
import { nodeScript, testEnv } from './helpers.js';

let dir: TempDir;
beforeEach(async () => {
  dir = await createTempDir('verify-dod');
});
afterEach(async () => {
  await dir.dispose();
});

const options = { env: testEnv, timeoutMs: 10_000 };
const ok = nodeScript("console.log('ok')");
const bad = nodeScript("console.error('lint: 3 problems'); process.exit(1)");
const hang = nodeScript('setInterval(() => {}, 1000)');

describe('runDod', () => {
  it("is 'skipped' when there is no DoD", async () => {
    expect(await runDod(dir.path, [], options)).toEqual({ result: 'skipped', results: [] });
  });

  it("is 'passed' when every command passes", async () => {
    const outcome = await runDod(dir.path, [ok, ok], options);
    expect(outcome.result).toBe('passed');
    expect(outcome.results.map((r) => [r.name, r.passed])).toEqual([
      ['dod', true],
      ['dod', true],
    ]);
  });

  it("is 'failed' when one fails, and still runs the rest for a complete report", async () => {
    const outcome = await runDod(dir.path, [bad, ok], options);
    expect(outcome.result).toBe('failed');
    expect(outcome.results.map((r) => r.exitCode)).toEqual([1, 0]);
    expect(outcome.results[0]?.outputTail).toContain('lint: 3 problems');
  });

  it("is 'timeout' when any command timed out, even if another failed", async () => {
    // `hang` never ends; `bad` and `ok` must end on their own, which a loaded machine can
    // make them miss a short timeout by: such a run is repeated with a longer one.
    const { result: outcome } = await withTimeoutsUntil(
      [3_000, 15_000, 60_000],
      (timeoutMs) => runDod(dir.path, [bad, hang, ok], { ...options, timeoutMs }),
      (run) => run.results[0]?.timedOut === false && run.results[2]?.timedOut === false,
    );
    expect(outcome.result).toBe('timeout');
    expect(outcome.results.map((r) => r.timedOut)).toEqual([false, true, false]);
    expect(outcome.results[1]).toMatchObject({ exitCode: 124, passed: false });
  });

  it("is 'failed' when a command cannot start", async () => {
    const outcome = await runDod(dir.path, [['codefleet-no-such-dod-tool']], options);
    expect(outcome.result).toBe('failed');
    expect(outcome.results[0]?.spawnError).toMatch(/ENOENT/);
  });
});

/**
 * The Codex adapter's reading of `codex exec --json` and the process agent's run observer,
 * against a fake `codex` (a Node script printing Codex's JSON events) where the real binary
 * cannot show it: a run still going when its reported cost reaches the budget, events
 * split across output chunks, a `turn.failed` line that Codex's own exit does not confirm.
 * codex-real.test.ts runs the real binary.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, isAlive, waitFor, withTimeoutsUntil } from '@codefleet/testkit';
import { buildAgentEnv, createCodexAgent, type AgentRunRequest, type PriceTable } from '../src/index.js';

const prices: PriceTable = { 'gpt-5-codex': { inputPerMtok: 1.25, outputPerMtok: 10 } };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const event = (value: unknown) => `${JSON.stringify(value)}\\n`;
const usage = (input: number, output: number) =>
  event({
    type: 'turn.completed',
    usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: output, reasoning_output_tokens: 0 },
  });

/** Fake codex bodies: JavaScript run by Node with `out(text)` writing to stdout. */
const fakes = {
  // Reports a costly turn, then keeps going (with a grandchild) as a long run would.
  costlyThenRuns: `
    const { spawn } = await import('node:child_process');
    const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    out('pids ' + process.pid + ' ' + grandchild.pid + '\\n');
    out('${event({ type: 'thread.started', thread_id: 't1' })}');
    // One event in two chunks: the observer must join them.
    const line = '${usage(100_000, 1_000)}';
    out(line.slice(0, 20));
    await new Promise((resolve) => setTimeout(resolve, 100));
    out(line.slice(20));
    setInterval(() => {}, 1000);`,
  failedExit0: `
    out('${event({ type: 'turn.failed', error: { message: 'unexpected status 401 Unauthorized' } })}');
    out('${usage(10, 1)}');`,
} as const;

async function setUp(fake: keyof typeof fakes) {
  const bin = await createTempDir('fake-codex');
  cleanups.push(() => bin.dispose());
  const executable = join(bin.path, 'codex');
  await writeFile(
    executable,
    `#!${process.execPath}\nconst out = (text) => process.stdout.write(text);\n(async () => {${fakes[fake]}\n})();\n`,
  );
  await chmod(executable, 0o755);
  const repo = await createTempRepo({ prefix: 'codex-events' });
  cleanups.push(() => repo.dispose());
  const agent = createCodexAgent({ binary: executable, model: 'gpt-5-codex', killGraceMs: 200 });
  const req = (extra: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
    workdir: repo.path,
    prompt: 'Do it\n',
    pass: 'implement',
    attempt: 1,
    timeoutMs: 30_000,
    env: buildAgentEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: repo.path }),
    prices,
    ...extra,
  });
  return { agent, req, path: repo.path };
}

describe('Codex JSON events', () => {
  it('a run still going when its reported cost reaches req.budgetUsd is stopped there, its process tree killed', async () => {
    const { agent, req } = await setUp('costlyThenRuns');
    const seen: string[] = [];
    const result = await agent.run(req({ budgetUsd: 0.05, onOutput: (chunk) => void seen.push(chunk) }));
    // 100k input and 1k output tokens at $1.25 / $10 a million: $0.135.
    expect(result).toMatchObject({
      outcome: 'failed',
      budgetExceeded: true,
      timedOut: false,
      detail: 'stopped at the money budget: spent $0.1350 of $0.0500',
      tokens: { prompt: 100_000, completion: 1_000 },
      model: 'gpt-5-codex',
      costUsd: 0.135,
    });
    expect(result.modelCalls).toEqual([
      {
        provider: 'codex',
        model: 'gpt-5-codex',
        promptTokens: 100_000,
        completionTokens: 1_000,
        latencyMs: expect.any(Number),
        costUsd: 0.135,
        outcome: 'ok',
      },
    ]);
    // The caller's live output still saw everything.
    expect(seen.join('')).toContain('"turn.completed"');
    const [parent, grandchild] = (/pids (\d+) (\d+)/.exec(result.outputTail) ?? []).slice(1).map(Number);
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(() => !isAlive(parent!) && !isAlive(grandchild!), { what: 'no survivors' });
  });

  it('under the budget the same run is not stopped: it runs to its timeout', async () => {
    const { agent, req } = await setUp('costlyThenRuns');
    // The fake must report its costly turn before the timeout. A loaded machine can hold its
    // start past a short one, so a run where the turn never showed is repeated with a longer
    // timeout: what is asserted is what the run did once the turn was reported.
    const { result } = await withTimeoutsUntil(
      [3_000, 12_000, 48_000],
      (timeoutMs) => agent.run(req({ budgetUsd: 10, timeoutMs })),
      (run) => run.outputTail.includes('"turn.completed"'),
    );
    expect(result).toMatchObject({ outcome: 'timeout', timedOut: true, costUsd: 0.135 });
    expect(result.budgetExceeded).toBeUndefined();
  });

  it('a caller cancel stays a cancel, not a budget stop', async () => {
    const { agent, req } = await setUp('costlyThenRuns');
    const controller = new AbortController();
    const result = await agent.run(
      req({
        signal: controller.signal,
        onOutput: (chunk) => {
          if (chunk.includes('pids')) controller.abort();
        },
      }),
    );
    expect(result).toMatchObject({ outcome: 'error', detail: 'cancelled' });
    expect(result.budgetExceeded).toBeUndefined();
  });

  it('a turn.failed line with exit 0 is not taken for Codex failing (a command may print one); usage still counts', async () => {
    const { agent, req } = await setUp('failedExit0');
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'no_changes', exitCode: 0, tokens: { prompt: 10, completion: 1 } });
    expect(result.permanent).toBeUndefined();
  });
});

/**
 * `agents.gemini.max_turns` from the config to the CLI: the run's own GEMINI_CLI_HOME and
 * the settings written there, seen by a stand-in `gemini` executable that prints its
 * environment (the real CLI's reaction to them is in gemini-real.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { chmod, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { createTempDir, createTempRepo } from '@codefleet/testkit';
import { budgetHookSource } from '../src/cli/gemini-home.js';
import { createAgent, lastJsonObject } from '../src/index.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function run(section: string, env: Record<string, string> = {}) {
  const dir = await createTempDir('gemini-bin');
  cleanups.push(() => dir.dispose());
  const binary = join(dir.path, 'gemini');
  await writeFile(
    binary,
    `#!${process.execPath}\nconsole.log(JSON.stringify({ response: 'ok', home: process.env.GEMINI_CLI_HOME ?? null }));\n`,
  );
  await chmod(binary, 0o755);
  const repo = await createTempRepo({ prefix: 'gemini-home', files: { 'README.md': '# x\n' } });
  cleanups.push(() => repo.dispose());
  const config = parseConfig(`agents:\n  gemini:\n    binary: ${binary}\n${section}`, {
    env: {},
    baseDir: '/srv/codefleet',
    hostname: 'test-host',
  }).config;
  const result = await createAgent('gemini', config.agents).run({
    workdir: repo.path,
    prompt: 'Do it',
    pass: 'implement',
    attempt: 1,
    timeoutMs: 60_000,
    env: { PATH: process.env.PATH ?? '', HOME: repo.path, ...env },
  });
  return { result, workdir: await realpath(repo.path), printed: lastJsonObject(result.outputTail) };
}

describe('agents.gemini.max_turns', () => {
  it('gives the run its own GEMINI_CLI_HOME with model.maxSessionTurns, the API-key auth for a base URL, no usage statistics', async () => {
    const { result, workdir, printed } = await run('    max_turns: 3\n', {
      GEMINI_API_KEY: 'k',
      GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9',
    });
    expect(result).toMatchObject({ outcome: 'no_changes', changedFiles: [] });
    const home = join(workdir, '.codefleet', 'gemini-home');
    expect(printed?.home).toBe(home);
    expect(JSON.parse(await readFile(join(home, '.gemini', 'settings.json'), 'utf8'))).toEqual({
      model: { maxSessionTurns: 3 },
      privacy: { usageStatisticsEnabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      security: { auth: { selectedType: 'gemini-api-key' } },
    });
  });

  it('unset: the CLI keeps the host home and its settings', async () => {
    const { printed } = await run('');
    expect(printed?.home).toBeNull();
  });
});

describe('the budget hook (AfterModel, run by the CLI after each response chunk)', () => {
  it("adds each finished response's cost and stops the loop once the total reaches the budget", async () => {
    const dir = await createTempDir('gemini-hook');
    cleanups.push(() => dir.dispose());
    const script = join(dir.path, 'hook.mjs');
    const spent = join(dir.path, 'spent.json');
    await writeFile(script, budgetHookSource(0.002, { 'gemini-*': { inputPerMtok: 1, outputPerMtok: 10 } }, spent));
    const chunk = (
      model: string,
      finishReason: string | undefined,
      promptTokenCount: number,
      candidatesTokenCount: number,
    ) =>
      JSON.parse(
        execFileSync(process.execPath, [script], {
          input: JSON.stringify({
            hook_event_name: 'AfterModel',
            llm_request: { model },
            llm_response: {
              candidates: [{ content: { parts: [] }, ...(finishReason ? { finishReason } : {}) }],
              usageMetadata: { promptTokenCount, candidatesTokenCount },
            },
          }),
          encoding: 'utf8',
        }),
      ) as Record<string, unknown>;
    // A chunk before the end of its response counts nothing; an unpriced model neither.
    expect(chunk('gemini-pro', undefined, 900_000, 0)).toEqual({});
    expect(chunk('other', 'STOP', 900_000, 0)).toEqual({});
    expect(chunk('gemini-pro', 'STOP', 1000, 50)).toEqual({});
    expect(JSON.parse(await readFile(spent, 'utf8'))).toEqual({ spentUsd: 0.0015 });
    expect(chunk('gemini-pro', 'STOP', 400, 10)).toEqual({
      continue: false,
      stopReason: 'codefleet: money budget reached',
    });
  });
});

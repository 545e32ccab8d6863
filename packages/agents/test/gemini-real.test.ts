/**
 * The Gemini adapter running the REAL Gemini CLI (@google/gemini-cli 0.61.0, the dev
 * dependency in node_modules/.bin) in real git working copies, against the Gemini API
 * stand-in of testkit on loopback (GOOGLE_GEMINI_BASE_URL). Each run has its own HOME
 * (never the real ~/.gemini) and TMPDIR, a fake key, no network. What is proven: the
 * adapter's flags are accepted, the scripted edit lands, outcomes are classified right, the
 * tokens and model come from the CLI's own JSON, and the process tree dies on a timeout.
 */
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { ProcessResult } from '@codefleet/process';
import {
  createTempDir,
  createTempRepo,
  startGeminiStandIn,
  type GeminiStandIn,
  type GeminiStandInOptions,
} from '@codefleet/testkit';
import {
  buildAgentEnv,
  createGeminiAgent,
  type AgentRunRequest,
  type GeminiAgentOptions,
  type PriceTable,
} from '../src/index.js';
import { openBwrap, sandboxed } from './bwrap-runner.js';

const gemini = fileURLToPath(new URL('../../../node_modules/.bin/gemini', import.meta.url));
const key = 'stand-in-gemini-key';
const prices: PriceTable = { 'gemini-*': { inputPerMtok: 1.25, outputPerMtok: 10 } };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Settings of the run's HOME: the API-key auth method, which 0.61.0 headless needs when the
 * key goes to a base URL (else "Invalid auth method selected", exit 41), no usage statistics
 * or update checks (no network), and few retries so an API error ends the run quickly.
 */
const homeSettings = {
  security: { auth: { selectedType: 'gemini-api-key' } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 2 },
};

async function setUp(
  standIn: GeminiStandInOptions,
  options: Partial<GeminiAgentOptions> = {},
  settings: object | undefined = homeSettings,
) {
  const server = await startGeminiStandIn(standIn);
  cleanups.push(() => server.close());
  const repo = await createTempRepo({ prefix: 'gemini-real', files: { 'README.md': '# sample\n' } });
  cleanups.push(() => repo.dispose());
  const home = await createTempDir('gemini-home');
  cleanups.push(() => home.dispose());
  if (settings !== undefined) {
    await mkdir(join(home.path, '.gemini'), { recursive: true });
    await writeFile(join(home.path, '.gemini', 'settings.json'), JSON.stringify(settings));
  }
  const tmp = join(home.path, 'tmp');
  await mkdir(tmp);
  const agent = createGeminiAgent({ binary: gemini, apiKeyEnv: 'GEMINI_API_KEY', ...options });
  await writeFile(join(repo.path, 'GEMINI.md'), 'Use exact file paths.\n');
  // The worker's environment as the runtime builds it: Node 20 first on PATH (the CLI's
  // shebang is `env node`), the stand-in's URL passed explicitly like a configured gateway.
  const host = {
    PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: home.path,
    TMPDIR: tmp,
    LANG: 'C.UTF-8',
    GEMINI_API_KEY: key,
    GITHUB_TOKEN: 'ghp_planted',
  };
  const req = (extra: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
    workdir: repo.path,
    prompt: 'Write NOTES.md saying hello.\n',
    pass: 'implement',
    attempt: 1,
    timeoutMs: 150_000,
    env: buildAgentEnv(host, {
      allow: [...(agent.allowEnv ?? [])],
      extra: { GOOGLE_GEMINI_BASE_URL: server.url, NO_COLOR: '1' },
    }),
    prices,
    ...extra,
  });
  return { server, agent, path: repo.path, req };
}

const writeNotes = {
  functionCalls: [{ name: 'write_file', args: { file_path: 'NOTES.md', content: 'hello from gemini\n' } }],
  promptTokens: 1000,
  completionTokens: 50,
};
const done = { text: 'Done: wrote NOTES.md.', promptTokens: 1200, completionTokens: 20 };

/** Processes whose working directory is `dir`: what a run left behind there. */
function processesIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        return readlinkSync(`/proc/${name}/cwd`) === dir ? [Number(name)] : [];
      } catch {
        return [];
      }
    });
}

function turnRequests(server: GeminiStandIn) {
  return server.requests.filter((request) => request.kind === 'turn');
}

describe('Gemini adapter with the real Gemini CLI 0.61.0 against the API stand-in', () => {
  it('runs with its flags, lands the scripted edit and reads tokens, model and cost from the CLI JSON', async () => {
    const { server, agent, path, req } = await setUp({ turns: [writeNotes, done] });
    const result = await agent.run(req({ budgetUsd: 1 }));
    expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['NOTES.md'] });
    expect(await readFile(join(path, 'NOTES.md'), 'utf8')).toBe('hello from gemini\n');

    const turns = turnRequests(server);
    expect(turns).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.apiKey).toBe(key);
      expect(request.url).not.toContain(key);
      expect(request.url).toMatch(
        /^\/v1beta\/models\/[\w.-]+:(streamGenerateContent\?alt=sse|generateContent|countTokens)$/,
      );
    }
    expect(turns[0]?.rpc).toBe('streamGenerateContent');
    expect(turns[0]?.tools).toEqual(
      expect.arrayContaining(['write_file', 'replace', 'run_shell_command', 'read_file']),
    );
    // The prompt reached the model; the function result went back in the second turn.
    expect(JSON.stringify(turns[0]?.body.contents)).toContain('Write NOTES.md saying hello.');
    expect(JSON.stringify(turns[1]?.body.contents)).toContain('functionResponse');

    const main = turns[0]?.model ?? '';
    const mainCall = {
      provider: 'gemini',
      model: main,
      promptTokens: 2200,
      completionTokens: 70,
      costUsd: (2200 * 1.25 + 70 * 10) / 1e6,
      outcome: 'ok',
    };
    expect(result.model).toBe(main);
    expect(result.modelCalls).toContainEqual({ ...mainCall, latencyMs: expect.any(Number) });
    // Besides the main model, each prompt is routed by a small model (a utility call of 10 + 5 tokens here).
    const utility = server.requests.filter((request) => request.kind === 'utility');
    expect(result.tokens).toEqual({ prompt: 2200 + 10 * utility.length, completion: 70 + 5 * utility.length });
    expect(result.costUsd).toBeCloseTo((result.tokens!.prompt * 1.25 + result.tokens!.completion * 10) / 1e6, 12);
    expect(result.budgetExceeded).toBeUndefined();
  });

  it("a money budget stops the run live (an AfterModel hook in its own home): the costly turn's edit never runs", async () => {
    const { server, agent, path, req } = await setUp({ turns: [writeNotes, done] });
    // The first turn costs (1000 × 1.25 + 50 × 10) / 1e6 = $0.00175.
    const result = await agent.run(req({ budgetUsd: 0.001 }));
    expect(result).toMatchObject({ outcome: 'no_changes', exitCode: 0, budgetExceeded: true, changedFiles: [] });
    expect(result.costUsd).toBeGreaterThanOrEqual(0.00175);
    expect(result.detail).toMatch(/cost \$0\.00\d+ reached the budget \$0\.0010$/);
    expect(result.outputTail).toContain('Agent execution stopped: codefleet: money budget reached');
    expect(existsSync(join(path, 'NOTES.md'))).toBe(false);
    expect(server.pending).toBe(1);
  });

  it('a refused key (400 INVALID_ARGUMENT, API_KEY_INVALID) is a permanent error', async () => {
    const { agent, req } = await setUp({ failEvery: 'api-key-invalid' });
    const result = await agent.run(req());
    // 0.61.0 exits with the HTTP status modulo 256 (400 → 144) and prints the error object.
    expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 144, changedFiles: [] });
    expect(result.detail).toMatch(/^Gemini CLI reported an API error: .*API key not valid/);
  });

  it('a 403 is a permanent error too', async () => {
    const { agent, req } = await setUp({ failEvery: 'permission-denied' });
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 403 % 256 });
  });

  it('a 503 after its retries is a transient error; the requests were retried', async () => {
    const { server, agent, req } = await setUp({
      turns: Array.from({ length: 6 }, () => ({ error: 'unavailable' as const })),
    });
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'error', exitCode: 503 % 256 });
    expect(result.permanent).toBeUndefined();
    expect(result.detail).toMatch(/overloaded/);
    expect(turnRequests(server).length).toBeGreaterThanOrEqual(2);
  });

  it('a stream that breaks off is a transient error', async () => {
    const { agent, req } = await setUp({ turns: Array.from({ length: 6 }, () => ({ streamFailure: true as const })) });
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'error', exitCode: 1 });
    expect(result.permanent).toBeUndefined();
    expect(result.detail).toMatch(/^Gemini CLI reported an API error/);
  });

  it('without the API-key auth method, a base URL makes 0.61.0 refuse to start (exit 41): permanent', async () => {
    const { server, agent, req } = await setUp({ turns: [done] }, {}, { privacy: { usageStatisticsEnabled: false } });
    const result = await agent.run(req());
    expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 41 });
    expect(result.detail).toMatch(/exit 41, authentication.*Invalid auth method selected/);
    expect(server.requests).toEqual([]);
  });

  it('maxTurns caps the run (its own GEMINI_CLI_HOME holds model.maxSessionTurns): exit 53 → failed', async () => {
    const shell = (command: string) => ({
      functionCalls: [{ name: 'run_shell_command', args: { command, description: `run ${command}` } }],
    });
    // The run's own home replaces HOME's settings: the adapter writes the auth method itself.
    const { server, agent, req } = await setUp(
      { turns: [shell('echo one > one.txt'), shell('echo two > two.txt'), shell('echo three'), done] },
      { maxTurns: 1 },
      undefined,
    );
    const result = await agent.run(req());
    expect(result).toMatchObject({
      outcome: 'failed',
      exitCode: 53,
      detail: 'Gemini CLI reached its turn limit (exit 53)',
    });
    expect(server.pending).toBeGreaterThan(0);
  });

  it('a model that never answers: timeout, and nothing of the run is left', async () => {
    const { agent, path, req } = await setUp({ turns: [{ hang: true }] });
    const result = await agent.run(req({ timeoutMs: 20_000 }));
    expect(result).toMatchObject({ outcome: 'timeout', exitCode: 124, timedOut: true });
    expect(processesIn(await realpath(path))).toEqual([]);
  });

  it("inside codefleet's bwrap sandbox with the stand-in in sandbox.network.allow: the edit lands", async () => {
    // The sandbox's HOME is a fresh /tmp/home without the settings above: the run's own home
    // (GEMINI_CLI_HOME in the working copy, made for a turn cap) carries the auth method instead.
    const { server, agent, path, req } = await setUp({ turns: [writeNotes, done] }, { maxTurns: 5 }, undefined);
    const sandbox = await openBwrap([new URL(server.url).host], cleanups);
    if (sandbox === undefined) return;
    const results: ProcessResult[] = [];
    const result = await agent.run(req(sandboxed(sandbox, path, results)));
    expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['NOTES.md'] });
    expect(await readFile(join(path, 'NOTES.md'), 'utf8')).toBe('hello from gemini\n');
    expect(turnRequests(server)).toHaveLength(2);
    // The CLI hands HTTPS_PROXY and NO_PROXY to undici's EnvHttpProxyAgent: 127.0.0.1 is in
    // NO_PROXY, so it connects straight to the warden's relay of the allowed port; nothing refused.
    expect(results).toHaveLength(1);
    expect(results[0]?.networkRefusals).toBeUndefined();
  });
});

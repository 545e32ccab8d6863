/**
 * The Codex adapter running the REAL Codex CLI (@openai/codex 0.169.0, a native binary
 * behind a Node shim, node_modules/.bin/codex) in a real git working copy, against the
 * OpenAI stand-in of @codefleet/testkit instead of the OpenAI API. Codex is pointed at it
 * the documented way, a custom model provider given with `-c` (through the adapter's
 * `extraArgs`): base URL, the Responses wire API, the key's variable, no retries. Each run
 * has its own HOME and CODEX_HOME, never the real ~/.codex, and no network beyond loopback.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  startOpenAiStandIn,
  waitFor,
  type OpenAiStandIn,
  type ResponsesReply,
} from '@codefleet/testkit';
import { parseConfig } from '@codefleet/config';
import {
  buildAgentEnv,
  costOf,
  createAgent,
  createCodexAgent,
  type AgentRunRequest,
  type CodexAgentOptions,
  type PriceTable,
} from '../src/index.js';
import { openBwrap, sandboxed } from './bwrap-runner.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const codexBin = join(repoRoot, 'node_modules', '.bin', 'codex');
const apiKey = 'sk-standin-test-key';
const prices: PriceTable = { 'gpt-5-codex': { inputPerMtok: 1.25, outputPerMtok: 10 } };
// Generous: the real binary starts slowly on a loaded 2-core machine.
const runTimeoutMs = 90_000;
const testTimeoutMs = 180_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * The provider settings that point Codex at `baseUrl`: `model_provider` names a provider
 * defined inline. No retries, so an error reaches the adapter at once (Codex retries 5
 * times by default, with backoff).
 */
function providerArgs(baseUrl: string): string[] {
  return [
    '-c',
    'model_provider="standin"',
    '-c',
    `model_providers.standin={ name = "OpenAI stand-in", base_url = "${baseUrl}", wire_api = "responses", env_key = "OPENAI_API_KEY", request_max_retries = 0, stream_max_retries = 0 }`,
  ];
}

/**
 * Every process whose environment holds `home` (all a run starts inherit its HOME), from
 * /proc: what a run left behind.
 */
function processesWithHome(home: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`HOME=${home}`))
        pids.push(Number(entry));
    } catch {
      // Gone already, or not ours to read.
    }
  }
  return pids;
}

interface Setup {
  standIn: OpenAiStandIn;
  path: string;
  home: string;
  req(extra?: Partial<AgentRunRequest>): AgentRunRequest;
  run(extra?: Partial<AgentRunRequest>): ReturnType<ReturnType<typeof createCodexAgent>['run']>;
}

async function setUp(
  replies: ResponsesReply[],
  options: Partial<CodexAgentOptions> = {},
  key = apiKey,
  homeInTmp = false,
): Promise<Setup> {
  const standIn = await startOpenAiStandIn({ apiKey, replies });
  cleanups.push(() => standIn.close());
  const repo = await createTempRepo({ prefix: 'codex-real', files: { 'README.md': '# sample\n' } });
  cleanups.push(() => repo.dispose());
  // What the workspace writes for the agent, untracked.
  await writeFile(join(repo.path, 'AGENTS.md'), 'Keep every greeting short.\n');
  const dir = await createTempDir('codex-home');
  cleanups.push(() => dir.dispose());
  const home = join(dir.path, 'home');
  const tmp = join(dir.path, 'tmp');
  await mkdir(join(home, '.codex'), { recursive: true });
  await mkdir(tmp);
  const agent = createCodexAgent({
    binary: codexBin,
    apiKeyEnv: 'OPENAI_API_KEY',
    extraArgs: providerArgs(standIn.baseUrl),
    ...options,
  });
  // TMPDIR beside HOME, not around it: Codex refuses to set up its sandbox helper under the temp dir.
  const host = {
    PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: home,
    TMPDIR: homeInTmp ? dir.path : tmp,
    LANG: 'C.UTF-8',
    OPENAI_API_KEY: key,
  };
  const req = (extra: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
    workdir: repo.path,
    prompt: 'Add hello.txt saying hello\n',
    pass: 'implement',
    attempt: 1,
    timeoutMs: runTimeoutMs,
    env: buildAgentEnv(host, { allow: [...(agent.allowEnv ?? [])] }),
    ...extra,
  });
  return { standIn, path: repo.path, home, req, run: (extra) => agent.run(req(extra)) };
}

/** The text of every input item of a Responses request, for asserting what reached the model. */
function inputText(body: Record<string, unknown> | undefined): string {
  return JSON.stringify(body?.input ?? []);
}

describe('Codex adapter with the real Codex CLI 0.169.0', () => {
  it(
    'its default model (code mode): the flags are accepted, the scripted apply_patch edit lands → changed',
    async () => {
      const { standIn, path, run } = await setUp([
        { writeFile: { path: 'hello.txt', content: 'hello from codex\n' }, inputTokens: 1_000, outputTokens: 50 },
        { text: 'Added hello.txt.', inputTokens: 1_200, outputTokens: 20 },
      ]);
      const result = await run();
      expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['hello.txt'] });
      expect(await readFile(join(path, 'hello.txt'), 'utf8')).toBe('hello from codex\n');
      // All it asked for: two Responses calls (the tool call, then the answer after the tool output). No model list.
      expect(standIn.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /v1/responses', 'POST /v1/responses']);
      const [first, second] = standIn.responsesRequests;
      expect(first?.authorization).toBe(`Bearer ${apiKey}`);
      expect(first?.body).toMatchObject({ stream: true });
      // Without --model, 0.169.0 offers one free-form `exec` tool (JavaScript calling the others).
      expect(first?.tools).toEqual(expect.arrayContaining([{ name: 'exec', type: 'custom', namespace: 'functions' }]));
      expect(inputText(first?.body)).toContain('Add hello.txt saying hello');
      expect(inputText(first?.body)).toContain('Keep every greeting short.');
      expect(inputText(second?.body)).toContain('custom_tool_call_output');
      // Tokens from its own JSON (turn.completed); no model named, none asked for: no price.
      expect(result.tokens).toEqual({ prompt: 2_200, completion: 70 });
      expect(result.model).toBeUndefined();
      expect(result.costUsd).toBeUndefined();
      expect(JSON.stringify(result)).not.toContain(apiKey);
    },
    testTimeoutMs,
  );

  it(
    'a configured model: exec_command runs apply_patch; tokens, model, model calls and cost from its JSON',
    async () => {
      const { standIn, path, run } = await setUp(
        [
          { writeFile: { path: 'hello.txt', content: 'hi\n' }, inputTokens: 3_000, outputTokens: 100 },
          { text: 'Done.', inputTokens: 3_500, outputTokens: 40 },
        ],
        { model: 'gpt-5-codex' },
      );
      const result = await run({ prices });
      expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['hello.txt'] });
      expect(await readFile(join(path, 'hello.txt'), 'utf8')).toBe('hi\n');
      const [first] = standIn.responsesRequests;
      expect(first?.body?.model).toBe('gpt-5-codex');
      expect(first?.tools.map((tool) => tool.name)).toContain('exec_command');
      const tokens = { prompt: 6_500, completion: 140 };
      const cost = costOf(prices, 'gpt-5-codex', tokens);
      expect(cost).toBeGreaterThan(0);
      expect(result).toMatchObject({ tokens, model: 'gpt-5-codex', costUsd: cost });
      expect(result.modelCalls).toEqual([
        {
          provider: 'codex',
          model: 'gpt-5-codex',
          promptTokens: 6_500,
          completionTokens: 140,
          latencyMs: expect.any(Number),
          costUsd: cost,
          outcome: 'ok',
        },
      ]);
      expect(result.budgetExceeded).toBeUndefined();
    },
    testTimeoutMs,
  );

  it(
    'a refused key (401): Codex exits 1 with turn.failed → error, permanent',
    async () => {
      const { standIn, run } = await setUp([{ text: 'never sent' }], {}, 'sk-wrong-key');
      const result = await run();
      expect(result).toMatchObject({ outcome: 'error', exitCode: 1, permanent: true, changedFiles: [] });
      expect(result.detail).toMatch(/^Codex reported an API error: unexpected status 401 Unauthorized/);
      expect(standIn.responsesRequests.length).toBeGreaterThan(0);
      expect(standIn.pending).toBe(1);
    },
    testTimeoutMs,
  );

  it.each([
    [
      'a 500',
      {
        status: 500,
        error: { message: 'The server had an error while processing your request.', type: 'server_error' },
      },
    ],
    ['a stream that drops', { fail: 'disconnect' }],
    ['a response.failed event', { fail: 'response.failed', message: 'The model failed to generate a response.' }],
  ] as const)(
    '%s: exit 1 with turn.failed → error, not permanent (retried later)',
    async (_what, reply) => {
      const { run } = await setUp([reply]);
      const result = await run();
      expect(result).toMatchObject({ outcome: 'error', exitCode: 1 });
      expect(result.permanent).toBeUndefined();
      expect(result.detail).toMatch(/^Codex reported an API error: /);
    },
    testTimeoutMs,
  );

  it(
    'a model that never answers: the timeout kills the whole process tree',
    async () => {
      const { standIn, home, run } = await setUp([{ hang: true }]);
      // Generous: long enough for Codex to start and call the model on a loaded machine.
      const result = await run({ timeoutMs: 20_000 });
      expect(result).toMatchObject({ outcome: 'timeout', exitCode: 124, timedOut: true });
      // It was waiting on the model, not still starting.
      expect(standIn.responsesRequests.length).toBeGreaterThan(0);
      await waitFor(() => processesWithHome(home).length === 0, {
        what: 'no process of the run left',
      });
    },
    testTimeoutMs,
  );

  it(
    'the money budget: a run whose reported usage reaches req.budgetUsd is stopped with budgetExceeded',
    async () => {
      const { run } = await setUp(
        [
          { writeFile: { path: 'hello.txt', content: 'hi\n' }, inputTokens: 5_000, outputTokens: 500 },
          { text: 'Done.', inputTokens: 6_000, outputTokens: 100 },
        ],
        { model: 'gpt-5-codex' },
      );
      const result = await run({ prices, budgetUsd: 0.01 });
      // 11k input and 600 output tokens at $1.25 / $10 a million: $0.01975, over $0.01.
      expect(result).toMatchObject({
        budgetExceeded: true,
        outcome: 'failed',
        model: 'gpt-5-codex',
        tokens: { prompt: 11_000, completion: 600 },
      });
      expect(result.detail).toMatch(/^stopped at the money budget: spent \$0\.019[78] of \$0\.0100$/);
      expect(result.changedFiles).toEqual(['hello.txt']);
    },
    testTimeoutMs,
  );

  it(
    "inside codefleet's bwrap sandbox (req.isolated), configured by default: Codex's own sandbox is off, the edit and a command land",
    async () => {
      const data = await createTempDir('codex-bwrap');
      cleanups.push(() => data.dispose());
      const { standIn, path, req } = await setUp([
        { writeFile: { path: 'hello.txt', content: 'hello\n' } },
        {
          items: [
            {
              type: 'function_call',
              name: 'exec_command',
              call_id: 'call_shell',
              arguments: JSON.stringify({ cmd: 'echo from-shell > shell.txt' }),
            },
          ],
        },
        { text: 'Done.' },
      ]);
      // The stand-in is on the host's loopback, which a run reaches only when allow names it.
      const sandbox = await openBwrap([new URL(standIn.baseUrl).host], cleanups);
      if (sandbox === undefined) return;
      // From the config, as the worker builds it: approval_args unset.
      const yaml = `agents:\n  codex:\n    binary: ${JSON.stringify(codexBin)}\n    extra_args: ${JSON.stringify(providerArgs(standIn.baseUrl))}\n`;
      const agent = createAgent(
        'codex',
        parseConfig(yaml, { env: {}, baseDir: data.path, hostname: 'test-host' }).config.agents,
      );
      const result = await agent.run(req(sandboxed(sandbox, path, [])));
      expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['hello.txt', 'shell.txt'] });
      expect(await readFile(join(path, 'shell.txt'), 'utf8')).toBe('from-shell\n');
      expect(standIn.responsesRequests).toHaveLength(3);
    },
    testTimeoutMs,
  );

  it(
    "Codex's own sandbox unable to start (HOME under TMPDIR, as in any sandbox's /tmp/home) → error, permanent, saying why, not no_changes",
    async () => {
      const { run } = await setUp(
        [
          { writeFile: { path: 'hello.txt', content: 'hello\n' } },
          {
            items: [
              {
                type: 'function_call',
                name: 'exec_command',
                call_id: 'call_shell',
                arguments: JSON.stringify({ cmd: 'echo from-shell > shell.txt' }),
              },
            ],
          },
          { text: 'Done.' },
        ],
        {},
        apiKey,
        true,
      );
      const result = await run();
      expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 0, changedFiles: [] });
      expect(result.detail).toMatch(
        /^Codex's own sandbox could not run here \((?:Refusing to create helper binaries|bwrap: )/,
      );
    },
    testTimeoutMs,
  );

  it(
    "Codex's built-in OpenAI provider (openai_base_url): the configured OPENAI_API_KEY reaches the API",
    async () => {
      const { standIn, path, req } = await setUp([
        { writeFile: { path: 'hello.txt', content: 'hello\n' } },
        { text: 'Done.' },
      ]);
      // No provider of its own: the built-in one, its base URL moved to the stand-in.
      const agent = createCodexAgent({
        binary: codexBin,
        apiKeyEnv: 'OPENAI_API_KEY',
        extraArgs: ['-c', `openai_base_url="${standIn.baseUrl}"`],
      });
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'changed', changedFiles: ['hello.txt'] });
      expect(await readFile(join(path, 'hello.txt'), 'utf8')).toBe('hello\n');
      // It tries a WebSocket first (GET /v1/responses, refused here), then posts; every request with the key.
      expect(standIn.responsesRequests).toHaveLength(2);
      expect(standIn.requests.every((r) => r.authorization === `Bearer ${apiKey}`)).toBe(true);
    },
    testTimeoutMs,
  );
});

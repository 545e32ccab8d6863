/**
 * The Claude Code adapter running the REAL Claude Code CLI (@anthropic-ai/claude-code
 * 2.1.331, a native binary, node_modules/.bin/claude) in real git working copies, its model
 * API pointed at the Anthropic stand-in (ANTHROPIC_BASE_URL) with scripted replies. What
 * the CLI prints, its exit codes and flags are the real ones; only the model is scripted.
 * Each run gets its own empty HOME, never the real ~/.claude.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { ProcessResult } from '@codefleet/process';
import {
  createTempDir,
  createTempRepo,
  errorReply,
  startAnthropicStandIn,
  textReply,
  toolReply,
  type AnthropicReply,
} from '@codefleet/testkit';
import { buildAgentEnv, createClaudeAgent, type AgentRunRequest } from '../src/index.js';
import { openBwrap, sandboxed } from './bwrap-runner.js';

const claudeBinary = fileURLToPath(new URL('../../../node_modules/.bin/claude', import.meta.url));
const goodKey = 'sk-ant-stand-in-key';
const model = 'claude-sonnet-4-6';
// A loaded 2-core machine starts the CLI slowly; every real run gets a minute and a half.
const runTimeoutMs = 90_000;
const testTimeoutMs = 150_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface SetUpOptions {
  replies?: AnthropicReply[];
  key?: string;
  maxTurns?: number;
  extraArgs?: string[];
  /** Host variables besides the usual ones (a proxy, IS_SANDBOX removed with `undefined`). */
  host?: Record<string, string | undefined>;
}

async function setUp(options: SetUpOptions = {}) {
  const standIn = await startAnthropicStandIn({ apiKey: goodKey, replies: options.replies ?? [] });
  cleanups.push(() => standIn.close());
  const repo = await createTempRepo({
    prefix: 'claude-real',
    files: { 'README.md': '# sample\n', 'src/greet.txt': 'hello\n' },
  });
  cleanups.push(() => repo.dispose());
  // Untracked, as the workspace writes it.
  await writeFile(join(repo.path, 'CLAUDE.md'), 'Keep changes small.\n');
  const home = await createTempDir('claude-home');
  cleanups.push(() => home.dispose());
  const agent = createClaudeAgent({
    binary: claudeBinary,
    model,
    maxTurns: options.maxTurns ?? 5,
    apiKeyEnv: 'ANTHROPIC_API_KEY',
    timeoutMs: runTimeoutMs,
    extraArgs: options.extraArgs ?? [],
  });
  const mark = randomUUID();
  const host: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home.path,
    LANG: 'C.UTF-8',
    ANTHROPIC_API_KEY: options.key ?? goodKey,
    ANTHROPIC_BASE_URL: standIn.url,
    // This machine may run tests as root, where the CLI refuses to skip permissions otherwise.
    IS_SANDBOX: '1',
    // The CLI retries a failed call up to 10 times with growing pauses; one call is enough here.
    CLAUDE_CODE_MAX_RETRIES: '0',
    GITHUB_TOKEN: 'ghp_planted',
    CLAUDE_REAL_TEST_MARK: mark,
    ...options.host,
  };
  const source = Object.fromEntries(Object.entries(host).filter((e): e is [string, string] => e[1] !== undefined));
  // As the runtime builds it: the allowlist, agents.env.pass and the agent's own variables.
  const env = buildAgentEnv(source, {
    allow: [
      ...(agent.allowEnv ?? []),
      'IS_SANDBOX',
      'CLAUDE_CODE_MAX_RETRIES',
      'CLAUDE_REAL_TEST_MARK',
      'HTTPS_PROXY',
      'NO_PROXY',
    ],
  });
  const req = (extra: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
    workdir: repo.path,
    prompt: 'Add a greeting file and change the greeting.\n',
    pass: 'implement',
    attempt: 1,
    timeoutMs: runTimeoutMs,
    env,
    ...extra,
  });
  return { agent, repo, standIn, req, mark };
}

/** The scripted edit: turn 1 writes a new file, turn 2 edits an existing one, turn 3 says done. */
function editScript(workdir: string): AnthropicReply[] {
  return [
    toolReply(
      'Write',
      { file_path: join(workdir, 'src', 'hello.txt'), content: 'hello from claude\n' },
      {
        text: 'I will add the file.',
        usage: { input_tokens: 1200, output_tokens: 40, cache_read_input_tokens: 300 },
      },
    ),
    toolReply(
      'Edit',
      { file_path: join(workdir, 'src', 'greet.txt'), old_string: 'hello', new_string: 'good morning' },
      {
        usage: { input_tokens: 1500, output_tokens: 30 },
      },
    ),
    textReply('Done: added src/hello.txt and changed the greeting.', { input_tokens: 1600, output_tokens: 12 }),
  ];
}

/** Processes whose environment carries `mark`: what is left of a run. */
async function processesWith(mark: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (environ.includes(mark)) pids.push(Number(entry));
  }
  return pids;
}

describe('Claude Code 2.1.331 (real CLI) against the Anthropic stand-in', () => {
  it(
    "accepts the adapter's flags, makes the scripted edits, and reports tokens, model and cost from its JSON",
    async () => {
      const { agent, repo, standIn, req } = await setUp();
      standIn.reply(...editScript(repo.path));
      const result = await agent.run(req());
      expect(result).toMatchObject({
        outcome: 'changed',
        exitCode: 0,
        changedFiles: ['src/greet.txt', 'src/hello.txt'],
      });
      expect(await readFile(join(repo.path, 'src', 'hello.txt'), 'utf8')).toBe('hello from claude\n');
      expect(await readFile(join(repo.path, 'src', 'greet.txt'), 'utf8')).toBe('good morning\n');
      // modelUsage sums the three calls; prompt tokens count the cache reads too.
      expect(result.tokens).toEqual({ prompt: 1200 + 300 + 1500 + 1600, completion: 40 + 30 + 12 });
      expect(result.model).toBe(model);
      expect(result.modelCalls).toEqual([
        {
          provider: 'claude',
          model,
          promptTokens: 4600,
          completionTokens: 82,
          latencyMs: result.durationMs,
          costUsd: result.costUsd,
          outcome: 'ok',
        },
      ]);
      // The CLI prices the tokens itself (total_cost_usd).
      expect(result.costUsd).toBeGreaterThan(0);
      // What the CLI sent: the model asked for, streamed, the key in its header and never in the URL.
      expect(standIn.messageRequests).toHaveLength(3);
      for (const request of standIn.messageRequests) {
        expect(request.body).toMatchObject({ model, stream: true });
        expect(request.headers['x-api-key']).toBe(goodKey);
        expect(request.headers['anthropic-version']).toBe('2023-06-01');
        expect(request.url).not.toContain(goodKey);
      }
      // The second call carries the result of the first tool call.
      expect(JSON.stringify(standIn.messageRequests[1]?.body.messages)).toContain('tool_result');
    },
    testTimeoutMs,
  );

  it(
    'with --verbose in extra_args (a JSON array of every message) the result is still read',
    async () => {
      const { agent, repo, standIn, req } = await setUp({ extraArgs: ['--verbose'] });
      standIn.reply(...editScript(repo.path));
      const result = await agent.run(req());
      expect(result).toMatchObject({
        outcome: 'changed',
        exitCode: 0,
        model,
        tokens: { prompt: 4600, completion: 82 },
      });
    },
    testTimeoutMs,
  );

  it(
    'an API error (HTTP 500) is an error to retry later: 2.1.331 exits 1 and says is_error in its JSON',
    async () => {
      const { agent, standIn, req } = await setUp({ replies: [errorReply(500, 'api_error', 'Internal server error')] });
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'error', exitCode: 1, changedFiles: [] });
      expect(result.permanent).toBeUndefined();
      expect(result.detail).toMatch(/^Claude Code reported an API error: API Error: 500 .*\(HTTP 500 api_error\)$/);
      expect(result.modelCalls).toEqual([]);
      expect(standIn.messageRequests).toHaveLength(1);
    },
    testTimeoutMs,
  );

  it(
    'an SSE error event mid-stream: the CLI asks again without streaming, and the overload it gets is an error',
    async () => {
      const overloaded = { type: 'overloaded_error', message: 'Overloaded' };
      const { agent, standIn, req } = await setUp({
        replies: [{ streamError: overloaded }, { streamError: overloaded }],
      });
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'error', exitCode: 1 });
      expect(result.detail).toMatch(/API Error: 529 Overloaded.*\(HTTP 529 overloaded_error\)$/);
      expect(standIn.messageRequests.map((r) => r.body.stream)).toEqual([true, false]);
    },
    testTimeoutMs,
  );

  it(
    'edits made before an API error stand: the run keeps changed, with the error in the detail',
    async () => {
      const { agent, repo, standIn, req } = await setUp();
      standIn.reply(
        toolReply('Write', { file_path: join(repo.path, 'NOTES.md'), content: 'notes\n' }),
        errorReply(529, 'overloaded_error', 'Overloaded'),
      );
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'changed', exitCode: 1, changedFiles: ['NOTES.md'] });
      expect(result.detail).toMatch(/^Claude Code reported an API error: API Error: 529 Overloaded/);
      expect(result.modelCalls?.[0]).toMatchObject({ provider: 'claude', model, outcome: 'server' });
    },
    testTimeoutMs,
  );

  it(
    'a refused key (HTTP 401) is a permanent error',
    async () => {
      const { agent, standIn, req } = await setUp({ key: 'sk-ant-revoked' });
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 1 });
      expect(result.detail).toMatch(/Invalid API key.*\(HTTP 401 authentication_error\)$/);
      expect(standIn.messageRequests[0]?.headers['x-api-key']).toBe('sk-ant-revoked');
      expect(standIn.messageRequests[0]?.url).not.toContain('revoked');
    },
    testTimeoutMs,
  );

  it(
    'the turn cap (--max-turns) ends the run failed, with the cap in the detail and the usage kept',
    async () => {
      const { agent, repo, standIn, req } = await setUp({ maxTurns: 2 });
      for (let i = 0; i < 4; i += 1)
        standIn.reply(toolReply('Write', { file_path: join(repo.path, 'NOTES.md'), content: `round ${i}\n` }));
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'failed', exitCode: 1, changedFiles: ['NOTES.md'] });
      expect(result.detail).toMatch(/^Claude Code reached its turn cap \(--max-turns 2\) after \d+ turns$/);
      expect(result.budgetExceeded).toBeUndefined();
      expect(result.modelCalls).toHaveLength(1);
      expect(result.tokens?.prompt).toBeGreaterThan(0);
    },
    testTimeoutMs,
  );

  it(
    'req.budgetUsd becomes --max-budget-usd: the CLI stops at it and the run says budgetExceeded',
    async () => {
      const { agent, repo, standIn, req } = await setUp();
      // One call whose tokens cost far more than the budget (the CLI checks after each call).
      standIn.reply(
        toolReply(
          'Write',
          { file_path: join(repo.path, 'NOTES.md'), content: 'x\n' },
          { usage: { input_tokens: 200_000, output_tokens: 1_000 } },
        ),
        textReply('Done.'),
      );
      const result = await agent.run(req({ budgetUsd: 0.001 }));
      expect(result).toMatchObject({ outcome: 'failed', exitCode: 1, budgetExceeded: true });
      expect(result.detail).toMatch(
        /^Claude Code reached its money budget \(--max-budget-usd \$0\.0010\): spent \$\d+\.\d{4}$/,
      );
      expect(result.costUsd).toBeGreaterThan(0.001);
      expect(result.modelCalls?.[0]).toMatchObject({ model, outcome: 'budget' });
      expect(standIn.messageRequests).toHaveLength(1);
    },
    testTimeoutMs,
  );

  it(
    'no money left: the CLI is not started (it refuses --max-budget-usd 0)',
    async () => {
      const { agent, standIn, req } = await setUp({ replies: [textReply('never asked')] });
      const result = await agent.run(req({ budgetUsd: 0 }));
      expect(result).toMatchObject({ outcome: 'failed', budgetExceeded: true, costUsd: 0, modelCalls: [] });
      expect(standIn.requests).toHaveLength(0);
    },
    testTimeoutMs,
  );

  it(
    'a timeout kills the whole process tree: nothing of the run is left',
    async () => {
      const { agent, req, mark } = await setUp({ replies: [{ hang: true }] });
      const result = await agent.run(req({ timeoutMs: 20_000 }));
      expect(result).toMatchObject({ outcome: 'timeout', exitCode: 124, timedOut: true });
      expect(result.tokens).toBeUndefined();
      expect(await processesWith(mark)).toEqual([]);
    },
    testTimeoutMs,
  );

  it(
    'an argument the CLI rejects is a permanent error, not feedback for the model',
    async () => {
      const { agent, standIn, req } = await setUp({ extraArgs: ['--no-such-flag'] });
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 1 });
      expect(result.detail).toBe("Claude Code rejected its arguments: error: unknown option '--no-such-flag'");
      expect(standIn.requests).toHaveLength(0);
    },
    testTimeoutMs,
  );

  (process.getuid?.() === 0 ? it : it.skip)(
    'as root without IS_SANDBOX=1 the CLI refuses to skip permissions: a permanent error saying what to do',
    async () => {
      const { agent, standIn, req } = await setUp({ host: { IS_SANDBOX: undefined } });
      const result = await agent.run(req());
      expect(result).toMatchObject({ outcome: 'error', permanent: true, exitCode: 1 });
      expect(result.detail).toMatch(/refuses --dangerously-skip-permissions as root.*IS_SANDBOX=1/);
      expect(standIn.requests).toHaveLength(0);
    },
    testTimeoutMs,
  );

  it(
    'makes no call besides the model API: no telemetry, update check or other Anthropic server',
    async () => {
      const connects: string[] = [];
      const proxy = createServer((_req, res) => res.writeHead(502).end());
      proxy.on('connect', (request, socket) => {
        connects.push(String(request.url));
        socket.on('error', () => undefined);
        socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      cleanups.push(
        () =>
          new Promise<void>((resolve) => {
            proxy.closeAllConnections();
            proxy.close(() => resolve());
          }),
      );
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      // Every host but the stand-in's goes through the recording proxy.
      const { agent, repo, standIn, req } = await setUp({ host: { HTTPS_PROXY: proxyUrl, NO_PROXY: '127.0.0.1' } });
      standIn.reply(...editScript(repo.path));
      const result = await agent.run(req());
      expect(result.outcome).toBe('changed');
      expect(connects).toEqual([]);
    },
    testTimeoutMs,
  );

  it(
    "inside codefleet's bwrap sandbox with the stand-in in sandbox.network.allow: the edit lands through the relayed loopback",
    async () => {
      const { agent, repo, standIn, req } = await setUp();
      const sandbox = await openBwrap([new URL(standIn.url).host], cleanups);
      if (sandbox === undefined) return;
      standIn.reply(
        toolReply('Write', { file_path: join(repo.path, 'src', 'hello.txt'), content: 'hello from claude\n' }),
        textReply('Done.'),
      );
      const results: ProcessResult[] = [];
      const result = await agent.run(req(sandboxed(sandbox, repo.path, results)));
      expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['src/hello.txt'] });
      expect(await readFile(join(repo.path, 'src', 'hello.txt'), 'utf8')).toBe('hello from claude\n');
      // ANTHROPIC_BASE_URL names 127.0.0.1, which is in NO_PROXY: the CLI connects straight to
      // the warden's relay of the allowed port, which tunnels it through the proxy (a CONNECT, so
      // the requests arrive as sent, keep-alive and all); nothing refused.
      expect(standIn.messageRequests).toHaveLength(2);
      expect(results).toHaveLength(1);
      expect(results[0]?.networkRefusals).toBeUndefined();
    },
    testTimeoutMs,
  );

  it(
    "inside bwrap with an empty sandbox.network.allow the host's stand-in is out of reach: an API error, not one request",
    async () => {
      const { agent, repo, standIn, req } = await setUp({ replies: [textReply('never asked')] });
      const sandbox = await openBwrap([], cleanups);
      if (sandbox === undefined) return;
      const results: ProcessResult[] = [];
      const result = await agent.run(req(sandboxed(sandbox, repo.path, results)));
      expect(result).toMatchObject({ outcome: 'error', exitCode: 1, changedFiles: [] });
      expect(result.detail).toMatch(
        /^Claude Code reported an API error: API Error: Connection refused.*\(ECONNREFUSED\)/,
      );
      expect(standIn.requests).toHaveLength(0);
      expect(results).toHaveLength(1);
      // 127.0.0.1 is in NO_PROXY, so the CLI never asks the proxy: inside the run's own network
      // namespace nothing listens at the stand-in's port and the connection is refused there.
      // The proxy refused nothing because it was never asked.
      expect(results[0]?.networkRefusals).toBeUndefined();
    },
    testTimeoutMs,
  );
});

// The built-in agent's Anthropic provider against the labeled Anthropic stand-in (testkit):
// real HTTP on loopback, the real patch engine and a real git repository; only the model is scripted.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import {
  createTempRepo,
  errorReply,
  closedPort,
  startAnthropicStandIn,
  textReply,
  type AnthropicStandIn,
} from '@codefleet/testkit';
import {
  createAnthropicModel,
  createBuiltinAgent,
  defaultAnthropicMaxTokens,
  modelErrorKind,
  type ChatMessage,
} from '../src/index.js';
import { agentTestEnv } from './conformance.js';

const key = 'sk-ant-planted-key-42';
const messages: ChatMessage[] = [
  { role: 'system', content: 'You edit code.' },
  { role: 'user', content: 'Add multiply.' },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function standIn(): Promise<AnthropicStandIn> {
  const s = await startAnthropicStandIn({ apiKey: key });
  cleanups.push(() => s.close());
  return s;
}

const signal = () => AbortSignal.timeout(20_000);
const once = { retries: 0 };

describe('createAnthropicModel', () => {
  it('speaks the Messages API: key and version headers, system apart, max_tokens always, tokens from usage', async () => {
    const s = await standIn();
    s.reply(textReply('Plan: multiply.', { input_tokens: 120, output_tokens: 30, cache_read_input_tokens: 5 }));
    const model = createAnthropicModel({ baseUrl: `${s.url}/`, model: 'claude-sonnet-4-6', apiKey: key });
    expect(model).toMatchObject({
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      label: 'anthropic claude-sonnet-4-6',
    });
    const seen: string[] = [];
    const reply = await model.chat(messages, { signal: signal(), onText: (t) => seen.push(t) });
    expect(reply).toEqual({ content: 'Plan: multiply.', promptTokens: 125, completionTokens: 30 });
    expect(seen.join('')).toBe('Plan: multiply.');
    const [request] = s.messageRequests;
    expect(request?.url).toBe('/v1/messages');
    expect(request?.headers).toMatchObject({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.body).toMatchObject({
      model: 'claude-sonnet-4-6',
      max_tokens: defaultAnthropicMaxTokens,
      system: 'You edit code.',
      stream: false,
      messages: [{ role: 'user', content: 'Add multiply.' }],
    });
  });

  it("a base URL that already ends in /v1 is not doubled; the caller's max tokens win", async () => {
    const s = await standIn();
    s.reply(textReply('ok'));
    await createAnthropicModel({ baseUrl: `${s.url}/v1`, model: 'm', apiKey: key }).chat(messages, {
      signal: signal(),
      maxTokens: 77,
    });
    expect(s.messageRequests[0]).toMatchObject({ url: '/v1/messages', body: { max_tokens: 77 } });
  });

  it.each([
    [errorReply(401, 'authentication_error', `invalid x-api-key ${key}`), 'unauthorized', 401],
    [errorReply(403, 'permission_error', 'not allowed'), 'unauthorized', 403],
    [errorReply(404, 'not_found_error', 'model: claude-nope'), 'model_not_found', 404],
    [errorReply(429, 'rate_limit_error', 'slow down', { 'retry-after': '1' }), 'server', 429],
    [errorReply(500, 'api_error', 'Internal server error'), 'server', 500],
    [errorReply(529, 'overloaded_error', 'Overloaded'), 'server', 529],
  ] as const)('HTTP errors map to the shared kinds (%#), and never carry the key', async (reply, kind, status) => {
    const s = await standIn();
    s.reply(reply);
    // One request: what a single failure maps to (retries are model-call-policy.test.ts's).
    const failure = await createAnthropicModel({ baseUrl: s.url, model: 'claude-nope', apiKey: key, policy: once })
      .chat(messages, { signal: signal() })
      .catch((e: unknown) => e);
    expect(modelErrorKind(failure)).toBe(kind);
    expect(failure).toMatchObject({ status });
    expect((failure as Error).message).toContain(`HTTP ${status}`);
    // The 401 body quoted the key back; the message names the variable to check instead.
    expect((failure as Error).message).not.toContain(key);
  });

  it('a key the server refuses, an unreachable server and an abort are told apart', async () => {
    const s = await standIn();
    const wrong = await createAnthropicModel({ baseUrl: s.url, model: 'm', apiKey: 'sk-ant-wrong' })
      .chat(messages, { signal: signal() })
      .catch((e: unknown) => e);
    expect(modelErrorKind(wrong)).toBe('unauthorized');
    const port = await closedPort();
    const down = await createAnthropicModel({
      baseUrl: `http://127.0.0.1:${port}`,
      model: 'm',
      apiKey: key,
      policy: once,
    })
      .chat(messages, { signal: signal() })
      .catch((e: unknown) => e);
    expect(modelErrorKind(down)).toBe('unreachable');
    s.reply({ hang: true });
    const controller = new AbortController();
    const pending = createAnthropicModel({ baseUrl: s.url, model: 'm', apiKey: key })
      .chat(messages, { signal: controller.signal })
      .catch((e: unknown) => e);
    controller.abort();
    expect(modelErrorKind(await pending)).toBe('aborted');
  });
});

describe('built-in agent with agents.ollama.provider: anthropic', () => {
  it('reads its key from the run environment (ANTHROPIC_API_KEY by default) and applies the reply', async () => {
    const s = await standIn();
    s.reply(
      textReply(
        [
          'Plan: add multiply.',
          '',
          '```js:src/calc.js',
          'export const add = (a, b) => a + b;',
          'export const multiply = (a, b) => a * b;',
          '```',
          '',
        ].join('\n'),
        {
          input_tokens: 300,
          output_tokens: 40,
        },
      ),
    );
    const repo = await createTempRepo({ files: { 'src/calc.js': 'export const add = (a, b) => a + b;\n' } });
    cleanups.push(() => repo.dispose());
    await mkdir(join(repo.path, '.codefleet'), { recursive: true });
    await writeFile(join(repo.path, '.codefleet', 'task.md'), '# Task: Add multiply\n');
    const config = parseConfig(
      `agents:\n  ollama:\n    provider: anthropic\n    host: ${s.url}\n    model: claude-sonnet-4-6\n`,
      { env: {}, baseDir: '/srv', hostname: 'h' },
    ).config.agents.ollama;
    const agent = createBuiltinAgent(config);
    expect(agent.allowEnv).toEqual(['ANTHROPIC_API_KEY']);
    const result = await agent.run({
      workdir: repo.path,
      prompt: 'Task: Add multiply(a, b) to src/calc.js',
      pass: 'implement',
      attempt: 1,
      timeoutMs: 20_000,
      env: { ...agentTestEnv(), ANTHROPIC_API_KEY: key },
    });
    expect(result).toMatchObject({
      outcome: 'changed',
      changedFiles: ['src/calc.js'],
      tokens: { prompt: 300, completion: 40 },
    });
    expect(s.messageRequests[0]?.headers['x-api-key']).toBe(key);
    expect(JSON.stringify(result)).not.toContain(key);
  });
});

// The model-call policy (request timeout, retries) on every provider, against a STAND-IN for
// a model server: a plain node:http server on loopback that speaks just enough of each API
// (Ollama's streamed /api/chat, OpenAI's /chat/completions, Anthropic's /v1/messages) and
// answers each request from a script, counting what it received. No model runs; no assertion
// depends on elapsed time: waits are recorded by an injected sleep, outcomes and counts asserted.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { createTempRepo, waitFor } from '@codefleet/testkit';
import {
  createAnthropicModel,
  createBuiltinAgent,
  createOllamaModel,
  createOpenAiModel,
  modelErrorKind,
  type ChatModel,
  type ModelCallPolicy,
} from '../src/index.js';
import { checkedModelCallPolicy, isTransientModelError } from '../src/builtin/model-call-policy.js';
import { agentTestEnv } from './conformance.js';

/** What the stand-in does with one request: answer, fail with a status, or never answer. */
type Step = 'ok' | 'silent' | { status: number; retryAfter?: string };

type Provider = 'ollama' | 'openai' | 'anthropic';

interface StandIn {
  url: string;
  /** Chat requests received so far. */
  received: number;
  close(): Promise<void>;
}

const okBody: Record<Provider, string> = {
  ollama: [
    { model: 'm', message: { role: 'assistant', content: 'hel' }, done: false },
    { model: 'm', message: { role: 'assistant', content: 'lo' }, done: true, prompt_eval_count: 3, eval_count: 2 },
  ]
    .map((part) => `${JSON.stringify(part)}\n`)
    .join(''),
  openai: JSON.stringify({
    choices: [{ message: { content: 'hello' } }],
    usage: { prompt_tokens: 3, completion_tokens: 2 },
  }),
  anthropic: JSON.stringify({
    content: [{ type: 'text', text: 'hello' }],
    usage: { input_tokens: 3, output_tokens: 2 },
  }),
};

const errorBody = (provider: Provider, status: number) =>
  JSON.stringify(
    provider === 'ollama'
      ? { error: `stand-in status ${status}` }
      : provider === 'openai'
        ? { error: { message: `stand-in status ${status}`, type: 'api_error' } }
        : { type: 'error', error: { type: 'api_error', message: `stand-in status ${status}` } },
  );

/** Where each provider's model posts a chat. */
const chatPath: Record<Provider, string> = {
  ollama: '/api/chat',
  openai: '/v1/chat/completions',
  anthropic: '/v1/messages',
};

/**
 * Starts the stand-in for `provider`; requests past the script's end get the last step again.
 * Only chat requests count and take a step: on a busy machine another suite's probe of a port
 * it took for its own (a health check polled before its server listens) can land on this
 * random one, and must neither count nor use up the script.
 */
async function startStandIn(provider: Provider, script: Step[]): Promise<StandIn> {
  const state = { received: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      if (req.method !== 'POST' || req.url?.split('?')[0] !== chatPath[provider]) return void res.writeHead(404).end();
      state.received += 1;
      const step = script[Math.min(state.received, script.length) - 1] ?? 'ok';
      if (step === 'silent') return;
      if (step === 'ok') {
        res.writeHead(200, { 'content-type': provider === 'ollama' ? 'application/x-ndjson' : 'application/json' });
        res.end(okBody[provider]);
        return;
      }
      res.writeHead(step.status, {
        'content-type': 'application/json',
        ...(step.retryAfter === undefined ? {} : { 'retry-after': step.retryAfter }),
      });
      res.end(errorBody(provider, step.status));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get received() {
      return state.received;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function standIn(provider: Provider, script: Step[]): Promise<StandIn> {
  const s = await startStandIn(provider, script);
  cleanups.push(() => s.close());
  return s;
}

/** The provider's model on the stand-in, under `policy`, its waits recorded instead of slept. */
function modelOn(provider: Provider, s: StandIn, policy: Partial<ModelCallPolicy>): ChatModel {
  const options = { model: 'm', apiKey: 'k', policy };
  if (provider === 'ollama') return createOllamaModel({ host: s.url, ...options });
  if (provider === 'openai') return createOpenAiModel({ baseUrl: `${s.url}/v1`, ...options });
  return createAnthropicModel({ baseUrl: s.url, ...options });
}

/** A policy whose waits are recorded and return at once: retries are counted, not timed. */
function recorded(policy: Partial<ModelCallPolicy> = {}): { policy: Partial<ModelCallPolicy>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    policy: {
      retries: 2,
      ...policy,
      sleep: policy.sleep ?? (async (ms) => void waits.push(ms)),
    },
  };
}

const messages = [{ role: 'user' as const, content: 'Say hello.' }];
const noAbort = () => new AbortController().signal;

describe.each(['ollama', 'openai', 'anthropic'] as const)('the model-call policy on the %s provider', (provider) => {
  it('a silent server: each request ends as a transient timeout, retried per policy, then the call fails', async () => {
    const s = await standIn(provider, ['silent']);
    // The server never answers, so any request timeout gives the same outcome; a small one keeps the test short.
    const { policy, waits } = recorded({ timeoutMs: 200 });
    const failure = await modelOn(provider, s, policy)
      .chat(messages, { signal: noAbort() })
      .catch((e: unknown) => e);
    expect(modelErrorKind(failure)).toBe('timeout');
    expect(isTransientModelError(failure)).toBe(true);
    expect(waits).toHaveLength(2);
    expect(s.received).toBeLessThanOrEqual(3);
  });

  it('429 with Retry-After, then an answer: one retry after the wait the server asked for', async () => {
    const s = await standIn(provider, [{ status: 429, retryAfter: '7' }, 'ok']);
    const { policy, waits } = recorded();
    const reply = await modelOn(provider, s, policy).chat(messages, { signal: noAbort() });
    expect(reply).toEqual({ content: 'hello', promptTokens: 3, completionTokens: 2 });
    expect(s.received).toBe(2);
    // Longer than any backoff of the first retry (at most 1 s): the server's 7 s wins.
    expect(waits).toEqual([7_000]);
  });

  it("a Retry-After past the caller's deadline is not waited for: the 429 is the answer", async () => {
    const s = await standIn(provider, [{ status: 429, retryAfter: '3600' }, 'ok']);
    const { policy, waits } = recorded();
    const failure = await modelOn(provider, s, policy)
      .chat(messages, { signal: noAbort(), deadline: Date.now() + 60_000 })
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'server', status: 429, retryAfterMs: 3_600_000 });
    expect(s.received).toBe(1);
    expect(waits).toEqual([]);
  });

  it('500 every time: gives up after retries + 1 requests with the server error', async () => {
    const s = await standIn(provider, [{ status: 500 }]);
    const { policy, waits } = recorded({ retries: 3 });
    const failure = await modelOn(provider, s, policy)
      .chat(messages, { signal: noAbort() })
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'server', status: 500 });
    expect(s.received).toBe(4);
    expect(waits).toHaveLength(3);
  });

  it('a refused key is not retried', async () => {
    const s = await standIn(provider, [{ status: 401 }, 'ok']);
    const { policy } = recorded();
    const failure = await modelOn(provider, s, policy)
      .chat(messages, { signal: noAbort() })
      .catch((e: unknown) => e);
    expect(modelErrorKind(failure)).toBe('unauthorized');
    expect(s.received).toBe(1);
  });

  it("the caller's abort, in a request or in a wait, is never retried", async () => {
    const s = await standIn(provider, ['silent']);
    const { policy, waits } = recorded();
    const controller = new AbortController();
    const pending = modelOn(provider, s, policy)
      .chat(messages, { signal: controller.signal })
      .catch((e: unknown) => e);
    await waitFor(() => s.received === 1, { what: 'the first request' });
    controller.abort();
    expect(modelErrorKind(await pending)).toBe('aborted');
    expect(waits).toEqual([]);

    const failing = await standIn(provider, [{ status: 503 }]);
    const stop = new AbortController();
    // The caller gives up while the policy waits to retry the 503.
    const aborting = recorded({ sleep: async () => stop.abort() });
    const failure = await modelOn(provider, failing, aborting.policy)
      .chat(messages, { signal: stop.signal })
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'aborted', cause: { kind: 'server', status: 503 } });
    expect(failing.received).toBe(1);
  });
});

describe('the model-call policy settings', () => {
  it('a bad request timeout or retry count fails when the model is made, naming the setting', () => {
    expect(() => checkedModelCallPolicy({ timeoutMs: 0 })).toThrow(/request timeout must be a positive number/);
    expect(() => checkedModelCallPolicy({ retries: -1 })).toThrow(/retries must be a whole number of 0 or more/);
    expect(() => createOpenAiModel({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', policy: { retries: 1.5 } })).toThrow(
      RangeError,
    );
  });

  it('agents.ollama.request_timeout_seconds and request_retries reach the built-in agent: a silent server ends the run as an error, not a hang', async () => {
    const s = await standIn('ollama', ['silent']);
    const repo = await createTempRepo({ files: { 'src/calc.js': 'export const add = (a, b) => a + b;\n' } });
    cleanups.push(() => repo.dispose());
    await mkdir(join(repo.path, '.codefleet'), { recursive: true });
    await writeFile(join(repo.path, '.codefleet', 'task.md'), '# Task: Add multiply\n');
    const config = parseConfig(
      `agents:\n  ollama:\n    host: ${s.url}\n    model: m\n    request_timeout_seconds: 1\n    request_retries: 1\n`,
      { env: {}, baseDir: '/srv', hostname: 'h' },
    ).config.agents.ollama;
    expect(config).toMatchObject({ request_timeout_seconds: 1, request_retries: 1 });
    const result = await createBuiltinAgent(config).run({
      workdir: repo.path,
      prompt: 'Add multiply(a, b) to src/calc.js',
      pass: 'implement',
      attempt: 1,
      // Far past two 1 s requests: the run ends because the requests gave up, not its own timeout.
      timeoutMs: 600_000,
      env: agentTestEnv(),
    });
    expect(result).toMatchObject({ outcome: 'error', timedOut: false });
    expect(result.permanent).toBeUndefined();
    expect(result.detail).toMatch(/gave no complete answer within 1 s/);
    expect(result.modelCalls).toEqual([expect.objectContaining({ outcome: 'timeout' })]);
    // The model read the prompt before the server went silent, as far as anyone knows: an estimate is charged.
    expect(result.tokens?.prompt).toBeGreaterThan(0);
  });
});

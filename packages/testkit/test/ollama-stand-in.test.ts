import { afterEach, describe, expect, it } from '@jest/globals';
import { startOllamaStandIn, type OllamaStandIn } from '../src/index.js';

let server: OllamaStandIn | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('Ollama stand-in (speaks the real HTTP API on loopback, replies from a script)', () => {
  it('streams NDJSON by default and ends with the token counts', async () => {
    server = await startOllamaStandIn({ replies: [{ content: 'hello there', promptTokens: 7, completionTokens: 3 }] });
    const res = await post(`${server.url}/api/chat`, {
      model: 'qwen2.5-coder:7b',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            message: { content: string };
            done: boolean;
            prompt_eval_count?: number;
            eval_count?: number;
          },
      );
    expect(lines.map((l) => l.message.content).join('')).toBe('hello there');
    expect(lines.at(-1)).toMatchObject({ done: true, done_reason: 'stop', prompt_eval_count: 7, eval_count: 3 });
    expect(lines.slice(0, -1).every((l) => !l.done)).toBe(true);
  });

  it('answers stream:false with one object; tags, version and show; 404 for an unknown model; 500 when the script is empty', async () => {
    server = await startOllamaStandIn({ replies: ['one'] });
    const chat = await (
      await post(`${server.url}/api/chat`, { model: 'qwen2.5-coder:7b', stream: false, messages: [] })
    ).json();
    expect(chat).toMatchObject({ message: { role: 'assistant', content: 'one' }, done: true, eval_count: 1 });
    expect(await (await fetch(`${server.url}/api/version`)).json()).toEqual({ version: '0.0.0-stand-in' });
    expect(await (await fetch(`${server.url}/api/tags`)).json()).toMatchObject({
      models: [{ name: 'qwen2.5-coder:7b' }],
    });
    expect((await post(`${server.url}/api/show`, { model: 'qwen2.5-coder:7b' })).status).toBe(200);
    const missing = await post(`${server.url}/api/chat`, { model: 'nope', messages: [] });
    expect({ status: missing.status, body: await missing.json() }).toEqual({
      status: 404,
      body: { error: 'model "nope" not found, try pulling it first' },
    });
    expect((await post(`${server.url}/api/chat`, { model: 'qwen2.5-coder:7b', messages: [] })).status).toBe(500);
  });

  it('serves the OpenAI-compatible chat completions with usage, recording the Authorization header', async () => {
    server = await startOllamaStandIn({ replies: [{ content: 'ok', promptTokens: 5, completionTokens: 1 }] });
    const res = await fetch(`${server.openAiBase}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'qwen2.5-coder:7b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 9 }),
    });
    expect(await res.json()).toMatchObject({
      choices: [{ message: { content: 'ok' } }],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
    });
    expect(server.requests[0]).toMatchObject({
      api: 'openai',
      authorization: 'Bearer k',
      options: { max_tokens: 9 },
      stream: false,
    });
  });
});

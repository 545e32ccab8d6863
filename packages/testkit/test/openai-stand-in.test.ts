/**
 * The OpenAI stand-in on its own, spoken to with fetch as the API's clients do: what the
 * real Codex CLI relies on is proven in packages/agents/test/codex-real.test.ts; here the
 * parts it does not reach (a JSON reply without streaming, the models list, a request
 * that offers no edit tool) and the exact event order of a stream.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { addFilePatch, editItem, startOpenAiStandIn, type OpenAiStandIn } from '../src/index.js';

const opened: OpenAiStandIn[] = [];
afterEach(async () => {
  for (const standIn of opened.splice(0)) await standIn.close();
});

async function start(...args: Parameters<typeof startOpenAiStandIn>) {
  const standIn = await startOpenAiStandIn(...args);
  opened.push(standIn);
  return standIn;
}

const post = (standIn: OpenAiStandIn, body: unknown, key = 'sk-test') =>
  fetch(`${standIn.baseUrl}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('OpenAI stand-in', () => {
  it('streams a reply as Responses API events, usage in response.completed', async () => {
    const standIn = await start({ replies: [{ text: 'Hello there', inputTokens: 12, outputTokens: 3 }] });
    const res = await post(standIn, { model: 'gpt-5-codex', stream: true, input: 'hi' });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .trim()
      .split('\n\n')
      .map((block) => JSON.parse(block.split('\n')[1]!.slice('data: '.length)) as Record<string, unknown>);
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(
      events
        .filter((event) => event.type === 'response.output_text.delta')
        .map((event) => event.delta)
        .join(''),
    ).toBe('Hello there');
    expect(events.at(-1)).toMatchObject({
      response: {
        status: 'completed',
        model: 'gpt-5-codex',
        usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 },
      },
    });
  });

  it('answers without stream: true as one JSON response; lists its models; refuses a wrong key as the API does', async () => {
    const standIn = await start({ apiKey: 'sk-test', models: ['gpt-5-codex', 'o4-mini'], replies: [{ text: 'ok' }] });
    const refused = await post(standIn, { model: 'gpt-5-codex', input: 'hi' }, 'sk-wrong');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid_api_key', type: 'invalid_request_error' } });
    expect(standIn.pending).toBe(1);
    const reply = (await (await post(standIn, { model: 'gpt-5-codex', input: 'hi' })).json()) as Record<
      string,
      unknown
    >;
    expect(reply).toMatchObject({
      object: 'response',
      status: 'completed',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'ok' }] }],
    });
    const models = await (
      await fetch(`${standIn.baseUrl}/models`, { headers: { authorization: 'Bearer sk-test' } })
    ).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'gpt-5-codex' }, { id: 'o4-mini' }] });
    // Only this test's requests (each carries a key): on a busy machine another suite's probe
    // of a port it took for its own can land on the stand-in's random port.
    const ours = standIn.requests.filter((r) => r.authorization !== undefined);
    expect(ours.map((r) => `${r.method} ${r.url} ${r.authorization}`)).toEqual([
      'POST /v1/responses Bearer sk-wrong',
      'POST /v1/responses Bearer sk-test',
      'GET /v1/models Bearer sk-test',
    ]);
  });

  it('a scripted edit uses the edit tool the request offers; none offered is an error, not a silent reply', async () => {
    const patch = addFilePatch('a.txt', 'one\ntwo\n');
    expect(patch).toBe('*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n');
    expect(editItem([{ name: 'exec', type: 'custom', namespace: 'functions' }], 'a.txt', 'one\ntwo\n')).toEqual({
      type: 'custom_tool_call',
      name: 'exec',
      input: `const result = await tools.apply_patch(${JSON.stringify(patch)});\ntext(result);\n`,
    });
    expect(editItem([{ name: 'exec_command', type: 'function' }], 'a.txt', 'one\ntwo\n')).toEqual({
      type: 'function_call',
      name: 'exec_command',
      arguments: JSON.stringify({ cmd: `apply_patch <<'EOF'\n${patch}EOF\n` }),
    });
    const standIn = await start({ replies: [{ writeFile: { path: 'a.txt', content: 'x' } }] });
    const res = await post(standIn, { model: 'm', stream: true, input: 'hi', tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { message: expect.stringContaining('offers no edit tool') } });
  });
});

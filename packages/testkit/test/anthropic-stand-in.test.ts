import { afterEach, describe, expect, it } from '@jest/globals';
import {
  errorReply,
  startAnthropicStandIn,
  textReply,
  toolReply,
  waitFor,
  type AnthropicStandIn,
} from '../src/index.js';

let standIn: AnthropicStandIn | undefined;
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

const key = 'sk-ant-stand-in';
const post = (path: string, body: unknown, apiKey = key) =>
  fetch(`${standIn!.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });

/** The SSE events of a response body, as `[event name, data]`. */
async function events(response: Response): Promise<[string, Record<string, unknown>][]> {
  const text = await response.text();
  return text
    .trim()
    .split('\n\n')
    .map((block) => {
      const name = /^event: (.+)$/m.exec(block)?.[1] ?? '';
      const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? '{}') as Record<string, unknown>;
      return [name, data];
    });
}

const ask = { model: 'claude-x', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe('Anthropic stand-in', () => {
  it('streams a tool call and text as the documented event sequence, with usage in message_start and message_delta', async () => {
    standIn = await startAnthropicStandIn({ apiKey: key });
    standIn.reply(
      toolReply(
        'Write',
        { file_path: '/w/a.txt', content: 'x' },
        { text: 'Writing.', usage: { input_tokens: 50, output_tokens: 9 } },
      ),
    );
    const response = await post('/v1/messages?beta=true', { ...ask, stream: true });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const seen = await events(response);
    expect(seen.map(([name]) => name)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const [name, data] of seen) expect(data.type).toBe(name);
    expect(seen[0]?.[1]).toMatchObject({
      message: { role: 'assistant', model: 'claude-x', content: [], stop_reason: null, usage: { input_tokens: 50 } },
    });
    expect(seen[7]?.[1]).toMatchObject({ index: 1, content_block: { type: 'tool_use', name: 'Write', input: {} } });
    const json = seen
      .filter(([, d]) => (d.delta as { type?: string } | undefined)?.type === 'input_json_delta')
      .map(([, d]) => (d.delta as { partial_json: string }).partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual({ file_path: '/w/a.txt', content: 'x' });
    const text = seen
      .filter(([, d]) => (d.delta as { type?: string } | undefined)?.type === 'text_delta')
      .map(([, d]) => (d.delta as { text: string }).text)
      .join('');
    expect(text).toBe('Writing.');
    expect(seen[12]?.[1]).toMatchObject({
      delta: { stop_reason: 'tool_use' },
      usage: { input_tokens: 50, output_tokens: 9 },
    });
    expect(standIn.messageRequests[0]).toMatchObject({ url: '/v1/messages?beta=true', body: { stream: true } });
  });

  it('answers one JSON message without stream, in script order, then a 400 that says the script is empty', async () => {
    standIn = await startAnthropicStandIn({
      replies: [textReply('one'), textReply('two', { input_tokens: 3, output_tokens: 1 })],
    });
    const first = (await (await post('/v1/messages', ask)).json()) as Record<string, unknown>;
    expect(first).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'one' }],
      stop_reason: 'end_turn',
    });
    expect(await (await post('/v1/messages', ask)).json()).toMatchObject({
      content: [{ text: 'two' }],
      usage: { input_tokens: 3, output_tokens: 1 },
    });
    const empty = await post('/v1/messages', ask);
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(standIn.pending).toBe(0);
  });

  it('errors: a wrong key gets 401, scripted statuses their error body and headers, a stream error an SSE error event', async () => {
    standIn = await startAnthropicStandIn({ apiKey: key });
    const refused = await post('/v1/messages', ask, 'sk-ant-wrong');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    standIn.reply(errorReply(529, 'overloaded_error', 'Overloaded', { 'retry-after': '2' }));
    const overloaded = await post('/v1/messages', ask);
    expect([overloaded.status, overloaded.headers.get('retry-after')]).toEqual([529, '2']);
    standIn.reply(
      { streamError: { type: 'overloaded_error', message: 'Overloaded' } },
      { streamError: { type: 'api_error', message: 'boom' } },
    );
    const stream = await events(await post('/v1/messages', { ...ask, stream: true }));
    expect(stream.map(([name]) => name)).toEqual(['message_start', 'error']);
    expect(stream[1]?.[1]).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    // Asked without streaming, the same failure comes as its HTTP status.
    expect((await post('/v1/messages', ask)).status).toBe(500);
  });

  it('count_tokens, models, the warm-up and unknown paths', async () => {
    standIn = await startAnthropicStandIn({ apiKey: key, models: ['claude-a', 'claude-b'] });
    expect(await (await post('/v1/messages/count_tokens', ask)).json()).toEqual({ input_tokens: expect.any(Number) });
    const models = await (await fetch(`${standIn.url}/v1/models`, { headers: { 'x-api-key': key } })).json();
    expect(models).toMatchObject({
      data: [{ type: 'model', id: 'claude-a' }, { id: 'claude-b' }],
      has_more: false,
      first_id: 'claude-a',
      last_id: 'claude-b',
    });
    expect((await fetch(`${standIn.url}/v1/models/claude-b`, { headers: { 'x-api-key': key } })).status).toBe(200);
    expect((await fetch(`${standIn.url}/api/hello`, { method: 'HEAD' })).status).toBe(200);
    const unknown = await fetch(`${standIn.url}/v1/files`, { headers: { 'x-api-key': key } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    // Only this test's requests (the key, or the warm-up, which goes without): on a busy
    // machine another suite's probe of a port it took for its own can land on the stand-in's.
    const ours = standIn.requests.filter((r) => r.headers['x-api-key'] === key || r.path === '/api/hello');
    expect(ours.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/messages/count_tokens',
      'GET /v1/models',
      'GET /v1/models/claude-b',
      'HEAD /api/hello',
      'GET /v1/files',
    ]);
  });

  it('a hanging reply is released when the stand-in closes', async () => {
    standIn = await startAnthropicStandIn({ replies: [{ hang: true }] });
    const pending = post('/v1/messages', ask).then(
      () => 'answered',
      () => 'dropped',
    );
    await waitFor(() => standIn?.messageRequests.length === 1, { what: 'the request' });
    await standIn.close();
    standIn = undefined;
    expect(await pending).toBe('dropped');
  });
});

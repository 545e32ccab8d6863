import { afterEach, describe, expect, it } from '@jest/globals';
import { startGeminiStandIn, type GeminiStandIn } from '../src/index.js';

let server: GeminiStandIn | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const turnBody = {
  contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
  tools: [{ functionDeclarations: [{ name: 'write_file' }, { name: 'replace' }] }],
};
const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'k' },
    body: JSON.stringify(body),
  });

/** The `data:` payloads of a server-sent-events body. */
const events = (text: string) =>
  text
    .split('\r\n\r\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice(6)) as Record<string, unknown>);

describe('Gemini API stand-in (speaks the real wire protocol on loopback, replies from a script)', () => {
  it('streams a turn as SSE: text in chunks, function calls, finish reason and usage at the end', async () => {
    server = await startGeminiStandIn({
      turns: [
        {
          text: 'Editing now',
          functionCalls: [{ name: 'write_file', args: { file_path: 'a.txt', content: 'x' } }],
          promptTokens: 7,
          completionTokens: 3,
        },
      ],
    });
    const res = await post(`${server.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse`, turnBody);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const chunks = events(await res.text()) as {
      candidates: { content: { parts: Record<string, unknown>[] }; finishReason?: string }[];
      usageMetadata: unknown;
      modelVersion: string;
    }[];
    const parts = chunks.flatMap((chunk) => chunk.candidates[0]?.content.parts ?? []);
    expect(
      parts
        .filter((part) => 'text' in part)
        .map((part) => part.text)
        .join(''),
    ).toBe('Editing now');
    expect(parts).toContainEqual({ functionCall: { name: 'write_file', args: { file_path: 'a.txt', content: 'x' } } });
    expect(chunks.at(-1)).toMatchObject({
      candidates: [{ finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3, totalTokenCount: 10 },
      modelVersion: 'gemini-x',
    });
    expect(chunks.slice(0, -1).every((chunk) => chunk.candidates[0]?.finishReason === undefined)).toBe(true);
    expect(server.requests[0]).toMatchObject({
      kind: 'turn',
      model: 'gemini-x',
      rpc: 'streamGenerateContent',
      apiKey: 'k',
      tools: ['write_file', 'replace'],
    });
  });

  it('answers a utility call from its JSON schema, counts tokens, and gives Google error bodies', async () => {
    server = await startGeminiStandIn({ turns: [{ error: 'api-key-invalid' }] });
    const schema = {
      type: 'OBJECT',
      properties: { complexity_reasoning: { type: 'STRING' }, complexity_score: { type: 'INTEGER' } },
    };
    const routed = (await (
      await post(`${server.url}/v1beta/models/flash-lite:generateContent`, {
        contents: [],
        generationConfig: { responseJsonSchema: schema },
      })
    ).json()) as { candidates: { content: { parts: { text: string }[] } }[] };
    expect(JSON.parse(routed.candidates[0]?.content.parts[0]?.text ?? '')).toEqual({
      complexity_reasoning: 'stand-in complexity_reasoning',
      complexity_score: 10,
    });
    expect(await (await post(`${server.url}/v1beta/models/m:countTokens`, { contents: [] })).json()).toEqual({
      totalTokens: 1,
    });
    const refused = await post(`${server.url}/v1beta/models/m:generateContent`, turnBody);
    expect({ status: refused.status, body: await refused.json() }).toEqual({
      status: 400,
      body: {
        error: {
          code: 400,
          message: 'API key not valid. Please pass a valid API key.',
          status: 'INVALID_ARGUMENT',
          details: [expect.objectContaining({ reason: 'API_KEY_INVALID' })],
        },
      },
    });
    expect((await post(`${server.url}/v1beta/models/m:generateContent`, turnBody)).status).toBe(500);
    // Only this test's requests (they carry its key): on a busy machine another suite's probe
    // of a "closed" loopback port can land on the stand-in's random port.
    const ours = server.requests.filter((request) => request.apiKey === 'k');
    expect(ours.map((request) => request.kind)).toEqual(['utility', 'utility', 'turn', 'turn']);
  });

  it('failEvery refuses every request; a failing stream breaks off after its first chunk', async () => {
    server = await startGeminiStandIn({ failEvery: 'unavailable' });
    expect((await post(`${server.url}/v1beta/models/m:countTokens`, {})).status).toBe(503);
    await server.close();
    server = await startGeminiStandIn({ turns: [{ streamFailure: true }] });
    const res = await post(`${server.url}/v1beta/models/m:streamGenerateContent?alt=sse`, turnBody);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});

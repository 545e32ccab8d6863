import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { editItem, offeredTools, type OfferedTool } from './openai-tools.js';

/**
 * One scripted answer of the stand-in, used by the next `POST /v1/responses`:
 * - `{ text }`: a final assistant message;
 * - `{ writeFile: { path, content } }`: a tool call that creates `path` (relative to the
 *   agent's cwd) holding `content`, made with the edit tool the request offers (see
 *   {@link editItem}); the client runs it and asks again with the tool's output;
 * - `{ items }`: these output items verbatim (`function_call`, `custom_tool_call`, …);
 * - `{ status, error }`: an HTTP error with OpenAI's error body (`code` e.g. `invalid_api_key`);
 * - `{ fail: 'disconnect' }`: the stream starts, then the connection drops;
 *   `{ fail: 'response.failed' }`: the stream ends with a `response.failed` event;
 * - `{ hang: true }`: never answers (until the client gives up or the stand-in closes).
 * Token counts default to estimates (4 characters a token) of the request and the output.
 */
export type ResponsesReply =
  | ({ text: string } & Usage)
  | ({ writeFile: { path: string; content: string } } & Usage)
  | ({ items: Record<string, unknown>[] } & Usage)
  | { status: number; error: { message: string; type?: string; code?: string | null } }
  | { fail: 'disconnect' | 'response.failed'; message?: string }
  | { hang: true };

interface Usage {
  inputTokens?: number;
  outputTokens?: number;
}

/** A request as the stand-in received it (every route, so tests see what a client calls at start). */
export interface RecordedOpenAiRequest {
  method: string;
  /** Path and query as sent: tests assert no key ever travels in it. */
  url: string;
  /** The Authorization header as sent, when there was one. */
  authorization?: string;
  /** Request headers, lower-cased names. */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined for a request without one. */
  body?: Record<string, unknown>;
  /** For `POST /v1/responses`: the tools offered, nested ones (code mode, namespaces) included. */
  tools: OfferedTool[];
}

/**
 * A STAND-IN for the OpenAI API, for tests only: an HTTP server on 127.0.0.1 (random port)
 * speaking the part of the real API a coding CLI uses — `POST /v1/responses` (the Responses
 * API) streamed as server-sent events (`response.created`, `response.output_item.added`,
 * `response.output_text.delta`, `response.function_call_arguments.delta`,
 * `response.output_item.done`, `response.completed` with `usage`) or as one JSON response
 * without `stream: true`, and `GET /v1/models`. It runs no model: each Responses request
 * takes the next {@link ResponsesReply} in order. It checks the bearer key when given one
 * (401 `invalid_api_key` otherwise, as the real API answers) and records every request.
 */
export interface OpenAiStandIn {
  /** `http://127.0.0.1:<port>/v1`: the API base a client is pointed at. */
  readonly baseUrl: string;
  /** Adds replies to the end of the script. */
  reply(...replies: ResponsesReply[]): void;
  /** Every request received so far, in order. */
  readonly requests: RecordedOpenAiRequest[];
  /** The `POST /v1/responses` requests only. */
  readonly responsesRequests: RecordedOpenAiRequest[];
  /** Replies not used yet. */
  readonly pending: number;
  /** Requests still held open by `{ hang: true }`. */
  readonly hanging: number;
  close(): Promise<void>;
}

/** Options for {@link startOpenAiStandIn}. */
export interface OpenAiStandInOptions {
  /** The only key accepted (`Authorization: Bearer <key>`); unset: any key, or none. */
  apiKey?: string;
  /** Models `GET /v1/models` lists. Default: `gpt-5-codex`. */
  models?: string[];
  replies?: ResponsesReply[];
}

const estimate = (text: string) => Math.max(1, Math.ceil(text.length / 4));

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
};

const openAiError = (message: string, type: string, code: string | null) => ({
  error: { message, type, param: null, code },
});

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The output items one reply stands for, given what the request offered. */
function outputItems(
  reply: Extract<ResponsesReply, { text: string } | { writeFile: unknown } | { items: unknown }>,
  tools: OfferedTool[],
  turn: number,
): Record<string, unknown>[] {
  if ('text' in reply) {
    return [
      {
        type: 'message',
        id: `msg_standin_${turn}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: reply.text, annotations: [] }],
      },
    ];
  }
  if ('writeFile' in reply)
    return [
      {
        ...editItem(tools, reply.writeFile.path, reply.writeFile.content),
        id: `fc_standin_${turn}`,
        call_id: `call_standin_${turn}`,
        status: 'completed',
      },
    ];
  return reply.items.map((item, i) => ({ id: `item_standin_${turn}_${i}`, status: 'completed', ...item }));
}

/** Writes `items` as the Responses API streams them: each item added, its deltas, done; then `response.completed`. */
function stream(
  res: ServerResponse,
  response: Record<string, unknown>,
  items: Record<string, unknown>[],
  usage: Record<string, unknown>,
): void {
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>) => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...data })}\n\n`);
    sequence += 1;
  };
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  send('response.created', { response: { ...response, status: 'in_progress', output: [] } });
  send('response.in_progress', { response: { ...response, status: 'in_progress', output: [] } });
  items.forEach((item, index) => {
    const id = String(item.id);
    if (item.type === 'message') {
      send('response.output_item.added', {
        output_index: index,
        item: { ...item, status: 'in_progress', content: [] },
      });
      const text = String((item.content as { text: string }[])[0]?.text ?? '');
      send('response.content_part.added', {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      // A few deltas, as a real server sends tokens as they come.
      const size = Math.max(1, Math.ceil(text.length / 3));
      for (let i = 0; i < text.length; i += size)
        send('response.output_text.delta', {
          item_id: id,
          output_index: index,
          content_index: 0,
          delta: text.slice(i, i + size),
        });
      send('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text });
      send('response.content_part.done', {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text, annotations: [] },
      });
    } else if (item.type === 'function_call') {
      send('response.output_item.added', {
        output_index: index,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      send('response.function_call_arguments.delta', { item_id: id, output_index: index, delta: item.arguments });
      send('response.function_call_arguments.done', { item_id: id, output_index: index, arguments: item.arguments });
    } else if (item.type === 'custom_tool_call') {
      send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', input: '' } });
      send('response.custom_tool_call_input.delta', { item_id: id, output_index: index, delta: item.input });
      send('response.custom_tool_call_input.done', { item_id: id, output_index: index, input: item.input });
    } else {
      send('response.output_item.added', { output_index: index, item });
    }
    send('response.output_item.done', { output_index: index, item });
  });
  send('response.completed', { response: { ...response, status: 'completed', output: items, usage } });
  res.end();
}

/** Starts the stand-in; see {@link OpenAiStandIn}. */
export async function startOpenAiStandIn(options: OpenAiStandInOptions = {}): Promise<OpenAiStandIn> {
  const models = options.models ?? ['gpt-5-codex'];
  const script: ResponsesReply[] = [...(options.replies ?? [])];
  const requests: RecordedOpenAiRequest[] = [];
  let hanging = 0;
  let turns = 0;

  const responses = (res: ServerResponse, recorded: RecordedOpenAiRequest, raw: string) => {
    const body = recorded.body ?? {};
    const model = String(body.model ?? '');
    const next = script.shift();
    if (next === undefined)
      return json(res, 500, openAiError('stand-in: no scripted reply left', 'server_error', null));
    if ('hang' in next) {
      hanging += 1;
      res.once('close', () => {
        hanging -= 1;
      });
      return undefined;
    }
    if ('status' in next)
      return json(
        res,
        next.status,
        openAiError(next.error.message, next.error.type ?? 'invalid_request_error', next.error.code ?? null),
      );
    turns += 1;
    const response = {
      id: `resp_standin_${turns}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      model,
    };
    if ('fail' in next) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.write(
        `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', output: [] } })}\n\n`,
      );
      if (next.fail === 'disconnect') {
        // Dropped mid-stream: headers and one event arrived, the rest never will.
        setTimeout(() => res.destroy(), 20);
        return undefined;
      }
      const error = { code: 'server_error', message: next.message ?? 'The model failed to generate a response.' };
      res.end(
        `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 1, response: { ...response, status: 'failed', output: [], error } })}\n\n`,
      );
      return undefined;
    }
    const items = outputItems(next, recorded.tools, turns);
    const inputTokens = next.inputTokens ?? estimate(raw);
    const outputTokens = next.outputTokens ?? estimate(JSON.stringify(items));
    const usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    };
    if (body.stream !== true) return json(res, 200, { ...response, status: 'completed', output: items, usage });
    stream(res, response, items, usage);
    return undefined;
  };

  const server = createServer((req, res) => {
    const handle = async () => {
      const raw = await readBody(req);
      const path = (req.url ?? '').split('?')[0] ?? '';
      let body: Record<string, unknown> | undefined;
      if (raw !== '') body = JSON.parse(raw) as Record<string, unknown>;
      const recorded: RecordedOpenAiRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: { ...req.headers },
        ...(req.headers.authorization === undefined ? {} : { authorization: req.headers.authorization }),
        ...(body === undefined ? {} : { body }),
        tools: path === '/v1/responses' && body !== undefined ? offeredTools(body) : [],
      };
      requests.push(recorded);
      if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
        // The real API's answer to a wrong or missing key.
        return json(
          res,
          401,
          openAiError(
            'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
            'invalid_request_error',
            'invalid_api_key',
          ),
        );
      }
      const route = `${req.method ?? ''} ${path}`;
      if (route === 'POST /v1/responses') return responses(res, recorded, raw);
      if (route === 'GET /v1/models') {
        return json(res, 200, {
          object: 'list',
          data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'stand-in' })),
        });
      }
      return json(res, 404, openAiError(`stand-in: no route ${route}`, 'invalid_request_error', 'unknown_url'));
    };
    handle().catch((error: unknown) => {
      if (!res.headersSent)
        json(
          res,
          400,
          openAiError(
            `stand-in: ${error instanceof Error ? error.message : String(error)}`,
            'invalid_request_error',
            null,
          ),
        );
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get responsesRequests() {
      return requests.filter((r) => r.method === 'POST' && r.url.split('?')[0] === '/v1/responses');
    },
    get pending() {
      return script.length;
    },
    get hanging() {
      return hanging;
    },
    reply: (...replies) => void script.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

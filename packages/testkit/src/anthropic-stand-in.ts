import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One block of a scripted assistant message: text, or a call of one of the client's tools. */
export type AnthropicBlock =
  { type: 'text'; text: string } | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string };

/** Token counts of a scripted message, in the API's `usage` fields. */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

/**
 * What the stand-in answers to the next `POST /v1/messages`:
 * - `{ content }`: an assistant message (streamed as SSE when the request asked for it);
 *   `stopReason` defaults to `tool_use` when it calls a tool, else `end_turn`; `usage` to
 *   counts estimated from the text; `model` to the model asked for;
 * - `{ status, error }`: an HTTP error with the API's error body (`authentication_error`,
 *   `overloaded_error`, …) and optional headers (`retry-after`);
 * - `{ streamError }`: a 200 stream that starts a message, then sends an SSE `error` event;
 * - `{ hang: true }`: never answers (until the client gives up or the stand-in closes).
 */
export type AnthropicReply =
  | { content: AnthropicBlock[]; stopReason?: string; usage?: AnthropicUsage; model?: string }
  | { status: number; error: { type: string; message: string }; headers?: Record<string, string> }
  | { streamError: { type: string; message: string } }
  | { hang: true };

/** A request to the stand-in as it arrived. */
export interface RecordedAnthropicRequest {
  method: string;
  /** Path and query as sent: tests assert the key never travels in it. */
  url: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; `{}` when there was none. */
  body: Record<string, unknown>;
}

/**
 * A STAND-IN for the Anthropic Messages API, for tests only: an HTTP server on 127.0.0.1
 * (random port) speaking the documented wire protocol of `POST /v1/messages` — a JSON
 * message, or with `stream: true` the SSE events `message_start`, `content_block_start`,
 * `content_block_delta` (`text_delta`, `input_json_delta`), `content_block_stop`,
 * `message_delta` (stop reason, usage), `message_stop`, and `error` — plus
 * `POST /v1/messages/count_tokens`, `GET /v1/models[/{id}]` and `HEAD|GET /api/hello`
 * (the connection warm-up Claude Code sends). Other paths get the API's 404 error body.
 *
 * It runs no model: each messages request takes the next {@link AnthropicReply} of the
 * script, in order. With `apiKey` set, a request whose `x-api-key` (or bearer token)
 * differs gets the real 401 `authentication_error`. Every request is recorded.
 */
export interface AnthropicStandIn {
  /** `http://127.0.0.1:<port>`: what `ANTHROPIC_BASE_URL` takes (without `/v1`). */
  readonly url: string;
  /** Adds replies to the end of the script. */
  reply(...replies: AnthropicReply[]): void;
  /** Every request received so far, in order (the warm-up and unknown paths included). */
  readonly requests: RecordedAnthropicRequest[];
  /** The `POST /v1/messages` requests only. */
  readonly messageRequests: RecordedAnthropicRequest[];
  /** Replies not used yet. */
  readonly pending: number;
  close(): Promise<void>;
}

/** Options for {@link startAnthropicStandIn}. */
export interface AnthropicStandInOptions {
  /** The only key accepted; unset: any key (or none) is accepted. */
  apiKey?: string;
  replies?: AnthropicReply[];
  /** Used when the script is empty; default a 400 `invalid_request_error` saying so (400 is never retried). */
  whenEmpty?: AnthropicReply;
  /** Models `GET /v1/models` lists; default one. */
  models?: string[];
}

/** A final text reply. */
export function textReply(text: string, usage?: AnthropicUsage): AnthropicReply {
  return { content: [{ type: 'text', text }], ...(usage === undefined ? {} : { usage }) };
}

/** A reply that calls one tool (Claude Code's `Write`, `Edit`, `Bash`, …), optionally after some text. */
export function toolReply(
  name: string,
  input: Record<string, unknown>,
  options: { text?: string; usage?: AnthropicUsage } = {},
): AnthropicReply {
  const content: AnthropicBlock[] = [
    ...(options.text === undefined ? [] : [{ type: 'text' as const, text: options.text }]),
    { type: 'tool_use', name, input },
  ];
  return { content, ...(options.usage === undefined ? {} : { usage: options.usage }) };
}

/** The API's error reply: 401 `authentication_error`, 529 `overloaded_error`, 500 `api_error`, … */
export function errorReply(
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>,
): AnthropicReply {
  return { status, error: { type, message }, ...(headers === undefined ? {} : { headers }) };
}

const estimate = (text: string) => Math.max(1, Math.ceil(text.length / 4));

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : {};
}

const requestIdOf = () => `req_standin_${randomUUID().replaceAll('-', '').slice(0, 20)}`;

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { 'content-type': 'application/json', 'request-id': requestIdOf(), ...headers })
    .end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { type: 'error', error: { type, message }, request_id: requestIdOf() }, headers);
}

/** Rough size of the request's prompt, for replies without fixed counts. */
function promptChars(body: Record<string, unknown>): number {
  return JSON.stringify(body.messages ?? []).length + JSON.stringify(body.system ?? '').length;
}

interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Record<string, unknown>[];
  stop_reason: string;
  stop_sequence: null;
  usage: Required<AnthropicUsage>;
}

function messageOf(
  reply: Extract<AnthropicReply, { content: unknown }>,
  body: Record<string, unknown>,
  serial: number,
): Message {
  const content = reply.content.map((block, i) =>
    block.type === 'text'
      ? { type: 'text', text: block.text }
      : { type: 'tool_use', id: block.id ?? `toolu_standin_${serial}_${i}`, name: block.name, input: block.input },
  );
  const outputText = reply.content
    .map((block) => (block.type === 'text' ? block.text : JSON.stringify(block.input)))
    .join('');
  const usage = reply.usage ?? {
    input_tokens: estimate('x'.repeat(promptChars(body))),
    output_tokens: estimate(outputText),
  };
  return {
    id: `msg_standin_${serial}`,
    type: 'message',
    role: 'assistant',
    model: reply.model ?? String(body.model ?? 'claude-stand-in'),
    content,
    stop_reason:
      reply.stopReason ?? (reply.content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...usage },
  };
}

function sseEvent(res: ServerResponse, type: string, data: Record<string, unknown>): void {
  res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

/** Streams `message` as the API does: text in a few deltas, tool input as partial JSON. */
function streamMessage(res: ServerResponse, message: Message): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': requestIdOf(),
  });
  const { usage } = message;
  sseEvent(res, 'message_start', {
    message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } },
  });
  sseEvent(res, 'ping', {});
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      const text = String(block.text);
      sseEvent(res, 'content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of chunks(text))
        sseEvent(res, 'content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    } else {
      sseEvent(res, 'content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      for (const piece of chunks(JSON.stringify(block.input))) {
        sseEvent(res, 'content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
    }
    sseEvent(res, 'content_block_stop', { index });
  });
  sseEvent(res, 'message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage });
  sseEvent(res, 'message_stop', {});
  res.end();
}

/** Splits text in up to three pieces, as a server sends tokens as they come. */
function chunks(text: string): string[] {
  if (text === '') return [];
  const size = Math.max(1, Math.ceil(text.length / 3));
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Starts the stand-in; see {@link AnthropicStandIn}. */
export async function startAnthropicStandIn(options: AnthropicStandInOptions = {}): Promise<AnthropicStandIn> {
  const script: AnthropicReply[] = [...(options.replies ?? [])];
  const requests: RecordedAnthropicRequest[] = [];
  const models = options.models ?? ['claude-stand-in-1'];
  const whenEmpty = options.whenEmpty ?? errorReply(400, 'invalid_request_error', 'stand-in: no scripted reply left');
  let serial = 0;

  const authorized = (req: IncomingMessage): boolean => {
    if (options.apiKey === undefined) return true;
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    return req.headers['x-api-key'] === options.apiKey || bearer === options.apiKey;
  };

  const messages = (res: ServerResponse, body: Record<string, unknown>) => {
    const reply = script.shift() ?? whenEmpty;
    serial += 1;
    if ('hang' in reply) return; // answered by nobody; the socket closes with the client or the stand-in
    if ('status' in reply) return sendError(res, reply.status, reply.error.type, reply.error.message, reply.headers);
    if ('streamError' in reply && body.stream !== true)
      return sendError(
        res,
        statusOfErrorType(reply.streamError.type),
        reply.streamError.type,
        reply.streamError.message,
      );
    if ('streamError' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'request-id': requestIdOf() });
      const started = messageOf({ content: [] }, body, serial);
      sseEvent(res, 'message_start', { message: { ...started, stop_reason: null } });
      sseEvent(res, 'error', { error: reply.streamError });
      return void res.end();
    }
    const message = messageOf(reply, body, serial);
    if (body.stream === true) return streamMessage(res, message);
    return sendJson(res, 200, message);
  };

  const server = createServer((req, res) => {
    const url = req.url ?? '';
    const path = url.split('?')[0] ?? '';
    const handle = async () => {
      const body = req.method === 'POST' ? await readBody(req) : {};
      requests.push({ method: req.method ?? '', url, path, headers: { ...req.headers }, body });
      if (path === '/api/hello' && (req.method === 'HEAD' || req.method === 'GET'))
        return void res.writeHead(200).end();
      if (path.startsWith('/v1/') && !authorized(req))
        return sendError(res, 401, 'authentication_error', 'invalid x-api-key');
      const route = `${req.method ?? ''} ${path}`;
      if (route === 'POST /v1/messages') return messages(res, body);
      if (route === 'POST /v1/messages/count_tokens')
        return sendJson(res, 200, { input_tokens: estimate('x'.repeat(promptChars(body))) });
      if (route === 'GET /v1/models') {
        const data = models.map((id) => ({
          type: 'model',
          id,
          display_name: id,
          created_at: new Date(0).toISOString(),
        }));
        return sendJson(res, 200, {
          data,
          has_more: false,
          first_id: models[0] ?? null,
          last_id: models.at(-1) ?? null,
        });
      }
      const model = /^GET \/v1\/models\/([^/]+)$/.exec(route)?.[1];
      if (model !== undefined && models.includes(decodeURIComponent(model))) {
        return sendJson(res, 200, {
          type: 'model',
          id: decodeURIComponent(model),
          display_name: decodeURIComponent(model),
          created_at: new Date(0).toISOString(),
        });
      }
      return sendError(res, 404, 'not_found_error', `stand-in: no route ${route}`);
    };
    handle().catch((error: unknown) => {
      if (!res.headersSent)
        sendError(
          res,
          400,
          'invalid_request_error',
          `stand-in: ${error instanceof Error ? error.message : String(error)}`,
        );
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get messageRequests() {
      return requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
    },
    get pending() {
      return script.length;
    },
    reply: (...replies) => void script.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The HTTP status the API answers an error type with, for a stream error asked of a non-streaming request. */
function statusOfErrorType(type: string): number {
  const statuses: Record<string, number> = {
    invalid_request_error: 400,
    authentication_error: 401,
    permission_error: 403,
    not_found_error: 404,
    request_too_large: 413,
    rate_limit_error: 429,
    api_error: 500,
    overloaded_error: 529,
  };
  return statuses[type] ?? 500;
}
